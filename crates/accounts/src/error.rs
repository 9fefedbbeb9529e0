use sealpost_kernel::StoreError;
use sealpost_plans::LimitError;

#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// The account id was used before (by a live or an erased account).
    #[error("this account id is already registered")]
    IdTaken,
    /// Unknown account, wrong proof, used or expired nonce, unknown or revoked token.
    #[error("authentication failed")]
    Unauthenticated,
    #[error("the session has expired; sign in again")]
    SessionExpired,
    #[error("this endpoint needs an operator session")]
    SessionRequired,
    /// The client's network registered its hourly number of accounts.
    #[error(
        "too many accounts registered from this network; retry in {retry_after_seconds} seconds"
    )]
    TooManyRegistrations { retry_after_seconds: u64 },
    /// An API key while a missed payment pauses it.
    #[error("this API key is paused until the plan is paid")]
    ApiKeyPaused,
    #[error("this API key id is already used")]
    ApiKeyIdTaken,
    #[error(transparent)]
    Limit(#[from] LimitError),
    #[error("no such record")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}
