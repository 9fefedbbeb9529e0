//! Mail for own domains: RCPT asks whether a proved own domain still
//! receives (docs/domains.md: 21 days after its plan lost own domains,
//! then refused until the plan includes them again).

use async_trait::async_trait;
use sealpost_kernel::{PlanId, StoreError, Timestamp};
use sealpost_plans::{OwnDomainAccess, own_domain_access, plan};

/// A proved own domain as RCPT sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnDomainHold {
    /// The owning account's plan now.
    pub plan: PlanId,
    /// When the plan was first seen without own domains.
    pub plan_lost_at: Option<Timestamp>,
}

impl OwnDomainHold {
    /// Whether mail is taken at `now`. A plan without own domains whose
    /// loss the hourly sweep has not marked yet is in its first hour of
    /// grace: the grace counts from `now`.
    pub fn receives(&self, now: Timestamp) -> bool {
        let lost_at = self.plan_lost_at.or(Some(now));
        own_domain_access(plan(self.plan), lost_at, now) != OwnDomainAccess::Refused
    }
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait OwnDomainGate: Send + Sync {
    /// The proved own domain `name` (lower case ASCII), if any.
    async fn own_domain(&self, name: &str) -> Result<Option<OwnDomainHold>, StoreError>;
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;

    use super::*;

    #[test]
    fn mail_is_received_for_21_days_after_the_plan_loses_own_domains() {
        let now = Timestamp::parse("2026-11-25T00:00:00Z").unwrap();
        let hold = |plan, lost: Option<i64>| OwnDomainHold {
            plan,
            plan_lost_at: lost.map(|days| now - TimeDelta::days(days)),
        };
        assert!(hold(PlanId::Scale, None).receives(now));
        assert!(hold(PlanId::Scale, Some(100)).receives(now));
        assert!(hold(PlanId::Operator, None).receives(now), "not yet marked");
        assert!(hold(PlanId::Operator, Some(20)).receives(now));
        assert!(!hold(PlanId::Operator, Some(21)).receives(now));
        assert!(!hold(PlanId::Free, Some(30)).receives(now));
    }
}
