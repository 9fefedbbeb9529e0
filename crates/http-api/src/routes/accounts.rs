//! The account endpoints (docs/api.md "Accounts"): registration, the sign-in
//! handshake, sessions.

use actix_web::web::{Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use sealpost_accounts::{Account, Registration, SessionView, SignedIn};
use sealpost_kernel::{AccountId, SessionId};
use sealpost_seal::b64;
use sealpost_wire as wire;

use crate::auth::{Authenticated, SessionCaller};
use crate::error::ApiError;
use crate::json::Json;
use crate::state::AppState;

fn account_body(account: Account) -> wire::Account {
    wire::Account {
        id: account.id,
        plan: account.plan.into(),
        created_at: account.created_at,
    }
}

fn signed_in_body(signed_in: SignedIn) -> wire::SignedIn {
    wire::SignedIn {
        account: account_body(signed_in.account),
        token: signed_in.token,
        expires_at: signed_in.session.expires_at,
    }
}

fn session_body(view: SessionView) -> wire::Session {
    wire::Session {
        id: view.id,
        created_at: view.created_at,
        expires_at: view.expires_at,
        current: view.current,
    }
}

fn parse_account_id(text: &str) -> Result<AccountId, ApiError> {
    AccountId::parse(text).map_err(|error| ApiError::invalid_id("accountId", error))
}

/// Registers an account (Free plan) and opens its first session.
#[utoipa::path(post, path = "/accounts", operation_id = "register_account", tag = "accounts", request_body = wire::RegisterRequest, responses(
    (status = 201, body = wire::SignedIn),
    (status = 400, body = wire::ErrorBody, description = "invalid_json, invalid_field, invalid_id, invalid_key"),
    (status = 409, body = wire::ErrorBody, description = "id_taken"),
    (status = 429, body = wire::ErrorBody, description = "rate_limited: the client's network (an IPv4 /24, an IPv6 /48) registered its hourly number of accounts"),
))]
pub async fn register(
    state: Data<AppState>,
    request: HttpRequest,
    Json(body): Json<wire::RegisterRequest>,
) -> Result<HttpResponse, ApiError> {
    let account_id = parse_account_id(&body.account_id)?;
    let auth_verifier = b64::decode_32(&body.auth_verifier)
        .map_err(|_| ApiError::invalid_field("authVerifier", "expected 32 bytes in base64url"))?;
    let auth_public_key = sealpost_seal::parse_public_key(&body.auth_public_key)
        .map_err(|_| ApiError::invalid_key("authPublicKey"))?;
    let signed_in = state
        .accounts
        .register(Registration {
            account_id,
            auth_verifier,
            auth_public_key,
            network: crate::client_ip::registration_network(
                crate::client_ip::ClientIp::of(&request).0,
            )
            .to_string(),
        })
        .await?;
    Ok(HttpResponse::Created().json(signed_in_body(signed_in)))
}

/// Issues a sign-in challenge. Identical in shape and work whether or not the account exists.
#[utoipa::path(post, path = "/accounts/challenge", operation_id = "sign_in_challenge", tag = "accounts", request_body = wire::ChallengeRequest, responses(
    (status = 200, body = wire::Challenge),
    (status = 400, body = wire::ErrorBody),
))]
pub async fn challenge(
    state: Data<AppState>,
    Json(body): Json<wire::ChallengeRequest>,
) -> Result<HttpResponse, ApiError> {
    let account_id = parse_account_id(&body.account_id)?;
    let issued = state.accounts.challenge(account_id).await?;
    Ok(HttpResponse::Ok().json(wire::Challenge {
        nonce: issued.nonce,
        expires_at: issued.expires_at,
        challenge_key: issued.challenge_key,
    }))
}

