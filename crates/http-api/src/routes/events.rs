//! `GET /events/stream`: the account's events as server-sent events
//! (docs/api.md "Event stream"), in commit order, resumable with
//! `Last-Event-ID`.
//!
//! A stream holds one page of frames at most: it reads the next page from
//! PostgreSQL only when the client has taken the last one, so a slow reader
//! costs a page of memory, not a backlog. It reads again when this
//! process's listener says the account has new events, and on a slow timer
//! besides (another process's commit whose notification was lost still
//! arrives). Idle, it sends a comment line every [`HEARTBEAT`] and checks
//! that its credential still holds.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use actix_web::web::{Bytes, Data};
use actix_web::{HttpRequest, HttpResponse};
use sealpost_activity::{StreamEvent, StreamRead};
use sealpost_kernel::{AccountId, DeviceId, StreamPosition};
use sealpost_wire as wire;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::time::Instant;

use crate::auth::{Authenticated, bearer_token};
use crate::error::ApiError;
use crate::state::AppState;

/// Streams one account may hold open at once in one API process.
pub const STREAMS_PER_ACCOUNT: usize = 5;
/// Longest silence on an open stream: a comment line then, so proxies keep
/// the connection, and the slow re-read.
pub const HEARTBEAT: Duration = Duration::from_secs(15);
/// The header a reconnecting client sends (SSE).
const LAST_EVENT_ID: &str = "Last-Event-ID";

/// The streams open per account in this process.
pub struct StreamSlots {
    open: Mutex<HashMap<AccountId, usize>>,
    per_account: usize,
}

impl StreamSlots {
    pub fn new(per_account: usize) -> Self {
        Self {
            open: Mutex::new(HashMap::new()),
            per_account,
        }
    }

    /// One slot of `account`'s, held until the guard drops (the client went
    /// away); `None` when all are taken.
    fn take(self: &Arc<Self>, account: &AccountId) -> Option<Slot> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(account.clone()).or_default();
        if *count >= self.per_account {
            return None;
        }
        *count += 1;
        Some(Slot {
            slots: Arc::clone(self),
            account: account.clone(),
        })
    }
}

struct Slot {
    slots: Arc<StreamSlots>,
    account: AccountId,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self
            .slots
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.account) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.account);
            }
        }
    }
}

/// One SSE frame: `id:` (the position after it), `event:` and `data:`.
fn frame(position: StreamPosition, kind: &str, payload: serde_json::Value) -> Bytes {
    let data = wire::StreamFrame {
        kind: kind.to_owned(),
        payload,
    };
    let data = serde_json::to_string(&data).unwrap_or_else(|_| "{}".to_owned());
    Bytes::from(format!(
        "id: {}\nevent: {kind}\ndata: {data}\n\n",
        position.encode()
    ))
}

fn event_frame(event: StreamEvent) -> Bytes {
    frame(event.position, event.kind.as_str(), event.payload)
}

/// An open stream's state between two frames.
struct Follow {
    state: Data<AppState>,
    account: AccountId,
    device: Option<DeviceId>,
    token: String,
    position: StreamPosition,
    pending: VecDeque<Bytes>,
    woken: broadcast::Receiver<String>,
    next_heartbeat: Instant,
    _slot: Slot,
}

impl Follow {
    /// The next chunk to send; `None` ends the stream (the client
    /// reconnects with its `Last-Event-ID`).
    async fn next_chunk(&mut self) -> Option<Bytes> {
        loop {
            if let Some(chunk) = self.pending.pop_front() {
                return Some(chunk);
            }
            let read = self
                .state
                .events
                .after(&self.account, self.device.clone(), self.position)
                .await;
            match read {
                Ok(StreamRead::Events(events)) if !events.is_empty() => {
                    if let Some(last) = events.last() {
                        self.position = last.position;
                    }
                    self.pending.extend(events.into_iter().map(event_frame));
                    continue;
                }
                Ok(StreamRead::Events(_)) => {}
                Ok(StreamRead::Expired) => {
                    let head = self.state.events.head().await.ok()?;
                    self.position = head;
                    self.pending.push_back(frame(
                        head,
                        wire::StreamFrame::RESYNC,
                        serde_json::json!({}),
                    ));
                    continue;
                }
                Err(error) => {
                    tracing::warn!(%error, "an event stream could not read; closing it");
                    return None;
                }
            }
            if !self.idle().await {
                return None;
            }
            if Instant::now() >= self.next_heartbeat {
                self.next_heartbeat = Instant::now() + HEARTBEAT;
                return Some(Bytes::from_static(b": keep-alive\n\n"));
            }
        }
    }

