//! The hourly housekeeping every domain asks for, one process at a time.

use std::time::Duration;

use sealpost_accounts::Accounts;
use sealpost_activity::ActivityLog;
use sealpost_billing::Billing;
use sealpost_devices::Devices;
use sealpost_messages::mailbox::Mailbox;
use sealpost_messages::recovery::BlobRecovery;
use sealpost_store_pg::{Job, PgStore};
use sealpost_webhooks::Webhooks;

use crate::Stop;
use sealpost_wiring::Services;

/// How often a process runs a sweep pass.
pub const SWEEP_EVERY: Duration = Duration::from_secs(60 * 60);

/// How long each usage counter's window lasts (`sealpost_messages::store`):
/// a row is pruned once its window has ended.
const USAGE_WINDOWS: [(&str, chrono::TimeDelta); 4] = [
    (
        sealpost_messages::store::RECEIVED_COUNTER,
        chrono::TimeDelta::days(30),
    ),
    (
        sealpost_messages::store::OBJECT_READS_COUNTER,
        chrono::TimeDelta::hours(1),
    ),
    (
        sealpost_messages::store::SENT_HOUR_COUNTER,
        chrono::TimeDelta::hours(1),
    ),
    (
        sealpost_messages::store::SENT_DAY_COUNTER,
        chrono::TimeDelta::days(1),
    ),
];
/// Counters not listed above are kept this long after their window starts.
const LONGEST_USAGE_WINDOW: chrono::TimeDelta = chrono::TimeDelta::days(31);

/// What [`Sweeps::run_once`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    Ran,
    /// Another process's pass was running (or the lock could not be asked
    /// for): this one did nothing.
    Skipped,
}

/// Every domain's sweep, run in one pass.
pub struct Sweeps {
    store: PgStore,
    clock: std::sync::Arc<dyn sealpost_kernel::Clock>,
    accounts: Accounts,
    billing: Billing,
    devices: Devices,
    activity: ActivityLog,
    mailbox: Mailbox,
    webhooks: Webhooks,
    blob_recovery: BlobRecovery,
    support: sealpost_support::Support,
    domains: sealpost_domains::Domains,
}

impl Sweeps {
    pub fn new(services: &Services) -> Self {
        Self {
            store: services.store.clone(),
            clock: services.clock.clone(),
            accounts: services.accounts.clone(),
            billing: services.billing.clone(),
            devices: services.devices.clone(),
            activity: services.activity.clone(),
            mailbox: services.mailbox.clone(),
            webhooks: services.webhooks.clone(),
            blob_recovery: services.blob_recovery.clone(),
            support: services.support.clone(),
            domains: services.domains.clone(),
        }
    }

