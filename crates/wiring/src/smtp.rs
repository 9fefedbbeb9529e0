//! The SMTP ingest: the SMTP session library on one side, the sealing ingest
//! on the other. RCPT asks the ingest whether an address takes mail; DATA is
//! answered 250 only after every copy is sealed and committed.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use async_trait::async_trait;
use sealpost_config::Config;
use sealpost_kernel::{Clock, StoreError};
use sealpost_messages::content::parse_mail_checked;
use sealpost_messages::ingest::{Checked, Ingest, IngestError, Recipient, RecipientCheck};
use sealpost_messages::store::RecipientRecord;
use sealpost_smtp_session::{
    CERT_CHECK_INTERVAL, DataMemory, Delivery, DeliveryOutcome, Drained, Envelope,
    RecipientDecision, SmtpConfig, Spool, Ticket, reloading_acceptor,
};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::Services;

/// Messages up to this size are parsed on the session's worker: that takes
/// tens of microseconds, less than handing the worker's other tasks to
/// another thread (`block_in_place`) costs, and the seal that follows runs
/// on the worker anyway (docs/benchmarks.md, 2026-11-29 noon: the ingest's
/// CPU a message fell from about 0.30 to 0.27 ms at 4 KB).
const INLINE_PARSE_MAX_BYTES: usize = 64 * 1024;

/// The ingest as the SMTP session sees it.
pub struct SealingDelivery {
    ingest: Ingest,
    /// Parses at once: one per core. More would only share the cores, and
    /// each parse holds its message's content in memory while it waits.
    parse_slots: tokio::sync::Semaphore,
}

impl SealingDelivery {
    pub fn new(ingest: Ingest) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        Self {
            ingest,
            parse_slots: tokio::sync::Semaphore::new(cores),
        }
    }
}

#[async_trait]
impl Delivery for SealingDelivery {
    async fn check_recipient(&self, address: &str) -> RecipientDecision {
        match self.ingest.check_recipient(address).await {
            // The record goes with the recipient to DATA, which then reads
            // nothing more about it before the commit (which re-checks it).
            Ok(Checked {
                check: RecipientCheck::Accept,
                record: Some(record),
            }) => RecipientDecision::AcceptWith(Ticket::new(record)),
            checked => recipient_decision(checked.map(|checked| checked.check)),
        }
    }

    async fn deliver(&self, envelope: &Envelope, data: &[u8]) -> DeliveryOutcome {
        // Parsing a large message takes a while: not on a worker that other
        // sessions wait for, and no more at once than there are cores.
        // The semaphore is never closed; were it, parse anyway rather than refuse mail.
        let parsed = if data.len() <= INLINE_PARSE_MAX_BYTES {
            parse_mail_checked(data)
        } else {
            let _slot = self.parse_slots.acquire().await.ok();
            off_the_runtime(|| parse_mail_checked(data))
        };
        let delivered = match parsed {
            Ok(parsed) => {
                self.ingest
                    .deliver_parsed(&recipients(envelope), &parsed, data.len())
                    .await
            }
            Err(limit) => Err(IngestError::Structure(limit)),
        };
        match delivered {
            Ok(delivered) => {
                tracing::info!(
                    copies = delivered.len(),
                    bytes = data.len(),
                    "mail sealed and committed"
                );
                DeliveryOutcome::Accepted
            }
            Err(error) => delivery_refusal(error, data.len()),
        }
    }
}

/// The envelope's recipients, with the records RCPT accepted them on.
fn recipients(envelope: &Envelope) -> Vec<Recipient> {
    envelope
        .recipients
        .iter()
        .enumerate()
        .map(|(index, address)| {
            let checked = envelope
                .tickets
                .get(index)
                .and_then(Option::as_ref)
                .and_then(Ticket::get::<Box<RecipientRecord>>);
            match checked {
                Some(record) => Recipient::Checked(record.clone()),
                None => Recipient::Address(address.clone()),
            }
        })
        .collect()
}

