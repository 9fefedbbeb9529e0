//! Request and response bodies, exactly as they travel on the wire
//! (SPEC.md "Account", "Devices", "Addresses and domains", "Messages" and
//! "Activity entry"; CONTRACT.md sections 1, 3, 6 and 9; `docs/openapi.json`).
//!
//! Field names are camelCase; binary values are base64url without padding;
//! timestamps are RFC 3339 UTC with milliseconds. Unknown fields in
//! responses are ignored, so the service can add fields without breaking
//! older clients.

use std::fmt;

use sealpost_kernel::{
    AccountId, ActivityId, InboxId, MessageId, PairingSessionId, PlanId, SessionId, Timestamp,
    WorkerId,
};
use sealpost_seal::{AccountKeys, SealedBox, b64};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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

// ---- Values with a fixed set of names -------------------------------------

/// An enum of the names the service sends today, plus `Other` for a name a
/// newer service may add, so that adding one never breaks an older client.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
            /// A name this version of the SDK does not know.
            Other(String),
        }

        impl $name {
            /// The name on the wire.
            #[must_use]
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $text,)+
                    Self::Other(text) => text,
                }
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                match text {
                    $($text => Self::$variant,)+
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                Ok(Self::from(String::deserialize(deserializer)?.as_str()))
            }
        }
    };
}

wire_enum!(
    /// The platform a device reports when it opens a pairing session.
    Platform {
        Ios = "ios",
        Android = "android",
        Web = "web",
        Unknown = "unknown",
    }
);

wire_enum!(
    /// State of a pairing session (CONTRACT.md section 6).
    PairingState {
        /// Opened by the device.
        Waiting = "waiting",
        /// An operator looked the code up.
        OperatorDetected = "operator_detected",
        /// Claimed; the credential is minted.
        AwaitingInbox = "awaiting_inbox",
        /// The first address was assigned to the new device.
        InboxAssigned = "inbox_assigned",
    }
);

wire_enum!(
    /// A device's status.
    WorkerStatus {
        Online = "online",
        /// Not active for two hours.
        Offline = "offline",
        /// Its credential is revoked.
        Disabled = "disabled",
    }
);

wire_enum!(
    /// What kind of worker a device record is.
    WorkerKind {
        Device = "device",
        Agent = "agent",
    }
);

wire_enum!(
    /// An address's status.
    InboxStatus {
        /// Assigned to a device.
        Active = "active",
        Unassigned = "unassigned",
    }
);

/// An optional 32-byte value as base64url text or null.
mod opt_b64_32 {
    use sealpost_seal::b64;
    use serde::{Deserialize, Deserializer, Serializer};

    #[allow(
        clippy::ref_option,
        reason = "serde's `with` passes the field by reference"
    )]
    pub fn serialize<S: Serializer>(
        value: &Option<[u8; 32]>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(bytes) => serializer.serialize_str(&b64::encode(bytes)),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<[u8; 32]>, D::Error> {
        Option::<String>::deserialize(deserializer)?
            .map(|text| b64::decode_32(&text).map_err(serde::de::Error::custom))
            .transpose()
    }
}

// ---- Pages ----------------------------------------------------------------

/// `limit` and `cursor` of a paginated list (`GET /workers`, `GET /activity`).
/// The default asks for the first page at the service's default size.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageParams {
    /// Page size; the default and maximum depend on the list (SPEC.md Limits).
    pub limit: Option<u32>,
    /// The previous page's `nextCursor`.
    pub cursor: Option<String>,
}

impl PageParams {
    /// The first page, `limit` long.
    #[must_use]
    pub fn first(limit: u32) -> Self {
        Self {
            limit: Some(limit),
            cursor: None,
        }
    }

    /// The page after the one that answered `next_cursor`, the same size;
    /// `None` at the end of the list.
    #[must_use]
    pub fn next(&self, next_cursor: Option<&str>) -> Option<Self> {
        next_cursor.map(|cursor| Self {
            limit: self.limit,
            cursor: Some(cursor.to_owned()),
        })
    }

