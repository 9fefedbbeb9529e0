use async_trait::async_trait;
use sealpost_activity::Records;
use sealpost_kernel::{AccountId, PlanId, StoreError, Timestamp};

use crate::{Holdings, OverviewCounts, UsageCounts, UsageWindows};

/// The account facts every computation here starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subscriber {
    pub plan: PlanId,
    /// Start of the first 30-day received-mail window.
    pub created_at: Timestamp,
    /// End of the paid 30-day period; `None` on Free and Enterprise.
    pub paid_until: Option<Timestamp>,
    /// Set while something is paused after a missed payment.
    pub pause: Option<PauseState>,
    /// A cheaper plan chosen during the paid period: applied at `paid_until`.
    pub pending_plan: Option<PlanId>,
    /// The paid period renews by itself: a card subscription whose renewal
    /// is on at the provider (docs/api.md, Billing).
    pub renewing: bool,
}

impl Subscriber {
    /// An account on `plan` that has never paid nor lapsed.
    pub fn on(plan: PlanId, created_at: Timestamp) -> Self {
        Self {
            plan,
            created_at,
            paid_until: None,
            pause: None,
            pending_plan: None,
            renewing: false,
        }
    }

    /// The plan whose received-mail allowance applies: while a lapse is unpaid
    /// it is the lapsed plan's (docs/api.md "Plans and usage"), else the
    /// current one's.
    pub fn received_plan(&self) -> PlanId {
        self.pause.and_then(|pause| pause.plan).unwrap_or(self.plan)
    }
}

/// A pause after a missed payment, as the account row keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PauseState {
    /// The lapsed plan to pay for; `None` once a payment released what its
    /// plan covers and the rest is still paused.
    pub plan: Option<PlanId>,
    pub since: Timestamp,
    pub deletes_at: Timestamp,
}

/// What is paused now (the counts of the `pause` object).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PausedCounts {
    pub addresses: u64,
    pub devices: u64,
    /// API keys paused with the account. Like own domains they never keep
    /// a pause open: a key holds no data, only access.
    pub api_keys: u64,
    /// Proved own domains of the paused account (removed at `deletesAt`).
    pub domains: u64,
}

impl PausedCounts {
    /// Whether the pause still holds something. Own domains are held with
    /// the pause, not paused themselves: they never keep a pause open.
    pub fn holds_anything(&self) -> bool {
        self.addresses > 0 || self.devices > 0
    }
}

/// When a [`PlanChange`] takes effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeTiming {
    /// The plan changes now (no paid period running); any scheduled change goes.
    Now,
    /// `to` becomes the pending plan, applied at the end of the paid period.
    AtPeriodEnd,
    /// The scheduled change is taken back: the plan stays `from`.
    Cancel,
}

/// A guarded plan change, written in one transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanChange {
    pub account: AccountId,
    /// The plan the decision was made on.
    pub from: PlanId,
    pub to: PlanId,
    pub timing: ChangeTiming,
    /// The target plan's address limit.
    pub max_addresses: u32,
    /// The target plan's device limit (devices and agents together); `None` is unlimited.
    pub max_paired: Option<u32>,
    /// `subscription.updated`.
    pub records: Records,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanChangeOutcome {
    Changed,
    NotFound,
    /// The plan changed, or the holdings no longer fit, since the decision: decide again.
    Stale,
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SubscriptionRepository: Send + Sync {
    async fn subscriber(&self, account: &AccountId) -> Result<Option<Subscriber>, StoreError>;
    /// Counts and counters for `GET /usage`, in `windows`; messages are those
    /// still inside their address's retention at `now`. Increments nothing.
    async fn usage_counts(
        &self,
        account: &AccountId,
        windows: UsageWindows,
        now: Timestamp,
    ) -> Result<UsageCounts, StoreError>;
    async fn overview_counts(
        &self,
        account: &AccountId,
        now: Timestamp,
    ) -> Result<OverviewCounts, StoreError>;
    /// Paused addresses and devices (devices and agents together).
    async fn paused_counts(&self, account: &AccountId) -> Result<PausedCounts, StoreError>;
    /// What a plan change must fit.
    async fn holdings(&self, account: &AccountId) -> Result<Holdings, StoreError>;
    /// With the account row locked: changes the plan (or the pending plan,
    /// per `timing`) and writes the records, provided the plan is still
    /// `from` and, unless cancelling, the holdings fit the limits.
    async fn set_plan(&self, change: PlanChange) -> Result<PlanChangeOutcome, StoreError>;
}
