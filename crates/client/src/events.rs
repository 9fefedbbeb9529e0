//! The account's event stream (docs/api.md "Event stream"): server-sent
//! events read frame by frame from a streaming answer. A small reader of
//! its own rather than an SSE crate: it needs only `id:`, `event:` and
//! `data:`, over the SDK's one HTTP client stack (rustls with *ring*).

use std::time::Duration;

use reqwest::{Method, header};
use serde_json::Value;

pub use sealpost_wire::StreamFrame;

use crate::{Client, ClientError, Result};

/// A stream sends a comment at least every 15 seconds; three missed in a
/// row mean the connection is gone.
const READ_TIMEOUT: Duration = Duration::from_secs(45);
/// Longest frame this reader holds; the service's are far smaller.
const MAX_FRAME: usize = 1024 * 1024;

/// One event from the stream.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamedEvent {
    /// The position after this event: pass it to
    /// [`Client::follow_events`] to resume after it.
    pub id: String,
    /// The event type (`inbox.created`, ...), or [`StreamFrame::RESYNC`]:
    /// events were missed (the resume id was older than the events kept);
    /// read the state again, the stream goes on from now.
    pub kind: String,
    /// Ids only.
    pub payload: Value,
}

/// One frame's fields (SSE): the last `id:`, the `event:`, the `data:`
/// lines joined with newlines (`None` when the frame had none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RawFrame {
    pub(crate) id: Option<String>,
    pub(crate) event: Option<String>,
    pub(crate) data: Option<String>,
}

/// Parses one frame's text (without the blank line that ends it).
pub(crate) fn parse_frame(text: &str) -> RawFrame {
    let mut frame = RawFrame::default();
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => frame.id = Some(value.to_owned()),
            "event" => frame.event = Some(value.to_owned()),
            "data" => match &mut frame.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => frame.data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
    frame
}

/// The end of the first frame in `buffer`: (where its text ends, where the
/// next frame starts).
fn frame_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let mut at = 0;
    while at + 1 < buffer.len() {
        match &buffer[at..] {
            [b'\n', b'\n', ..] => return Some((at, at + 2)),
            [b'\r', b'\n', b'\r', b'\n', ..] => return Some((at, at + 4)),
            _ => at += 1,
        }
    }
    None
}

/// An open event stream. Dropping it closes the connection.
pub struct EventStream {
    response: reqwest::Response,
    buffer: Vec<u8>,
    last_id: Option<String>,
}

impl EventStream {
    /// The id to resume from after a disconnect: the last `id:` the
    /// service sent (a stream started now sends its position first).
    #[must_use]
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The next event; `None` when the service ended the stream (resume
    /// with [`Self::last_event_id`]). Heartbeats are skipped.
    pub async fn next_event(&mut self) -> Result<Option<StreamedEvent>> {
        loop {
            let Some(frame) = self.next_frame().await? else {
                return Ok(None);
            };
            if let Some(id) = &frame.id {
                self.last_id = Some(id.clone());
            }
            let Some(data) = frame.data else { continue };
            let parsed: StreamFrame = serde_json::from_str(&data)?;
            return Ok(Some(StreamedEvent {
                id: frame
                    .id
                    .or_else(|| self.last_id.clone())
                    .unwrap_or_default(),
                kind: parsed.kind,
                payload: parsed.payload,
            }));
        }
    }

    async fn next_frame(&mut self) -> Result<Option<RawFrame>> {
        loop {
            if let Some((end, next)) = frame_end(&self.buffer) {
                let text = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
                self.buffer.drain(..next);
                return Ok(Some(parse_frame(&text)));
            }
            match self.response.chunk().await? {
                Some(chunk) => {
                    self.buffer.extend_from_slice(&chunk);
                    if self.buffer.len() > MAX_FRAME {
                        return Err(ClientError::Decode(serde::de::Error::custom(
                            "an event stream frame is over 1 MiB",
                        )));
                    }
                }
                None => return Ok(None),
            }
        }
    }
}

impl Client {
    /// `GET /events/stream` (any bearer): follows the account's events in
    /// commit order, from just after `last_event_id` (an id a stream
    /// handed out), or from now. A device credential sees its own
    /// addresses' events. Fails with `invalid_field` for an id this
    /// service never handed out, `rate_limited` past 5 streams per account.
    pub async fn follow_events(&self, last_event_id: Option<&str>) -> Result<EventStream> {
        // A client of its own: the SDK's request timeout would cut a stream.
        let http = reqwest::Client::builder()
            .user_agent(concat!("sealpost-client/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(crate::CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .build()?;
        let mut request = http
            .request(Method::GET, format!("{}/events/stream", self.base_url))
            .header(header::ACCEPT, "text/event-stream");
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        let response = request.send().await?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(header::RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let body = response.bytes().await?;
            return Err(ClientError::from_response(
                status.as_u16(),
                retry_after.as_deref(),
                &body,
            ));
        }
        Ok(EventStream {
            response,
            buffer: Vec::new(),
            last_id: last_event_id.map(str::to_owned),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_read_their_fields_and_skip_comments() {
        let frame = parse_frame(
            "id: ZTEuMg\nevent: inbox.created\ndata: {\"type\":\"inbox.created\",\"payload\":{}}",
        );
        assert_eq!(frame.id.as_deref(), Some("ZTEuMg"));
        assert_eq!(frame.event.as_deref(), Some("inbox.created"));
        assert_eq!(
            frame.data.as_deref(),
            Some("{\"type\":\"inbox.created\",\"payload\":{}}")
        );
        assert_eq!(parse_frame(": keep-alive"), RawFrame::default());
        let only_id = parse_frame("id: abc");
        assert_eq!((only_id.id.as_deref(), only_id.data), (Some("abc"), None));
        let joined = parse_frame("data: one\r\ndata:two\r\nretry: 5");
        assert_eq!(joined.data.as_deref(), Some("one\ntwo"));
    }

    #[test]
    fn frames_end_at_a_blank_line_of_either_kind() {
        assert_eq!(frame_end(b"id: a\n\nid: b"), Some((5, 7)));
        assert_eq!(frame_end(b"id: a\r\n\r\n"), Some((5, 9)));
        assert_eq!(frame_end(b"id: a\n"), None);
    }
}
