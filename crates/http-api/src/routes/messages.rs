//! The message endpoints (docs/api.md "Messages"), `POST /messages`, and the
//! long-poll wait.

use std::time::Duration;

use actix_web::HttpResponse;
use actix_web::http::header;
use actix_web::web::{Bytes, Data, Path, Query};
use sealpost_kernel::{AddressId, CommitCursor, Cursor, MessageId, PageLimits, PlanId};
use sealpost_messages::store::{Message, Reader, WaitFrom};
use sealpost_seal::b64;
use sealpost_wire as wire;
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;
use utoipa::IntoParams;

use crate::auth::{Authenticated, SessionCaller};
use crate::error::{ApiError, path_id};
use crate::json::{Json, parse_optional};
use crate::routes::activity::PageQuery;
use crate::state::AppState;

/// `POST /messages` bodies: a raw message of up to 25 MB, base64url-encoded.
pub const INBOUND_BODY_LIMIT: usize = 35 * 1024 * 1024;
/// The wait answers within 60 seconds at most (docs/api.md "Limits").
const MAX_WAIT_SECONDS: u64 = 60;

pub(crate) fn message_body(message: Message) -> wire::Message {
    wire::Message {
        id: message.id,
        address_id: message.address,
        received_at: message.received_at,
        read: message.read,
        size_bytes: message.size_bytes,
        key_epoch: message.key_epoch,
        content: message.content,
        folder: message.folder,
        starred: message.starred,
        outgoing: message.outgoing,
    }
}

pub(crate) fn reader(caller: &Authenticated) -> Reader {
    Reader {
        account: caller.account().clone(),
        device: caller.own_device().cloned(),
    }
}

async fn plan_of(state: &AppState, caller: &Authenticated) -> Result<PlanId, ApiError> {
    Ok(state.accounts.account(caller.account()).await?.plan)
}

/// An address's mail, newest first. Mail past the address's retention is never returned.
#[utoipa::path(get, path = "/inboxes/{id}/messages", operation_id = "list_inbox_messages", tag = "messages", security(("bearer" = [])),
    params(("id" = sealpost_kernel::AddressId, Path), PageQuery),
    responses((status = 200, body = wire::MessagePage), (status = 404, body = wire::ErrorBody)))]
pub async fn list(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
    query: Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let address = path_id::<AddressId>(&id)?;
    let request = query.request(PageLimits::STANDARD)?;
    let page = state
        .mailbox
        .list(&reader(&caller), &address, &request)
        .await?;
    Ok(HttpResponse::Ok().json(wire::MessagePage {
        messages: page.items.into_iter().map(message_body).collect(),
        next_cursor: page.next_cursor,
    }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// A cursor: only mail newer than it counts. Use `cursor` from the previous
    /// answer; `now` for mail arriving after this request starts; absent for
    /// any mail in the address (a fresh address: mail that arrived just before
    /// the wait is not missed).
    after: Option<String>,
    /// Seconds to wait, 1 to 60 (default 30).
    #[param(value_type = u32, required = false, minimum = 1, maximum = 60)]
    timeout: Option<String>,
}

/// Waits for mail newer than `after`: answers as soon as it lands, or 204 at the timeout.
#[utoipa::path(get, path = "/inboxes/{id}/messages/wait", operation_id = "wait_for_messages", tag = "messages", security(("bearer" = [])),
    params(("id" = sealpost_kernel::AddressId, Path), WaitQuery),
    responses((status = 200, body = wire::WaitBody), (status = 204, description = "nothing arrived in time"),
        (status = 404, body = wire::ErrorBody)))]
pub async fn wait(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
    query: Query<WaitQuery>,
) -> Result<HttpResponse, ApiError> {
    let address = path_id::<AddressId>(&id)?;
    let seconds = match query.timeout.as_deref() {
        None => 30,
        Some(text) => match text.parse::<u64>() {
            Ok(n) if (1..=MAX_WAIT_SECONDS).contains(&n) => n,
            _ => {
                return Err(ApiError::invalid_field(
                    "timeout",
                    "a whole number of seconds from 1 to 60",
                ));
            }
        },
    };
    // Waits follow commit order (`CommitCursor`): a message whose delivery
    // began before one already returned but committed after it still comes.
    // A list cursor is still taken: after its message's commit position.
    let after = match query.after.as_deref() {
        None | Some("") => WaitFrom::Start,
        Some("now") => state.mailbox.wait_from_now().await?,
        Some(text) => CommitCursor::decode(text)
            .map(WaitFrom::Committed)
            .or_else(|| Cursor::decode(text).map(WaitFrom::Received))
            .ok_or_else(|| {
                ApiError::invalid_field("after", "not a cursor this service handed out")
            })?,
    };
    let reader = reader(&caller);
    // Subscribe before looking, so mail committed in between still wakes us.
    let mut new_mail = state.new_mail.subscribe();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
    loop {
        let newer = state.mailbox.newer(&reader, &address, &after).await?;
        if let Some(last) = newer.last() {
            let cursor = last.position.encode();
            return Ok(HttpResponse::Ok().json(wire::WaitBody {
                messages: newer
                    .into_iter()
                    .map(|arrived| message_body(arrived.message))
                    .collect(),
                cursor,
            }));
        }
        let woken = tokio::time::timeout_at(deadline, async {
            loop {
                match new_mail.recv().await {
                    Ok(id) if id == address.as_str() => return,
                    Ok(_) => continue,
                    // Missed some: look again rather than risk missing ours.
                    Err(RecvError::Lagged(_)) => return,
                    Err(RecvError::Closed) => std::future::pending::<()>().await,
                }
            }
        })
        .await;
        if woken.is_err() {
            return Ok(HttpResponse::NoContent().finish());
        }
    }
}

