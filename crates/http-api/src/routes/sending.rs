//! `POST /messages/send`.

use actix_web::HttpResponse;
use actix_web::web::Data;
use sealpost_accounts::{AccountError, Caller};
use sealpost_devices::DeviceKind;
use sealpost_messages::send::{SendRequest, VIA_APP};

use crate::auth::SessionOrDevice;
use crate::error::ApiError;
use crate::json::Json;
use crate::state::AppState;
use sealpost_wire::{ErrorBody, SendMailRequest, SentMail};

/// `POST /messages/send` bodies: `text` and `html` of up to 512 KiB each, JSON-escaped.
pub const SEND_BODY_LIMIT: usize = 2 * 1024 * 1024;

/// Sends mail from one of the account's addresses through the service's
/// relay, DKIM-signed. Answers only after the relay accepted it; keeps a
/// sealed copy in `sent`. Counts one send per recipient against the plan's
/// hourly and daily limits. An agent's credential sends too, from the
/// addresses assigned to it (`via: agent`); other devices' are refused.
#[utoipa::path(post, path = "/messages/send", operation_id = "send_message", tag = "messages", security(("session" = []), ("device" = [])),
    request_body = SendMailRequest,
    responses((status = 200, body = SentMail),
        (status = 400, body = ErrorBody, description = "invalid_field: a malformed address, too many recipients (to and cc together), control characters in a header, an oversize body"),
        (status = 402, body = ErrorBody, description = "payment_required: the address is paused after a missed payment"),
        (status = 403, body = ErrorBody, description = "not_your_address (for an agent: an address not assigned to it), or session_required for API keys and devices that are not agents"),
        (status = 413, body = ErrorBody),
        (status = 429, body = ErrorBody, description = "the hourly or daily send limit; Retry-After to the window's end"),
        (status = 502, body = ErrorBody, description = "send_failed: the relay refused the message or did not answer; nothing counted"),
        (status = 503, body = ErrorBody, description = "feature_disabled: no relay configured")))]
pub async fn send(
    state: Data<AppState>,
    caller: SessionOrDevice,
    Json(body): Json<SendMailRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = SendRequest {
        from: body.from,
        from_name: body.from_name,
        to: body.to,
        cc: body.cc,
        subject: body.subject,
        text: body.text,
        html: body.html,
    };
    let sent = match &caller.0 {
        Caller::Session { account, .. } => state.outbox.send(account, VIA_APP, &request).await?,
        Caller::Device { account, device } => {
            if state.devices.get(account, device).await?.kind != DeviceKind::Agent {
                return Err(AccountError::SessionRequired.into());
            }
            state
                .outbox
                .send_from_agent(account, device, &request)
                .await?
        }
        Caller::ApiKey { .. } => return Err(AccountError::SessionRequired.into()),
    };
    if let Some(error) = &sent.unrecorded {
        tracing::error!(%error, "mail was sent but its Sent copy and records were not stored");
    }
    Ok(HttpResponse::Ok().json(SentMail {
        sent: true,
        message_id: sent.message_id,
    }))
}
