//! `POST /messages/send`: the request and response types (wire types only,
//! with the one handler that uses them).

use actix_web::HttpResponse;
use actix_web::web::Data;
use sealpost_kernel::MessageId;
use sealpost_messages::send::{SendRequest, VIA_APP};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::SessionCaller;
use crate::error::ApiError;
use crate::json::Json;
use crate::state::AppState;
use sealpost_wire::ErrorBody;

/// `POST /messages/send` bodies: `text` and `html` of up to 512 KiB each, JSON-escaped.
pub const SEND_BODY_LIMIT: usize = 2 * 1024 * 1024;

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendMailRequest {
    /// One of the account's addresses (the email address).
    #[schema(example = "shop.x7kq2m@mail.example")]
    from: String,
    /// Display name for `From`; no control characters, up to 200 characters.
    from_name: Option<String>,
    /// 1 to 50 recipients, each `address` or `Name <address>`; the same
    /// address twice is sent once.
    to: Vec<String>,
    /// Up to 998 characters, no control characters.
    subject: String,
    /// The plain-text body, up to 512 KiB.
    text: String,
    /// An HTML body, up to 512 KiB; the message is then multipart/alternative.
    html: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SentBody {
    /// Always true: the relay accepted the message.
    sent: bool,
    /// The copy in `sent`; null when the address has no publicKey (nothing
    /// can be sealed to it) or the copy could not be stored.
    message_id: Option<MessageId>,
}

/// Sends mail from one of the account's addresses through the service's
/// relay, DKIM-signed. Answers only after the relay accepted it; keeps a
/// sealed copy in `sent`. Counts one send per recipient against the plan's
/// hourly and daily limits.
#[utoipa::path(post, path = "/messages/send", tag = "messages", security(("bearer" = [])),
    request_body = SendMailRequest,
    responses((status = 200, body = SentBody),
        (status = 400, body = ErrorBody, description = "invalid_field: a malformed address, too many recipients, control characters in a header, an oversize body"),
        (status = 402, body = ErrorBody, description = "payment_required: the address is paused after a missed payment"),
        (status = 403, body = ErrorBody, description = "not_your_address, or session_required for device credentials"),
        (status = 413, body = ErrorBody),
        (status = 429, body = ErrorBody, description = "the hourly or daily send limit; Retry-After to the window's end"),
        (status = 502, body = ErrorBody, description = "send_failed: the relay refused the message or did not answer; nothing counted"),
        (status = 503, body = ErrorBody, description = "feature_disabled: no relay configured")))]
pub async fn send(
    state: Data<AppState>,
    caller: SessionCaller,
    Json(body): Json<SendMailRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = SendRequest {
        from: body.from,
        from_name: body.from_name,
        to: body.to,
        subject: body.subject,
        text: body.text,
        html: body.html,
    };
    let sent = state
        .outbox
        .send(&caller.account, VIA_APP, &request)
        .await?;
    if let Some(error) = &sent.unrecorded {
        tracing::error!(%error, "mail was sent but its Sent copy and records were not stored");
    }
    Ok(HttpResponse::Ok().json(SentBody {
        sent: true,
        message_id: sent.message_id,
    }))
}
