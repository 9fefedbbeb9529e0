//! The mailbox across addresses: `GET /messages` with filters, folder
//! counts, stars, moves, deletion and the trash.

use actix_web::HttpResponse;
use actix_web::web::{Bytes, Data, Path, Query};
use sealpost_kernel::{AddressId, MessageId, PageLimits};
use sealpost_messages::folders::{Folder, FolderCount, FolderCounts, MessageFilter};
use sealpost_messages::mailbox::Deleted;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::{Authenticated, SessionCaller};
use crate::error::{ApiError, path_id};
use crate::json::{Json, parse_optional};
use crate::routes::messages::{message_body, reader};
use crate::state::AppState;
use sealpost_wire as wire;
use sealpost_wire::ErrorBody;

fn folder_field(field: &str, text: &str) -> Result<Folder, ApiError> {
    text.parse::<Folder>().map_err(|error| {
        let names: Vec<&str> = Folder::ALL.map(Folder::as_str).into();
        ApiError::invalid_field(field, format!("{error}; expected {}", names.join(", ")))
    })
}

fn flag_field(field: &str, text: Option<&str>) -> Result<Option<bool>, ApiError> {
    match text {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(_) => Err(ApiError::invalid_field(field, "expected true or false")),
    }
}

fn address_field(text: Option<&str>) -> Result<Option<AddressId>, ApiError> {
    text.map(|text| AddressId::parse(text).map_err(|error| ApiError::invalid_id("inboxId", error)))
        .transpose()
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct MailboxQuery {
    /// `inbox`, `sent`, `archive` or `trash`; absent lists every folder but the trash.
    #[param(value_type = sealpost_wire::Folder, required = false)]
    folder: Option<String>,
    /// Only this address's mail (one the caller may read, else 404).
    #[serde(rename = "inboxId")]
    #[param(value_type = sealpost_kernel::AddressId, required = false)]
    address_id: Option<String>,
    /// `true`: starred mail only; `false`: unstarred only.
    #[param(value_type = bool, required = false)]
    starred: Option<String>,
    /// `true`: unread mail only; `false`: read only.
    #[param(value_type = bool, required = false)]
    unread: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(value_type = u32, required = false, minimum = 1, maximum = 200)]
    limit: Option<String>,
    /// `nextCursor` of the previous page.
    cursor: Option<String>,
}

/// The caller's mail across its addresses (a device: the addresses assigned
/// to it), newest first, filtered. Held mail and mail past retention never appear.
#[utoipa::path(get, path = "/messages", operation_id = "list_messages", tag = "messages", security(("bearer" = [])),
    params(MailboxQuery),
    responses((status = 200, body = wire::MessagePage), (status = 400, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "inboxId names no address the caller may read")))]
pub async fn list(
    state: Data<AppState>,
    caller: Authenticated,
    query: Query<MailboxQuery>,
) -> Result<HttpResponse, ApiError> {
    let filter = MessageFilter {
        folder: query
            .folder
            .as_deref()
            .map(|text| folder_field("folder", text))
            .transpose()?,
        address: address_field(query.address_id.as_deref())?,
        starred: flag_field("starred", query.starred.as_deref())?,
        unread: flag_field("unread", query.unread.as_deref())?,
    };
    let request = sealpost_kernel::PageRequest::parse(
        query.limit.as_deref(),
        query.cursor.as_deref(),
        PageLimits::STANDARD,
    )?;
    let page = state
        .mailbox
        .list_all(&reader(&caller), &filter, &request)
        .await?;
    Ok(HttpResponse::Ok().json(wire::MessagePage {
        messages: page.items.into_iter().map(message_body).collect(),
        next_cursor: page.next_cursor,
    }))
}

fn folder_count(count: FolderCount) -> wire::FolderCount {
    wire::FolderCount {
        total: count.total,
        unread: count.unread,
    }
}

