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
//! Without the phrase, a script holds an API key (`sealpost api-key create`,
//! or [`Client::create_api_key`] with a session) and the keys of one address
//! exported when it was created (`sealpost address create --export-key`, or
//! [`sealing::AddressKeys::derive`] serialised as JSON). It then waits for
//! mail with the key and opens it with the exported address keys:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use sealpost_client::Client;
//! use sealpost_client::sealing::{self, AddressKeys};
//!
//! let api_key = std::env::var("SEALPOST_API_KEY")?; // spk_...
//! let address: AddressKeys = serde_json::from_str(&std::env::var("SEALPOST_ADDRESS_KEY")?)?;
//! let client = Client::new("https://api.example.com")?.with_token(api_key);
//! if let Some(batch) = client.wait_for_messages(&address.address_id, None, 60).await? {
//!     for message in &batch.messages {
//!         let content = sealing::open_message(&address, message)?;
//!         println!("{:?}", content.subject);
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! A key gets 403 `session_required` from the session-only endpoints
//! (creating addresses, sending, plan changes, ...).
//!
//! The recovery phrase and the keys derived from it never leave the process:
//! registration sends only the account id, the auth verifier and the auth
//! public key, and sign-in answers the service's challenge with a proof.

pub mod api_keys;
pub mod billing;
pub mod domains;
mod error;
pub mod events;
pub mod folders;
pub mod notifications;
pub mod sealing;
pub mod sending;
pub mod support;
pub mod teams;
pub mod types;
pub mod webhook;

use std::fmt;
use std::time::Duration;

use reqwest::{Method, RequestBuilder, header};
use sealpost_kernel::{
    AccountId, AddressId, DeviceId, MessageId, PairingSessionId, SessionId, WebhookId,
};
use sealpost_seal::{AccountKeys, SealedBox};
use serde::de::DeserializeOwned;

pub use error::ClientError;
use types::{
    ActivityPage, Address, AddressList, AddressReply, Allocation, AssignRequest, Challenge,
    ChallengeRequest, ClaimRequest, CreateAddressRequest, CreateWebhookRequest, CreatedWebhook,
    DeliverRequest, Delivered, Device, DeviceKeys, DeviceKind, DevicePage, DeviceReply, DomainList,
    Health, KeysRequest, LookupReply, LookupRequest, Me, Message, MessageList, MessagePage,
    MessageReply, OpenPairingRequest, OpenedPairing, PageParams, PairingPoll, PairingSession,
    Platform, ReadRequest, Revoked, SessionList, SignedIn, UpdateAddressRequest,
    UpdateDeviceRequest, VerifyRequest, WaitBody,
};
pub use webhook::{VerifiedEvent, WebhookVerifyError, verify_webhook};

/// Result of every SDK call.
pub type Result<T, E = ClientError> = std::result::Result<T, E>;

