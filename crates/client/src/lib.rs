//! Async Rust SDK for the Sealpost API.
//!
//! ```no_run
//! # async fn demo() -> Result<(), sealpost_client::ClientError> {
//! use sealpost_client::Client;
//! use sealpost_seal::RecoveryPhrase;
//!
//! let phrase = RecoveryPhrase::generate();
//! let keys = phrase.keys();
//! let client = Client::new("http://127.0.0.1:8080")?;
//! let signed_in = client.register(&keys).await?;
//! let client = client.with_token(signed_in.token);
//! let me = client.me().await?;
//! # let _ = me;
//! # Ok(())
//! # }
//! ```
//!
//! The recovery phrase and the keys derived from it never leave the process:
//! registration sends only the account id, the auth verifier and the auth
//! public key, and sign-in answers the service's challenge with a proof.

mod error;
pub mod types;
pub mod webhook;

use std::fmt;
use std::time::Duration;

use reqwest::{Method, RequestBuilder, header};
use sealpost_kernel::{AccountId, SessionId};
use sealpost_seal::AccountKeys;
use serde::de::DeserializeOwned;

pub use error::ClientError;
use types::{
    Challenge, ChallengeRequest, Health, Me, RegisterRequest, Revoked, SessionList, SignedIn,
    VerifyRequest,
};
pub use webhook::{VerifiedEvent, WebhookVerifyError, verify_webhook};

/// Result of every SDK call.
pub type Result<T, E = ClientError> = std::result::Result<T, E>;

/// How long one request may take, connection included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A handle on one Sealpost service, optionally holding a bearer token.
/// Cheap to clone. `Debug` does not show the token.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base_url: String,
    token: Option<String>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.base_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Client {
    /// A client for the service at `base_url` (for example
    /// `https://api.example.com` or `http://127.0.0.1:8080`), without a
    /// token. Installs the `ring` rustls provider for the process if no
    /// provider is installed yet.
    pub fn new(base_url: impl Into<String>) -> Result<Self> {
        // Fails only when a provider is already installed, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .user_agent(concat!("sealpost-client/", env!("CARGO_PKG_VERSION")))
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .build()?;
        let base_url = base_url.into().trim_end_matches('/').to_owned();
        Ok(Self {
            http,
            base_url,
            token: None,
        })
    }

    /// The same client, sending `token` as its bearer token.
    #[must_use]
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// The bearer token this client sends, if any.
    #[must_use]
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The service's base URL, without a trailing slash.
    #[must_use]
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    // ---- Account -----------------------------------------------------------

    /// `POST /accounts`: registers the account of `keys` and opens a session.
    /// A second registration of the same phrase fails with `id_taken`.
    pub async fn register(&self, keys: &AccountKeys) -> Result<SignedIn> {
        let body = RegisterRequest::from_keys(keys);
        self.json(self.public(Method::POST, "/accounts").json(&body))
            .await
    }

    /// Signs in with the challenge handshake ([`Self::challenge`], then
    /// [`Self::verify`] with the proof). A wrong phrase or an unknown account
    /// fails with `unauthenticated`.
    pub async fn sign_in(&self, keys: &AccountKeys) -> Result<SignedIn> {
        let account_id = AccountId::from_trusted(keys.account_id());
        let challenge = self.challenge(&account_id).await?;
        self.verify(&VerifyRequest::answer(keys, &challenge)).await
    }

    /// `POST /accounts/challenge`: a single-use nonce and an ephemeral key.
    pub async fn challenge(&self, account_id: &AccountId) -> Result<Challenge> {
        let body = ChallengeRequest {
            account_id: account_id.clone(),
        };
        self.json(self.public(Method::POST, "/accounts/challenge").json(&body))
            .await
    }

    /// `POST /accounts/verify`: exchanges a challenge's proof for a session.
    pub async fn verify(&self, answer: &VerifyRequest) -> Result<SignedIn> {
        self.json(self.public(Method::POST, "/accounts/verify").json(answer))
            .await
    }

    /// `GET /accounts/me`: the account, its plan and the support key.
    pub async fn me(&self) -> Result<Me> {
        self.json(self.authed(Method::GET, "/accounts/me")).await
    }

    /// `POST /accounts/signout`: revokes this client's session.
    pub async fn sign_out(&self) -> Result<()> {
        self.empty(self.authed(Method::POST, "/accounts/signout"))
            .await
    }

    /// `GET /accounts/sessions`: the live sessions, the current one marked.
    pub async fn sessions(&self) -> Result<SessionList> {
        self.json(self.authed(Method::GET, "/accounts/sessions"))
            .await
    }

    /// `DELETE /accounts/sessions/{id}`: revokes one session.
    pub async fn revoke_session(&self, id: &SessionId) -> Result<()> {
        let path = format!("/accounts/sessions/{id}");
        self.empty(self.authed(Method::DELETE, &path)).await
    }

    /// `DELETE /accounts/sessions`: revokes every session but the current
    /// one; returns how many were revoked.
    pub async fn revoke_other_sessions(&self) -> Result<u64> {
        let revoked: Revoked = self
            .json(self.authed(Method::DELETE, "/accounts/sessions"))
            .await?;
        Ok(revoked.revoked)
    }

    /// `DELETE /accounts/me`: erases the account and everything in it.
    pub async fn erase_account(&self) -> Result<()> {
        self.empty(self.authed(Method::DELETE, "/accounts/me"))
            .await
    }

    // ---- Service -----------------------------------------------------------

    /// `GET /healthz`.
    pub async fn health(&self) -> Result<Health> {
        self.json(self.public(Method::GET, "/healthz")).await
    }

    // ---- Plumbing ----------------------------------------------------------

    /// A request to an endpoint that takes no token (none is sent).
    fn public(&self, method: Method, path: &str) -> RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base_url))
            .header(header::ACCEPT, "application/json")
    }

    /// A request carrying this client's bearer token, if it has one (without
    /// one the service answers 401 `unauthenticated`).
    fn authed(&self, method: Method, path: &str) -> RequestBuilder {
        let request = self.public(method, path);
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// Sends `request`, turning a non-2xx answer into [`ClientError::Api`];
    /// returns the body of a 2xx answer.
    async fn send(&self, request: RequestBuilder) -> Result<Vec<u8>> {
        let response = request.send().await?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.bytes().await?;
        if status.is_success() {
            Ok(body.to_vec())
        } else {
            Err(ClientError::from_response(
                status.as_u16(),
                retry_after.as_deref(),
                &body,
            ))
        }
    }

    /// [`Self::send`], decoding a JSON answer.
    async fn json<T: DeserializeOwned>(&self, request: RequestBuilder) -> Result<T> {
        let body = self.send(request).await?;
        Ok(serde_json::from_slice(&body)?)
    }

    /// [`Self::send`] for an answer without a body (204).
    async fn empty(&self, request: RequestBuilder) -> Result<()> {
        self.send(request).await.map(drop)
    }
}
