//! `POST /messages/send`.

use actix_web::HttpResponse;
use actix_web::web::Data;
use sealpost_messages::send::{SendRequest, VIA_APP};

use crate::auth::SessionCaller;
use crate::error::ApiError;
use crate::json::Json;
use crate::state::AppState;
use sealpost_wire::{ErrorBody, SendMailRequest, SentMail};

/// `POST /messages/send` bodies: `text` and `html` of up to 512 KiB each, JSON-escaped.
pub const SEND_BODY_LIMIT: usize = 2 * 1024 * 1024;

/// Sends mail from one of the account's addresses through the service's
/// relay, DKIM-signed. Answers only after the relay accepted it; keeps a
/// sealed copy in `sent`. Counts one send per recipient against the plan's
/// hourly and daily limits.
#[utoipa::path(post, path = "/messages/send", operation_id = "send_message", tag = "messages", security(("session" = [])),
    request_body = SendMailRequest,
    responses((status = 200, body = SentMail),
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
    Ok(HttpResponse::Ok().json(SentMail {
        sent: true,
        message_id: sent.message_id,
    }))
}
