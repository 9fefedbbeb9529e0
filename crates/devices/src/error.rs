use sealpost_kernel::StoreError;
use sealpost_plans::LimitError;

#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("no such record")]
    NotFound,
    /// The pairing session was claimed already: it is consumed once.
    #[error("this pairing session was already used")]
    AlreadyUsed,
    #[error("this device id was used before")]
    IdTaken,
    #[error("too many failed code lookups; retry in {retry_after_seconds} seconds")]
    TooManyLookups { retry_after_seconds: u64 },
    #[error(
        "too many pairing sessions open from this address; retry in {retry_after_seconds} seconds"
    )]
    TooManyPairings { retry_after_seconds: u64 },
    #[error(transparent)]
    Limit(#[from] LimitError),
    #[error("{field}: {reason}")]
    InvalidField { field: &'static str, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}
