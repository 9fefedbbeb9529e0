//! Push notification settings (SPEC.md "Notifications"): which kinds the
//! account's phones receive, muted addresses, and push tokens.

use reqwest::Method;
use sealpost_kernel::{AddressId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::{Client, Result};

/// Which kinds of push the account receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationSettings {
    pub preferences: NotificationPreferences,
    /// Addresses whose new mail is not pushed.
    pub muted_inboxes: Vec<AddressId>,
}

/// `PATCH /notifications/preferences`: only the kinds set change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreferencesUpdate {
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

#[derive(Serialize)]
struct MuteRequest {
    muted: bool,
}

/// `PATCH /notifications/inboxes/:id`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mute {
    pub inbox_id: AddressId,
    pub muted: bool,
}

/// Where a push token sends to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PushPlatform {
    /// Apple Push Notification service.
    Ios,
    /// Firebase Cloud Messaging.
    Android,
}

#[derive(Serialize)]
struct RegisterRequest<'a> {
    token: &'a str,
    platform: PushPlatform,
}

/// A registered push token.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushDevice {
    pub token: String,
    pub platform: PushPlatform,
    pub registered_at: Timestamp,
}

#[derive(Deserialize)]
struct PushDeviceEnvelope {
    device: PushDevice,
}

impl Client {
    /// `GET /notifications/preferences`.
    pub async fn notification_settings(&self) -> Result<NotificationSettings> {
        self.json(self.authed(Method::GET, "/notifications/preferences"))
            .await
    }

    /// `PATCH /notifications/preferences`: switches the kinds set in `update`.
    pub async fn update_notification_preferences(
        &self,
        update: &PreferencesUpdate,
    ) -> Result<NotificationSettings> {
        self.json(
            self.authed(Method::PATCH, "/notifications/preferences")
                .json(update),
        )
        .await
    }

    /// `PATCH /notifications/inboxes/:id`: mutes or unmutes new-mail pushes
    /// for one address (`not_found` for another account's address).
    pub async fn mute_inbox(&self, inbox: &AddressId, muted: bool) -> Result<Mute> {
        self.json(
            self.authed(Method::PATCH, &format!("/notifications/inboxes/{inbox}"))
                .json(&MuteRequest { muted }),
        )
        .await
    }

    /// `POST /notifications/devices`: registers a push token (idempotent).
    pub async fn register_push_token(
        &self,
        token: &str,
        platform: PushPlatform,
    ) -> Result<PushDevice> {
        let envelope: PushDeviceEnvelope = self
            .json(
                self.authed(Method::POST, "/notifications/devices")
                    .json(&RegisterRequest { token, platform }),
            )
            .await?;
        Ok(envelope.device)
    }

    /// `DELETE /notifications/devices/:token`.
    pub async fn remove_push_token(&self, token: &str) -> Result<()> {
        self.empty(self.authed(Method::DELETE, &format!("/notifications/devices/{token}")))
            .await
    }
}