/// The one text of every refusal of an address that exists, at RCPT
/// (550 5.7.1 for good: no key, account suspended, own domain refused;
/// 452 4.2.2 for now: allowance used up, storage failing) and at DATA: a
/// sender learns the reply's class, never which of these it is.
pub const RECIPIENT_REFUSED: &str = "this address does not accept mail";

/// The answer to RCPT for what the ingest found.
fn recipient_decision(check: Result<RecipientCheck, StoreError>) -> RecipientDecision {
    match check {
        Ok(RecipientCheck::Accept) => RecipientDecision::Accept,
        Ok(RecipientCheck::Unknown) => RecipientDecision::UnknownAddress,
        Ok(RecipientCheck::NoKey | RecipientCheck::Suspended | RecipientCheck::DomainRefused) => {
            RecipientDecision::Refused(RECIPIENT_REFUSED.into())
        }
        // 452 4.2.2: the used-up allowance and the full storage alike.
        Ok(RecipientCheck::OverAllowance | RecipientCheck::StorageFull) => {
            RecipientDecision::TryLater(RECIPIENT_REFUSED.into())
        }
        Err(error) => {
            tracing::warn!(%error, "recipient check failed");
            RecipientDecision::TryLater(RECIPIENT_REFUSED.into())
        }
    }
}

/// The answer to DATA for a delivery of `bytes` that failed with `error`.
fn delivery_refusal(error: IngestError, bytes: usize) -> DeliveryOutcome {
    match error {
        IngestError::Structure(limit) => {
            tracing::info!(%limit, bytes, "mail refused for its structure");
            // Counts and limits only: nothing of the message is echoed.
            let mut text = limit.to_string();
            if let Some(first) = text.get(..1) {
                text = first.to_uppercase() + text.get(1..).unwrap_or_default();
            }
            DeliveryOutcome::ExceedsLimits(text)
        }
        // Every recipient stopped taking mail between RCPT and the
        // commit (a copy for any other recipient would have made it 250).
        IngestError::Unknown => {
            tracing::info!("mail refused: its mailboxes were deleted after RCPT");
            DeliveryOutcome::MailboxGone("No such mailbox: the address was deleted".into())
        }
        IngestError::Suspended | IngestError::NoKey | IngestError::DomainRefused => {
            DeliveryOutcome::RecipientsRefused(RECIPIENT_REFUSED.into())
        }
        // Found when the recipient was read again at the commit: for now,
        // as RCPT would have answered (452 there, 451 after DATA).
        IngestError::OverAllowance { .. } | IngestError::StorageFull(_) => {
            tracing::info!("mail refused for now: the account is at a limit of its plan");
            DeliveryOutcome::TryLater(RECIPIENT_REFUSED.into())
        }
        error => {
            tracing::warn!(%error, "delivery failed; the client will retry");
            DeliveryOutcome::TryLater("temporary failure; try again later".into())
        }
    }
}

/// Runs CPU-heavy `work` without stalling the other tasks of this worker:
/// on a multi-threaded runtime (the ingest's) the worker first hands them
/// to another thread (`block_in_place`); on a current-thread runtime (some
/// tests) it simply runs.
fn off_the_runtime<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|handle| handle.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// A running SMTP ingest.
pub struct SmtpServer {
    pub addr: SocketAddr,
    /// `/metrics` (`SEALPOST_SMTP_METRICS_ADDR`), kept until the drain ends.
    pub metrics: Option<crate::metrics::ProcessMetrics>,
    serving: JoinHandle<Drained>,
    /// Sent to start the drain.
    drain: oneshot::Sender<()>,
}

impl SmtpServer {
    /// Stops at once: every session is cut.
    pub fn stop(self) {
        self.serving.abort();
    }

    /// Closes the listener, lets messages in DATA finish (at most the
    /// `SEALPOST_SMTP_DRAIN_SECS` given at start) and answers the other
    /// sessions 421 4.3.2; returns once every session ended.
    pub async fn drain(self) -> anyhow::Result<Drained> {
        let _ = self.drain.send(());
        self.serving.await.context("the SMTP server task failed")
    }
}

