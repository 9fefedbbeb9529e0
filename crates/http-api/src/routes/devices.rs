//! SPEC.md "Devices" endpoints and the pairing flow of CONTRACT.md section 6.

use actix_web::web::{Data, Path, Query};
use actix_web::{HttpRequest, HttpResponse, delete, get, patch, post};
use sealpost_kernel::{AccountId, PageLimits, PairingSessionId, Timestamp, WorkerId};
use sealpost_pairing::{Device, Platform};
use sealpost_seal::{SealedBox, b64};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::auth::{Authenticated, SessionCaller};
use crate::error::{ApiError, ErrorBody, check_box_field};
use crate::json::Json;
use crate::routes::activity::PageQuery;
use crate::state::AppState;

/// Sealed device profile (name, tags, notes).
pub const PROFILE_LIMIT: usize = 8 * 1024;
/// Sealed key bundle: the keys of every address the device holds.
pub const KEY_BUNDLE_LIMIT: usize = 128 * 1024;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerBody {
    id: WorkerId,
    operator_id: AccountId,
    /// `device` or `agent`.
    kind: &'static str,
    platform: &'static str,
    /// `online`, `offline` (not active for two hours) or `disabled`.
    status: &'static str,
    created_at: Timestamp,
    /// Truncated to the hour.
    last_active_at: Option<Timestamp>,
    paused_at: Option<Timestamp>,
    /// Sealed profile box.
    #[schema(value_type = Option<Object>)]
    profile: Option<SealedBox>,
    /// The device's pairing X25519 public key (base64url): seal its key bundle to it.
    public_key: Option<String>,
}

impl From<Device> for WorkerBody {
    fn from(device: Device) -> Self {
        Self {
            status: device.status(),
            id: device.id,
            operator_id: device.account,
            kind: device.kind.as_str(),
            platform: device.platform.as_str(),
            created_at: device.created_at,
            last_active_at: device.last_active_at,
            paused_at: device.paused_at,
            profile: device.profile,
            public_key: device.public_key.map(|key| b64::encode(&key)),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct WorkerEnvelope {
    worker: WorkerBody,
}

fn worker_reply(device: Device) -> WorkerEnvelope {
    WorkerEnvelope {
        worker: device.into(),
    }
}

fn parse_worker_id(text: &str) -> Result<WorkerId, ApiError> {
    WorkerId::parse(text).map_err(|_| ApiError::not_found())
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenPairingRequest {
    /// ios, android, web or unknown.
    platform: String,
    device_name: String,
    /// The device's X25519 public key, base64url; its key bundle is sealed to it.
    public_key: String,
}

#[derive(Serialize, ToSchema)]
pub struct OpenedPairingBody {
    /// Secret to this device: polls and cancels with it.
    token: String,
    /// 8 digits to show the operator.
    code: String,
    state: &'static str,
}

/// Opens a pairing session (called by the device).
#[utoipa::path(post, path = "/workers/pairing-session", tag = "devices", request_body = OpenPairingRequest,
    responses((status = 201, body = OpenedPairingBody), (status = 400, body = ErrorBody)))]
#[post("/workers/pairing-session")]
pub async fn open_pairing(
    state: Data<AppState>,
    Json(body): Json<OpenPairingRequest>,
) -> Result<HttpResponse, ApiError> {
    let platform: Platform = body
        .platform
        .parse()
        .map_err(|_| ApiError::invalid_field("platform", "one of ios, android, web, unknown"))?;
    let public_key =
        b64::decode_32(&body.public_key).map_err(|_| ApiError::invalid_key("publicKey"))?;
    let opened = state
        .devices
        .open_pairing(platform, body.device_name, public_key)
        .await?;
    Ok(HttpResponse::Created().json(OpenedPairingBody {
        token: opened.token,
        code: opened.code,
        state: opened.state.as_str(),
    }))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairingPollBody {
    state: &'static str,
    code: String,
    /// Only on the first poll after the claim.
    #[serde(skip_serializing_if = "Option::is_none")]
    worker_id: Option<WorkerId>,
    /// The device credential; only on the first poll after the claim.
    #[serde(skip_serializing_if = "Option::is_none")]
    credential: Option<String>,
}

/// Polls the session; the credential comes once, on the first poll after the claim.
#[utoipa::path(get, path = "/workers/pairing-session/{token}", tag = "devices",
    params(("token" = String, Path)),
    responses((status = 200, body = PairingPollBody), (status = 404, body = ErrorBody)))]
#[get("/workers/pairing-session/{token}")]
pub async fn poll_pairing(
    state: Data<AppState>,
    token: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let view = state.devices.poll_pairing(&token).await?;
    let (worker_id, credential) = view.handed_over.unzip();
    Ok(HttpResponse::Ok().json(PairingPollBody {
        state: view.state.as_str(),
        code: view.code,
        worker_id,
        credential,
    }))
}

/// Cancels a session nobody claimed yet.
#[utoipa::path(delete, path = "/workers/pairing-session/{token}", tag = "devices",
    params(("token" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "already_used")))]
