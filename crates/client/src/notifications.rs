//! Push notification settings (docs/api.md "Notifications"): which kinds the
//! account's phones receive, muted addresses, and push tokens.

use reqwest::Method;
use sealpost_kernel::AddressId;

use crate::{Client, Result};

pub use sealpost_wire::{
    Mute, MuteRequest, NotificationPreferences, NotificationSettings, PushDevice,
    PushDeviceEnvelope, PushPlatform, RegisterDeviceRequest, UpdatePreferencesRequest,
};

impl Client {
    /// `GET /notifications/preferences`.
    pub async fn notification_settings(&self) -> Result<NotificationSettings> {
        self.json(self.authed(Method::GET, "/notifications/preferences"))
            .await
    }

    /// `PATCH /notifications/preferences`: switches the kinds set in `update`.
    pub async fn update_notification_preferences(
        &self,
        update: &UpdatePreferencesRequest,
    ) -> Result<NotificationSettings> {
        self.json(
            self.authed(Method::PATCH, "/notifications/preferences")
                .json(update),
        )
        .await
    }

    /// `PATCH /notifications/inboxes/:id`: mutes or unmutes new-mail pushes
    /// for one address (`not_found` for another account's address).
    pub async fn mute_address(&self, address: &AddressId, muted: bool) -> Result<Mute> {
        self.json(
            self.authed(Method::PATCH, &format!("/notifications/inboxes/{address}"))
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
            .json(self.authed(Method::POST, "/notifications/devices").json(
                &RegisterDeviceRequest {
                    token: token.to_owned(),
                    platform,
                },
            ))
            .await?;
        Ok(envelope.device)
    }

    /// `DELETE /notifications/devices/:token`.
    pub async fn remove_push_token(&self, token: &str) -> Result<()> {
        self.empty(self.authed(Method::DELETE, &format!("/notifications/devices/{token}")))
            .await
    }
}
