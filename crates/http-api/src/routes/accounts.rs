//! SPEC.md "Account" endpoints: registration, the sign-in handshake, sessions.

use actix_web::web::{Data, Path};
use actix_web::{HttpResponse, delete, get, post};
use sealpost_accounts::{Account, Registration, SessionView, SignedIn};
use sealpost_kernel::{AccountId, PlanId, SessionId, Timestamp};
use sealpost_seal::b64;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::{Authenticated, SessionCaller};
use crate::error::{ApiError, ErrorBody};
use crate::json::Json;
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
pub struct PlanRef {
    id: PlanId,
    name: &'static str,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountBody {
    id: AccountId,
    plan: PlanRef,
    created_at: Timestamp,
}

impl From<Account> for AccountBody {
    fn from(account: Account) -> Self {
        Self {
            id: account.id,
            plan: PlanRef {
                id: account.plan,
                name: account.plan.display_name(),
            },
            created_at: account.created_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignedInBody {
    account: AccountBody,
    /// Bearer token for this session; shown once.
    token: String,
    expires_at: Timestamp,
}

impl From<SignedIn> for SignedInBody {
    fn from(signed_in: SignedIn) -> Self {
        Self {
            account: signed_in.account.into(),
            token: signed_in.token,
            expires_at: signed_in.session.expires_at,
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegisterRequest {
    /// `acct_` + 24 base32 characters, derived from the recovery phrase.
    account_id: String,
    /// base64url of `derive("auth-verifier")`; stored only as its SHA-256.
    auth_verifier: String,
    /// base64url X25519 public key of `derive("auth-key")`.
    auth_public_key: String,
}

fn parse_account_id(text: &str) -> Result<AccountId, ApiError> {
    AccountId::parse(text).map_err(|error| ApiError::invalid_id("accountId", error))
}

/// Registers an account (Free plan) and opens its first session.
#[utoipa::path(post, path = "/accounts", tag = "accounts", request_body = RegisterRequest, responses(
    (status = 201, body = SignedInBody),
    (status = 400, body = ErrorBody, description = "invalid_json, invalid_field, invalid_id, invalid_key"),
    (status = 409, body = ErrorBody, description = "id_taken"),
))]
#[post("/accounts")]
pub async fn register(
    state: Data<AppState>,
    Json(body): Json<RegisterRequest>,
) -> Result<HttpResponse, ApiError> {
    let account_id = parse_account_id(&body.account_id)?;
    let auth_verifier = b64::decode_32(&body.auth_verifier)
        .map_err(|_| ApiError::invalid_field("authVerifier", "expected 32 bytes in base64url"))?;
    let auth_public_key = b64::decode_32(&body.auth_public_key)
        .map_err(|_| ApiError::invalid_key("authPublicKey"))?;
    let signed_in = state
        .accounts
        .register(Registration {
            account_id,
            auth_verifier,
            auth_public_key,
        })
        .await?;
    Ok(HttpResponse::Created().json(SignedInBody::from(signed_in)))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChallengeRequest {
    account_id: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChallengeBody {
    /// 32 random bytes, base64url; single use.
    nonce: String,
    expires_at: Timestamp,
    /// Ephemeral X25519 public key, base64url.
    challenge_key: String,
}

/// Issues a sign-in challenge. Identical in shape and work whether or not the account exists.
#[utoipa::path(post, path = "/accounts/challenge", tag = "accounts", request_body = ChallengeRequest, responses(
    (status = 200, body = ChallengeBody),
    (status = 400, body = ErrorBody),
))]
#[post("/accounts/challenge")]
pub async fn challenge(
    state: Data<AppState>,
    Json(body): Json<ChallengeRequest>,
) -> Result<HttpResponse, ApiError> {
    let account_id = parse_account_id(&body.account_id)?;
    let issued = state.accounts.challenge(account_id).await?;
    Ok(HttpResponse::Ok().json(ChallengeBody {
        nonce: issued.nonce,
        expires_at: issued.expires_at,
        challenge_key: b64::encode(&issued.challenge_key),
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyRequest {
    account_id: String,
    nonce: String,
    /// base64url HMAC-SHA256 (CONTRACT.md section 3).
    proof: String,
}

/// Completes the handshake and opens a session.
#[utoipa::path(post, path = "/accounts/verify", tag = "accounts", request_body = VerifyRequest, responses(
    (status = 200, body = SignedInBody),
    (status = 401, body = ErrorBody, description = "unauthenticated: unknown account, wrong proof, used or expired nonce"),
))]
#[post("/accounts/verify")]
pub async fn verify(
    state: Data<AppState>,
    Json(body): Json<VerifyRequest>,
) -> Result<HttpResponse, ApiError> {
    let account_id = parse_account_id(&body.account_id)?;
    // An undecodable proof is a wrong proof: it still consumes the nonce.
    let proof = b64::decode(&body.proof).unwrap_or_default();
    let signed_in = state
        .accounts
        .verify(&account_id, &body.nonce, &proof)
        .await?;
    Ok(HttpResponse::Ok().json(SignedInBody::from(signed_in)))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MeBody {
    account: AccountBody,
    /// The support team's X25519 public key, or null while in-app support is off.
    support_key: Option<String>,
}

/// The caller's account and plan.
#[utoipa::path(get, path = "/accounts/me", tag = "accounts", security(("bearer" = [])), responses(
    (status = 200, body = MeBody),
    (status = 401, body = ErrorBody),
))]
#[get("/accounts/me")]
pub async fn me(state: Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let account = state.accounts.account(caller.0.account()).await?;
    Ok(HttpResponse::Ok().json(MeBody {
        account: account.into(),
        support_key: state.support_key.clone(),
    }))
}

/// Revokes the current session.
#[utoipa::path(post, path = "/accounts/signout", tag = "accounts", security(("bearer" = [])), responses(
    (status = 204),
    (status = 403, body = ErrorBody, description = "session_required"),
))]
#[post("/accounts/signout")]
pub async fn sign_out(
    state: Data<AppState>,
    caller: SessionCaller,
) -> Result<HttpResponse, ApiError> {
    state.accounts.sign_out(&caller.caller).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionBody {
    id: SessionId,
    created_at: Timestamp,
    expires_at: Timestamp,
    current: bool,
}

impl From<SessionView> for SessionBody {
    fn from(view: SessionView) -> Self {
        Self {
            id: view.id,
            created_at: view.created_at,
            expires_at: view.expires_at,
            current: view.current,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct SessionsBody {
    sessions: Vec<SessionBody>,
}

/// Live sessions, newest first, the current one marked.
#[utoipa::path(get, path = "/accounts/sessions", tag = "accounts", security(("bearer" = [])), responses(
    (status = 200, body = SessionsBody),
    (status = 403, body = ErrorBody, description = "session_required"),
))]
#[get("/accounts/sessions")]
pub async fn sessions(
    state: Data<AppState>,
    caller: SessionCaller,
) -> Result<HttpResponse, ApiError> {
    let sessions = state.accounts.sessions(&caller.caller).await?;
    Ok(HttpResponse::Ok().json(SessionsBody {
        sessions: sessions.into_iter().map(SessionBody::from).collect(),
    }))
}

#[derive(Serialize, ToSchema)]
pub struct RevokedBody {
    /// How many sessions were revoked.
    revoked: u64,
}

/// Revokes every session but the current one.
#[utoipa::path(delete, path = "/accounts/sessions", tag = "accounts", security(("bearer" = [])), responses(
    (status = 200, body = RevokedBody),
    (status = 403, body = ErrorBody, description = "session_required"),
))]
#[delete("/accounts/sessions")]
pub async fn revoke_other_sessions(
    state: Data<AppState>,
    caller: SessionCaller,
) -> Result<HttpResponse, ApiError> {
    let revoked = state.accounts.revoke_other_sessions(&caller.caller).await?;
    Ok(HttpResponse::Ok().json(RevokedBody { revoked }))
}

/// Revokes one session (the current one too).
#[utoipa::path(delete, path = "/accounts/sessions/{id}", tag = "accounts", security(("bearer" = [])),
    params(("id" = String, Path, description = "ses_...")),
    responses(
        (status = 204),
        (status = 404, body = ErrorBody),
    ))]
#[delete("/accounts/sessions/{id}")]
pub async fn revoke_session(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = SessionId::parse(&id).map_err(|_| ApiError::not_found())?;
    state.accounts.revoke_session(&caller.caller, &id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Erases the account and everything in it, at once. The id can never be registered again.
#[utoipa::path(delete, path = "/accounts/me", tag = "accounts", security(("bearer" = [])), responses(
    (status = 204),
    (status = 403, body = ErrorBody, description = "session_required"),
))]
#[delete("/accounts/me")]
pub async fn erase(state: Data<AppState>, caller: SessionCaller) -> Result<HttpResponse, ApiError> {
    state.accounts.erase(&caller.caller).await?;
    // The rows are gone; their sealed blobs follow now (the hourly sweep retries failures).
    if let Err(error) = state.mailbox.collect_garbage().await {
        tracing::warn!(%error, "blob clean-up deferred to the sweep");
    }
    Ok(HttpResponse::NoContent().finish())
}
