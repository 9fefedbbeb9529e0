//! The device endpoints and the pairing flow (docs/api.md, "Devices and
//! pairing"; docs/protocol.md, "Pairing a device").

use actix_web::web::{Data, Path, Query};
use actix_web::{HttpRequest, HttpResponse};
use sealpost_devices::{Device, DeviceKind, Platform};
use sealpost_kernel::{DeviceId, PageLimits, PairingSessionId};
use sealpost_wire as wire;

use crate::auth::{Authenticated, SessionCaller};
use crate::error::{ApiError, check_box_field, path_id};
use crate::json::Json;
use crate::routes::activity::PageQuery;
use crate::state::AppState;

/// Sealed device profile (name, tags, notes).
pub const PROFILE_LIMIT: usize = 8 * 1024;
/// Sealed key bundle: the keys of every address the device holds.
pub const KEY_BUNDLE_LIMIT: usize = 128 * 1024;

fn device_body(device: Device) -> wire::Device {
    wire::Device {
        status: device.status().into(),
        id: device.id,
        operator_id: device.account,
        kind: device.kind.as_str().into(),
        platform: device.platform.as_str().into(),
        created_at: device.created_at,
        // Kept exact for the idle rule; shown to the hour.
        last_active_at: device.last_active_at.map(|at| at.start_of_hour()),
        paused_at: device.paused_at,
        profile: device.profile,
        public_key: device.public_key,
    }
}

fn device_reply(device: Device) -> wire::DeviceReply {
    wire::DeviceReply {
        device: device_body(device),
    }
}

/// The client as the limits count it: an IPv6 client per /64.
fn client_key(request: &HttpRequest) -> String {
    let client = crate::client_ip::ClientIp::of(request);
    crate::client_ip::limit_key(client.0).to_string()
}

/// Opens a pairing session (called by the device), for a device or, with
/// `kind: agent`, an agent.
#[utoipa::path(post, path = "/workers/pairing-session", tag = "devices", request_body = wire::OpenPairingRequest,
    responses((status = 201, body = wire::OpenedPairing), (status = 400, body = wire::ErrorBody),
        (status = 429, body = wire::ErrorBody, description = "rate_limited: the address holds 20 live sessions")))]
pub async fn open_pairing(
    state: Data<AppState>,
    request: HttpRequest,
    Json(body): Json<wire::OpenPairingRequest>,
) -> Result<HttpResponse, ApiError> {
    let platform: Platform =
        body.platform.as_str().parse().map_err(|_| {
            ApiError::invalid_field("platform", "one of ios, android, web, unknown")
        })?;
    let kind: DeviceKind = match &body.kind {
        None => DeviceKind::Device,
        Some(kind) => kind
            .as_str()
            .parse()
            .map_err(|_| ApiError::invalid_field("kind", "device or agent"))?,
    };
    let public_key = sealpost_seal::parse_public_key(&body.public_key)
        .map_err(|_| ApiError::invalid_key("publicKey"))?;
    let opened = state
        .devices
        .open_pairing(
            platform,
            kind,
            body.device_name,
            public_key,
            &client_key(&request),
        )
        .await?;
    Ok(HttpResponse::Created().json(wire::OpenedPairing {
        token: opened.token,
        code: opened.code,
        state: opened.state.as_str().into(),
    }))
}

/// Polls the session; the credential comes once, on the first poll after the claim.
#[utoipa::path(get, path = "/workers/pairing-session/{token}", tag = "devices",
    params(("token" = String, Path)),
    responses((status = 200, body = wire::PairingPoll), (status = 404, body = wire::ErrorBody)))]
pub async fn poll_pairing(
    state: Data<AppState>,
    token: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let view = state.devices.poll_pairing(&token).await?;
    let (device_id, credential) = view.handed_over.unzip();
    Ok(HttpResponse::Ok().json(wire::PairingPoll {
        state: view.state.as_str().into(),
        code: view.code,
        device_id,
        credential,
    }))
}

