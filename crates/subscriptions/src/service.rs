use std::sync::Arc;

use sealpost_activity::Records;
use sealpost_kernel::{AccountId, Clock, PlanId, StoreError};

use crate::*;

/// Attempts at a plan change whose input moved under it.
const STALE_RETRIES: usize = 3;

/// `GET /usage`, `GET /overview`, `GET /subscription`, `POST /subscription/plan`.
#[derive(Clone)]
pub struct Subscriptions {
    repo: Arc<dyn SubscriptionRepository>,
    clock: Arc<dyn Clock>,
}

impl Subscriptions {
    pub fn new(repo: Arc<dyn SubscriptionRepository>, clock: Arc<dyn Clock>) -> Self {
        Self { repo, clock }
    }

    async fn subscriber(&self, account: &AccountId) -> Result<Subscriber, SubscriptionError> {
        self.repo
            .subscriber(account)
            .await?
            .ok_or(SubscriptionError::NotFound)
    }

    /// The usage report. Reading it spends nothing.
    pub async fn usage(&self, account: &AccountId) -> Result<Usage, SubscriptionError> {
        let subscriber = self.subscriber(account).await?;
        let now = self.clock.now();
        let windows = UsageWindows::at(subscriber.created_at, now);
        let counts = self.repo.usage_counts(account, windows, now).await?;
        Ok(Usage::compute(&subscriber, now, &counts))
    }

    pub async fn overview(&self, account: &AccountId) -> Result<Overview, SubscriptionError> {
        let subscriber = self.subscriber(account).await?;
        let counts = self.repo.overview_counts(account, self.clock.now()).await?;
        Ok(Overview::compute(subscriber.plan, &counts))
    }

    pub async fn subscription(
        &self,
        account: &AccountId,
    ) -> Result<Subscription, SubscriptionError> {
        let subscriber = self.subscriber(account).await?;
        let paused = match subscriber.pause {
            Some(_) => self.repo.paused_counts(account).await?,
            None => PausedCounts::default(),
        };
        Ok(Subscription::of(&subscriber, paused))
    }

    /// Moves the account to `target` when [`change_plan`] allows it, with
    /// `subscription.updated` in the same transaction. A move down while a
    /// paid period runs is scheduled for its end ([`waits_for_period_end`]);
    /// choosing the current plan again takes a scheduled move back. The same
    /// plan with nothing scheduled writes nothing.
    pub async fn change_plan(
        &self,
        account: &AccountId,
        target: PlanId,
    ) -> Result<Subscription, SubscriptionError> {
        for _ in 0..STALE_RETRIES {
            let subscriber = self.subscriber(account).await?;
            let now = self.clock.now();
            if subscriber.pending_plan == Some(target) {
                return self.subscription(account).await;
            }
            let holdings = self.repo.holdings(account).await?;
            let mut records = Records::new();
            let (from, to, timing) = match change_plan(subscriber.plan, target, &holdings)? {
                Change::Unchanged(plan) if subscriber.pending_plan.is_some() => {
                    records.subscription_pending(account, plan, None, now);
                    (plan, plan, ChangeTiming::Cancel)
                }
                Change::Unchanged(_) => return self.subscription(account).await,
                Change::Moved { from, to } if waits_for_period_end(&subscriber, now) => {
                    records.subscription_pending(account, from, Some(to), now);
                    (from, to, ChangeTiming::AtPeriodEnd)
                }
                Change::Moved { from, to } => {
                    records.subscription_updated(account, to, now);
                    (from, to, ChangeTiming::Now)
                }
            };
            let limits = sealpost_plans::plan(to);
            let outcome = self
                .repo
                .set_plan(PlanChange {
                    account: account.clone(),
                    from,
                    to,
                    timing,
                    max_addresses: limits.addresses,
                    max_paired: limits.devices,
                    records,
                })
                .await?;
            match outcome {
                PlanChangeOutcome::Changed => return self.subscription(account).await,
                PlanChangeOutcome::NotFound => return Err(SubscriptionError::NotFound),
                PlanChangeOutcome::Stale => continue,
            }
        }
        Err(SubscriptionError::Store(StoreError::Unavailable(
            "the account kept changing; retry".into(),
        )))
    }
}
