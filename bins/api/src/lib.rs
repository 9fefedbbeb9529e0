//! Wiring for `sealpost-api`: the PostgreSQL store into the domain services,
//! the services into the HTTP layer, plus the background sweeps. The binary
//! and the integration tests start the service through [`start`], so tests
//! run exactly what production runs.

use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use sealpost_accounts::Accounts;
use sealpost_activity::ActivityLog;
use sealpost_addresses::Addresses;
use sealpost_billing::{Billing, PaymentProvider, ProviderId, SandboxProvider};
use sealpost_billing_providers::{BtcpayConfig, BtcpayProvider, StripeConfig, StripeProvider};
use sealpost_blobs_fs::FsBlobStore;
use sealpost_config::Config;
use sealpost_http_api::rate_limit::EdgeLimiter;
use sealpost_http_api::{AppState, HealthProbe};
use sealpost_kernel::{Clock, StoreError};
use sealpost_messages::ingest::Ingest;
use sealpost_messages::mailbox::Mailbox;
use sealpost_messages::send::{MailRelay, Outbox};
use sealpost_messages::store::BlobStore;
use sealpost_outbound_mail::{DkimSettings, SmtpRelay};
use sealpost_pairing::Devices;
use sealpost_store_pg::{MailNotifier, PgStore};
use sealpost_subscriptions::Subscriptions;
use sealpost_webhook_http::{WebhookHttp, WebhookHttpConfig};
use sealpost_webhooks::delivery::AttemptOutcome;
use sealpost_webhooks::service::{
    AttemptRecord, Sender, WebhookAlerts, WebhookTransport, Webhooks,
};
use tokio::task::JoinHandle;

/// How often expired challenges and sessions are swept, and idle rate-limit keys forgotten.
const SWEEP_EVERY: Duration = Duration::from_secs(60 * 60);

struct PgHealth(PgStore);

impl HealthProbe for PgHealth {
    fn ping(&self) -> Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + '_>> {
        Box::pin(self.0.ping())
    }
}

/// A running API: its address and the handles to stop it.
pub struct Running {
    pub addr: SocketAddr,
    server: actix_web::dev::ServerHandle,
    serving: JoinHandle<std::io::Result<()>>,
    jobs: Vec<JoinHandle<()>>,
    /// Kept alive while serving; dropping it releases the lock.
    _instance_lock: sealpost_store_pg::InstanceLock,
}

impl Running {
    /// Waits until the server stops by itself (it does not on its own; see `stop`).
    pub async fn wait(self) -> anyhow::Result<()> {
        let result = self.serving.await.context("server task failed")?;
        self.jobs.iter().for_each(JoinHandle::abort);
        result.context("server failed")
    }

    /// Graceful stop: in-flight requests finish.
    pub async fn stop(self) {
        self.server.stop(true).await;
        self.jobs.iter().for_each(JoinHandle::abort);
        let _ = self.serving.await;
    }
}

/// Migrates the database, connects, and serves on `listener`.
/// How to run: HTTP worker threads, and whether the background jobs (hourly
/// sweeps, the webhook sender) run. Tests drive the jobs themselves.
#[derive(Clone, Copy, Debug)]
pub struct StartOptions {
    pub workers: usize,
    pub background_jobs: bool,
}