/// Cancels a session nobody claimed yet.
#[utoipa::path(delete, path = "/workers/pairing-session/{token}", tag = "devices",
    params(("token" = String, Path)),
    responses((status = 204), (status = 404, body = wire::ErrorBody), (status = 409, body = wire::ErrorBody, description = "already_used")))]
pub async fn cancel_pairing(
    state: Data<AppState>,
    token: Path<String>,
) -> Result<HttpResponse, ApiError> {
    state.devices.cancel_pairing(&token).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Finds a waiting session by its code. Ten failed lookups in five minutes, per account or IP, give 429.
#[utoipa::path(post, path = "/workers/pair/lookup", operation_id = "lookup_pairing", tag = "devices", security(("session" = [])), request_body = wire::LookupRequest,
    responses((status = 200, body = wire::LookupReply), (status = 404, body = wire::ErrorBody), (status = 429, body = wire::ErrorBody)))]
pub async fn lookup(
    state: Data<AppState>,
    caller: SessionCaller,
    request: HttpRequest,
    Json(body): Json<wire::LookupRequest>,
) -> Result<HttpResponse, ApiError> {
    let session = state
        .devices
        .lookup(&caller.account, &client_key(&request), &body.code)
        .await?;
    Ok(HttpResponse::Ok().json(wire::LookupReply {
        session: wire::PairingSession {
            id: session.id,
            state: session.state.as_str().into(),
            kind: session.kind.as_str().into(),
            platform: session.platform.as_str().into(),
            device_name: session.device_name,
            public_key: session.public_key,
            created_at: session.created_at,
        },
    }))
}

/// Claims the looked-up session: creates the device (or agent) and mints its credential.
#[utoipa::path(post, path = "/workers/pair", operation_id = "claim_pairing", tag = "devices", security(("session" = [])), request_body = wire::ClaimRequest,
    responses((status = 201, body = wire::DeviceReply), (status = 402, body = wire::ErrorBody, description = "worker_limit_reached"),
        (status = 403, body = wire::ErrorBody, description = "plan_required: an agent session, on a plan without agents"),
        (status = 404, body = wire::ErrorBody), (status = 409, body = wire::ErrorBody, description = "already_used, id_taken")))]
pub async fn claim(
    state: Data<AppState>,
    caller: SessionCaller,
    Json(body): Json<wire::ClaimRequest>,
) -> Result<HttpResponse, ApiError> {
    let device_id =
        DeviceId::parse(&body.device_id).map_err(|e| ApiError::invalid_id("workerId", e))?;
    let session_id =
        PairingSessionId::parse(&body.session_id).map_err(|_| ApiError::not_found())?;
    let profile = check_box_field("profile", &body.profile, PROFILE_LIMIT)?;
    let plan = state.accounts.account(&caller.account).await?.plan;
    let device = state
        .devices
        .claim(&caller.account, plan, &session_id, device_id, profile)
        .await?;
    Ok(HttpResponse::Created().json(device_reply(device)))
}

/// The account's devices, newest first. A device sees only itself.
#[utoipa::path(get, path = "/workers", operation_id = "list_workers", tag = "devices", security(("bearer" = [])), params(PageQuery),
    responses((status = 200, body = wire::DevicePage)))]
