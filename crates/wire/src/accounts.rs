//! Accounts (docs/api.md "Accounts"): registration, the sign-in handshake,
//! sessions.
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `POST /accounts` | [`RegisterRequest`] | [`SignedIn`] |
//! | `POST /accounts/challenge` | [`ChallengeRequest`] | [`Challenge`] |
//! | `POST /accounts/verify` | [`VerifyRequest`] | [`SignedIn`] |
//! | `GET /accounts/me` | | [`Me`] |
//! | `GET /accounts/sessions` | | [`SessionList`] |
//! | `DELETE /accounts/sessions` | | [`Revoked`] |
//!
//! Registration carries only public values derived from the recovery
//! phrase; the handshake's `proof` answers a [`Challenge`] without sending
//! anything secret. [`SignedIn`]'s `Debug` does not show the token.

use std::fmt;

use sealpost_kernel::{AccountId, PlanId, SessionId, Timestamp};
use sealpost_seal::b64;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RegisterRequest {
    /// `acct_` + 24 base32 characters, derived from the recovery phrase.
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::AccountId))]
    pub account_id: String,
    /// base64url of `derive("auth-verifier")`; stored only as its SHA-256.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Key32))]
    pub auth_verifier: String,
    /// base64url X25519 public key of `derive("auth-key")`.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Key32))]
    pub auth_public_key: String,
}

impl RegisterRequest {
    /// The registration of `account_id` with its auth verifier and auth
    /// public key (`sealpost_seal::AccountKeys`).
    #[must_use]
    pub fn new(
        account_id: &AccountId,
        auth_verifier: &[u8; 32],
        auth_public_key: &[u8; 32],
    ) -> Self {
        Self {
            account_id: account_id.to_string(),
            auth_verifier: b64::encode(auth_verifier),
            auth_public_key: b64::encode(auth_public_key),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ChallengeRequest {
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::AccountId))]
    pub account_id: String,
}

impl ChallengeRequest {
    /// A challenge for `account_id`.
    #[must_use]
    pub fn new(account_id: &AccountId) -> Self {
        Self {
            account_id: account_id.to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Challenge {
    /// 32 random bytes, base64url; single use.
    pub nonce: String,
    pub expires_at: Timestamp,
    /// Ephemeral X25519 public key, base64url.
    #[serde(with = "b64::serde_32")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub challenge_key: [u8; 32],
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct VerifyRequest {
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::AccountId))]
    pub account_id: String,
    pub nonce: String,
    /// base64url HMAC-SHA256 (`docs/protocol.md`, Signing in).
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Key32))]
    pub proof: String,
}

impl VerifyRequest {
    /// The answer to the challenge that handed out `nonce`.
    #[must_use]
    pub fn new(account_id: &AccountId, nonce: &str, proof: &[u8; 32]) -> Self {
        Self {
            account_id: account_id.to_string(),
            nonce: nonce.to_owned(),
            proof: b64::encode(proof),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlanRef {
    pub id: PlanId,
    pub name: String,
}

impl From<PlanId> for PlanRef {
    fn from(id: PlanId) -> Self {
        Self {
            id,
            name: id.display_name().to_owned(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Account {
    pub id: AccountId,
    pub plan: PlanRef,
    pub created_at: Timestamp,
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SignedIn {
    pub account: Account,
    /// Bearer token for this session; shown once.
    pub token: String,
    pub expires_at: Timestamp,
}

impl fmt::Debug for SignedIn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignedIn")
            .field("account", &self.account)
            .field("token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Me {
    pub account: Account,
    /// The support team's X25519 public key, or null while in-app support is off.
    pub support_key: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: SessionId,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub current: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionList {
    pub sessions: Vec<Session>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Revoked {
    /// How many sessions were revoked.
    pub revoked: u64,
}
