//! Accounts, the recovery-phrase sign-in handshake (CONTRACT.md section 3)
//! and operator sessions.
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
pub use repository::{AccountRepository, RegisterOutcome};
pub use service::Accounts;

use chrono::TimeDelta;

/// SPEC.md Limits: session lifetime.
pub const SESSION_LIFETIME: TimeDelta = TimeDelta::days(30);
/// SPEC.md Limits: challenge nonce lifetime.
pub const CHALLENGE_LIFETIME: TimeDelta = TimeDelta::minutes(2);
/// Expired sessions are kept this long so their owner hears `session_expired`
/// rather than `unauthenticated`; then the sweep removes them.
pub const EXPIRED_SESSION_GRACE: TimeDelta = TimeDelta::days(30);
