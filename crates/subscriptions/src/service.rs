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
    /// `subscription.updated` in the same transaction. The same plan writes nothing.
    pub async fn change_plan(
        &self,
        account: &AccountId,
        target: PlanId,
    ) -> Result<Subscription, SubscriptionError> {
        for _ in 0..STALE_RETRIES {
            let current = self.subscriber(account).await?.plan;
            let holdings = self.repo.holdings(account).await?;
            let (from, to) = match change_plan(current, target, &holdings)? {
                Change::Unchanged(_) => return self.subscription(account).await,
                Change::Moved { from, to } => (from, to),
            };
            let limits = sealpost_plans::plan(to);
            let mut records = Records::new();
            records.subscription_updated(account, to, self.clock.now());
            let outcome = self
                .repo
                .set_plan(PlanChange {
                    account: account.clone(),
                    from,
                    to,
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
