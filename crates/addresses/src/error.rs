use sealpost_kernel::StoreError;
use sealpost_plans::LimitError;

#[derive(Debug, thiserror::Error)]
pub enum AddressError {
    #[error("{field}: {reason}")]
    InvalidField { field: &'static str, reason: String },
    #[error("this address is taken")]
    AddressTaken,
    #[error("this address id was used before")]
    IdTaken,
    #[error(transparent)]
    Limit(#[from] LimitError),
    #[error("no such record")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> AddressError {
    AddressError::InvalidField {
        field,
        reason: reason.into(),
    }
}
