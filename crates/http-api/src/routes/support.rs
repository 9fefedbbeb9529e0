//! The support endpoints (docs/api.md "Support"; session only). Writes answer
//! 503 `support_unavailable` while support has no key or is switched off.

use actix_web::HttpResponse;
use actix_web::web::{Data, Path};
use sealpost_kernel::{TicketId, TicketMessageId};
use sealpost_seal::b64;
use sealpost_support::rules::{HEADER_MAX_LEN, MESSAGE_MAX_LEN};
use sealpost_support::{BoxPair, NewMessage, NewTicket, PublicKey, Ticket, TicketMessage};
use sealpost_wire as wire;
use serde_json::Value;

use crate::auth::SupportCaller;
use crate::error::{ApiError, check_box_field, path_id};
use crate::json::Json;
use crate::state::AppState;

/// A ticket with the copy of its header the reader may open.
pub(crate) fn ticket_body(ticket: Ticket, for_staff: bool) -> wire::Ticket {
    wire::Ticket {
        id: ticket.id,
        status: ticket.status.as_str().into(),
        last_author: ticket.last_author.as_str().into(),
        created_at: ticket.created_at,
        updated_at: ticket.updated_at,
        closed_at: ticket.closed_at,
        unread: ticket.unread,
        header: if for_staff {
            ticket.header.for_staff
        } else {
            ticket.header.for_account
        },
    }
}

pub(crate) fn message_body(message: TicketMessage, for_staff: bool) -> wire::TicketMessage {
    wire::TicketMessage {
        id: message.id,
        author: message.author.as_str().into(),
        at: message.at,
        staff_key: message.staff_key.to_text(),
        sealed: if for_staff {
            message.boxes.for_staff
        } else {
            message.boxes.for_account
        },
    }
}

pub(crate) fn key(field: &str, text: &str) -> Result<PublicKey, ApiError> {
    PublicKey::parse(text).ok_or_else(|| ApiError::invalid_key(field))
}

pub(crate) fn mac(field: &str, text: &str) -> Result<[u8; 32], ApiError> {
    b64::decode_32(text)
        .map_err(|_| ApiError::invalid_field(field, "expected 32 bytes in base64url"))
}

pub(crate) fn pair(
    field: &str,
    for_staff: &Value,
    for_account: &Value,
    max_len: usize,
) -> Result<BoxPair, ApiError> {
    Ok(BoxPair {
        for_staff: check_box_field(&format!("{field}forStaff"), for_staff, max_len)?,
        for_account: check_box_field(&format!("{field}forAccount"), for_account, max_len)?,
    })
}

/// A ticket message as the account and staff both send it.
pub(crate) fn new_message(body: &wire::TicketMessageRequest) -> Result<NewMessage, ApiError> {
    Ok(NewMessage {
        id: message_id(&body.id)?,
        staff_key: key("staffKey", &body.staff_key)?,
        boxes: pair("", &body.for_staff, &body.for_account, MESSAGE_MAX_LEN)?,
    })
}

pub(crate) fn message_id(text: &str) -> Result<TicketMessageId, ApiError> {
    TicketMessageId::parse(text).map_err(|error| ApiError::invalid_id("id", error))
}

async fn current_key(state: &AppState) -> Result<Option<String>, ApiError> {
    Ok(state
        .support
        .availability()
        .await?
        .staff_key
        .map(|key| key.to_text()))
}

/// The account's tickets (newest first), whether support takes requests,
/// and the key to seal them to.
#[utoipa::path(get, path = "/support", operation_id = "support_overview", tag = "support", security(("session" = [])),
    responses((status = 200, body = wire::SupportOverview),
        (status = 403, body = wire::ErrorBody, description = "session_required")))]
pub async fn overview(
    state: Data<AppState>,
    caller: SupportCaller,
) -> Result<HttpResponse, ApiError> {
    let overview = state.support.overview(&caller.account).await?;
    Ok(HttpResponse::Ok().json(wire::SupportOverview {
        tickets: overview
            .tickets
            .into_iter()
            .map(|ticket| ticket_body(ticket, false))
            .collect(),
        available: overview.available,
        staff_key: overview.staff_key.map(|key| key.to_text()),
    }))
}

/// Opens a ticket: its sealed header and first message, each in two copies.
#[utoipa::path(post, path = "/support/tickets", operation_id = "open_ticket", tag = "support", security(("session" = [])),
    request_body = wire::CreateTicketRequest,
    responses((status = 201, body = wire::TicketReply),
        (status = 400, body = wire::ErrorBody, description = "invalid_id, invalid_key, invalid_box, invalid_field (binding)"),
        (status = 403, body = wire::ErrorBody, description = "session_required"),
        (status = 409, body = wire::ErrorBody, description = "staff_key_changed, too_many_open, too_many_tickets, support_storage_full, id_taken"),
        (status = 413, body = wire::ErrorBody, description = "too_large: a header box over 16 KiB or a message box over 64 KiB"),
        (status = 429, body = wire::ErrorBody, description = "rate_limited: five new tickets today"),
        (status = 503, body = wire::ErrorBody, description = "support_unavailable")))]
pub async fn create(
    state: Data<AppState>,
    caller: SupportCaller,
    Json(body): Json<wire::CreateTicketRequest>,
) -> Result<HttpResponse, ApiError> {
    let ticket = NewTicket {
        id: TicketId::parse(&body.id).map_err(|error| ApiError::invalid_id("id", error))?,
        account_key: key("accountKey", &body.account_key)?,
        staff_key: key("staffKey", &body.staff_key)?,
        binding: body
            .binding
            .as_deref()
            .map(|text| mac("binding", text))
            .transpose()?,
        header: pair(
            "header.",
            &body.header.for_staff,
            &body.header.for_account,
            HEADER_MAX_LEN,
        )?,
        message_id: TicketMessageId::parse(&body.message.id)
            .map_err(|error| ApiError::invalid_id("message.id", error))?,
        message: pair(
            "message.",
            &body.message.for_staff,
            &body.message.for_account,
            MESSAGE_MAX_LEN,
        )?,
    };
    let created = state.support.open_ticket(&caller.account, &ticket).await?;
    Ok(HttpResponse::Created().json(wire::TicketReply {
        ticket: ticket_body(created, false),
    }))
}

