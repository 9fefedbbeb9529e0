//! SPEC.md "Notifications" endpoints: preferences, address mutes, push tokens.
//! Any bearer; a device credential mutes only the addresses assigned to it.

use actix_web::web::{Data, Path};
use actix_web::{HttpResponse, delete, get, patch, post};
use sealpost_kernel::{AddressId, Timestamp};
use sealpost_notifications::{
    Platform, Preferences, PreferencesPatch, PushDevice, PushToken, Registered,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Authenticated;
use crate::error::ApiError;
use crate::json::Json;
use crate::state::AppState;
use sealpost_wire::ErrorBody;

/// Which kinds of push the account receives. Every kind is on until switched off.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreferencesBody {
    new_mail: bool,
    device_paired: bool,
    device_offline: bool,
    new_sign_in: bool,
    billing: bool,
    /// Support replies and resolved tickets.
    support: bool,
    /// A webhook switched off after three days of failures.
    webhook_failures: bool,
}

impl From<Preferences> for PreferencesBody {
    fn from(preferences: Preferences) -> Self {
        Self {
            new_mail: preferences.new_mail,
            device_paired: preferences.device_paired,
            device_offline: preferences.device_offline,
            new_sign_in: preferences.new_sign_in,
            billing: preferences.billing,
            support: preferences.support,
            webhook_failures: preferences.webhook_failures,
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreferencesEnvelope {
    preferences: PreferencesBody,
    /// Addresses whose new mail is not pushed.
    muted_inboxes: Vec<AddressId>,
}

async fn envelope(
    state: &AppState,
    caller: &Authenticated,
    preferences: Preferences,
) -> Result<PreferencesEnvelope, ApiError> {
    Ok(PreferencesEnvelope {
        preferences: preferences.into(),
        muted_inboxes: state.notifications.muted_inboxes(caller.account()).await?,
    })
}

/// Which kinds of push the account receives, and its muted addresses.
#[utoipa::path(get, path = "/notifications/preferences", tag = "notifications", security(("bearer" = [])),
    responses((status = 200, body = PreferencesEnvelope)))]
#[get("/notifications/preferences")]
pub async fn get_preferences(
    state: Data<AppState>,
    caller: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let preferences = state.notifications.preferences(caller.account()).await?;
    Ok(HttpResponse::Ok().json(envelope(&state, &caller, preferences).await?))
}

/// Any of the kinds; a kind left out (or null) stays as it is.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdatePreferencesRequest {
    new_mail: Option<bool>,
    device_paired: Option<bool>,
    device_offline: Option<bool>,
    new_sign_in: Option<bool>,
    billing: Option<bool>,
    support: Option<bool>,
    webhook_failures: Option<bool>,
}

/// Switches kinds on or off; only the kinds sent change.
#[utoipa::path(patch, path = "/notifications/preferences", tag = "notifications", security(("bearer" = [])),
    request_body = UpdatePreferencesRequest,
    responses((status = 200, body = PreferencesEnvelope), (status = 400, body = ErrorBody, description = "invalid_field: a value not boolean, or an unknown key")))]
#[patch("/notifications/preferences")]
pub async fn update_preferences(
    state: Data<AppState>,
    caller: Authenticated,
    Json(body): Json<UpdatePreferencesRequest>,
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

#[derive(Deserialize, ToSchema)]
pub struct MuteRequest {
    muted: bool,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MuteBody {
    inbox_id: AddressId,
    muted: bool,
}

/// Mutes or unmutes new-mail pushes for one address.
#[utoipa::path(patch, path = "/notifications/inboxes/{id}", tag = "notifications", security(("bearer" = [])),
    params(("id" = String, Path)), request_body = MuteRequest,
    responses((status = 200, body = MuteBody), (status = 400, body = ErrorBody, description = "invalid_field"),
        (status = 404, body = ErrorBody, description = "no such address on this account")))]
#[patch("/notifications/inboxes/{id}")]
pub async fn mute_inbox(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
    Json(body): Json<MuteRequest>,
) -> Result<HttpResponse, ApiError> {
    let inbox = AddressId::parse(&id).map_err(|_| ApiError::not_found())?;
    state
        .notifications
        .set_muted(caller.account(), caller.worker(), &inbox, body.muted)
        .await?;
    Ok(HttpResponse::Ok().json(MuteBody {
        inbox_id: inbox,
        muted: body.muted,
    }))
}

#[derive(Deserialize, ToSchema)]
pub struct RegisterDeviceRequest {
    /// The APNs device token or FCM registration token: 1 to 4096 letters,
    /// digits and `- _ : .`.
    token: String,
    /// `ios` (APNs) or `android` (FCM).
    platform: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushDeviceBody {
    token: String,
    /// `ios` or `android`.
    platform: &'static str,
    registered_at: Timestamp,
}

impl From<PushDevice> for PushDeviceBody {
    fn from(device: PushDevice) -> Self {
        Self {
            token: device.token.as_str().to_owned(),
            platform: device.platform.as_str(),
            registered_at: device.registered_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct PushDeviceEnvelope {
    device: PushDeviceBody,
}

/// Registers a push token (idempotent). A token another account registered
/// moves to this one; an account keeps its 20 newest tokens.
#[utoipa::path(post, path = "/notifications/devices", tag = "notifications", security(("bearer" = [])),
    request_body = RegisterDeviceRequest,
    responses((status = 201, body = PushDeviceEnvelope, description = "registered (new here)"),
        (status = 200, body = PushDeviceEnvelope, description = "already registered to this account"),
        (status = 400, body = ErrorBody, description = "invalid_field: platform not ios or android; token empty, too long or with other characters")))]
#[post("/notifications/devices")]
pub async fn register_device(
    state: Data<AppState>,
    caller: Authenticated,
    Json(body): Json<RegisterDeviceRequest>,
) -> Result<HttpResponse, ApiError> {
    let platform: Platform = body
        .platform
        .parse()
        .map_err(|error| ApiError::invalid_field("platform", error))?;
    let token =
        PushToken::parse(&body.token).map_err(|error| ApiError::invalid_field("token", error))?;
    let registered = state
        .notifications
        .register_device(caller.account(), token, platform)
        .await?;
    Ok(match registered {
        Registered::Added(device) => HttpResponse::Created().json(PushDeviceEnvelope {
            device: device.into(),
        }),
        Registered::Existing(device) => HttpResponse::Ok().json(PushDeviceEnvelope {
            device: device.into(),
        }),
    })
}

/// Removes a push token of this account.
#[utoipa::path(delete, path = "/notifications/devices/{token}", tag = "notifications", security(("bearer" = [])),
    params(("token" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody, description = "the account holds no such token")))]
#[delete("/notifications/devices/{token}")]
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
