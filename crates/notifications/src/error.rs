use sealpost_kernel::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum NotificationError {
    #[error("no such record")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}
