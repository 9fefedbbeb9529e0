//! Edge rate limits: requests per minute per client IP and per account
//! (`SEALPOST_EDGE_RATE`). Tighter limits (pairing-code lookups, quotas)
//! live with the rules they protect.

use std::net::IpAddr;
use std::num::NonZeroU32;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use sealpost_kernel::AccountId;

use crate::error::ApiError;

/// How long a refusal of the edge limit is held before it is sent. A client
/// told to retry after a second or more loses nothing by hearing it a second
/// later, while a flood from one address (a closed loop of requests on each
/// of its connections) then costs a timer per connection instead of the CPU
/// every other client needs.
pub const REFUSAL_HOLD: std::time::Duration = std::time::Duration::from_secs(1);

/// An edge-limit check's answer, a refusal only after [`REFUSAL_HOLD`].
pub async fn held(checked: Result<(), ApiError>) -> Result<(), ApiError> {
    if checked.is_err() {
        actix_web::rt::time::sleep(REFUSAL_HOLD).await;
    }
    checked
}

pub struct EdgeLimiter {
    per_ip: DefaultKeyedRateLimiter<IpAddr>,
    per_account: DefaultKeyedRateLimiter<AccountId>,
    /// A suspended account's support requests: the lowest limit of all.
    suspended: DefaultKeyedRateLimiter<AccountId>,
    clock: DefaultClock,
}

impl EdgeLimiter {
    /// Requests a minute a suspended account may make (to `/support*`, the
    /// only routes open to it), whatever `SEALPOST_EDGE_RATE` says.
    pub const SUSPENDED_PER_MINUTE: u32 = 10;

    pub fn per_minute(rate: NonZeroU32) -> Self {
        let quota = Quota::per_minute(rate);
        let suspended = NonZeroU32::new(Self::SUSPENDED_PER_MINUTE).unwrap_or(NonZeroU32::MIN);
        Self {
            per_ip: RateLimiter::keyed(quota),
            per_account: RateLimiter::keyed(quota),
            suspended: RateLimiter::keyed(Quota::per_minute(suspended.min(rate))),
            clock: DefaultClock::default(),
        }
    }

    pub fn check_ip(&self, ip: IpAddr) -> Result<(), ApiError> {
        self.per_ip
            .check_key(&ip)
            .map_err(|not_until| self.refuse(not_until.wait_time_from(self.clock.now())))
    }

    pub fn check_account(&self, account: &AccountId) -> Result<(), ApiError> {
        self.per_account
            .check_key(account)
            .map_err(|not_until| self.refuse(not_until.wait_time_from(self.clock.now())))
    }

    /// A suspended account's request, on top of [`Self::check_account`].
    pub fn check_suspended(&self, account: &AccountId) -> Result<(), ApiError> {
        self.suspended
            .check_key(account)
            .map_err(|not_until| self.refuse(not_until.wait_time_from(self.clock.now())))
    }

    fn refuse(&self, wait: std::time::Duration) -> ApiError {
        // Whole seconds, rounded up so a client that waits exactly this long gets through.
        ApiError::rate_limited(wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
    }

    /// Drops the state of keys that are back at full allowance, so memory
    /// stays bounded by recent clients.
    pub fn forget_idle(&self) {
        self.per_ip.retain_recent();
        self.per_ip.shrink_to_fit();
        self.per_account.retain_recent();
        self.per_account.shrink_to_fit();
        self.suspended.retain_recent();
        self.suspended.shrink_to_fit();
    }
}

/// `POST /abuse/reports`: five reports at once per IP, then one every
/// twelve minutes (five an hour).
pub struct AbuseLimiter {
    per_ip: DefaultKeyedRateLimiter<IpAddr>,
    clock: DefaultClock,
}

impl Default for AbuseLimiter {
    fn default() -> Self {
        Self::new()
    }
}

impl AbuseLimiter {
    pub const PER_HOUR: u32 = 5;

    pub fn new() -> Self {
        let quota = Quota::per_hour(NonZeroU32::new(Self::PER_HOUR).unwrap_or(NonZeroU32::MIN));
        Self {
            per_ip: RateLimiter::keyed(quota),
            clock: DefaultClock::default(),
        }
    }

    pub fn check(&self, ip: IpAddr) -> Result<(), ApiError> {
        self.per_ip.check_key(&ip).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            ApiError::rate_limited(wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
        })
    }

    pub fn forget_idle(&self) {
        self.per_ip.retain_recent();
        self.per_ip.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn refuses_past_the_rate_with_a_retry_after() {
        let limiter = EdgeLimiter::per_minute(NonZeroU32::new(2).unwrap());
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        assert!(limiter.check_ip(ip).is_ok());
        assert!(limiter.check_ip(ip).is_ok());
        let refused = limiter.check_ip(ip).unwrap_err();
        assert_eq!(refused.code, ErrorCode::RateLimited);
        let wait = refused.retry_after.unwrap();
        assert!((1..=30).contains(&wait), "{wait}");
        // Another client is unaffected.
        assert!(limiter.check_ip("192.0.2.2".parse().unwrap()).is_ok());
    }
}