    /// One pass, under the sweep lock: while another process's pass runs,
    /// this one is skipped. Each sweep's failure is logged and the others
    /// still run.
    pub async fn run_once(&self) -> Pass {
        let _held = match self.store.try_job_lock(Job::Sweeps).await {
            Ok(Some(lock)) => lock,
            Ok(None) => {
                tracing::info!("another process is running the sweeps; skipped");
                return Pass::Skipped;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot take the sweep lock; skipped");
                return Pass::Skipped;
            }
        };
        match self.accounts.sweep().await {
            Ok(removed) => tracing::info!(removed, "swept expired challenges and sessions"),
            Err(error) => tracing::warn!(%error, "session sweep failed"),
        }
        match self.billing.sweep().await {
            Ok(report) => {
                for (account, error) in &report.failed {
                    tracing::warn!(%account, %error, "pausing a lapsed account failed");
                }
                tracing::info!(
                    paused = report.paused,
                    "paused accounts whose paid period lapsed"
                );
            }
            Err(error) => tracing::warn!(%error, "billing lapse sweep failed"),
        }
        match self.billing.stop_queued_subscriptions().await {
            Ok(report) => {
                for (subscription, error) in &report.failed {
                    tracing::warn!(%subscription, %error, "stopping a card subscription queued to stop failed");
                }
                tracing::info!(
                    stopped = report.stopped,
                    "stopped card subscriptions queued to stop (replaced, or their account erased)"
                );
            }
            Err(error) => {
                tracing::warn!(%error, "stopping card subscriptions queued to stop failed")
            }
        }
        match self.billing.remind_renewals().await {
            Ok(reminded) => tracing::info!(reminded, "reminded paid periods ending soon"),
            Err(error) => tracing::warn!(%error, "renewal reminders failed"),
        }
        match self.billing.release_stragglers().await {
            Ok(released) => tracing::info!(released, "released held mail of unpaused addresses"),
            Err(error) => tracing::warn!(%error, "releasing held mail failed"),
        }
        // Before the pause deletions: they end the pause this reads.
        match self.domains.sweep().await {
            Ok((marked, removed)) => tracing::info!(
                marked,
                removed,
                "tracked own domains' plan loss; removed those unpaid past deletesAt"
            ),
            Err(error) => tracing::warn!(%error, "own-domain sweep failed"),
        }
        match self.billing.delete_expired_pauses().await {
            Ok(deleted) => tracing::info!(
                addresses = deleted.addresses,
                devices = deleted.devices,
                "deleted what unpaid pauses held past deletesAt"
            ),
            Err(error) => tracing::warn!(%error, "deleting expired pauses failed"),
        }
        match self.devices.sweep().await {
            Ok(disconnected) => tracing::info!(disconnected, "swept devices and pairing sessions"),
            Err(error) => tracing::warn!(%error, "device sweep failed"),
        }
        match self.activity.sweep().await {
            Ok(removed) => tracing::info!(removed, "swept old activity"),
            Err(error) => tracing::warn!(%error, "activity sweep failed"),
        }
        match self.support.sweep().await {
            Ok(report) => tracing::info!(
                closed = report.closed,
                deleted = report.deleted,
                "closed idle support tickets and deleted long-closed ones"
            ),
            Err(error) => tracing::warn!(%error, "support sweep failed"),
        }
        match self.webhooks.sweep().await {
            Ok(removed) => tracing::info!(removed, "swept the webhook delivery log"),
            Err(error) => tracing::warn!(%error, "delivery log sweep failed"),
        }
        // After the pause deletions: their mail's blobs go now.
        match self.mailbox.sweep().await {
            Ok((expired, blobs)) => tracing::info!(expired, blobs, "swept expired mail and blobs"),
            Err(error) => tracing::warn!(%error, "mail sweep failed"),
        }
        // Growth: outbox rows both consumers passed, once the event stream
        // no longer reads them; usage windows that ended.
        match self
            .store
            .prune_outbox(self.clock.now() - sealpost_activity::EVENT_STREAM_RETENTION)
            .await
        {
            Ok(pruned) => tracing::info!(pruned, "pruned delivered outbox events"),
            Err(error) => tracing::warn!(%error, "outbox pruning failed"),
        }
        match self
            .store
            .prune_usage_windows(self.clock.now(), &USAGE_WINDOWS, LONGEST_USAGE_WINDOW)
            .await
        {
            Ok(pruned) => tracing::info!(pruned, "pruned ended usage windows"),
            Err(error) => tracing::warn!(%error, "usage window pruning failed"),
        }
        match self.blob_recovery.run().await {
            Ok(recovered) => tracing::info!(
                recovered,
                "removed blobs of deliveries that never committed"
            ),
            Err(error) => tracing::warn!(%error, "pending blob recovery failed"),
        }
        Pass::Ran
    }
}

/// A pass at start and every [`SWEEP_EVERY`] after.
pub async fn sweep_forever(sweeps: Sweeps) {
    sweep_until(sweeps, Stop::never()).await;
}

/// [`sweep_forever`] until `stop`; a pass under way is finished (it holds
/// the advisory lock, released at its end).
pub async fn sweep_until(sweeps: Sweeps, mut stop: Stop) {
    let mut tick = tokio::time::interval(SWEEP_EVERY);
    loop {
        tokio::select! {
            biased;
            () = stop.requested() => return,
            _ = tick.tick() => {}
        }
        sweeps.run_once().await;
    }
}
