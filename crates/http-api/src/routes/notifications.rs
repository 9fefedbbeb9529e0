//! The notification endpoints (docs/api.md "Notifications"): preferences,
//! address mutes, push tokens. Any bearer; a device credential mutes only the
//! addresses assigned to it.

use actix_web::HttpResponse;
use actix_web::web::{Data, Path};
use sealpost_kernel::AddressId;
use sealpost_notifications::{
    Platform, Preferences, PreferencesPatch, PushDevice, PushToken, Registered,
};

use crate::auth::Authenticated;
use crate::error::ApiError;
use crate::json::Json;
use crate::state::AppState;
use sealpost_wire as wire;
use sealpost_wire::ErrorBody;

fn preferences_body(preferences: Preferences) -> wire::NotificationPreferences {
    wire::NotificationPreferences {
        new_mail: preferences.new_mail,
        device_paired: preferences.device_paired,
        device_offline: preferences.device_offline,
        new_sign_in: preferences.new_sign_in,
        billing: preferences.billing,
        support: preferences.support,
        webhook_failures: preferences.webhook_failures,
    }
}

async fn envelope(
    state: &AppState,
    caller: &Authenticated,
    preferences: Preferences,
) -> Result<wire::NotificationSettings, ApiError> {
    Ok(wire::NotificationSettings {
        preferences: preferences_body(preferences),
        muted_addresses: state
            .notifications
            .muted_addresses(caller.account())
            .await?,
    })
}

/// Which kinds of push the account receives, and its muted addresses.
#[utoipa::path(get, path = "/notifications/preferences", tag = "notifications", security(("bearer" = [])),
    responses((status = 200, body = wire::NotificationSettings)))]
pub async fn get_preferences(
    state: Data<AppState>,
    caller: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let preferences = state.notifications.preferences(caller.account()).await?;
    Ok(HttpResponse::Ok().json(envelope(&state, &caller, preferences).await?))
}

/// Switches kinds on or off; only the kinds sent change.
#[utoipa::path(patch, path = "/notifications/preferences", tag = "notifications", security(("bearer" = [])),
    request_body = wire::UpdatePreferencesRequest,
    responses((status = 200, body = wire::NotificationSettings), (status = 400, body = ErrorBody, description = "invalid_field: a value not boolean, or an unknown key")))]
pub async fn update_preferences(
    state: Data<AppState>,
    caller: Authenticated,
    Json(body): Json<wire::UpdatePreferencesRequest>,
) -> Result<HttpResponse, ApiError> {
    let patch = PreferencesPatch {
        new_mail: body.new_mail,
        device_paired: body.device_paired,
        device_offline: body.device_offline,
        new_sign_in: body.new_sign_in,
        billing: body.billing,
        support: body.support,
        webhook_failures: body.webhook_failures,
    };
    let preferences = state
        .notifications
        .update_preferences(caller.account(), &patch)
        .await?;
    Ok(HttpResponse::Ok().json(envelope(&state, &caller, preferences).await?))
}

/// Mutes or unmutes new-mail pushes for one address.
#[utoipa::path(operation_id = "mute_inbox", patch, path = "/notifications/inboxes/{id}", tag = "notifications", security(("bearer" = [])),
    params(("id" = sealpost_kernel::AddressId, Path)), request_body = wire::MuteRequest,
    responses((status = 200, body = wire::Mute), (status = 400, body = ErrorBody, description = "invalid_field"),
        (status = 404, body = ErrorBody, description = "no such address on this account")))]
pub async fn mute_address(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
    Json(body): Json<wire::MuteRequest>,
) -> Result<HttpResponse, ApiError> {
    let address = AddressId::parse(&id).map_err(|_| ApiError::not_found())?;
    state
        .notifications
        .set_muted(caller.account(), caller.own_device(), &address, body.muted)
        .await?;
    Ok(HttpResponse::Ok().json(wire::Mute {
        address_id: address,
        muted: body.muted,
    }))
}

fn push_device(device: PushDevice) -> wire::PushDeviceEnvelope {
    let platform = match device.platform {
        Platform::Ios => wire::PushPlatform::Ios,
        Platform::Android => wire::PushPlatform::Android,
    };
    wire::PushDeviceEnvelope {
        device: wire::PushDevice {
            token: device.token.as_str().to_owned(),
            platform,
            registered_at: device.registered_at,
        },
    }
}

/// Registers a push token (idempotent). A token another account registered
/// moves to this one; an account keeps its 20 newest tokens.
#[utoipa::path(post, path = "/notifications/devices", tag = "notifications", security(("bearer" = [])),
    request_body = wire::RegisterDeviceRequest,
    responses((status = 201, body = wire::PushDeviceEnvelope, description = "registered (new here)"),
        (status = 200, body = wire::PushDeviceEnvelope, description = "already registered to this account"),
        (status = 409, body = ErrorBody, description = "already_used: another account holds this token; it is not moved until that account removes it"),
        (status = 400, body = ErrorBody, description = "invalid_field: platform not ios or android; token empty, too long or with other characters")))]
pub async fn register_device(
    state: Data<AppState>,
    caller: Authenticated,
    Json(body): Json<wire::RegisterDeviceRequest>,
) -> Result<HttpResponse, ApiError> {
    let platform: Platform = body
        .platform
        .as_str()
        .parse()
        .map_err(|error| ApiError::invalid_field("platform", error))?;
    let token =
        PushToken::parse(&body.token).map_err(|error| ApiError::invalid_field("token", error))?;
    let registered = state
        .notifications
        .register_device(caller.account(), token, platform)
        .await?;
    Ok(match registered {
        Registered::Added(device) => HttpResponse::Created().json(push_device(device)),
        Registered::Existing(device) => HttpResponse::Ok().json(push_device(device)),
    })
}

/// Removes a push token of this account.
#[utoipa::path(delete, path = "/notifications/devices/{token}", tag = "notifications", security(("bearer" = [])),
    params(("token" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody, description = "the account holds no such token")))]
pub async fn remove_device(
    state: Data<AppState>,
    caller: Authenticated,
    token: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let token = PushToken::parse(&token).map_err(|_| ApiError::not_found())?;
    state
        .notifications
        .remove_device(caller.account(), &token)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}
