//! API keys (docs/api.md "API keys"): created, listed and revoked with a
//! session only; a key then authenticates like a session everywhere but
//! the session-only endpoints.

use actix_web::HttpResponse;
use actix_web::web::{Data, Path};
use sealpost_accounts::ApiKey;
use sealpost_kernel::ApiKeyId;
use sealpost_wire as wire;

use crate::auth::SessionCaller;
use crate::error::{ApiError, check_box_field, path_id};
use crate::json::Json;
use crate::state::AppState;

/// A label's size limit, as for the other sealed names.
const LABEL_MAX_LEN: usize = 4096;

fn key_body(key: ApiKey) -> wire::ApiKey {
    wire::ApiKey {
        id: key.id,
        label: key.label,
        created_at: key.created_at,
        last_used_at: key.last_used_at,
        paused: key.paused,
    }
}

/// The account's API keys, oldest first: label, creation, last use (to the
/// hour) and whether a missed payment pauses it. Never the token.
#[utoipa::path(get, path = "/api-keys", tag = "api-keys", security(("session" = [])),
    responses((status = 200, body = wire::ApiKeyList)))]
pub async fn list(state: Data<AppState>, caller: SessionCaller) -> Result<HttpResponse, ApiError> {
    let keys = state.accounts.api_keys(&caller.caller).await?;
    Ok(HttpResponse::Ok().json(wire::ApiKeyList {
        api_keys: keys.into_iter().map(key_body).collect(),
    }))
}

/// Creates a key (Operator plan and up); its `spk_` token is returned once.
#[utoipa::path(post, path = "/api-keys", tag = "api-keys", security(("session" = [])), request_body = wire::CreateApiKeyRequest,
    responses((status = 201, body = wire::CreatedApiKey),
        (status = 400, body = wire::ErrorBody, description = "invalid_field, invalid_id, invalid_box"),
        (status = 403, body = wire::ErrorBody, description = "plan_required: the plan has no API keys"),
        (status = 409, body = wire::ErrorBody, description = "limit_reached: the plan's keys are all issued; id_taken")))]
pub async fn create(
    state: Data<AppState>,
    caller: SessionCaller,
    Json(body): Json<wire::CreateApiKeyRequest>,
) -> Result<HttpResponse, ApiError> {
    let id = ApiKeyId::parse(&body.id).map_err(|error| ApiError::invalid_id("id", error))?;
    let label = check_box_field("label", &body.label, LABEL_MAX_LEN)?;
    let issued = state
        .accounts
        .create_api_key(&caller.caller, id, label)
        .await?;
    Ok(HttpResponse::Created().json(wire::CreatedApiKey {
        api_key: key_body(issued.key),
        token: issued.token,
    }))
}

/// Revokes a key: its token stops working at once.
#[utoipa::path(delete, path = "/api-keys/{id}", tag = "api-keys", security(("session" = [])),
    params(("id" = sealpost_kernel::ApiKeyId, Path)),
    responses((status = 204), (status = 404, body = wire::ErrorBody)))]
pub async fn revoke(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<ApiKeyId>(&id)?;
    state.accounts.revoke_api_key(&caller.caller, &id).await?;
    Ok(HttpResponse::NoContent().finish())
}