/// How long one request may take, connection included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a `/wait` may be asked to wait (docs/api.md "Messages": 1 to 60
/// seconds).
pub const MAX_WAIT_SECONDS: u32 = 60;
/// How much longer than the wait itself its request may take.
const WAIT_GRACE: Duration = Duration::from_secs(15);

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
        let body = types::registration(keys);
        self.json(self.public(Method::POST, "/accounts").json(&body))
            .await
    }

    /// Signs in with the challenge handshake ([`Self::challenge`], then
    /// [`Self::verify`] with the proof). A wrong phrase or an unknown account
    /// fails with `unauthenticated`.
    pub async fn sign_in(&self, keys: &AccountKeys) -> Result<SignedIn> {
        let account_id = AccountId::from_trusted(keys.account_id());
        let challenge = self.challenge(&account_id).await?;
        self.verify(&types::answer(keys, &challenge)).await
    }

    /// `POST /accounts/challenge`: a single-use nonce and an ephemeral key.
    pub async fn challenge(&self, account_id: &AccountId) -> Result<Challenge> {
        let body = ChallengeRequest::new(account_id);
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

    // ---- Devices: pairing --------------------------------------------------

    /// `POST /workers/pairing-session` (the device, no token): opens a
    /// session; show its code to the operator and poll with its token.
    pub async fn open_pairing(
        &self,
        platform: Platform,
        device_name: &str,
        public_key: &[u8; 32],
    ) -> Result<OpenedPairing> {
        self.open_pairing_as(DeviceKind::Device, platform, device_name, public_key)
            .await
    }

    /// [`Client::open_pairing`] for a session whose claim makes `kind`: an
    /// `agent` (a machine such as a CI runner) needs the Operator plan or
    /// higher, checked when the operator claims it (`plan_required`).
    pub async fn open_pairing_as(
        &self,
        kind: DeviceKind,
        platform: Platform,
        device_name: &str,
        public_key: &[u8; 32],
    ) -> Result<OpenedPairing> {
        let body = OpenPairingRequest::new(platform, device_name, public_key).with_kind(kind);
        self.json(
            self.public(Method::POST, "/workers/pairing-session")
                .json(&body),
        )
        .await
    }

    /// `GET /workers/pairing-session/{token}` (the device, no token): the
    /// session's state; `workerId` and the credential come once, on the
    /// first poll after the claim.
    pub async fn poll_pairing(&self, token: &str) -> Result<PairingPoll> {
        let path = format!("/workers/pairing-session/{token}");
        self.json(self.public(Method::GET, &path)).await
    }

    /// `DELETE /workers/pairing-session/{token}` (the device, no token):
    /// cancels a session nobody claimed; `already_used` once claimed.
    pub async fn cancel_pairing(&self, token: &str) -> Result<()> {
        let path = format!("/workers/pairing-session/{token}");
        self.empty(self.public(Method::DELETE, &path)).await
    }

    /// `POST /workers/pair/lookup` (session): the waiting session with this
    /// code. Ten failed lookups in five minutes give `rate_limited`.
    pub async fn lookup_pairing(&self, code: &str) -> Result<PairingSession> {
        let body = LookupRequest {
            code: code.to_owned(),
        };
        let reply: LookupReply = self
            .json(
                self.authed(Method::POST, "/workers/pair/lookup")
                    .json(&body),
            )
            .await?;
        Ok(reply.session)
    }

    /// `POST /workers/pair` (session): claims a looked-up session as device
    /// `worker_id` with its sealed profile; the device receives its
    /// credential on its next poll.
    pub async fn claim_device(
        &self,
        session_id: &PairingSessionId,
        device_id: &DeviceId,
        profile: &SealedBox,
    ) -> Result<Device> {
        let body = ClaimRequest::new(session_id, device_id, profile);
        let reply: DeviceReply = self
            .json(self.authed(Method::POST, "/workers/pair").json(&body))
            .await?;
        Ok(reply.device)
    }

    // ---- Devices -----------------------------------------------------------

    /// `GET /workers`: one page of the account's devices, newest first (a
    /// device credential sees only its own device).
    pub async fn list_devices(&self, page: &PageParams) -> Result<DevicePage> {
        let path = format!("/workers{}", page.query());
        self.json(self.authed(Method::GET, &path)).await
    }

    /// `GET /workers/{id}`: one device.
    pub async fn get_device(&self, id: &DeviceId) -> Result<Device> {
        let path = format!("/workers/{id}");
        let reply: DeviceReply = self.json(self.authed(Method::GET, &path)).await?;
        Ok(reply.device)
    }

    /// `PATCH /workers/{id}` (session): a new sealed profile, or disabling
    /// ([`UpdateDeviceRequest::disable`]).
    pub async fn update_device(
        &self,
        id: &DeviceId,
        update: &UpdateDeviceRequest,
    ) -> Result<Device> {
        let path = format!("/workers/{id}");
        let reply: DeviceReply = self
            .json(self.authed(Method::PATCH, &path).json(update))
            .await?;
        Ok(reply.device)
    }

    /// `DELETE /workers/{id}` (session): removes the device and its
    /// credential; its addresses become unassigned.
    pub async fn remove_device(&self, id: &DeviceId) -> Result<()> {
        let path = format!("/workers/{id}");
        self.empty(self.authed(Method::DELETE, &path)).await
    }

    /// `POST /workers/heartbeat` (device credential only): reports the
    /// device active; answers the device.
    pub async fn heartbeat(&self) -> Result<Device> {
        let reply: DeviceReply = self
            .json(self.authed(Method::POST, "/workers/heartbeat"))
            .await?;
        Ok(reply.device)
    }

    /// `POST /workers/{id}/keys` (session): replaces the device's sealed key
    /// bundle (see [`sealing::KeyBundle`]).
    pub async fn set_device_keys(&self, id: &DeviceId, keys: &SealedBox) -> Result<DeviceKeys> {
        let path = format!("/workers/{id}/keys");
        let body = KeysRequest::new(keys);
        self.json(self.authed(Method::POST, &path).json(&body))
            .await
    }

    /// `GET /workers/{id}/keys`: the device's sealed key bundle; `not_found`
    /// until one was sent.
    pub async fn get_device_keys(&self, id: &DeviceId) -> Result<DeviceKeys> {
        let path = format!("/workers/{id}/keys");
        self.json(self.authed(Method::GET, &path)).await
    }

    // ---- Addresses and domains ---------------------------------------------

    /// `GET /domains`: the domains addresses can be created on.
    pub async fn domains(&self) -> Result<DomainList> {
        self.json(self.authed(Method::GET, "/domains")).await
    }

    /// `GET /inboxes`: every address on the account (a device credential
    /// sees the ones assigned to it).
    pub async fn list_addresses(&self) -> Result<AddressList> {
        self.json(self.authed(Method::GET, "/inboxes")).await
    }

    /// `POST /inboxes` (session): creates an address; `allocation_exhausted`
    /// past the plan's limit.
    pub async fn create_address(&self, request: &CreateAddressRequest) -> Result<Address> {
        let reply: AddressReply = self
            .json(self.authed(Method::POST, "/inboxes").json(request))
            .await?;
        Ok(reply.address)
    }

    /// `GET /inboxes/allocation`: the plan's address allowance and its use.
    pub async fn allocation(&self) -> Result<Allocation> {
        self.json(self.authed(Method::GET, "/inboxes/allocation"))
            .await
    }

    /// `PATCH /inboxes/{id}` (session): a new sealed label and/or retention.
    pub async fn update_address(
        &self,
        id: &AddressId,
        update: &UpdateAddressRequest,
    ) -> Result<Address> {
        let path = format!("/inboxes/{id}");
        let reply: AddressReply = self
            .json(self.authed(Method::PATCH, &path).json(update))
            .await?;
        Ok(reply.address)
    }

    /// `DELETE /inboxes/{id}` (session): deletes the address and its mail;
    /// the address is never issued again.
    pub async fn delete_address(&self, id: &AddressId) -> Result<()> {
        let path = format!("/inboxes/{id}");
        self.empty(self.authed(Method::DELETE, &path)).await
    }

    /// `POST /workers/{worker_id}/inboxes` (session): assigns an address to
    /// a device, moving it off another device if needed. Answers the
    /// address. Re-send the key bundles of the devices involved afterwards.
    pub async fn assign_address(
        &self,
        device_id: &DeviceId,
        address_id: &AddressId,
    ) -> Result<Address> {
        let path = format!("/workers/{device_id}/inboxes");
        let body = AssignRequest::new(address_id);
        let reply: AddressReply = self
            .json(self.authed(Method::POST, &path).json(&body))
            .await?;
        Ok(reply.address)
    }

    /// `DELETE /workers/{worker_id}/inboxes/{inbox_id}` (session): takes an
    /// address off a device; it stays on the account.
    pub async fn unassign_address(
        &self,
        device_id: &DeviceId,
        address_id: &AddressId,
    ) -> Result<()> {
        let path = format!("/workers/{device_id}/inboxes/{address_id}");
        self.empty(self.authed(Method::DELETE, &path)).await
    }

    // ---- Messages ----------------------------------------------------------

    /// `GET /inboxes/{id}/messages`: one page of an address's mail, newest
    /// first (lists spend no object reads).
    pub async fn list_messages(
        &self,
        address_id: &AddressId,
        page: &PageParams,
    ) -> Result<MessagePage> {
        let path = format!("/inboxes/{address_id}/messages{}", page.query());
        self.json(self.authed(Method::GET, &path)).await
    }

    /// `GET /inboxes/{id}/messages/wait`: the mail newer than `after` (a
    /// previous answer's `cursor`; `None` counts every message in the
    /// address), in the order they were committed, as soon as there is
    /// some; `None` when nothing arrived within `timeout_secs` (clamped to
    /// 1 to 60).
    pub async fn wait_for_messages(
        &self,
        address_id: &AddressId,
        after: Option<&str>,
        timeout_secs: u32,
    ) -> Result<Option<WaitBody>> {
        let timeout = timeout_secs.clamp(1, MAX_WAIT_SECONDS);
        let mut path = format!("/inboxes/{address_id}/messages/wait?timeout={timeout}");
        if let Some(after) = after {
            path.push_str(&format!("&after={}", types::percent_encode(after)));
        }
        let request = self
            .authed(Method::GET, &path)
            .timeout(Duration::from_secs(u64::from(timeout)) + WAIT_GRACE);
        let (status, body) = self.send_with_status(request).await?;
        if status == reqwest::StatusCode::NO_CONTENT {
            return Ok(None);
        }
        Ok(Some(serde_json::from_slice(&body)?))
    }

    /// `GET /messages/{id}`: one message. Spends one of the plan's hourly
    /// object reads (`rate_limited` past them).
    pub async fn get_message(&self, id: &MessageId) -> Result<Message> {
        let path = format!("/messages/{id}");
        let reply: MessageReply = self.json(self.authed(Method::GET, &path)).await?;
        Ok(reply.message)
    }

    /// `GET /messages/{id}/attachments/{index}`: the attachment's sealed
    /// bytes (binary box; open them with `sealing::open_attachment`).
    /// Spends one object read; `not_found` for an attachment listed with
    /// `stored: false`.
    pub async fn get_attachment(&self, id: &MessageId, index: u32) -> Result<Vec<u8>> {
        let path = format!("/messages/{id}/attachments/{index}");
        self.send(self.authed(Method::GET, &path)).await
    }

    /// `POST /messages/{id}/read`: marks the message read, or unread with
    /// `read: false`.
    pub async fn mark_read(&self, id: &MessageId, read: bool) -> Result<()> {
        let path = format!("/messages/{id}/read");
        self.empty(
            self.authed(Method::POST, &path)
                .json(&ReadRequest { read: Some(read) }),
        )
        .await
    }

    /// `GET /workers/messages` (device credential only): the newest mail
    /// across the device's addresses.
    pub async fn device_messages(&self) -> Result<MessageList> {
        self.json(self.authed(Method::GET, "/workers/messages"))
            .await
    }

    /// `POST /messages` (session): delivers a raw RFC 5322 message to one of
    /// the account's addresses without SMTP; it is parsed, sealed and
    /// counted exactly like SMTP mail. Answers the new message's id.
    pub async fn deliver_raw(&self, address_id: &AddressId, raw: &[u8]) -> Result<MessageId> {
        let body = DeliverRequest::new(address_id, raw);
        let delivered: Delivered = self
            .json(self.authed(Method::POST, "/messages").json(&body))
            .await?;
        Ok(delivered.message_id)
    }

    // ---- Activity ----------------------------------------------------------

    /// `GET /activity`: one page of the activity log, newest first (a device
    /// credential sees the entries about itself).
    pub async fn activity(&self, page: &PageParams) -> Result<ActivityPage> {
        let path = format!("/activity{}", page.query());
        self.json(self.authed(Method::GET, &path)).await
    }

    // ---- Webhooks ----------------------------------------------------------

    /// `POST /webhook-endpoints`: a webhook `id` (see
    /// [`sealing::new_webhook_id`]) posting `events` (`["*"]` for all) to the
    /// https `url`, named by `meta` (sealed to the vault key, context
    /// `service/v1/webhook-meta:<id>`). The signing secret is in the answer
    /// only this once.
    pub async fn create_webhook(
        &self,
        id: &WebhookId,
        url: &str,
        events: &[&str],
        meta: &SealedBox,
    ) -> Result<CreatedWebhook> {
        let body = CreateWebhookRequest {
            id: id.to_string(),
            url: url.to_owned(),
            events: events.iter().map(|event| (*event).to_owned()).collect(),
            meta: Some(sealpost_wire::sealed_json(meta)),
        };
        self.json(self.authed(Method::POST, "/webhook-endpoints").json(&body))
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
        self.send_with_status(request).await.map(|(_, body)| body)
    }

    /// [`Self::send`], also answering which 2xx status came back.
    async fn send_with_status(
        &self,
        request: RequestBuilder,
    ) -> Result<(reqwest::StatusCode, Vec<u8>)> {
        let response = request.send().await?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.bytes().await?;
        if status.is_success() {
            Ok((status, body.to_vec()))
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