    /// Waits for a new event of the account or the heartbeat; at the
    /// heartbeat, checks the credential once more. False: stop.
    async fn idle(&mut self) -> bool {
        let account = self.account.as_str().to_owned();
        let woken = &mut self.woken;
        let notified = tokio::time::timeout_at(self.next_heartbeat, async {
            loop {
                match woken.recv().await {
                    Ok(id) if id == account => return,
                    Ok(_) => continue,
                    // Missed some: read again rather than risk missing ours.
                    Err(RecvError::Lagged(_)) => return,
                    // No listener: the heartbeat's read goes on.
                    Err(RecvError::Closed) => std::future::pending::<()>().await,
                }
            }
        })
        .await;
        if notified.is_ok() {
            return true;
        }
        // A credential revoked, a device removed, an account suspended:
        // the stream ends with it.
        match self.state.accounts.authenticate(&self.token).await {
            Ok(found) => !found.suspended && found.caller.account() == &self.account,
            Err(_) => false,
        }
    }
}

/// The account's events as server-sent events, in commit order.
///
/// Each frame: `id:` (the position; send it back as `Last-Event-ID` to
/// resume), `event:` (the type) and `data:` `{type, payload}`, payloads ids
/// only. A stream without `Last-Event-ID` starts now, with a frame holding
/// only its `id:`. A `Last-Event-ID` older than the events kept (24 hours)
/// gets a `resync` frame, then the stream goes on from now. A comment line
/// every 15 seconds keeps proxies from closing it. A device credential
/// sees only the events about itself or the addresses assigned to it.
/// An account holds at most 5 streams open at once: the next is 429
/// `rate_limited`.
#[utoipa::path(get, path = "/events/stream", operation_id = "stream_events", tag = "events", security(("bearer" = [])),
    params(("Last-Event-ID" = Option<String>, Header, description = "The `id:` of the last frame received, to resume after it.")),
    responses(
        (status = 200, content_type = "text/event-stream", body = wire::StreamFrame,
            description = "Server-sent events; each frame's `data:` is one `StreamFrame`."),
        (status = 400, body = wire::ErrorBody, description = "`Last-Event-ID` is not one this service handed out")))]
pub async fn stream(
    state: Data<AppState>,
    caller: Authenticated,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let resume = match req.headers().get(LAST_EVENT_ID) {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(StreamPosition::decode)
                .ok_or_else(|| {
                    ApiError::invalid_field(
                        LAST_EVENT_ID,
                        "not a stream id this service handed out",
                    )
                })?,
        ),
    };
    let slot = state.event_streams.take(caller.account()).ok_or_else(|| {
        ApiError::rate_limited_because(
            HEARTBEAT.as_secs(),
            format!("at most {STREAMS_PER_ACCOUNT} event streams per account are open at once"),
        )
    })?;
    // Subscribe before the first read, so a commit in between still wakes.
    let woken = state.new_events.subscribe();
    let mut pending = VecDeque::new();
    let position = match resume {
        Some(position) => position,
        None => {
            let head = state.events.head().await?;
            pending.push_back(Bytes::from(format!("id: {}\n\n", head.encode())));
            head
        }
    };
    let follow = Follow {
        account: caller.account().clone(),
        device: caller.own_device().cloned(),
        token: bearer_token(&req)?,
        position,
        pending,
        woken,
        next_heartbeat: Instant::now() + HEARTBEAT,
        _slot: slot,
        state,
    };
    let body = futures_util::stream::unfold(follow, async |mut follow| {
        let chunk = follow.next_chunk().await?;
        Some((Ok::<_, std::convert::Infallible>(chunk), follow))
    });
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("Cache-Control", "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(body))
}