/// Wires the services (the schema is the API's to migrate; this only checks
/// the database answers), then serves SMTP on `listener`.
pub async fn start(
    config: &Config,
    clock: Arc<dyn Clock>,
    listener: TcpListener,
) -> anyhow::Result<SmtpServer> {
    // Before anything else: a spool others can reach is refused at once.
    check_spool_dir(config)?;
    // The ingest neither signs anyone in nor opens a webhook secret, so it
    // does not need the server key: without one it runs with a throwaway
    // key, and the key stays on the hosts that need it.
    let services = if config.server_keys.is_some() {
        Services::from_config(config, clock).await?
    } else {
        let mut config = config.clone();
        config.server_keys = Some(sealpost_seal::ServerKeys::new(
            sealpost_seal::random_bytes::<32>(),
            [],
        ));
        Services::from_config(&config, clock).await?
    };
    serve(services, config, listener).await
}

/// Creates the spool directory when missing; refuses one another user owns
/// or others may enter; warns when it is on tmpfs, where spooled messages
/// take memory.
fn check_spool_dir(config: &Config) -> anyhow::Result<()> {
    let dir = &config.smtp_spool_dir;
    let checked = sealpost_smtp_session::check_spool_dir(dir)
        .with_context(|| format!("SEALPOST_SMTP_SPOOL_DIR {}", dir.display()))?;
    if checked.on_tmpfs {
        tracing::warn!(
            dir = %dir.display(),
            budget_mib = config.smtp_spool_budget / (1024 * 1024),
            "the SMTP spool directory is on tmpfs: spooled messages take memory \
             (up to SEALPOST_SMTP_SPOOL_BUDGET); set SEALPOST_SMTP_SPOOL_DIR to a disk"
        );
    }
    Ok(())
}

/// The session settings: the library's defaults with the connection caps,
/// the DATA memory budget, the spool and STARTTLS of the configuration.
/// STARTTLS's files must load now; later changes are picked up as they come.
fn smtp_config(config: &Config, hostname: String) -> anyhow::Result<SmtpConfig> {
    let tls = config
        .smtp_tls
        .as_ref()
        .map(|files| {
            reloading_acceptor(&files.cert, &files.key, CERT_CHECK_INTERVAL).with_context(|| {
                format!(
                    "loading SEALPOST_SMTP_TLS_CERT {} and SEALPOST_SMTP_TLS_KEY {}",
                    files.cert.display(),
                    files.key.display()
                )
            })
        })
        .transpose()?;
    Ok(SmtpConfig {
        tls,
        max_sessions: config.smtp_max_sessions,
        max_sessions_per_ip: config.smtp_max_sessions_per_ip,
        max_sessions_per_ipv4_24: config.smtp_max_sessions_per_ipv4_24,
        max_sessions_per_ipv6_48: config.smtp_max_sessions_per_ipv6_48,
        reserved_percent: config.smtp_reserved_share,
        known_senders: config.smtp_known_senders,
        known_sender_for: config.smtp_known_sender_for,
        mail_deadline: config.smtp_mail_deadline,
        connections_per_ip_per_minute: config.smtp_connect_rate,
        data_memory: DataMemory::new(config.smtp_data_memory),
        spool: Some(Spool::new(
            config.smtp_spool_dir.clone(),
            config.smtp_spool_threshold,
            config.smtp_spool_budget,
        )),
        ..SmtpConfig::new(hostname)
    })
}

