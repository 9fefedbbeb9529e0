use sealpost_kernel::StoreError;

use crate::rules::Refusal;

#[derive(Debug, thiserror::Error)]
pub enum SupportError {
    #[error("in-app support is unavailable")]
    Unavailable,
    #[error("sealed to an old support key; fetch GET /support and seal again")]
    StaffKeyChanged,
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Store(#[from] StoreError),
}