#[delete("/workers/pairing-session/{token}")]
pub async fn cancel_pairing(
    state: Data<AppState>,
    token: Path<String>,
) -> Result<HttpResponse, ApiError> {
    state.devices.cancel_pairing(&token).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[derive(Deserialize, ToSchema)]
pub struct LookupRequest {
    /// The 8-digit code the device shows.
    code: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LookedUpSession {
    id: PairingSessionId,
    state: &'static str,
    platform: &'static str,
    device_name: String,
    public_key: String,
    created_at: Timestamp,
}

#[derive(Serialize, ToSchema)]
pub struct LookupBody {
    session: LookedUpSession,
}

/// Finds a waiting session by its code. Ten failed lookups in five minutes, per account or IP, give 429.
#[utoipa::path(post, path = "/workers/pair/lookup", tag = "devices", security(("bearer" = [])), request_body = LookupRequest,
    responses((status = 200, body = LookupBody), (status = 404, body = ErrorBody), (status = 429, body = ErrorBody)))]
#[post("/workers/pair/lookup")]
pub async fn lookup(
    state: Data<AppState>,
    caller: SessionCaller,
    request: HttpRequest,
    Json(body): Json<LookupRequest>,
) -> Result<HttpResponse, ApiError> {
    let ip = request
        .peer_addr()
        .map(|addr| addr.ip().to_string())
        .unwrap_or_default();
    let session = state
        .devices
        .lookup(&caller.account, &ip, &body.code)
        .await?;
    Ok(HttpResponse::Ok().json(LookupBody {
        session: LookedUpSession {
            id: session.id,
            state: session.state.as_str(),
            platform: session.platform.as_str(),
            device_name: session.device_name,
            public_key: b64::encode(&session.public_key),
            created_at: session.created_at,
        },
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRequest {
    session_id: String,
    /// `wkr_` + 4 to 48 letters and digits, chosen by the client.
    worker_id: String,
    /// Sealed profile box (context `service/v1/worker-profile:<workerId>`).
    #[schema(value_type = Object)]
    profile: Value,
}

/// Claims the looked-up session: creates the device and mints its credential.
#[utoipa::path(post, path = "/workers/pair", tag = "devices", security(("bearer" = [])), request_body = ClaimRequest,
    responses((status = 201, body = WorkerEnvelope), (status = 402, body = ErrorBody, description = "worker_limit_reached"),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "already_used, id_taken")))]
#[post("/workers/pair")]
pub async fn claim(
    state: Data<AppState>,
    caller: SessionCaller,
    Json(body): Json<ClaimRequest>,
) -> Result<HttpResponse, ApiError> {
    let worker_id =
        WorkerId::parse(&body.worker_id).map_err(|e| ApiError::invalid_id("workerId", e))?;
    let session_id =
        PairingSessionId::parse(&body.session_id).map_err(|_| ApiError::not_found())?;
    let profile = check_box_field("profile", &body.profile, PROFILE_LIMIT)?;
    let plan = state.accounts.account(&caller.account).await?.plan;
    let device = state
        .devices
        .claim(&caller.account, plan, &session_id, worker_id, profile)
        .await?;
    Ok(HttpResponse::Created().json(worker_reply(device)))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkersPage {
    workers: Vec<WorkerBody>,
    next_cursor: Option<String>,
}

/// The account's devices, newest first. A device sees only itself.
#[utoipa::path(get, path = "/workers", tag = "devices", security(("bearer" = [])), params(PageQuery),
    responses((status = 200, body = WorkersPage)))]