    /// The query string, with its leading `?`, or empty.
    pub(crate) fn query(&self) -> String {
        let mut pairs = Vec::new();
        if let Some(limit) = self.limit {
            pairs.push(format!("limit={limit}"));
        }
        if let Some(cursor) = &self.cursor {
            pairs.push(format!("cursor={}", percent_encode(cursor)));
        }
        if pairs.is_empty() {
            String::new()
        } else {
            format!("?{}", pairs.join("&"))
        }
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters. Cursors
/// are base64url today, which passes unchanged, but they are opaque.
pub(crate) fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

// ---- Devices: pairing -----------------------------------------------------

/// `POST /workers/pairing-session` (sent by the device, without a token).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenPairingRequest {
    pub platform: Platform,
    /// At most 100 characters; shown to the operator.
    pub device_name: String,
    /// The device's X25519 public key; its key bundle is sealed to it.
    #[serde(with = "b64::serde_32")]
    pub public_key: [u8; 32],
}

/// Answer of `POST /workers/pairing-session`. `Debug` does not show the
/// token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenedPairing {
    /// Secret to the device: it polls and cancels with it.
    pub token: String,
    /// 8 digits to show the operator (a lookup key, not a secret).
    pub code: String,
    pub state: PairingState,
}

impl fmt::Debug for OpenedPairing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenedPairing")
            .field("token", &"<redacted>")
            .field("code", &self.code)
            .field("state", &self.state)
            .finish()
    }
}

/// Answer of `GET /workers/pairing-session/{token}`. `workerId` and the
/// device credential come once, on the first poll after the claim. `Debug`
/// does not show the credential.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingPoll {
    pub state: PairingState,
    pub code: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<WorkerId>,
    /// The device's bearer token. Store it like a password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

impl fmt::Debug for PairingPoll {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PairingPoll")
            .field("state", &self.state)
            .field("code", &self.code)
            .field("worker_id", &self.worker_id)
            .field(
                "credential",
                &self.credential.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// `POST /workers/pair/lookup`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LookupRequest {
    /// The 8 digits the device shows.
    pub code: String,
}

/// A pairing session as the operator sees it after looking its code up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingSession {
    /// `pst_...`: what [`ClaimRequest::session_id`] names.
    pub id: PairingSessionId,
    pub state: PairingState,
    pub platform: Platform,
    pub device_name: String,
    /// The device's X25519 public key: seal its key bundle to it.
    #[serde(with = "b64::serde_32")]
    pub public_key: [u8; 32],
    pub created_at: Timestamp,
}

/// Answer of `POST /workers/pair/lookup`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LookupReply {
    pub session: PairingSession,
}

/// `POST /workers/pair`: claims a looked-up session as a new device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRequest {
    pub session_id: PairingSessionId,
    /// Chosen by the client (see `sealing::new_worker_id`).
    pub worker_id: WorkerId,
    /// The sealed profile (context `service/v1/worker-profile:<workerId>`).
    pub profile: SealedBox,
}

// ---- Devices --------------------------------------------------------------

/// A device (worker).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Worker {
    pub id: WorkerId,
    pub operator_id: AccountId,
    pub kind: WorkerKind,
    pub platform: Platform,
    pub status: WorkerStatus,
    pub created_at: Timestamp,
    /// Truncated to the hour.
    #[serde(default)]
    pub last_active_at: Option<Timestamp>,
    /// Set while paused after a missed payment.
    #[serde(default)]
    pub paused_at: Option<Timestamp>,
    /// The sealed profile (name, tags, notes).
    #[serde(default)]
    pub profile: Option<SealedBox>,
}

/// A single device as the service wraps it: `{"worker": ...}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerReply {
    pub worker: Worker,
}

/// Answer of `GET /workers`: newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerPage {
    pub workers: Vec<Worker>,
    /// Pass as the next page's cursor; `None` at the end.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// `PATCH /workers/{id}`: a new sealed profile, and/or disabling.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateWorkerRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<SealedBox>,
    /// Only [`WorkerStatus::Disabled`] can be set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WorkerStatus>,
}

impl UpdateWorkerRequest {
    /// Replaces the sealed profile.
    #[must_use]
    pub fn profile(profile: SealedBox) -> Self {
        Self {
            profile: Some(profile),
            status: None,
        }
    }

    /// Disables the device: its credential stops working at once.
    #[must_use]
    pub fn disable() -> Self {
        Self {
            profile: None,
            status: Some(WorkerStatus::Disabled),
        }
    }
}

/// `POST /workers/{id}/keys`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeysRequest {
    /// Sealed to the device's pairing key (context
    /// `service/v1/worker-keys:<workerId>`).
    pub keys: SealedBox,
}

/// A device's sealed key bundle, as stored by the service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerKeys {
    pub keys: SealedBox,
    pub updated_at: Timestamp,
}

// ---- Addresses and domains ------------------------------------------------

/// A domain addresses can be created on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Domain {
    pub domain: String,
    /// True for a domain belonging to this account alone.
    pub reserved: bool,
}

