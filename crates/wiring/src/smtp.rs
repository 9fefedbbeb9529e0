//! The SMTP ingest: the SMTP session library on one side, the sealing ingest
//! on the other. RCPT asks the ingest whether an address takes mail; DATA is
//! answered 250 only after every copy is sealed and committed.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use async_trait::async_trait;
use sealpost_config::Config;
use sealpost_kernel::Clock;
use sealpost_messages::content::parse_mail_checked;
use sealpost_messages::ingest::{Ingest, IngestError, RecipientCheck};
use sealpost_smtp_session::{
    CERT_CHECK_INTERVAL, DataMemory, Delivery, DeliveryOutcome, Envelope, RecipientDecision,
    SmtpConfig, Spool, reloading_acceptor,
};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::Services;

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
            Ok(RecipientCheck::Accept) => RecipientDecision::Accept,
            Ok(RecipientCheck::Unknown) => RecipientDecision::UnknownAddress,
            Ok(RecipientCheck::NoKey) => {
                RecipientDecision::Refused("this address does not accept mail".into())
            }
            Ok(RecipientCheck::OverAllowance) => RecipientDecision::TryLater(
                "the mailbox owner's monthly allowance is used up".into(),
            ),
            Ok(RecipientCheck::Suspended) => RecipientDecision::Refused(
                "this mailbox's account is suspended; mail is refused".into(),
            ),
            Ok(RecipientCheck::DomainRefused) => RecipientDecision::Refused(
                "this domain's plan no longer includes own domains; mail is refused".into(),
            ),
            Err(error) => {
                tracing::warn!(%error, "recipient check failed");
                RecipientDecision::TryLater("temporary failure; try again later".into())
            }
        }
    }

    async fn deliver(&self, envelope: &Envelope, data: &[u8]) -> DeliveryOutcome {
        // Parsing a large message takes a while: not on a worker that other
        // sessions wait for, and no more at once than there are cores.
        // The semaphore is never closed; were it, parse anyway rather than refuse mail.
        let slot = self.parse_slots.acquire().await.ok();
        let parsed = off_the_runtime(|| parse_mail_checked(data));
        drop(slot);
        let delivered = match parsed {
            Ok(parsed) => {
                self.ingest
                    .deliver_parsed(&envelope.recipients, &parsed, data.len())
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
            Err(IngestError::Structure(limit)) => {
                tracing::info!(%limit, bytes = data.len(), "mail refused for its structure");
                // Counts and limits only: nothing of the message is echoed.
                let mut text = limit.to_string();
                if let Some(first) = text.get(..1) {
                    text = first.to_uppercase() + text.get(1..).unwrap_or_default();
                }
                DeliveryOutcome::ExceedsLimits(text)
            }
            // Every recipient stopped taking mail between RCPT and the
            // commit (a copy for any other recipient would have made it 250).
            Err(IngestError::Unknown) => {
                tracing::info!("mail refused: its mailboxes were deleted after RCPT");
                DeliveryOutcome::MailboxGone("No such mailbox: the address was deleted".into())
            }
            Err(IngestError::Suspended) => DeliveryOutcome::RecipientsRefused(
                "this mailbox's account is suspended; mail is refused".into(),
            ),
            Err(IngestError::NoKey) => {
                DeliveryOutcome::RecipientsRefused("this address does not accept mail".into())
            }
            Err(error) => {
                tracing::warn!(%error, "delivery failed; the client will retry");
                DeliveryOutcome::TryLater("temporary failure; try again later".into())
            }
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
    serving: JoinHandle<()>,
}

impl SmtpServer {
    pub fn stop(self) {
        self.serving.abort();
    }
}

/// Wires the services (the schema is the API's to migrate; this only checks
/// the database answers), then serves SMTP on `listener`.
pub async fn start(
    config: &Config,
    clock: Arc<dyn Clock>,
    listener: TcpListener,
) -> anyhow::Result<SmtpServer> {
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
        connections_per_ip_per_minute: config.smtp_connect_rate,
        data_memory: DataMemory::new(config.smtp_data_memory),
        spool: Some(Spool::new(
            config.smtp_spool_dir.clone(),
            config.smtp_spool_threshold,
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
    let delivery: Arc<dyn Delivery> = Arc::new(SealingDelivery::new(services.ingest.clone()));
    let serving = tokio::spawn(async move {
        // Held while serving: the ingest instance lock lives with the services.
        let _services = services;
        sealpost_smtp_session::serve(listener, smtp, delivery).await;
    });
    tracing::info!(%addr, "accepting SMTP");
    Ok(SmtpServer { addr, serving })
}