#[get("/workers")]
pub async fn list(
    state: Data<AppState>,
    caller: Authenticated,
    query: Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let request = query.request(PageLimits::STANDARD)?;
    let page = match caller.worker() {
        Some(own) => {
            let device = state.devices.get(caller.account(), own).await?;
            sealpost_kernel::Page {
                items: vec![device],
                next_cursor: None,
            }
        }
        None => state.devices.list(caller.account(), &request).await?,
    };
    Ok(HttpResponse::Ok().json(WorkersPage {
        workers: page.items.into_iter().map(WorkerBody::from).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// One device.
#[utoipa::path(get, path = "/workers/{id}", tag = "devices", security(("bearer" = [])),
    params(("id" = String, Path)), responses((status = 200, body = WorkerEnvelope), (status = 404, body = ErrorBody)))]
#[get("/workers/{id}")]
pub async fn get_one(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_worker_id(&id)?;
    caller.check_worker(&id)?;
    let device = state.devices.get(caller.account(), &id).await?;
    Ok(HttpResponse::Ok().json(worker_reply(device)))
}

#[derive(Deserialize, ToSchema)]
pub struct UpdateWorkerRequest {
    #[schema(value_type = Option<Object>)]
    profile: Option<Value>,
    /// Only `disabled`: revokes the device credential at once.
    status: Option<String>,
}

/// Updates the sealed profile, or disables the device.
#[utoipa::path(patch, path = "/workers/{id}", tag = "devices", security(("bearer" = [])),
    params(("id" = String, Path)), request_body = UpdateWorkerRequest,
    responses((status = 200, body = WorkerEnvelope), (status = 404, body = ErrorBody)))]
#[patch("/workers/{id}")]
pub async fn update(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
    Json(body): Json<UpdateWorkerRequest>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_worker_id(&id)?;
    let profile = body
        .profile
        .as_ref()
        .map(|value| check_box_field("profile", value, PROFILE_LIMIT))
        .transpose()?;
    let disable = match body.status.as_deref() {
        None => false,
        Some("disabled") => true,
        Some(_) => {
            return Err(ApiError::invalid_field(
                "status",
                "only `disabled` can be set",
            ));
        }
    };
    // Check existence first so a bad id changes nothing.
    state.devices.get(&caller.account, &id).await?;
    if let Some(profile) = profile {
        state
            .devices
            .update_profile(&caller.account, &id, profile)
            .await?;
    }
    if disable {
        state.devices.disable(&caller.account, &id).await?;
    }
    let device = state.devices.get(&caller.account, &id).await?;
    Ok(HttpResponse::Ok().json(worker_reply(device)))
}

/// Removes the device: its credential stops, its addresses become unassigned.
#[utoipa::path(delete, path = "/workers/{id}", tag = "devices", security(("bearer" = [])),
    params(("id" = String, Path)), responses((status = 204), (status = 404, body = ErrorBody)))]
#[delete("/workers/{id}")]
pub async fn remove(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_worker_id(&id)?;
    state.devices.remove(&caller.account, &id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Reports the calling device active (device credential only).
#[utoipa::path(post, path = "/workers/heartbeat", tag = "devices", security(("bearer" = [])),
    responses((status = 200, body = WorkerEnvelope), (status = 404, body = ErrorBody, description = "the caller is not a device")))]
#[post("/workers/heartbeat")]
pub async fn heartbeat(
    state: Data<AppState>,
    caller: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let own = caller.device()?.clone();
    let device = state.devices.heartbeat(caller.account(), &own).await?;
    Ok(HttpResponse::Ok().json(worker_reply(device)))
}

#[derive(Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeysRequest {
    /// Sealed to the device's pairing public key, context `service/v1/worker-keys:<workerId>`.
    #[schema(value_type = Object)]
    keys: Value,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeysBody {
    #[schema(value_type = Object)]
    keys: SealedBox,
    updated_at: Timestamp,
}

/// Hands a sealed key bundle to a paired device (replaces the previous one).
#[utoipa::path(post, path = "/workers/{id}/keys", tag = "devices", security(("bearer" = [])),
    params(("id" = String, Path)), request_body = KeysRequest,
    responses((status = 200, body = KeysBody), (status = 404, body = ErrorBody)))]
#[post("/workers/{id}/keys")]
pub async fn set_keys(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
    Json(body): Json<KeysRequest>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_worker_id(&id)?;
    let keys = check_box_field("keys", &body.keys, KEY_BUNDLE_LIMIT)?;
    let bundle = state.devices.set_keys(&caller.account, &id, keys).await?;
    Ok(HttpResponse::Ok().json(KeysBody {
        keys: bundle.keys,
        updated_at: bundle.updated_at,
    }))
}

/// The device's key bundle: read by the device itself (or the account).
#[utoipa::path(get, path = "/workers/{id}/keys", tag = "devices", security(("bearer" = [])),
    params(("id" = String, Path)), responses((status = 200, body = KeysBody), (status = 404, body = ErrorBody)))]
#[get("/workers/{id}/keys")]
pub async fn get_keys(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_worker_id(&id)?;
    caller.check_worker(&id)?;
    let bundle = state.devices.keys(caller.account(), &id).await?;
    Ok(HttpResponse::Ok().json(KeysBody {
        keys: bundle.keys,
        updated_at: bundle.updated_at,
    }))
}
