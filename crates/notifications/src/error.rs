use sealpost_kernel::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum NotificationError {
    #[error("no such record")]
    NotFound,
    /// The push token is registered to another account: a token is one
    /// phone's, so it is not moved; that account removes it first.
    #[error("this push token is registered to another account; remove it there first")]
    TokenHeldByAnother,
    #[error(transparent)]
    Store(#[from] StoreError),
}
