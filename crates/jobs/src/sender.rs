//! The webhook sender loop: a fixed number of attempts in flight, results
//! written back in batches.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use sealpost_config::Config;
use sealpost_kernel::{Clock, StoreError};
use sealpost_notifications::push::{PushAlerts, PushSender};
use sealpost_push_http::PushHttp;
use sealpost_store_pg::PgStore;
use sealpost_webhook_http::{WebhookHttp, WebhookHttpConfig};
use sealpost_webhooks::delivery::{AttemptOutcome, DeliveryStatus};
use sealpost_webhooks::{AttemptRecord, Sender, WebhookTransport};
use tokio::task::JoinHandle;

use crate::{AbortOnDrop, Stop};

/// Webhook attempts in flight at once, per process (from claim until the
/// result is written).
const SEND_CONCURRENCY: usize = 128;
/// Pause when there was nothing to do, cut short when an attempt finishes
/// (its endpoint may take another) or an event commits (the NOTIFY of
/// `events`): so the pause bounds only how late a retry falls due is
/// noticed, and an idle sender reads the outbox once a second.
const SEND_IDLE: Duration = Duration::from_secs(1);
/// Most finished attempts written back in one transaction.
const SEND_RECORD_BATCH: usize = 256;
/// Pause before writing a batch again after a failed write.
const SEND_RECORD_RETRY: Duration = Duration::from_millis(100);

/// The webhook sender over HTTPS, configured from `SEALPOST_WEBHOOK_*`.
pub fn webhook_sender(
    store: &PgStore,
    config: &Config,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<Sender> {
    let http = WebhookHttpConfig::from_env_values(
        config.webhook_resolve.as_deref(),
        config.webhook_ca_file.as_deref(),
    )
    .context("reading SEALPOST_WEBHOOK_RESOLVE / SEALPOST_WEBHOOK_CA_FILE")?;
    let transport =
        HttpTransport(WebhookHttp::new(http).context("building the webhook HTTP client")?);
    Ok(Sender::new(
        Arc::new(store.clone()),
        Arc::new(transport),
        // A webhook switched off for failing is pushed to its owner's phones.
        Arc::new(PushAlerts::new(Arc::new(store.clone()), clock.clone())),
        clock,
        sealpost_wiring::server_keys(config)?,
    ))
}

struct HttpTransport(WebhookHttp);

#[async_trait::async_trait]
impl WebhookTransport for HttpTransport {
    async fn send(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: String,
    ) -> AttemptOutcome {
        self.0.send(url, headers, body).await
    }
}

/// Runs the production sender loop in the background (benchmarks use this).
pub fn spawn_webhook_sender(sender: Sender) -> JoinHandle<()> {
    tokio::spawn(send_forever(sender))
}

/// What wakes an idle sender: account ids of committed events
/// (`MailNotifier::event_sender`), or nothing (it then polls).
pub type EventWake = Option<tokio::sync::broadcast::Receiver<String>>;

/// Until a new event commits or `wake` has none to give (it then never
/// returns: the sender's pause decides).
async fn next_event(wake: &mut EventWake) {
    use tokio::sync::broadcast::error::RecvError;
    match wake {
        Some(events) => match events.recv().await {
            // Lagged: events came faster than read, which is a wake too.
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => {
                *wake = None;
                std::future::pending::<()>().await;
            }
        },
        None => std::future::pending::<()>().await,
    }
}

/// A finished attempt on its way to the writer, and where to say it is written.
type Finished = (AttemptRecord, tokio::sync::oneshot::Sender<bool>);

/// Keeps up to `SEND_CONCURRENCY` attempts in flight: a slow or silent
/// receiver occupies one slot for at most its 10-second limit (and a failing
/// endpoint at most a couple of slots: see `in_flight_cap`) and never holds
/// back deliveries to the others. Finished attempts are written back in
/// batches, one transaction per batch, by a single writer task: each attempt
/// keeps its slot (and its lease) until its result is committed, so a crash
/// loses nothing (the lease runs out and the delivery is sent again).
/// Several processes may run it at once: fan-out locks the events it takes
/// and attempts lease their deliveries, so nothing is sent twice.
pub async fn send_forever(sender: Sender) {
    send_until(sender, Stop::never(), None).await;
}

/// [`send_forever`] until `stop`: then no new attempt is started, and it
/// returns once every attempt in flight finished and its result was
/// committed (its lease given back). `wake` ends an idle pause when an
/// event commits.
pub async fn send_until(sender: Sender, mut stop: Stop, mut wake: EventWake) {
    let sender = Arc::new(sender);
    let slots = Arc::new(tokio::sync::Semaphore::new(SEND_CONCURRENCY));
    let done = Arc::new(tokio::sync::Notify::new());
    let (finished, to_record) = tokio::sync::mpsc::channel::<Finished>(SEND_CONCURRENCY);
    // Stops with this loop (when its task is aborted).
    let writer = AbortOnDrop(tokio::spawn(record_forever(sender.clone(), to_record)));
    loop {
        if stop.is_requested() {
            // Every slot back: each attempt's result is committed.
            let _ = slots.acquire_many(SEND_CONCURRENCY as u32).await;
            return;
        }
        // A round is not cut: it may hold claimed deliveries not yet started.
        match send_round(&sender, &slots, &finished, &done).await {
            Ok(0) => {
                // Nothing due: wait for an attempt to finish (its endpoint
                // may have a free slot again) or for new work.
                let idle = tokio::time::timeout(SEND_IDLE, done.notified());
                tokio::select! {
                    () = stop.requested() => {}
                    _ = idle => {}
                    () = next_event(&mut wake) => {}
                }
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "webhook sender round failed; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        if writer.0.is_finished() {
            tracing::error!("the webhook result writer stopped; stopping the sender");
            return;
        }
    }
}

/// Writes finished attempts back: whatever has arrived (up to
/// `SEND_RECORD_BATCH`) in one transaction, while the next batch gathers.
async fn record_forever(sender: Arc<Sender>, mut to_record: tokio::sync::mpsc::Receiver<Finished>) {
    let mut batch: Vec<Finished> = Vec::with_capacity(SEND_RECORD_BATCH);
    while to_record.recv_many(&mut batch, SEND_RECORD_BATCH).await > 0 {
        let (records, replies): (Vec<_>, Vec<_>) = batch.drain(..).unzip();
        let count = records.len();
        // One more try after a failed write (a deadlock with another sender
        // switching an endpoint off, a dropped connection); after that the
        // leases run out and the deliveries are sent again.
        let mut written = false;
        for pause in [None, Some(SEND_RECORD_RETRY)] {
            if let Some(pause) = pause {
                tokio::time::sleep(pause).await;
            }
            match sender.record(&records).await {
                Ok(()) => {
                    written = true;
                    break;
                }
                Err(error) => tracing::warn!(%error, count, "recording webhook attempts failed"),
            }
        }
        if !written {
            tracing::warn!(
                count,
                "webhook attempts not recorded; their leases will expire and they are sent again"
            );
        }
        for reply in replies {
            let _ = reply.send(written);
        }
    }
}

/// Fans out, waits for a free slot, then starts as many due attempts as
/// there are free slots. Returns how much work it found.
async fn send_round(
    sender: &Arc<Sender>,
    slots: &Arc<tokio::sync::Semaphore>,
    finished: &tokio::sync::mpsc::Sender<Finished>,
    done: &Arc<tokio::sync::Notify>,
) -> Result<usize, StoreError> {
    let fanned = sender.fan_out().await?;
    // Wait for one slot, then take every other free one: one claim for all.
    let Ok(first) = slots.clone().acquire_owned().await else {
        return Ok(fanned);
    };
    let mut permits = vec![first];
    while let Ok(permit) = slots.clone().try_acquire_owned() {
        permits.push(permit);
    }
    let due = sender
        .claim(i64::try_from(permits.len()).unwrap_or(1))
        .await?;
    let started = due.len();
    for (item, slot) in due.into_iter().zip(permits) {
        let sender = sender.clone();
        let finished = finished.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let record = sender.send(item).await;
            let outcome = match record.delivery.status {
                DeliveryStatus::Succeeded => "succeeded",
                DeliveryStatus::Pending => "retry",
                DeliveryStatus::Failed => "failed",
            };
            metrics::counter!(sealpost_metrics::names::WEBHOOK_DELIVERIES, "outcome" => outcome)
                .increment(1);
            let (reply, written) = tokio::sync::oneshot::channel();
            if finished.send((record, reply)).await.is_ok() {
                // Keep the slot until the result is committed.
                let _ = written.await;
            }
            drop(slot);
            done.notify_one();
        });
    }
    Ok(fanned + started)
}

