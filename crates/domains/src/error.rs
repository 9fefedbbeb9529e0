use sealpost_kernel::StoreError;
use sealpost_plans::LimitError;

use crate::name::NameError;

#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    #[error("domain: {0}")]
    InvalidName(String),
    /// 409 `already_used`: another account proved this domain.
    #[error("another account has proved ownership of this domain")]
    TakenByOther,
    #[error(transparent)]
    Limit(#[from] LimitError),
    #[error("no such domain")]
    NotFound,
    /// 409 `domain_in_use`.
    #[error("addresses exist on this domain; delete them first")]
    InUse,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<NameError> for DomainError {
    fn from(error: NameError) -> Self {
        DomainError::InvalidName(error.to_string())
    }
}