/// Recovers what a crashed ingest left behind, then serves SMTP on `listener`.
async fn serve(
    services: Services,
    config: &Config,
    listener: TcpListener,
) -> anyhow::Result<SmtpServer> {
    let recovered = services
        .blob_recovery
        .run()
        .await
        .context("recovering pending blobs")?;
    if recovered > 0 {
        tracing::info!(
            recovered,
            "removed blobs of deliveries that never committed"
        );
    }
    let hostname = config
        .domains
        .first()
        .cloned()
        .unwrap_or_else(|| "localhost".into());
    let smtp = smtp_config(config, hostname)?;
    if let Some(spool) = &smtp.spool {
        // Left by a crash: ciphertext whose key died with that process.
        let cleared = spool
            .clear_leftovers()
            .with_context(|| format!("clearing the spool {}", spool.dir.display()))?;
        if cleared > 0 {
            tracing::info!(cleared, "removed spool files of messages never delivered");
        }
    }
    let smtp = Arc::new(smtp);
    let addr = listener.local_addr().context("reading the bound address")?;
    let metrics =
        crate::metrics::start(config.operations.smtp_metrics_addr, &services.store).await?;
    let delivery: Arc<dyn Delivery> = Arc::new(SealingDelivery::new(services.ingest.clone()));
    let (drain, drain_asked) = oneshot::channel::<()>();
    let drain_for = config.operations.smtp_drain;
    let serving = tokio::spawn(async move {
        // Held while serving and draining: the ingest instance lock lives
        // with the services, and deliveries in flight still need them.
        let _services = services;
        // Only an explicit drain: a dropped handle leaves it serving.
        let asked = async move {
            if drain_asked.await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        sealpost_smtp_session::serve_until(listener, smtp, delivery, asked, drain_for).await
    });
    tracing::info!(%addr, "accepting SMTP");
    Ok(SmtpServer {
        addr,
        metrics,
        serving,
        drain,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of a refusal, and whether it is permanent (5xx).
    fn rcpt(check: Result<RecipientCheck, StoreError>) -> (bool, String) {
        match recipient_decision(check) {
            RecipientDecision::Refused(text) => (true, text),
            RecipientDecision::TryLater(text) => (false, text),
            other => panic!("not a refusal: {other:?}"),
        }
    }

    #[test]
    fn refusals_of_an_existing_address_share_one_text() {
        let keyless = rcpt(Ok(RecipientCheck::NoKey));
        let suspended = rcpt(Ok(RecipientCheck::Suspended));
        let domain = rcpt(Ok(RecipientCheck::DomainRefused));
        let over = rcpt(Ok(RecipientCheck::OverAllowance));
        let full = rcpt(Ok(RecipientCheck::StorageFull));
        let failing = rcpt(Err(StoreError::Unavailable("pool".into())));
        // The classes stay right: refused for good is 550, for now 452.
        for permanent in [&keyless, &suspended, &domain] {
            assert!(permanent.0, "{permanent:?}");
        }
        for temporary in [&over, &full, &failing] {
            assert!(!temporary.0, "{temporary:?}");
        }
        // One text: a sender cannot tell a suspension from a missing key,
        // nor a used-up allowance from a storage hiccup.
        for answer in [&keyless, &suspended, &domain, &over, &full, &failing] {
            assert_eq!(answer.1, RECIPIENT_REFUSED, "{answer:?}");
        }
        // After RCPT (suspended, keyless or refused since) DATA says the
        // same, in the same classes.
        for error in [
            IngestError::Suspended,
            IngestError::NoKey,
            IngestError::DomainRefused,
        ] {
            assert_eq!(
                delivery_refusal(error, 10),
                DeliveryOutcome::RecipientsRefused(RECIPIENT_REFUSED.into())
            );
        }
        let full = sealpost_plans::LimitError::StorageFull { limit: 1 };
        for error in [
            IngestError::OverAllowance {
                retry_after_seconds: 1,
            },
            IngestError::StorageFull(full),
        ] {
            assert_eq!(
                delivery_refusal(error, 10),
                DeliveryOutcome::TryLater(RECIPIENT_REFUSED.into())
            );
        }
        for word in ["suspend", "allowance", "plan", "key", "domain", "quota"] {
            assert!(!RECIPIENT_REFUSED.to_lowercase().contains(word), "{word}");
        }
        assert_eq!(
            recipient_decision(Ok(RecipientCheck::Unknown)),
            RecipientDecision::UnknownAddress
        );
    }
}
