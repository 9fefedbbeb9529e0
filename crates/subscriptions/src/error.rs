use sealpost_kernel::StoreError;

use crate::ChangeError;

#[derive(Debug, thiserror::Error)]
pub enum SubscriptionError {
    #[error(transparent)]
    Change(#[from] ChangeError),
    #[error("no such record")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}
