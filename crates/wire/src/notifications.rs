//! Notifications (docs/api.md "Notifications"): preferences, address mutes,
//! push tokens.
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `GET /notifications/preferences` | | [`NotificationSettings`] |
//! | `PATCH /notifications/preferences` | [`UpdatePreferencesRequest`] | [`NotificationSettings`] |
//! | `PATCH /notifications/inboxes/{id}` | [`MuteRequest`] | [`Mute`] |
//! | `POST /notifications/devices` | [`RegisterDeviceRequest`] | [`PushDeviceEnvelope`] |
//! | `DELETE /notifications/devices/{token}` | | 204 |

use sealpost_kernel::{AddressId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::encoding::wire_enum;

/// Which kinds of push the account receives. Every kind is on until switched off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct NotificationPreferences {
    pub new_mail: bool,
    pub device_paired: bool,
    pub device_offline: bool,
    pub new_sign_in: bool,
    pub billing: bool,
    /// Support replies and resolved tickets.
    pub support: bool,
    /// A webhook switched off after three days of failures.
    pub webhook_failures: bool,
}

/// `GET` and `PATCH /notifications/preferences`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct NotificationSettings {
    pub preferences: NotificationPreferences,
    /// Addresses whose new mail is not pushed.
    #[serde(rename = "mutedInboxes")]
    pub muted_addresses: Vec<AddressId>,
}

/// Any of the kinds; a kind left out (or null) stays as it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdatePreferencesRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_mail: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_paired: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_offline: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_sign_in: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub billing: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub support: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_failures: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MuteRequest {
    pub muted: bool,
}

/// The answer of `PATCH /notifications/inboxes/{id}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Mute {
    #[serde(rename = "inboxId")]
    pub address_id: AddressId,
    pub muted: bool,
}

wire_enum!(
    /// Where a push token sends to.
    PushPlatform {
        /// Apple Push Notification service.
        Ios = "ios",
        /// Firebase Cloud Messaging.
        Android = "android",
    }
);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RegisterDeviceRequest {
    /// The APNs device token or FCM registration token: 1 to 4096 letters,
    /// digits and `- _ : .`.
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 4096, pattern = "^[A-Za-z0-9_:.-]+$")
    )]
    pub token: String,
    /// `ios` (APNs) or `android` (FCM).
    pub platform: PushPlatform,
}

/// A registered push token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PushDevice {
    pub token: String,
    /// `ios` or `android`.
    pub platform: PushPlatform,
    pub registered_at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PushDeviceEnvelope {
    pub device: PushDevice,
}