/// Answer of `GET /domains`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainList {
    pub domains: Vec<Domain>,
}

/// An address (inbox).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Inbox {
    pub id: InboxId,
    pub operator_id: AccountId,
    pub email_address: String,
    pub status: InboxStatus,
    pub created_at: Timestamp,
    /// The device holding it; `None` when unassigned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assigned_worker_id: Option<WorkerId>,
    /// 1 to 90.
    pub retention_days: u8,
    #[serde(default)]
    pub paused_at: Option<Timestamp>,
    /// The sealed label (context `service/v1/inbox-meta:<inboxId>`).
    #[serde(default)]
    pub meta: Option<SealedBox>,
    pub key_epoch: u32,
    /// The X25519 key mail is sealed to; `None` means the address refuses
    /// mail.
    #[serde(default, with = "opt_b64_32")]
    pub public_key: Option<[u8; 32]>,
}

/// A single address as the service wraps it: `{"inbox": ...}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxReply {
    pub inbox: Inbox,
}

/// Answer of `GET /inboxes`: every address on the account, newest first
/// (a device sees the ones assigned to it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxList {
    pub inboxes: Vec<Inbox>,
}

/// `POST /inboxes`. Start from [`CreateInboxRequest::new`] and set what
/// else is wanted; unset fields are not sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateInboxRequest {
    /// Chosen by the client (see `sealing::new_inbox_id`).
    pub id: InboxId,
    /// One of `GET /domains`; required unless `email_address` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The service appends a random ending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Scale and up: the exact name before the `@`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_part: Option<String>,
    /// Scale and up: the whole address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email_address: Option<String>,
    /// 1 to 90, default 7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_days: Option<u8>,
    /// The sealed label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<SealedBox>,
    /// Without it the address refuses mail.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_b64_32")]
    pub public_key: Option<[u8; 32]>,
}

impl CreateInboxRequest {
    /// An address `id` on `domain`, everything else left to the service.
    #[must_use]
    pub fn new(id: InboxId, domain: impl Into<String>) -> Self {
        Self {
            id,
            domain: Some(domain.into()),
            prefix: None,
            local_part: None,
            email_address: None,
            retention_days: None,
            meta: None,
            public_key: None,
        }
    }
}

/// `PATCH /inboxes/{id}`: unset fields stay as they are.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateInboxRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<SealedBox>,
    /// A shorter retention deletes stored mail past it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_days: Option<u8>,
}

/// Answer of `GET /inboxes/allocation`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Allocation {
    pub plan_id: PlanId,
    /// Addresses the plan allows.
    pub limit: u64,
    /// Addresses on the account, assigned or not.
    pub used: u64,
    pub assigned: u64,
    /// How many more can be created.
    pub remaining: u64,
}

/// `POST /workers/{id}/inboxes`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssignRequest {
    pub inbox_id: InboxId,
}

// ---- Messages -------------------------------------------------------------

/// A received message. Its content is sealed to the address's key of epoch
/// `key_epoch`; open it with `sealing::open_message`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: MessageId,
    pub inbox_id: InboxId,
    pub received_at: Timestamp,
    pub read: bool,
    /// Size of the raw message as received.
    pub size_bytes: u64,
    /// The address key epoch the content and attachments are sealed under.
    pub key_epoch: u32,
    /// CONTRACT.md section 5 JSON, context
    /// `service/v1/message:<inboxId>:<id>`.
    pub content: SealedBox,
    pub folder: crate::folders::Folder,
    pub starred: bool,
    /// The copy of mail sent from the address (`POST /messages/send`).
    pub outgoing: bool,
}

/// A single message as the service wraps it: `{"message": ...}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageReply {
    pub message: Message,
}

/// Answer of `GET /inboxes/{id}/messages`: newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessagePage {
    pub messages: Vec<Message>,
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// Answer 200 of `GET /inboxes/{id}/messages/wait`: the mail newer than
/// `after`, oldest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitBody {
    pub messages: Vec<Message>,
    /// Pass as `after` to wait for the mail after these.
    pub cursor: String,
}

/// Answer of `GET /workers/messages`: the newest mail across the calling
/// device's addresses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageList {
    pub messages: Vec<Message>,
}

/// `POST /messages/{id}/read`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadRequest {
    /// False marks the message unread.
    pub read: bool,
}

/// `POST /messages`: a raw RFC 5322 message for one of the account's
/// addresses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliverRequest {
    pub inbox_id: InboxId,
    /// The whole message, base64url without padding.
    pub raw: String,
}