pub async fn start(
    config: &Config,
    clock: Arc<dyn Clock>,
    listener: TcpListener,
    options: StartOptions,
) -> anyhow::Result<Running> {
    let applied = sealpost_store_pg::migrate(&config.database_url)
        .await
        .context("migrating the database")?;
    tracing::info!(applied, "database migrated");
    let store = PgStore::connect(&config.database_url, 16).context("connecting to the database")?;
    let rate = NonZeroU32::new(config.edge_rate_per_minute)
        .context("SEALPOST_EDGE_RATE must be above 0")?;
    let limiter = Arc::new(EdgeLimiter::per_minute(rate));
    let blobs: Arc<dyn BlobStore> = Arc::new(
        FsBlobStore::open(&config.blob_dir)
            .await
            .with_context(|| format!("opening SEALPOST_BLOB_DIR {}", config.blob_dir.display()))?,
    );
    let notifier = MailNotifier::start(config.database_url.clone());
    // `POST /messages` writes blobs too: hold this process's instance lock
    // so other processes' recovery leaves its deliveries in flight alone.
    let ingest = Ingest::new(
        Arc::new(store.clone()),
        blobs.clone(),
        clock.clone(),
        config.domains.clone(),
    );
    let instance_lock = store
        .hold_instance_lock(ingest.instance())
        .await
        .context("taking the ingest instance lock")?;
    let state = AppState {
        accounts: Accounts::new(Arc::new(store.clone()), clock.clone()),
        devices: Devices::new(Arc::new(store.clone()), clock.clone()),
        addresses: Addresses::new(
            Arc::new(store.clone()),
            clock.clone(),
            config.domains.clone(),
        ),
        activity: ActivityLog::new(Arc::new(store.clone()), clock.clone()),
        mailbox: Mailbox::new(Arc::new(store.clone()), blobs.clone(), clock.clone()),
        ingest,
        outbox: outbox(&store, config, &clock)?,
        new_mail: notifier.sender(),
        webhooks: Webhooks::new(Arc::new(store.clone()), clock.clone()),
        subscriptions: Subscriptions::new(Arc::new(store.clone()), clock.clone()),
        billing: billing(&store, config, &clock)?,
        service_domains: config.domains.clone(),
        health: Arc::new(PgHealth(store.clone())),
        limiter: limiter.clone(),
        clock: clock.clone(),
        support_key: config.support_key.clone(),
    };
    let addr = listener.local_addr().context("reading the bound address")?;
    let server = sealpost_http_api::serve(listener, state, options.workers)?;
    let handle = server.handle();
    let serving = tokio::spawn(server);
    let mut jobs = Vec::new();
    if options.background_jobs {
        jobs.push(tokio::spawn(sweep_forever(
            Sweeps::new(&store, &blobs, &clock),
            limiter,
        )));
        let sender = webhook_sender(&store, config, clock.clone())?;
        jobs.push(tokio::spawn(send_forever(sender)));
    }
    tracing::info!(%addr, "serving the API");
    Ok(Running {
        addr,
        server: handle,
        serving,
        jobs,
        _instance_lock: instance_lock,
    })
}

/// Sending through `SEALPOST_SMTP_RELAY`, DKIM-signed with
/// `SEALPOST_DKIM_KEY`; off (503 `feature_disabled`) without a relay.
pub fn outbox(store: &PgStore, config: &Config, clock: &Arc<dyn Clock>) -> anyhow::Result<Outbox> {
    let relay = match &config.smtp_relay {
        None => None,
        Some(url) => {
            let dkim = match &config.dkim_key_file {
                Some(path) => Some(DkimSettings {
                    selector: config.dkim_selector.clone(),
                    private_key_pem: std::fs::read_to_string(path)
                        .with_context(|| format!("reading SEALPOST_DKIM_KEY {}", path.display()))?,
                }),
                None => {
                    tracing::warn!("SEALPOST_DKIM_KEY is unset: sent mail is not DKIM-signed");
                    None
                }
            };
            let relay = SmtpRelay::new(&url.0, config.smtp_relay_timeout, dkim)
                .context("configuring the outbound relay")?;
            Some(Arc::new(relay) as Arc<dyn MailRelay>)
        }
    };
    Ok(Outbox::new(Arc::new(store.clone()), relay, clock.clone()))
}

/// Billing with the providers `config` configures: those with keys (the
/// sandbox when `SEALPOST_BILLING_SANDBOX` is on); those named in
/// `SEALPOST_BILLING_DISABLED` take no checkouts but still settle notices.
pub fn billing(
    store: &PgStore,
    config: &Config,
    clock: &Arc<dyn Clock>,
) -> anyhow::Result<Billing> {
    let switched_off = ProviderId::ALL
        .into_iter()
        .filter(|id| config.billing_disabled.iter().any(|off| off == id.as_str()));
    Ok(Billing::new(
        Arc::new(store.clone()),
        Arc::new(store.clone()),
        payment_providers(config)?,
        clock.clone(),
    )
    .switch_off(switched_off))
}

