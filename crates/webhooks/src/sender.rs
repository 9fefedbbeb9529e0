//! The sender: turns outbox events into signed deliveries (fan-out), makes
//! the attempts and writes their outcome back.
//!
//! Pure like the rest of the crate: storage is [`WebhookRepository`], the
//! network is [`WebhookTransport`], the push adapter is [`WebhookAlerts`].

use std::sync::Arc;

use chrono::TimeDelta;
use sealpost_activity::Event;
use sealpost_kernel::{AccountId, Clock, PlanId, StoreError, WebhookId};
use sealpost_plans::plan;
use sealpost_seal::ServerKeys;

use crate::delivery::{Delivery, WebhookEvent, after_attempt, creates_delivery, on_plan_change};
use crate::repository::{
    AttemptRecord, DueDelivery, Endpoint, WebhookAlerts, WebhookRepository, WebhookTransport,
};

/// How long a sender holds a claimed delivery; after a crash another takes it.
pub const LEASE: TimeDelta = TimeDelta::seconds(60);

/// The fan-out rule: one delivery per active endpoint whose filter takes the
/// event, while the plan includes webhooks, for events made since it was on.
pub fn fan_out_rule(event: &Event, endpoints: &[Endpoint], plan_id: PlanId) -> Vec<Delivery> {
    let limits = plan(plan_id);
    let body = WebhookEvent {
        id: event.id.clone(),
        event_type: event.kind,
        created_at: event.at,
        payload: event.payload.clone(),
    };
    endpoints
        .iter()
        .filter(|endpoint| event.at >= endpoint.active_since)
        .filter(|endpoint| creates_delivery(limits, &endpoint.status, &endpoint.events, event.kind))
        .map(|endpoint| Delivery::new(endpoint.id.clone(), &body, event.at))
        .collect()
}

/// Reads the outbox and delivers. Safe to run in several processes at once:
/// fan-out locks the events it takes, attempts lease their deliveries.
pub struct Sender {
    repo: Arc<dyn WebhookRepository>,
    transport: Arc<dyn WebhookTransport>,
    alerts: Arc<dyn WebhookAlerts>,
    clock: Arc<dyn Clock>,
    keys: Arc<ServerKeys>,
}

/// A delivery's error when its endpoint's secret does not open under the
/// configured server keys (sealed under a key since removed).
pub const SECRET_UNREADABLE_ERROR: &str = "signing secret unreadable: rotate it";

impl Sender {
    /// `keys` open the endpoints' sealed secrets.
    pub fn new(
        repo: Arc<dyn WebhookRepository>,
        transport: Arc<dyn WebhookTransport>,
        alerts: Arc<dyn WebhookAlerts>,
        clock: Arc<dyn Clock>,
        keys: ServerKeys,
    ) -> Self {
        Self {
            repo,
            transport,
            alerts,
            clock,
            keys: Arc::new(keys),
        }
    }

    /// One round: fan out new events, then attempt what is due (concurrently,
    /// up to `batch`), wait for those attempts and write their results in
    /// one transaction. Returns (events fanned out, attempts made). The API's
    /// loop instead keeps a fixed number of attempts in flight (`fan_out`,
    /// `claim`, `send`, `record`), so one slow receiver never holds the
    /// others back.
    pub async fn run_once(&self, batch: i64) -> Result<(usize, usize), StoreError> {
        let events = self.fan_out().await?;
        let due = self.claim(batch).await?;
        let attempts = due.len();
        let records =
            futures_util::future::join_all(due.into_iter().map(|item| self.send(item))).await;
        self.record(&records).await?;
        Ok((events, attempts))
    }

    /// Turns new outbox events into deliveries (up to 500 events).
    pub async fn fan_out(&self) -> Result<usize, StoreError> {
        self.repo.fan_out(500, &fan_out_rule).await
    }

    /// Leases up to `limit` due deliveries to this sender.
    pub async fn claim(&self, limit: i64) -> Result<Vec<DueDelivery>, StoreError> {
        let now = self.clock.now();
        self.repo.claim_due(now, now + LEASE, limit).await
    }

    /// One attempt of a claimed delivery, and its result written back.
    pub async fn attempt(&self, due: DueDelivery) -> Result<(), StoreError> {
        let record = self.send(due).await;
        self.record(std::slice::from_ref(&record)).await
    }

    /// One attempt of a claimed delivery (none when the plan has no webhooks
    /// or the endpoint is off: the delivery is failed instead). Writes
    /// nothing: the result is for [`Sender::record`].
    pub async fn send(&self, due: DueDelivery) -> AttemptRecord {
        let DueDelivery {
            mut delivery,
            endpoint,
            plan: plan_id,
        } = due;
        // The plan rule: no webhooks on the plan, nothing is sent.
        let held = on_plan_change(plan(plan_id)).fail_pending_with();
        let secret = endpoint.secret.open(&self.keys, &endpoint.id);
        let refused = held
            .or((!endpoint.status.is_active()).then_some("webhook disabled"))
            .or(secret.is_err().then_some(SECRET_UNREADABLE_ERROR));
        if let Some(error) = refused {
            delivery.fail_pending(error);
            return AttemptRecord {
                delivery,
                account: endpoint.account,
                health: endpoint.health,
                disable: None,
            };
        }
        let sent_at = self.clock.now();
        let secret = secret.unwrap_or_default();
        let headers = delivery.headers(&secret, sent_at.unix_seconds());
        let outcome = self
            .transport
            .send(&endpoint.url, &headers, delivery.body.clone())
            .await;
        let decision = after_attempt(&delivery.state(endpoint.health), outcome, self.clock.now());
        delivery.apply(&decision);
        AttemptRecord {
            delivery,
            account: endpoint.account,
            health: decision.endpoint,
            disable: decision
                .disable_endpoint
                .then(|| crate::delivery::DISABLED_ERROR.to_owned()),
        }
    }

    /// Writes finished attempts back in one transaction (their leases end),
    /// then tells the owners of endpoints switched off.
    pub async fn record(&self, records: &[AttemptRecord]) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        let mut disabled: Vec<(AccountId, WebhookId)> = records
            .iter()
            .filter(|record| record.disable.is_some())
            .map(|record| (record.account.clone(), record.delivery.webhook_id.clone()))
            .collect();
        // Several of one endpoint's attempts can switch it off in one batch:
        // its owner hears about it once.
        disabled.sort_unstable_by(|a, b| a.1.cmp(&b.1));
        disabled.dedup_by(|a, b| a.1 == b.1);
        self.repo.record_attempts(records).await?;
        for (account, webhook) in disabled {
            self.alerts.webhook_disabled(&account, &webhook).await;
        }
        Ok(())
    }
}