/// Completes the handshake and opens a session.
#[utoipa::path(post, path = "/accounts/verify", operation_id = "sign_in_verify", tag = "accounts", request_body = wire::VerifyRequest, responses(
    (status = 200, body = wire::SignedIn),
    (status = 401, body = wire::ErrorBody, description = "unauthenticated: unknown account, wrong proof, used or expired nonce"),
))]
pub async fn verify(
    state: Data<AppState>,
    Json(body): Json<wire::VerifyRequest>,
) -> Result<HttpResponse, ApiError> {
    let account_id = parse_account_id(&body.account_id)?;
    // An undecodable proof is a wrong proof: it still consumes the nonce.
    let proof = b64::decode(&body.proof).unwrap_or_default();
    let signed_in = state
        .accounts
        .verify(&account_id, &body.nonce, &proof)
        .await?;
    Ok(HttpResponse::Ok().json(signed_in_body(signed_in)))
}

/// The caller's account and plan.
#[utoipa::path(get, path = "/accounts/me", operation_id = "get_account", tag = "accounts", security(("bearer" = [])), responses(
    (status = 200, body = wire::Me),
    (status = 401, body = wire::ErrorBody),
))]
pub async fn me(state: Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let account = state.accounts.account(caller.0.account()).await?;
    Ok(HttpResponse::Ok().json(wire::Me {
        account: account_body(account),
        // The rotated key once staff rotated it, else the configured one.
        support_key: state
            .support
            .availability()
            .await?
            .staff_key
            .map(|key| key.to_text())
            .or_else(|| state.support_key.clone()),
    }))
}

/// Revokes the current session.
#[utoipa::path(post, path = "/accounts/signout", tag = "accounts", security(("session" = [])), responses(
    (status = 204),
    (status = 403, body = wire::ErrorBody, description = "session_required"),
))]
pub async fn sign_out(
    state: Data<AppState>,
    caller: SessionCaller,
) -> Result<HttpResponse, ApiError> {
    state.accounts.sign_out(&caller.caller).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Live sessions, newest first, the current one marked.
#[utoipa::path(get, path = "/accounts/sessions", operation_id = "list_sessions", tag = "accounts", security(("session" = [])), responses(
    (status = 200, body = wire::SessionList),
    (status = 403, body = wire::ErrorBody, description = "session_required"),
))]
pub async fn sessions(
    state: Data<AppState>,
    caller: SessionCaller,
) -> Result<HttpResponse, ApiError> {
    let sessions = state.accounts.sessions(&caller.caller).await?;
    Ok(HttpResponse::Ok().json(wire::SessionList {
        sessions: sessions.into_iter().map(session_body).collect(),
    }))
}

/// Revokes every session but the current one.
#[utoipa::path(delete, path = "/accounts/sessions", tag = "accounts", security(("session" = [])), responses(
    (status = 200, body = wire::Revoked),
    (status = 403, body = wire::ErrorBody, description = "session_required"),
))]
pub async fn revoke_other_sessions(
    state: Data<AppState>,
    caller: SessionCaller,
) -> Result<HttpResponse, ApiError> {
    let revoked = state.accounts.revoke_other_sessions(&caller.caller).await?;
    Ok(HttpResponse::Ok().json(wire::Revoked { revoked }))
}

/// Revokes one session (the current one too).
#[utoipa::path(delete, path = "/accounts/sessions/{id}", tag = "accounts", security(("session" = [])),
    params(("id" = sealpost_kernel::SessionId, Path)),
    responses(
        (status = 204),
        (status = 404, body = wire::ErrorBody),
    ))]
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
#[utoipa::path(delete, path = "/accounts/me", operation_id = "erase_account", tag = "accounts", security(("session" = [])), responses(
    (status = 204),
    (status = 403, body = wire::ErrorBody, description = "session_required"),
))]
pub async fn erase(state: Data<AppState>, caller: SessionCaller) -> Result<HttpResponse, ApiError> {
    let renewing = state.accounts.erase(&caller.caller).await?;
    // The rows are gone; their sealed blobs follow now (the hourly sweep retries failures).
    if let Err(error) = state.mailbox.collect_garbage().await {
        tracing::warn!(%error, "blob clean-up deferred to the sweep");
    }
    // A card subscription that still renewed was queued to be stopped with
    // the erasure; the provider is told now (the hourly sweep retries).
    if let Some(subscription) = renewing
        && let Err(error) = state.billing.stop_queued_subscription(&subscription).await
    {
        tracing::warn!(%error, "stopping the card renewal deferred to the sweep");
    }
    Ok(HttpResponse::NoContent().finish())
}
