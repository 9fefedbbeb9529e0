//! New-mail notifications: a commit batch runs one `pg_notify` whose payload
//! lists the addresses with new mail (comma-separated; more than one only
//! when the list outgrows a payload), PostgreSQL delivers it at commit, and
//! one LISTEN connection per process fans each address id out to the
//! requests waiting on it.
//!
//! The same connection listens for new events ([`EVENTS_CHANNEL`], sent by
//! a trigger on `events` at COMMIT, the account id as payload) and fans the
//! account ids out to the open event streams. A stream also reads on a
//! slow timer, so a notification lost while the listener reconnects only
//! delays it.

use std::time::Duration;

use diesel_async::RunQueryDsl;
use futures_util::StreamExt;
use tokio::sync::broadcast;

pub const MAIL_CHANNEL: &str = "sealpost_mail";
/// Named by the trigger of the migration `2026-11-28-000141_event_stream`.
pub const EVENTS_CHANNEL: &str = "sealpost_events";

/// Longest payload we send: PostgreSQL refuses 8,000 bytes and more.
const PAYLOAD_MAX: usize = 7_900;

/// The payloads naming `inboxes`, each under [`PAYLOAD_MAX`] bytes.
pub(crate) fn mail_payloads<'a>(addresses: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut payloads: Vec<String> = Vec::new();
    for address in addresses {
        match payloads.last_mut() {
            Some(last) if last.len() + 1 + address.len() <= PAYLOAD_MAX => {
                last.push(',');
                last.push_str(address);
            }
            _ => payloads.push(address.to_owned()),
        }
    }
    payloads
}

/// Fans notifications out to waiters; cheap to clone.
#[derive(Clone)]
pub struct MailNotifier {
    sender: broadcast::Sender<String>,
    events: broadcast::Sender<String>,
}

impl MailNotifier {
    /// Starts listening on its own connection; reconnects after failures.
    pub fn start(database_url: String) -> Self {
        let (sender, _) = broadcast::channel(1024);
        let (events, _) = broadcast::channel(1024);
        let notifier = Self { sender, events };
        let forward = notifier.sender.clone();
        let forward_events = notifier.events.clone();
        tokio::spawn(async move {
            loop {
                if let Err(error) = listen(&database_url, &forward, &forward_events).await {
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

    /// Account ids with newly committed events: the fan-out end.
    pub fn event_sender(&self) -> broadcast::Sender<String> {
        self.events.clone()
    }
}

async fn listen(
    database_url: &str,
    forward: &broadcast::Sender<String>,
    forward_events: &broadcast::Sender<String>,
) -> Result<(), diesel::result::Error> {
    let mut conn = crate::connect(database_url)
        .await
        .map_err(|error| diesel::result::Error::QueryBuilderError(Box::new(error)))?;
    for channel in [MAIL_CHANNEL, EVENTS_CHANNEL] {
        diesel::sql_query(format!("LISTEN {channel}"))
            .execute(&mut conn)
            .await?;
    }
    let mut notifications = std::pin::pin!(conn.notifications_stream());
    while let Some(notification) = notifications.next().await {
        let notification = notification?;
        if notification.channel == EVENTS_CHANNEL {
            // No receiver is fine: no stream of that account is open.
            let _ = forward_events.send(notification.payload);
            continue;
        }
        for address in notification.payload.split(',') {
            // No receiver is fine: nobody is waiting right now.
            let _ = forward.send(address.to_owned());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_name_every_address_once_and_stay_under_the_limit() {
        let addresses: Vec<String> = (0..1_000).map(|n| format!("ibx_{n:08}")).collect();
        let payloads = mail_payloads(addresses.iter().map(String::as_str));
        assert!(payloads.len() > 1);
        assert!(payloads.iter().all(|payload| payload.len() <= PAYLOAD_MAX));
        let named: Vec<&str> = payloads.iter().flat_map(|p| p.split(',')).collect();
        assert_eq!(
            named,
            addresses.iter().map(String::as_str).collect::<Vec<_>>()
        );
        assert_eq!(mail_payloads(["ibx_one"]), vec!["ibx_one".to_owned()]);
        assert!(mail_payloads([]).is_empty());
    }
}
