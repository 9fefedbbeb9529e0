//! Webhooks (docs/api.md "Webhooks"): the endpoints an account registers and
//! their delivery log. (What a webhook receives is the event body documented in
//! `docs/webhooks.md`, checked with the SDK's `verify_webhook`.)
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `GET /webhook-endpoints` | | [`WebhookList`] |
//! | `POST /webhook-endpoints` | [`CreateWebhookRequest`] | [`CreatedWebhook`] |
//! | `PATCH /webhook-endpoints/{id}` | [`UpdateWebhookRequest`] | [`WebhookReply`] |
//! | `POST /webhook-endpoints/{id}/rotate-secret` | | [`Secret`] |
//! | `POST /webhook-endpoints/{id}/test` | | [`Sent`] |
//! | `GET /webhook-endpoints/{id}/deliveries` | | [`DeliveryPage`] |
//! | `POST /webhook-endpoints/{id}/deliveries/{deliveryId}/redeliver` | | [`Sent`] |
//!
//! The signing secret (`whsec_...`) is shown on creation and rotation only.

use sealpost_kernel::{DeliveryId, EventId, Timestamp, WebhookId};
use sealpost_seal::SealedBox;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::encoding::wire_enum;

wire_enum!(
    /// Whether an endpoint receives events.
    WebhookStatus {
        Active = "active",
        Disabled = "disabled",
    }
);

wire_enum!(
    /// Why an endpoint is disabled.
    DisabledReason {
        /// Its owner switched it off.
        Manual = "manual",
        /// Three days of failed attempts switched it off.
        Failing = "failing",
    }
);

wire_enum!(
    /// Where a delivery stands.
    DeliveryStatus {
        Pending = "pending",
        Succeeded = "succeeded",
        Failed = "failed",
    }
);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub id: WebhookId,
    pub url: String,
    /// Event types, or `["*"]` for all.
    pub events: Vec<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub meta: Option<SealedBox>,
    /// `active` or `disabled`.
    pub status: WebhookStatus,
    /// `manual` or `failing`; null while active.
    pub disabled_reason: Option<DisabledReason>,
    pub failing_since: Option<Timestamp>,
    pub last_success_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookList {
    pub webhooks: Vec<Webhook>,
    /// The subscribable event types.
    pub event_types: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreateWebhookRequest {
    /// `whk_` + 4 to 48 letters and digits, chosen by the client.
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::WebhookId))]
    pub id: String,
    /// https only, a public host.
    // Its `pattern` and `maxLength` are set where the document is built
    // (http-api), from the validator's `URL_PATTERN` and `MAX_URL_LEN`.
    pub url: String,
    /// Event types (`eventTypes` of the list), or `["*"]` for all.
    #[cfg_attr(feature = "openapi", schema(min_items = 1))]
    pub events: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schemas::SealedBoxJson>))]
    pub meta: Option<Value>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedWebhook {
    pub webhook: Webhook,
    /// `whsec_...`: shown here and on rotation only.
    pub secret: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UpdateWebhookRequest {
    /// https only, a public host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(min_items = 1))]
    pub events: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schemas::SealedBoxJson>))]
    pub meta: Option<Value>,
    /// `active` (clears the failure record) or `disabled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<WebhookStatus>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WebhookReply {
    pub webhook: Webhook,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Secret {
    /// The new `whsec_...`; the old one stopped working.
    pub secret: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Sent {
    pub delivery_id: DeliveryId,
    pub event_id: EventId,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub id: DeliveryId,
    pub event_id: EventId,
    pub event_type: String,
    /// The event exactly as sent.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub event: Value,
    /// pending, succeeded or failed.
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub response_status: Option<u16>,
    pub error: Option<String>,
    pub created_at: Timestamp,
    pub last_attempt_at: Option<Timestamp>,
    pub next_attempt_at: Option<Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeliveryPage {
    pub deliveries: Vec<Delivery>,
    pub next_cursor: Option<String>,
}
