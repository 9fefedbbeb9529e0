//! API keys (docs/api.md "API keys"): long-lived bearer tokens for scripts,
//! created, listed and revoked with a session. A client holding a key
//! ([`Client::with_token`]) reads mail, waits for it and manages webhook
//! deliveries without the recovery phrase; the session-only endpoints
//! answer it `session_required`.

use reqwest::Method;
use sealpost_kernel::ApiKeyId;
use sealpost_seal::{AccountKeys, SealedBox, context};

pub use sealpost_wire::{ApiKey, ApiKeyList, CreateApiKeyRequest, CreatedApiKey};

use crate::{Client, Result};

/// A key's label sealed to the account's vault key, as `create_api_key` sends it.
#[must_use]
pub fn seal_label(keys: &AccountKeys, id: &ApiKeyId, label: &str) -> SealedBox {
    SealedBox::seal(
        &keys.vault_public_key(),
        &context::api_key_label(id.as_str()),
        label.as_bytes(),
    )
}

impl Client {
    /// `POST /api-keys` (session, Operator plan and up): a new key; its
    /// `spk_` token is in the answer, once. `plan_required` below Operator,
    /// `limit_reached` past the plan's count, `id_taken` for a used id.
    pub async fn create_api_key(&self, id: &ApiKeyId, label: &SealedBox) -> Result<CreatedApiKey> {
        let body = CreateApiKeyRequest {
            id: id.to_string(),
            label: sealpost_wire::sealed_json(label),
        };
        self.json(self.authed(Method::POST, "/api-keys").json(&body))
            .await
    }

    /// `GET /api-keys` (session): the account's keys, oldest first, never their tokens.
    pub async fn api_keys(&self) -> Result<Vec<ApiKey>> {
        let list: ApiKeyList = self.json(self.authed(Method::GET, "/api-keys")).await?;
        Ok(list.api_keys)
    }

    /// `DELETE /api-keys/{id}` (session): the key stops working at once.
    pub async fn revoke_api_key(&self, id: &ApiKeyId) -> Result<()> {
        self.empty(self.authed(Method::DELETE, &format!("/api-keys/{id}")))
            .await
    }
}
