//! The SMTP ingest: the SMTP session library on one side, the sealing ingest
//! on the other. RCPT asks the ingest whether an address takes mail; DATA is
//! answered 250 only after every copy is sealed and committed.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use async_trait::async_trait;
use sealpost_config::Config;
use sealpost_kernel::Clock;
use sealpost_messages::ingest::{Ingest, RecipientCheck};
use sealpost_smtp_session::{Delivery, DeliveryOutcome, Envelope, RecipientDecision, SmtpConfig};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::Services;

/// The ingest as the SMTP session sees it.
pub struct SealingDelivery {
    ingest: Ingest,
}

impl SealingDelivery {
    pub fn new(ingest: Ingest) -> Self {
        Self { ingest }
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
    let services = Services::from_config(config, clock).await?;
    serve(services, config, listener).await
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
    let smtp = Arc::new(SmtpConfig::new(hostname));
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
