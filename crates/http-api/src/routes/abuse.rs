//! Abuse reports (docs/api.md "Abuse reports"): `POST /abuse/reports`, no
//! token. Five reports an hour per IP; the answer is the same whether or not
//! the address or message exists.

use actix_web::web::Data;
use actix_web::{HttpRequest, HttpResponse};
use sealpost_support::{AbuseReason, AbuseTarget};
use sealpost_wire as wire;

use crate::client_ip::{ClientIp, limit_key};
use crate::error::ApiError;
use crate::json::Json;
use crate::state::AppState;

/// Reports an address or a message. Accepted reports all get the same
/// 202 answer.
#[utoipa::path(post, path = "/abuse/reports", operation_id = "report_abuse", tag = "abuse", request_body = wire::AbuseReportRequest,
    responses((status = 202, body = wire::AbuseReceived),
        (status = 400, body = wire::ErrorBody, description = "invalid_field: not exactly one of emailAddress and messageId, an unknown reason, overlong details or contact"),
        (status = 429, body = wire::ErrorBody, description = "rate_limited: five reports an hour per IP")))]
pub async fn report(
    state: Data<AppState>,
    req: HttpRequest,
    Json(body): Json<wire::AbuseReportRequest>,
) -> Result<HttpResponse, ApiError> {
    let client = ClientIp::of(&req);
    state.abuse_limiter.check(limit_key(client.0))?;
    let target = match (body.email_address, body.message_id) {
        (Some(address), None) => AbuseTarget::EmailAddress(address),
        (None, Some(message)) => AbuseTarget::MessageId(message),
        _ => {
            return Err(ApiError::invalid_field(
                "emailAddress",
                "exactly one of emailAddress and messageId",
            ));
        }
    };
    let reason: AbuseReason = body.reason.parse().map_err(|_| {
        ApiError::invalid_field(
            "reason",
            "spam, phishing, malware, harassment, illegal_content, impersonation or other",
        )
    })?;
    state
        .staff
        .report(target, reason, body.details, body.contact)
        .await?;
    Ok(HttpResponse::Accepted().json(wire::AbuseReceived { received: true }))
}