/// One ticket with its messages (`forAccount` copies); staff replies are marked read.
#[utoipa::path(get, path = "/support/tickets/{id}", operation_id = "get_ticket", tag = "support", security(("session" = [])),
    params(("id" = String, Path)),
    responses((status = 200, body = wire::TicketDetail),
        (status = 403, body = wire::ErrorBody, description = "session_required"),
        (status = 404, body = wire::ErrorBody, description = "no such ticket on this account")))]
pub async fn get_one(
    state: Data<AppState>,
    caller: SupportCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<TicketId>(&id)?;
    let (ticket, messages) = state.support.read(&caller.account, &id).await?;
    Ok(HttpResponse::Ok().json(wire::TicketDetail {
        ticket: ticket_body(ticket, false),
        messages: messages
            .into_iter()
            .map(|message| message_body(message, false))
            .collect(),
        staff_key: current_key(&state).await?,
    }))
}

/// Adds the account's message to an open ticket.
#[utoipa::path(post, path = "/support/tickets/{id}/messages", operation_id = "add_ticket_message", tag = "support", security(("session" = [])),
    params(("id" = String, Path)), request_body = wire::TicketMessageRequest,
    responses((status = 201, body = wire::MessageAdded),
        (status = 400, body = wire::ErrorBody, description = "invalid_id, invalid_key, invalid_box"),
        (status = 403, body = wire::ErrorBody, description = "session_required"),
        (status = 404, body = wire::ErrorBody, description = "no such ticket on this account"),
        (status = 409, body = wire::ErrorBody, description = "staff_key_changed, ticket_closed, ticket_full, support_storage_full, id_taken"),
        (status = 413, body = wire::ErrorBody, description = "too_large: a box over 64 KiB"),
        (status = 429, body = wire::ErrorBody, description = "rate_limited: thirty replies this hour"),
        (status = 503, body = wire::ErrorBody, description = "support_unavailable")))]
pub async fn add_message(
    state: Data<AppState>,
    caller: SupportCaller,
    id: Path<String>,
    Json(body): Json<wire::TicketMessageRequest>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<TicketId>(&id)?;
    let message = new_message(&body)?;
    let at = state.support.reply(&caller.account, &id, &message).await?;
    Ok(HttpResponse::Created().json(wire::MessageAdded { ok: true, at }))
}

/// Marks the ticket resolved (already resolved: unchanged).
#[utoipa::path(post, path = "/support/tickets/{id}/close", operation_id = "close_ticket", tag = "support", security(("session" = [])),
    params(("id" = String, Path)),
    responses((status = 200, body = wire::TicketReply),
        (status = 403, body = wire::ErrorBody, description = "session_required"),
        (status = 404, body = wire::ErrorBody, description = "no such ticket on this account"),
        (status = 503, body = wire::ErrorBody, description = "support_unavailable")))]
pub async fn close(
    state: Data<AppState>,
    caller: SupportCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<TicketId>(&id)?;
    let ticket = state.support.close(&caller.account, &id).await?;
    Ok(HttpResponse::Ok().json(wire::TicketReply {
        ticket: ticket_body(ticket, false),
    }))
}

/// Opens a resolved ticket again; it counts against the five open.
#[utoipa::path(post, path = "/support/tickets/{id}/reopen", operation_id = "reopen_ticket", tag = "support", security(("session" = [])),
    params(("id" = String, Path)),
    responses((status = 200, body = wire::TicketReply),
        (status = 403, body = wire::ErrorBody, description = "session_required"),
        (status = 404, body = wire::ErrorBody, description = "no such ticket on this account"),
        (status = 409, body = wire::ErrorBody, description = "too_many_open"),
        (status = 503, body = wire::ErrorBody, description = "support_unavailable")))]
pub async fn reopen(
    state: Data<AppState>,
    caller: SupportCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<TicketId>(&id)?;
    let ticket = state.support.reopen(&caller.account, &id).await?;
    Ok(HttpResponse::Ok().json(wire::TicketReply {
        ticket: ticket_body(ticket, false),
    }))
}

/// Stores the account's binding for the current support key.
#[utoipa::path(post, path = "/support/key", operation_id = "bind_support_key", tag = "support", security(("session" = [])),
    request_body = wire::SupportKeyRequest,
    responses((status = 200, body = wire::SupportKeyReply),
        (status = 400, body = wire::ErrorBody, description = "invalid_key, invalid_field (binding)"),
        (status = 403, body = wire::ErrorBody, description = "session_required"),
        (status = 409, body = wire::ErrorBody, description = "staff_key_changed: not the current support key"),
        (status = 503, body = wire::ErrorBody, description = "support_unavailable")))]
pub async fn bind_key(
    state: Data<AppState>,
    caller: SupportCaller,
    Json(body): Json<wire::SupportKeyRequest>,
) -> Result<HttpResponse, ApiError> {
    let account_key = key("accountKey", &body.account_key)?;
    let binding = mac("binding", &body.binding)?;
    let staff_key = key("staffKey", &body.staff_key)?;
    let changed = state
        .support
        .bind(&caller.account, account_key, staff_key, binding)
        .await?;
    Ok(HttpResponse::Ok().json(wire::SupportKeyReply { ok: true, changed }))
}