fn payment_providers(config: &Config) -> anyhow::Result<Vec<Arc<dyn PaymentProvider>>> {
    // Where a provider sends the payer back: a page of ours that says so.
    let back = format!("{}/billing/return", config.public_url);
    let mut providers: Vec<Arc<dyn PaymentProvider>> = Vec::new();
    if let Some(keys) = &config.stripe {
        let stripe = StripeProvider::new(StripeConfig {
            api_base: keys.api_url.clone(),
            ..StripeConfig::new(&keys.secret_key, &keys.webhook_secret, &back, &back)
        })
        .context("configuring the Stripe provider")?;
        providers.push(Arc::new(stripe));
    }
    if let Some(keys) = &config.btcpay {
        let btcpay = BtcpayProvider::new(BtcpayConfig {
            server_url: keys.server_url.clone(),
            api_key: keys.api_key.clone(),
            store_id: keys.store_id.clone(),
            webhook_secret: keys.webhook_secret.clone(),
            redirect_url: back.clone(),
        })
        .context("configuring the BTCPay provider")?;
        providers.push(Arc::new(btcpay));
    }
    if config.billing_sandbox {
        providers.push(Arc::new(SandboxProvider::new(&config.public_url)));
    }
    Ok(providers)
}

/// The hourly housekeeping every domain asks for.
pub struct Sweeps {
    accounts: Accounts,
    addresses: Addresses,
    billing: Billing,
    devices: Devices,
    activity: ActivityLog,
    mailbox: Mailbox,
    ingest: Ingest,
}

impl Sweeps {
    pub fn new(store: &PgStore, blobs: &Arc<dyn BlobStore>, clock: &Arc<dyn Clock>) -> Self {
        Self {
            accounts: Accounts::new(Arc::new(store.clone()), clock.clone()),
            // Deleting what a pause held needs no domain list.
            addresses: Addresses::new(Arc::new(store.clone()), clock.clone(), Vec::new()),
            // Lapses need no provider.
            billing: Billing::new(
                Arc::new(store.clone()),
                Arc::new(store.clone()),
                Vec::new(),
                clock.clone(),
            ),
            devices: Devices::new(Arc::new(store.clone()), clock.clone()),
            activity: ActivityLog::new(Arc::new(store.clone()), clock.clone()),
            mailbox: Mailbox::new(Arc::new(store.clone()), blobs.clone(), clock.clone()),
            ingest: Ingest::new(
                Arc::new(store.clone()),
                blobs.clone(),
                clock.clone(),
                Vec::new(),
            ),
        }
    }

