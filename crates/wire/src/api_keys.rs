//! API keys (docs/api.md "API keys"): long-lived bearer tokens for scripts,
//! managed with a session only.
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `GET /api-keys` | | [`ApiKeyList`] |
//! | `POST /api-keys` | [`CreateApiKeyRequest`] | [`CreatedApiKey`] |
//! | `DELETE /api-keys/{id}` | | 204 |
//!
//! The token (`spk_...`) is shown on creation only. The label is sealed with
//! context `service/v1/api-key-label:<keyId>` to the vault key.

use sealpost_kernel::{ApiKeyId, Timestamp};
use sealpost_seal::SealedBox;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApiKey {
    pub id: ApiKeyId,
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::SealedBoxJson))]
    pub label: SealedBox,
    pub created_at: Timestamp,
    /// To the hour; null before its first use.
    pub last_used_at: Option<Timestamp>,
    /// True while a missed payment pauses the key (it then answers 402
    /// `payment_required`); paying releases it.
    pub paused: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyList {
    /// Oldest first.
    pub api_keys: Vec<ApiKey>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreateApiKeyRequest {
    /// `key_` + 4 to 48 letters and digits, chosen by the client.
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::ApiKeyId))]
    pub id: String,
    /// Sealed to the vault key, context `service/v1/api-key-label:<id>`.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::SealedBoxJson))]
    pub label: Value,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreatedApiKey {
    pub api_key: ApiKey,
    /// `spk_...`: the bearer token, shown here only.
    pub token: String,
}