/// Answer of `POST /messages`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivered {
    pub message_id: MessageId,
}

// ---- Activity -------------------------------------------------------------

/// One activity record: ids and a time, never content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityEntry {
    pub id: ActivityId,
    pub operator_id: AccountId,
    /// For example `worker.paired` or `inbox.assigned`.
    pub kind: String,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inbox_id: Option<InboxId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<WorkerId>,
}

/// Answer of `GET /activity`: newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityPage {
    pub activity: Vec<ActivityEntry>,
    #[serde(default)]
    pub next_cursor: Option<String>,
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

    #[test]
    fn names_a_newer_service_adds_do_not_break_decoding() {
        let status: WorkerStatus = serde_json::from_value(json!("offline")).unwrap();
        assert_eq!(status, WorkerStatus::Offline);
        let state: PairingState = serde_json::from_value(json!("operator_detected")).unwrap();
        assert_eq!(state, PairingState::OperatorDetected);
        let platform: Platform = serde_json::from_value(json!("watch")).unwrap();
        assert_eq!(platform, Platform::Other("watch".to_owned()));
        assert_eq!(serde_json::to_value(&platform).unwrap(), json!("watch"));
        assert_eq!(Platform::from("ios").to_string(), "ios");
    }

    #[test]
    fn page_params_build_the_query() {
        assert_eq!(PageParams::default().query(), "");
        assert_eq!(PageParams::first(20).query(), "?limit=20");
        let next = PageParams::first(20).next(Some("ab-_c+/=")).unwrap();
        assert_eq!(next.query(), "?limit=20&cursor=ab-_c%2B%2F%3D");
        assert_eq!(PageParams::first(20).next(None), None);
    }

    #[test]
    fn inbox_bodies_decode_with_and_without_optional_fields() {
        let key = b64::encode(&[4u8; 32]);
        let inbox: Inbox = serde_json::from_value(json!({
            "id": "ibx_first01",
            "operatorId": "acct_aaaaaaaaaaaaaaaaaaaaaaaa",
            "emailAddress": "shop.x1@mail.localhost",
            "status": "active",
            "createdAt": "2026-01-02T03:04:05.678Z",
            "assignedWorkerId": "wkr_phone01",
            "retentionDays": 7,
            "pausedAt": null,
            "meta": null,
            "keyEpoch": 0,
            "publicKey": key,
        }))
        .unwrap();
        assert_eq!(inbox.status, InboxStatus::Active);
        assert_eq!(inbox.public_key, Some([4u8; 32]));
        assert_eq!(inbox.assigned_worker_id.unwrap().as_str(), "wkr_phone01");

        let bare: Inbox = serde_json::from_value(json!({
            "id": "ibx_first01",
            "operatorId": "acct_aaaaaaaaaaaaaaaaaaaaaaaa",
            "emailAddress": "shop.x1@mail.localhost",
            "status": "unassigned",
            "createdAt": "2026-01-02T03:04:05.678Z",
            "retentionDays": 7,
            "keyEpoch": 0,
        }))
        .unwrap();
        assert_eq!((bare.assigned_worker_id, bare.public_key), (None, None));
    }

    #[test]
    fn requests_leave_out_unset_fields() {
        let id = InboxId::parse("ibx_first01").unwrap();
        let mut create = CreateInboxRequest::new(id, "mail.localhost");
        assert_eq!(
            serde_json::to_value(&create).unwrap(),
            json!({"id": "ibx_first01", "domain": "mail.localhost"})
        );
        create.public_key = Some([4u8; 32]);
        create.retention_days = Some(30);
        assert_eq!(
            serde_json::to_value(&create).unwrap(),
            json!({"id": "ibx_first01", "domain": "mail.localhost", "retentionDays": 30,
                   "publicKey": b64::encode(&[4u8; 32])})
        );
        assert_eq!(
            serde_json::to_value(UpdateWorkerRequest::disable()).unwrap(),
            json!({"status": "disabled"})
        );
        assert_eq!(
            serde_json::to_value(UpdateInboxRequest::default()).unwrap(),
            json!({})
        );
        let open = OpenPairingRequest {
            platform: Platform::Unknown,
            device_name: "cli".to_owned(),
            public_key: [4u8; 32],
        };
        assert_eq!(
            serde_json::to_value(&open).unwrap(),
            json!({"platform": "unknown", "deviceName": "cli", "publicKey": b64::encode(&[4u8; 32])})
        );
    }
}