/// The push sender over APNs and FCM, configured from `SEALPOST_APNS_*`,
/// `SEALPOST_FCM_*` and `SEALPOST_PUSH_CA_FILE`.
pub fn push_sender(
    store: &PgStore,
    config: &Config,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<PushSender> {
    let transport = PushHttp::from_config(config).context("configuring the push providers")?;
    Ok(PushSender::new(
        Arc::new(store.clone()),
        Arc::new(transport),
        clock,
    ))
}

/// Pushes sent at once per round; each takes at most its 10-second limit.
const PUSH_BATCH: i64 = 64;

/// Rounds of the push sender, pausing a second when one found nothing.
pub async fn push_forever(sender: PushSender) {
    push_until(sender, Stop::never()).await;
}

/// [`push_forever`] until `stop`; a round under way is finished.
pub async fn push_until(sender: PushSender, mut stop: Stop) {
    while !stop.is_requested() {
        match sender.run_round(PUSH_BATCH).await {
            Ok(round) if round.is_idle() => {
                tokio::select! {
                    () = stop.requested() => {}
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "push sender round failed; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event ends an idle pause at once; a wake with no sender left (or
    /// none at all) never does, so the pause alone decides. Paused time:
    /// the hour passes without waiting.
    #[tokio::test(start_paused = true)]
    async fn an_event_ends_the_pause_and_a_closed_wake_never_does() {
        let (events, receiver) = tokio::sync::broadcast::channel(4);
        let mut wake: EventWake = Some(receiver);
        events.send("acct_one".to_owned()).unwrap();
        tokio::time::timeout(Duration::from_secs(3600), next_event(&mut wake))
            .await
            .expect("a committed event wakes the sender");
        drop(events);
        let hour = tokio::time::timeout(Duration::from_secs(3600), next_event(&mut wake)).await;
        assert!(hour.is_err(), "a closed wake is no wake");
        assert!(wake.is_none());
        let hour = tokio::time::timeout(Duration::from_secs(3600), next_event(&mut wake)).await;
        assert!(hour.is_err(), "no wake at all");
    }
}
