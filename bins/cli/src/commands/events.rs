//! `events follow`: the account's event stream, one line per event.

use std::time::Duration;

use anyhow::Result;
use sealpost_client::events::StreamedEvent;

use super::Ctx;
use crate::escape;

/// How long to wait before reconnecting a stream the service ended.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// One line: id, type, then the payload's fields as `key=value`.
fn line(event: &StreamedEvent) -> String {
    let mut text = format!("{} {}", event.id, event.kind);
    if let Some(fields) = event.payload.as_object() {
        for (key, value) in fields {
            let value = match value {
                serde_json::Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            text.push_str(&format!(" {key}={value}"));
        }
    }
    escape::line(&text).into_owned()
}

/// Follows the stream until interrupted, resuming after the last id seen
/// whenever the service ends the connection.
pub async fn follow(ctx: &Ctx, after: Option<String>) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    let mut last = after;
    loop {
        let mut stream = client.follow_events(last.as_deref()).await?;
        while let Some(event) = stream.next_event().await? {
            outln!("{}", line(&event));
        }
        last = stream.last_event_id().map(str::to_owned).or(last);
        tokio::time::sleep(RECONNECT_AFTER).await;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_line_holds_the_id_type_and_payload_ids() {
        let event = StreamedEvent {
            id: "ZTEuMg".to_owned(),
            kind: "inbox.assigned".to_owned(),
            payload: json!({ "workerId": "wkr_a1", "inboxId": "ibx_b2" }),
        };
        assert_eq!(
            line(&event),
            "ZTEuMg inbox.assigned inboxId=ibx_b2 workerId=wkr_a1"
        );
    }
}
