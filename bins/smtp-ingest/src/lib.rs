//! Wiring for `sealpost-smtp`: the SMTP session library on one side, the
//! sealing ingest and the PostgreSQL store on the other. RCPT asks the ingest
//! whether an address takes mail; DATA is answered 250 only after every
//! copy is sealed and committed.

use std::sync::Arc;

use anyhow::Context;
use async_trait::async_trait;
use sealpost_blobs_fs::FsBlobStore;
use sealpost_config::Config;
use sealpost_kernel::Clock;
use sealpost_messages::ingest::{Ingest, RecipientCheck};
use sealpost_smtp_session::{Delivery, DeliveryOutcome, Envelope, RecipientDecision, SmtpConfig};
use sealpost_store_pg::PgStore;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The ingest as the SMTP session sees it.
pub struct SealingDelivery {
    ingest: Ingest,
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
            Err(error) => {
                tracing::warn!(%error, "recipient check failed");
                RecipientDecision::TryLater("temporary failure; try again later".into())
            }
        }
    }

    async fn deliver(&self, envelope: &Envelope, data: &[u8]) -> DeliveryOutcome {
        match self.ingest.deliver(&envelope.recipients, data).await {
            Ok(delivered) => {
                tracing::info!(
                    copies = delivered.len(),
                    bytes = data.len(),
                    "mail sealed and committed"
                );
                DeliveryOutcome::Accepted
            }
            Err(error) => {
                tracing::warn!(%error, "delivery failed; the client will retry");
                DeliveryOutcome::TryLater("temporary failure; try again later".into())
            }
        }
    }
}

pub struct Running {
    pub addr: std::net::SocketAddr,
    serving: JoinHandle<()>,
}

impl Running {
    pub fn stop(self) {
        self.serving.abort();
    }

    pub async fn wait(self) -> anyhow::Result<()> {
        self.serving.await.context("SMTP server task failed")
    }
}

/// Connects, recovers what a crash left behind, and serves SMTP on `listener`.
/// The schema is the API's to migrate; this process only checks it is there.
pub async fn start(
    config: &Config,
    clock: Arc<dyn Clock>,
    listener: TcpListener,
) -> anyhow::Result<Running> {
    let store = PgStore::connect(&config.database_url, 16).context("connecting to the database")?;
    store.ping().await.context("reaching the database")?;
    let blobs = Arc::new(
        FsBlobStore::open(&config.blob_dir)
            .await
            .with_context(|| format!("opening SEALPOST_BLOB_DIR {}", config.blob_dir.display()))?,
    );
    let ingest = Ingest::new(
        Arc::new(store.clone()),
        blobs,
        clock,
        config.domains.clone(),
    );
    // Held while serving: other processes' recovery leaves our deliveries be.
    let instance_lock = store
        .hold_instance_lock(ingest.instance())
        .await
        .context("taking the ingest instance lock")?;
    let recovered = ingest.recover().await.context("recovering pending blobs")?;
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
    let smtp = Arc::new(SmtpConfig::new(hostname));
    let addr = listener.local_addr().context("reading the bound address")?;
    let delivery: Arc<dyn Delivery> = Arc::new(SealingDelivery { ingest });
    let serving = tokio::spawn(async move {
        let _alive = instance_lock;
        sealpost_smtp_session::serve(listener, smtp, delivery).await;
    });
    tracing::info!(%addr, "accepting SMTP");
    Ok(Running { addr, serving })
}
