//! New-mail notifications: the message transaction runs `pg_notify` with the
//! address id, PostgreSQL delivers it at commit, and one LISTEN connection
//! per process fans it out to the requests waiting on that address.

use std::time::Duration;

use diesel_async::RunQueryDsl;
use futures_util::StreamExt;
use tokio::sync::broadcast;

pub const MAIL_CHANNEL: &str = "sealpost_mail";

/// Fans notifications out to waiters; cheap to clone.
#[derive(Clone)]
pub struct MailNotifier {
    sender: broadcast::Sender<String>,
}

impl MailNotifier {
    /// Starts listening on its own connection; reconnects after failures.
    pub fn start(database_url: String) -> Self {
        let (sender, _) = broadcast::channel(1024);
        let notifier = Self { sender };
        let forward = notifier.sender.clone();
        tokio::spawn(async move {
            loop {
                if let Err(error) = listen(&database_url, &forward).await {
                    tracing::warn!(%error, "mail notification listener failed; reconnecting");
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        notifier
    }

    /// Address ids with new mail, from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<String> {
        self.sender.subscribe()
    }

    /// The fan-out end, for whoever hands receivers out.
    pub fn sender(&self) -> broadcast::Sender<String> {
        self.sender.clone()
    }
}

async fn listen(
    database_url: &str,
    forward: &broadcast::Sender<String>,
) -> Result<(), diesel::result::Error> {
    let mut conn = crate::connect(database_url)
        .await
        .map_err(|error| diesel::result::Error::QueryBuilderError(Box::new(error)))?;
    diesel::sql_query(format!("LISTEN {MAIL_CHANNEL}"))
        .execute(&mut conn)
        .await?;
    let mut notifications = std::pin::pin!(conn.notifications_stream());
    while let Some(notification) = notifications.next().await {
        // No receiver is fine: nobody is waiting right now.
        let _ = forward.send(notification?.payload);
    }
    Ok(())
}
