use sealpost_kernel::{AccountId, ApiKeyId, DeviceId, PlanId, SessionId, Timestamp};
use sealpost_seal::SealedBox;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub id: AccountId,
    pub plan: PlanId,
    pub auth_public_key: [u8; 32],
    pub created_at: Timestamp,
}

/// `POST /accounts` input, already decoded at the edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    pub account_id: AccountId,
    pub auth_verifier: [u8; 32],
    pub auth_public_key: [u8; 32],
    /// The client's network as the registration limit counts it (an IPv4
    /// /24, an IPv6 /48, as text): only its hash is stored.
    pub network: String,
}

/// Where a registration came from, as the store counts it: the hash of the
/// client network, and how many registrations it may hold since `since`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistrationSource {
    pub network_hash: [u8; 32],
    pub limit: u32,
    /// The start of the window counted: [`crate::REGISTRATION_WINDOW`] ago.
    pub since: Timestamp,
}

/// A new account as stored: the verifier only as its SHA-256.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewAccount {
    pub account: Account,
    pub auth_verifier_hash: [u8; 32],
}

/// A pending sign-in challenge. Keyed by the SHA-256 of its nonce; holds
/// neither the nonce nor the challenge's secret, which is derived from the
/// nonce under the server key when the proof arrives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    pub nonce_hash: [u8; 32],
    pub account_id: AccountId,
    pub expires_at: Timestamp,
}

/// What `POST /accounts/challenge` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssuedChallenge {
    pub nonce: String,
    pub expires_at: Timestamp,
    pub challenge_key: [u8; 32],
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    pub id: SessionId,
    pub account_id: AccountId,
    pub token_hash: [u8; 32],
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

/// A successful registration or sign-in: the token is shown once, here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedIn {
    pub account: Account,
    pub token: String,
    pub session: Session,
}

/// One entry of `GET /accounts/sessions`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionView {
    pub id: SessionId,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub current: bool,
}

/// What a bearer token's hash resolves to in the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bearer {
    Session(Session),
    Device {
        account_id: AccountId,
        device_id: DeviceId,
    },
    ApiKey {
        account_id: AccountId,
        key_id: ApiKeyId,
        /// To the hour; `None` before its first use.
        last_used_at: Option<Timestamp>,
        /// A missed payment paused the key.
        paused: bool,
    },
}

/// A long-lived API key as stored: the token only as its SHA-256.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKey {
    pub id: ApiKeyId,
    pub account_id: AccountId,
    pub token_hash: [u8; 32],
    /// Sealed by the client to the account's vault key.
    pub label: SealedBox,
    pub created_at: Timestamp,
    /// To the hour; `None` before its first use.
    pub last_used_at: Option<Timestamp>,
    /// A missed payment paused the key (it answers `payment_required`).
    pub paused: bool,
}

/// A new API key: the token is shown once, here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssuedApiKey {
    pub key: ApiKey,
    pub token: String,
}

/// A bearer token's holder as the store finds it, with its account's
/// suspension read in the same lookup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundBearer {
    pub bearer: Bearer,
    /// Staff suspended the account.
    pub suspended: bool,
}

/// A resolved bearer token: who calls, and whether its account is
/// suspended (then only support is open to it; the adapter decides where).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authentication {
    pub caller: Caller,
    pub suspended: bool,
}

/// The authenticated identity behind a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    Session {
        account: AccountId,
        session: SessionId,
    },
    Device {
        account: AccountId,
        device: DeviceId,
    },
    ApiKey {
        account: AccountId,
        key: ApiKeyId,
    },
}

impl Caller {
    pub fn account(&self) -> &AccountId {
        match self {
            Caller::Session { account, .. }
            | Caller::Device { account, .. }
            | Caller::ApiKey { account, .. } => account,
        }
    }

    /// The session behind the call, or `SessionRequired` for a device or API key.
    pub fn session(&self) -> Result<&SessionId, crate::AccountError> {
        match self {
            Caller::Session { session, .. } => Ok(session),
            _ => Err(crate::AccountError::SessionRequired),
        }
    }
}
