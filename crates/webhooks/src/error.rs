use sealpost_kernel::StoreError;

use crate::endpoint::EndpointError;

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error(transparent)]
    Rule(#[from] EndpointError),
    #[error("this webhook id was used before")]
    IdTaken,
    #[error("no such record")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}