/// One message. Counts against the plan's hourly object reads.
#[utoipa::path(get, path = "/messages/{id}", operation_id = "get_message", tag = "messages", security(("bearer" = [])),
    params(("id" = sealpost_kernel::MessageId, Path)),
    responses((status = 200, body = wire::MessageReply), (status = 404, body = wire::ErrorBody), (status = 429, body = wire::ErrorBody)))]
pub async fn get_one(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<MessageId>(&id)?;
    let plan = plan_of(&state, &caller).await?;
    let message = state.mailbox.get(&reader(&caller), plan, &id).await?;
    Ok(HttpResponse::Ok().json(wire::MessageReply {
        message: message_body(message),
    }))
}

/// An attachment's sealed bytes (binary box). Counts against the hourly object reads.
#[utoipa::path(get, path = "/messages/{id}/attachments/{index}", operation_id = "get_attachment", tag = "messages", security(("bearer" = [])),
    params(("id" = sealpost_kernel::MessageId, Path), ("index" = u32, Path)),
    responses((status = 200, content_type = "application/octet-stream", body = Vec<u8>),
        (status = 404, body = wire::ErrorBody, description = "no such attachment, or over 20 MB and not stored"),
        (status = 429, body = wire::ErrorBody)))]
pub async fn attachment(
    state: Data<AppState>,
    caller: Authenticated,
    path: Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, index) = path.into_inner();
    let id = path_id::<MessageId>(&id)?;
    let index: u32 = index.parse().map_err(|_| ApiError::not_found())?;
    let plan = plan_of(&state, &caller).await?;
    let bytes = state
        .mailbox
        .attachment(&reader(&caller), plan, &id, index)
        .await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "application/octet-stream"))
        .body(bytes))
}

/// Marks a message read (or unread with `read: false`). The body is optional.
#[utoipa::path(post, path = "/messages/{id}/read", tag = "messages", security(("bearer" = [])),
    params(("id" = sealpost_kernel::MessageId, Path)), request_body(content = Option<wire::ReadRequest>),
    responses((status = 204), (status = 404, body = wire::ErrorBody)))]
pub async fn mark_read(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<MessageId>(&id)?;
    let read = parse_optional::<wire::ReadRequest>(&body)?
        .and_then(|body| body.read)
        .unwrap_or(true);
    state.mailbox.mark_read(&reader(&caller), &id, read).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// The 200 newest messages across the calling device's addresses (device credential only).
#[utoipa::path(operation_id = "worker_messages", get, path = "/workers/messages", tag = "messages", security(("device" = [])),
    responses((status = 200, body = wire::MessageList), (status = 403, body = wire::ErrorBody, description = "device_required: the caller is not a device")))]
pub async fn device_messages(
    state: Data<AppState>,
    caller: Authenticated,
) -> Result<HttpResponse, ApiError> {
    caller.device()?;
    let messages = state.mailbox.device_messages(&reader(&caller)).await?;
    Ok(HttpResponse::Ok().json(wire::MessageList {
        messages: messages.into_iter().map(message_body).collect(),
    }))
}

/// Delivers a message outside SMTP: parsed and sealed exactly as SMTP mail is,
/// counted against the received-mail allowance, recorded as `message.received`.
#[utoipa::path(post, path = "/messages", operation_id = "store_inbound_message", tag = "messages", security(("session" = [])), request_body = wire::DeliverRequest,
    responses((status = 201, body = wire::Delivered), (status = 400, body = wire::ErrorBody, description = "invalid_field, invalid_key (address without publicKey)"),
        (status = 403, body = wire::ErrorBody, description = "plan_required: the address is on an own domain whose plan lost own domains more than 21 days ago; session_required"),
        (status = 404, body = wire::ErrorBody), (status = 413, body = wire::ErrorBody), (status = 429, body = wire::ErrorBody, description = "allowance used up")))]
pub async fn inbound(
    state: Data<AppState>,
    caller: SessionCaller,
    Json(body): Json<wire::DeliverRequest>,
) -> Result<HttpResponse, ApiError> {
    let address = AddressId::parse(&body.address_id)
        .map_err(|error| ApiError::invalid_id("inboxId", error))?;
    let raw = b64::decode(&body.raw)
        .map_err(|_| ApiError::invalid_field("raw", "expected base64url without padding"))?;
    let id = state
        .ingest
        .deliver_to_address(&caller.account, &address, &raw)
        .await?;
    Ok(HttpResponse::Created().json(wire::Delivered { message_id: id }))
}
