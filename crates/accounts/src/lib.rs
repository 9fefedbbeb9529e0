//! Accounts, the recovery-phrase sign-in handshake (docs/protocol.md,
//! "Signing in"), operator sessions and long-lived API keys.
//!
//! Pure rules: storage sits behind [`AccountRepository`], time comes from the
//! [`Clock`] the service is given. Tokens are random and only their SHA-256
//! ever reaches the repository.

mod error;
mod model;
mod repository;
mod service;

pub use error::AccountError;
pub use model::*;
#[cfg(any(test, feature = "mock"))]
pub use repository::MockAccountRepository;
pub use repository::{AccountRepository, ApiKeyOutcome, RegisterOutcome};
pub use service::Accounts;

use chrono::TimeDelta;

/// Every API key token starts with this, so a leaked one is recognisable
/// (secret scanners) and never mistaken for a session token.
pub const API_KEY_TOKEN_PREFIX: &str = "spk_";

/// Session lifetime (docs/api.md "Limits").
pub const SESSION_LIFETIME: TimeDelta = TimeDelta::days(30);
/// Challenge nonce lifetime (docs/api.md "Limits").
pub const CHALLENGE_LIFETIME: TimeDelta = TimeDelta::minutes(2);
/// Expired sessions are kept this long so their owner hears `session_expired`
/// rather than `unauthenticated`; then the sweep removes them.
pub const EXPIRED_SESSION_GRACE: TimeDelta = TimeDelta::days(30);
/// The window the registrations of one client network are counted in
/// (`SEALPOST_REGISTRATIONS_PER_NETWORK` of them).
pub const REGISTRATION_WINDOW: TimeDelta = TimeDelta::hours(1);
/// Registrations an hour per client network unless configured otherwise.
pub const DEFAULT_REGISTRATIONS_PER_NETWORK: u32 = 20;