    /// One pass; each sweep's failure is logged and the others still run.
    pub async fn run_once(&self) {
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
        match self.billing.release_stragglers().await {
            Ok(released) => tracing::info!(released, "released held mail of unpaused addresses"),
            Err(error) => tracing::warn!(%error, "releasing held mail failed"),
        }
        match self.delete_expired_pauses().await {
            Ok((addresses, devices)) => tracing::info!(
                addresses,
                devices,
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
        match self.mailbox.sweep().await {
            Ok((expired, blobs)) => tracing::info!(expired, blobs, "swept expired mail and blobs"),
            Err(error) => tracing::warn!(%error, "mail sweep failed"),
        }
        match self.ingest.recover().await {
            Ok(recovered) => tracing::info!(
                recovered,
                "removed blobs of deliveries that never committed"
            ),
            Err(error) => tracing::warn!(%error, "pending blob recovery failed"),
        }
    }

    /// At a pause's `deletesAt`, deletes the addresses and devices it still
    /// holds through their own services (mail, retired ids, events), then
    /// ends the pause. Their blobs go with the mail sweep that follows.
    async fn delete_expired_pauses(&self) -> anyhow::Result<(usize, usize)> {
        let (mut addresses, mut devices) = (0, 0);
        for (account, held) in self.billing.due_deletions().await? {
            for inbox in &held.addresses {
                match self.addresses.delete(&account, inbox).await {
                    Ok(()) => addresses += 1,
                    // Deleted meanwhile by its owner.
                    Err(sealpost_addresses::AddressError::NotFound) => {}
                    Err(error) => return Err(error.into()),
                }
            }
            for worker in &held.devices {
                match self.devices.remove(&account, worker).await {
                    Ok(()) => devices += 1,
                    Err(sealpost_pairing::DeviceError::NotFound) => {}
                    Err(error) => return Err(error.into()),
                }
            }
            self.billing.end_pause(&account).await?;
        }
        Ok((addresses, devices))
    }
}

async fn sweep_forever(sweeps: Sweeps, limiter: Arc<EdgeLimiter>) {
    let mut tick = tokio::time::interval(SWEEP_EVERY);
    loop {
        tick.tick().await;
        sweeps.run_once().await;
        limiter.forget_idle();
    }
}

/// Webhook attempts in flight at once, per API process (from claim until
/// the result is written).
const SEND_CONCURRENCY: usize = 128;
/// Pause when there was nothing to do (cut short when an attempt finishes).
const SEND_IDLE: Duration = Duration::from_millis(200);
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
        Arc::new(LoggedAlerts),
        clock,
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

/// The push adapter is not built yet; until it is, an auto-disabled webhook
/// is reported in the log (ids only) and on the endpoint's own status.
struct LoggedAlerts;

#[async_trait::async_trait]
impl WebhookAlerts for LoggedAlerts {
    async fn webhook_disabled(
        &self,
        account: &sealpost_kernel::AccountId,
        webhook: &sealpost_kernel::WebhookId,
    ) {
        tracing::warn!(%account, %webhook, "webhook switched off after three days of failures");
    }
}

/// Keeps up to `SEND_CONCURRENCY` attempts in flight: a slow or silent
/// receiver occupies one slot for at most its 10-second limit (and a failing
/// endpoint at most a couple of slots: see `in_flight_cap`) and never holds
/// back deliveries to the others. Finished attempts are written back in
/// batches, one transaction per batch, by a single writer task: each attempt
/// keeps its slot (and its lease) until its result is committed, so a crash
/// loses nothing (the lease runs out and the delivery is sent again).
/// Runs the production sender loop in the background (benchmarks use this).
pub fn spawn_webhook_sender(sender: Sender) -> JoinHandle<()> {
    tokio::spawn(send_forever(sender))
}

/// A finished attempt on its way to the writer, and where to say it is written.
type Finished = (AttemptRecord, tokio::sync::oneshot::Sender<bool>);

async fn send_forever(sender: Sender) {
    let sender = Arc::new(sender);
    let slots = Arc::new(tokio::sync::Semaphore::new(SEND_CONCURRENCY));
    let done = Arc::new(tokio::sync::Notify::new());
    let (finished, to_record) = tokio::sync::mpsc::channel::<Finished>(SEND_CONCURRENCY);
    // Stops with this loop (when its task is aborted).
    let writer = AbortOnDrop(tokio::spawn(record_forever(sender.clone(), to_record)));
    // Between rounds, never during one: a round cut short could drop
    // deliveries it had just leased (they would wait for the lease to end).
    let mut next_sweep = tokio::time::Instant::now();
    loop {
        if tokio::time::Instant::now() >= next_sweep {
            next_sweep += SWEEP_EVERY;
            if let Err(error) = sender.sweep().await {
                tracing::warn!(%error, "delivery log sweep failed");
            }
        }
        match send_round(&sender, &slots, &finished, &done).await {
            Ok(0) => {
                // Nothing due: wait for an attempt to finish (its endpoint
                // may have a free slot again) or for new work.
                let _ = tokio::time::timeout(SEND_IDLE, done.notified()).await;
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

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
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