fn folder_counts_body(counts: FolderCounts) -> wire::FolderCounts {
    wire::FolderCounts {
        inbox: folder_count(counts.inbox),
        sent: folder_count(counts.sent),
        archive: folder_count(counts.archive),
        trash: folder_count(counts.trash),
        starred: folder_count(counts.starred),
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct FoldersQuery {
    /// Only this address's mail.
    #[serde(rename = "inboxId")]
    #[param(value_type = sealpost_kernel::AddressId, required = false)]
    address_id: Option<String>,
}

/// How much listed mail each folder holds, and how much of it is unread.
#[utoipa::path(get, path = "/messages/folders", tag = "messages", security(("bearer" = [])),
    params(FoldersQuery),
    responses((status = 200, body = wire::FoldersEnvelope), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn folder_counts(
    state: Data<AppState>,
    caller: Authenticated,
    query: Query<FoldersQuery>,
) -> Result<HttpResponse, ApiError> {
    let address = address_field(query.address_id.as_deref())?;
    let found = state
        .mailbox
        .folder_counts(&reader(&caller), address)
        .await?;
    Ok(HttpResponse::Ok().json(wire::FoldersEnvelope {
        folders: folder_counts_body(found),
    }))
}

/// Stars a message (or removes the star with `starred: false`). The body is optional.
#[utoipa::path(post, path = "/messages/{id}/star", operation_id = "star_message", tag = "messages", security(("bearer" = [])),
    params(("id" = sealpost_kernel::MessageId, Path)), request_body(content = Option<wire::StarRequest>),
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub async fn star(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<MessageId>(&id)?;
    let starred = parse_optional::<wire::StarRequest>(&body)?
        .and_then(|body| body.starred)
        .unwrap_or(true);
    state.mailbox.star(&reader(&caller), &id, starred).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Moves a message to another folder; answers it as it is afterwards.
#[utoipa::path(post, path = "/messages/{id}/move", operation_id = "move_message", tag = "messages", security(("bearer" = [])),
    params(("id" = sealpost_kernel::MessageId, Path)), request_body = wire::MoveRequest,
    responses((status = 200, body = wire::MessageReply),
        (status = 400, body = ErrorBody, description = "invalid_field: unknown folder, or one the message may not go to"),
        (status = 404, body = ErrorBody)))]
pub async fn move_to(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
    Json(body): Json<wire::MoveRequest>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<MessageId>(&id)?;
    let folder = folder_field("folder", &body.folder)?;
    let message = state.mailbox.move_to(&reader(&caller), &id, folder).await?;
    Ok(HttpResponse::Ok().json(wire::MessageReply {
        message: message_body(message),
    }))
}

/// Moves a message to the trash; a message already in the trash is deleted
/// for good, with its attachments.
#[utoipa::path(delete, path = "/messages/{id}", operation_id = "delete_message", tag = "messages", security(("bearer" = [])),
    params(("id" = sealpost_kernel::MessageId, Path)),
    responses((status = 200, body = wire::DeletedBody), (status = 404, body = ErrorBody)))]
pub async fn remove(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<MessageId>(&id)?;
    let result = match state.mailbox.delete(&reader(&caller), &id).await? {
        Deleted::Trashed => wire::Deletion::Trashed,
        Deleted::ForGood => wire::Deletion::Deleted,
    };
    Ok(HttpResponse::Ok().json(wire::DeletedBody { result }))
}

/// Deletes every message in the account's trash, attachments included (session only).
#[utoipa::path(post, path = "/messages/trash/empty", tag = "messages", security(("session" = [])),
    responses((status = 200, body = wire::EmptiedBody), (status = 403, body = ErrorBody, description = "session_required")))]
pub async fn empty_trash(
    state: Data<AppState>,
    caller: SessionCaller,
) -> Result<HttpResponse, ApiError> {
    let deleted = state.mailbox.empty_trash(&caller.account).await?;
    Ok(HttpResponse::Ok().json(wire::EmptiedBody { deleted }))
}
