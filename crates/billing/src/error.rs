use sealpost_kernel::StoreError;

use crate::{CheckoutRefusal, NoticeError, ProviderId};

#[derive(Debug, thiserror::Error)]
pub enum BillingError {
    /// 503 `provider_unavailable`: not configured, switched off, or failing.
    #[error("the {provider} payment provider is not available: {reason}")]
    ProviderUnavailable {
        provider: ProviderId,
        reason: &'static str,
    },
    #[error(transparent)]
    Refused(#[from] CheckoutRefusal),
    /// A provider notice whose signature or body does not verify.
    #[error(transparent)]
    Notice(#[from] NoticeError),
    #[error("no such record")]
    NotFound,
    /// 404 `not_found`: the billing portal is the card provider's, for
    /// accounts that subscribed by card.
    #[error("this account has never paid by card: the billing portal is the card provider's")]
    NoCardSubscription,
    #[error(transparent)]
    Store(#[from] StoreError),
}
