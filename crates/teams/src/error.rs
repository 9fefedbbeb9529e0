use sealpost_kernel::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum TeamError {
    #[error("teams need the Fleet plan or higher")]
    PlanCapabilityRequired,
    #[error("no such record")]
    NotFound,
    #[error("{field}: {reason}")]
    InvalidField { field: String, reason: String },
    #[error("that account is already a member of the team")]
    AlreadyMember,
    #[error("the team has its plan's {limit} members; remove one or upgrade")]
    TeamLimitReached { limit: u32 },
    #[error("{0}")]
    EpochConflict(String),
    #[error("rotating address keys is not available yet")]
    FeatureDisabled,
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub(crate) fn invalid(field: &str, reason: impl Into<String>) -> TeamError {
    TeamError::InvalidField {
        field: field.to_owned(),
        reason: reason.into(),
    }
}