pub async fn list(
    state: Data<AppState>,
    caller: Authenticated,
    query: Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let request = query.request(PageLimits::STANDARD)?;
    let page = match caller.own_device() {
        Some(own) => {
            let device = state.devices.get(caller.account(), own).await?;
            sealpost_kernel::Page {
                items: vec![device],
                next_cursor: None,
            }
        }
        None => state.devices.list(caller.account(), &request).await?,
    };
    Ok(HttpResponse::Ok().json(wire::DevicePage {
        devices: page.items.into_iter().map(device_body).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// One device.
#[utoipa::path(get, path = "/workers/{id}", operation_id = "get_worker", tag = "devices", security(("bearer" = [])),
    params(("id" = sealpost_kernel::DeviceId, Path)), responses((status = 200, body = wire::DeviceReply), (status = 404, body = wire::ErrorBody)))]
pub async fn get_one(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<DeviceId>(&id)?;
    caller.check_device(&id)?;
    let device = state.devices.get(caller.account(), &id).await?;
    Ok(HttpResponse::Ok().json(device_reply(device)))
}

/// Updates the sealed profile, or disables the device.
#[utoipa::path(patch, path = "/workers/{id}", operation_id = "update_worker", tag = "devices", security(("session" = [])),
    params(("id" = sealpost_kernel::DeviceId, Path)), request_body = wire::UpdateDeviceRequest,
    responses((status = 200, body = wire::DeviceReply), (status = 404, body = wire::ErrorBody)))]
pub async fn update(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
    Json(body): Json<wire::UpdateDeviceRequest>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<DeviceId>(&id)?;
    let profile = body
        .profile
        .as_ref()
        .map(|value| check_box_field("profile", value, PROFILE_LIMIT))
        .transpose()?;
    let disable = match body.status {
        None => false,
        Some(wire::DeviceStatus::Disabled) => true,
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
    Ok(HttpResponse::Ok().json(device_reply(device)))
}

/// Removes the device: its credential stops, its addresses become unassigned.
#[utoipa::path(delete, path = "/workers/{id}", operation_id = "delete_worker", tag = "devices", security(("session" = [])),
    params(("id" = sealpost_kernel::DeviceId, Path)), responses((status = 204), (status = 404, body = wire::ErrorBody)))]
pub async fn remove(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<DeviceId>(&id)?;
    state.devices.remove(&caller.account, &id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Reports the calling device active (device credential only).
#[utoipa::path(post, path = "/workers/heartbeat", operation_id = "worker_heartbeat", tag = "devices", security(("device" = [])),
    responses((status = 200, body = wire::DeviceReply), (status = 403, body = wire::ErrorBody, description = "device_required: the caller is not a device")))]
pub async fn heartbeat(
    state: Data<AppState>,
    caller: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let own = caller.device()?.clone();
    let device = state.devices.heartbeat(caller.account(), &own).await?;
    Ok(HttpResponse::Ok().json(device_reply(device)))
}

fn keys_body(bundle: sealpost_devices::KeyBundle) -> wire::DeviceKeys {
    wire::DeviceKeys {
        keys: bundle.keys,
        updated_at: bundle.updated_at,
    }
}

/// Hands a sealed key bundle to a paired device (replaces the previous one).
#[utoipa::path(post, path = "/workers/{id}/keys", operation_id = "set_worker_keys", tag = "devices", security(("session" = [])),
    params(("id" = sealpost_kernel::DeviceId, Path)), request_body = wire::KeysRequest,
    responses((status = 200, body = wire::DeviceKeys), (status = 404, body = wire::ErrorBody)))]
pub async fn set_keys(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
    Json(body): Json<wire::KeysRequest>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<DeviceId>(&id)?;
    let keys = check_box_field("keys", &body.keys, KEY_BUNDLE_LIMIT)?;
    let bundle = state.devices.set_keys(&caller.account, &id, keys).await?;
    Ok(HttpResponse::Ok().json(keys_body(bundle)))
}

/// The device's key bundle: read by the device itself (or the account).
#[utoipa::path(get, path = "/workers/{id}/keys", operation_id = "get_worker_keys", tag = "devices", security(("bearer" = [])),
    params(("id" = sealpost_kernel::DeviceId, Path)), responses((status = 200, body = wire::DeviceKeys), (status = 404, body = wire::ErrorBody)))]
pub async fn get_keys(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<DeviceId>(&id)?;
    caller.check_device(&id)?;
    let bundle = state.devices.keys(caller.account(), &id).await?;
    Ok(HttpResponse::Ok().json(keys_body(bundle)))
}
