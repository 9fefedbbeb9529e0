//! Request and response bodies, exactly as they travel on the wire
//! (SPEC.md "Account", CONTRACT.md sections 1, 3 and 9).
//!
//! Field names are camelCase; binary values are base64url without padding;
//! timestamps are RFC 3339 UTC with milliseconds. Unknown fields in
//! responses are ignored, so the service can add fields without breaking
//! older clients.

use std::fmt;

use sealpost_kernel::{AccountId, PlanId, SessionId, Timestamp};
use sealpost_seal::{AccountKeys, b64};
use serde::{Deserialize, Serialize};

/// `POST /accounts`: registration. Carries only public values derived from
/// the recovery phrase; the phrase and the secret keys never leave the
/// process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterRequest {
    pub account_id: AccountId,
    #[serde(with = "b64::serde_32")]
    pub auth_verifier: [u8; 32],
    #[serde(with = "b64::serde_32")]
    pub auth_public_key: [u8; 32],
}

impl RegisterRequest {
    /// The registration values of an account.
    #[must_use]
    pub fn from_keys(keys: &AccountKeys) -> Self {
        Self {
            account_id: AccountId::from_trusted(keys.account_id()),
            auth_verifier: keys.auth_verifier(),
            auth_public_key: keys.auth_public_key(),
        }
    }
}

/// `POST /accounts/challenge`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChallengeRequest {
    pub account_id: AccountId,
}

/// Answer of `POST /accounts/challenge`: a single-use nonce valid for two
/// minutes and the service's ephemeral X25519 key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Challenge {
    /// Kept as the base64url text it was sent as: the proof covers that text.
    pub nonce: String,
    pub expires_at: Timestamp,
    #[serde(with = "b64::serde_32")]
    pub challenge_key: [u8; 32],
}

/// `POST /accounts/verify`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyRequest {
    pub account_id: AccountId,
    pub nonce: String,
    #[serde(with = "b64::serde_32")]
    pub proof: [u8; 32],
}

impl VerifyRequest {
    /// The answer to `challenge`: proves possession of the auth key without
    /// sending anything secret.
    #[must_use]
    pub fn answer(keys: &AccountKeys, challenge: &Challenge) -> Self {
        let account_id = AccountId::from_trusted(keys.account_id());
        let proof = keys.handshake_proof(
            &challenge.challenge_key,
            &challenge.nonce,
            account_id.as_str(),
        );
        Self {
            account_id,
            nonce: challenge.nonce.clone(),
            proof,
        }
    }
}

/// A plan as shown on an account.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub id: PlanId,
    pub name: String,
}

/// The account record as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Account {
    pub id: AccountId,
    pub plan: Plan,
    pub created_at: Timestamp,
}

/// Answer of registration and of sign-in: a new operator session.
/// `Debug` does not show the token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignedIn {
    pub account: Account,
    /// The bearer token; shown once, here. Store it like a password.
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

/// Answer of `GET /accounts/me`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Me {
    pub account: Account,
    /// The support team's public key the service holds, base64url; `None`
    /// when in-app support is not available.
    pub support_key: Option<String>,
}

/// One live operator session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: SessionId,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    /// Whether this is the session the request was made with.
    pub current: bool,
}

/// Answer of `GET /accounts/sessions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionList {
    pub sessions: Vec<Session>,
}

/// Answer of `DELETE /accounts/sessions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revoked {
    pub revoked: u64,
}

/// Answer of `GET /healthz`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    pub status: String,
}

/// The body of every error response (CONTRACT.md section 1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// The inner object of [`ErrorBody`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn keys() -> AccountKeys {
        AccountKeys::from_seed([3u8; 64])
    }

    #[test]
    fn register_request_is_camel_case_base64url() {
        let keys = keys();
        let body = serde_json::to_value(RegisterRequest::from_keys(&keys)).unwrap();
        assert_eq!(
            body,
            json!({
                "accountId": keys.account_id(),
                "authVerifier": b64::encode(&keys.auth_verifier()),
                "authPublicKey": b64::encode(&keys.auth_public_key()),
            })
        );
    }

    #[test]
    fn verify_request_answers_the_challenge() {
        let keys = keys();
        let challenge: Challenge = serde_json::from_value(json!({
            "nonce": b64::encode(&[1u8; 32]),
            "expiresAt": "2026-01-02T03:04:05.678Z",
            "challengeKey": b64::encode(&[9u8; 32]),
        }))
        .unwrap();
        let answer = VerifyRequest::answer(&keys, &challenge);
        let expected = keys.handshake_proof(&[9u8; 32], &challenge.nonce, &keys.account_id());
        assert_eq!(answer.proof, expected);
        let body = serde_json::to_value(&answer).unwrap();
        assert_eq!(body["accountId"], json!(keys.account_id()));
        assert_eq!(body["nonce"], json!(challenge.nonce));
        assert_eq!(body["proof"], json!(b64::encode(&expected)));
    }

    #[test]
    fn responses_decode_and_ignore_unknown_fields() {
        let signed: SignedIn = serde_json::from_value(json!({
            "account": {
                "id": "acct_aaaaaaaaaaaaaaaaaaaaaaaa",
                "plan": {"id": "free", "name": "Free", "extra": 1},
                "createdAt": "2026-01-02T03:04:05.678Z",
            },
            "token": "secret-token",
            "expiresAt": "2026-02-01T03:04:05.678Z",
            "somethingNew": true,
        }))
        .unwrap();
        assert_eq!(signed.account.plan.id, PlanId::Free);
        assert!(!format!("{signed:?}").contains("secret-token"));

        let me: Me = serde_json::from_value(json!({
            "account": {
                "id": "acct_aaaaaaaaaaaaaaaaaaaaaaaa",
                "plan": {"id": "operator", "name": "Operator"},
                "createdAt": "2026-01-02T03:04:05.678Z",
            },
            "supportKey": null,
        }))
        .unwrap();
        assert_eq!(me.support_key, None);

        let list: SessionList = serde_json::from_value(json!({"sessions": [{
            "id": "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa",
            "createdAt": "2026-01-02T03:04:05.678Z",
            "expiresAt": "2026-02-01T03:04:05.678Z",
            "current": true,
        }]}))
        .unwrap();
        assert!(list.sessions[0].current);
    }

    #[test]
    fn bad_challenge_key_is_refused() {
        let wrong = serde_json::from_value::<Challenge>(json!({
            "nonce": "abc",
            "expiresAt": "2026-01-02T03:04:05.678Z",
            "challengeKey": b64::encode(&[9u8; 31]),
        }));
        assert!(wrong.is_err());
    }
}
