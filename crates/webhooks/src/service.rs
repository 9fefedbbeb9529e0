//! Webhook endpoints (SPEC.md "Webhooks" endpoints) and the sender that
//! turns outbox events into signed deliveries.
//!
//! Pure like the rest of the crate: storage is [`WebhookRepository`], the
//! network is [`WebhookTransport`], the push adapter is [`WebhookAlerts`].

use std::sync::Arc;

use async_trait::async_trait;
use chrono::TimeDelta;
use sealpost_activity::Event;
use sealpost_kernel::{
    AccountId, Clock, Cursor, DeliveryId, Page, PageRequest, PlanId, StoreError, Timestamp,
    WebhookId,
};
use sealpost_plans::plan;
use sealpost_seal::{SealedBox, ServerKeys};

use crate::delivery::{
    AttemptOutcome, Delivery, DeliveryStatus, WebhookEvent, after_attempt, creates_delivery,
    on_plan_change,
};
use crate::endpoint::{
    EndpointError, EndpointHealth, EndpointStatus, HourlyAllowance, MANUAL_SENDS_PER_HOUR,
    MAX_ENDPOINTS_PER_ACCOUNT, StoredSecret, check_can_create, check_can_send, check_plan,
    generate_secret,
};
use crate::events::EventFilter;
use crate::url::WebhookUrl;

/// The delivery log is kept 30 days (SPEC.md Limits).
pub const DELIVERY_LOG_RETENTION: TimeDelta = TimeDelta::days(30);
/// How long a sender holds a claimed delivery; after a crash another takes it.
pub const LEASE: TimeDelta = TimeDelta::seconds(60);

#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    pub id: WebhookId,
    pub account: AccountId,
    pub url: String,
    pub events: EventFilter,
    pub meta: Option<SealedBox>,
    /// `whsec_...`, sealed under the server key; shown on creation and
    /// rotation only.
    pub secret: StoredSecret,
    pub status: EndpointStatus,
    /// Events created before this were made while it was off (or before it existed).
    pub active_since: Timestamp,
    pub health: EndpointHealth,
    pub created_at: Timestamp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateOutcome {
    Created,
    IdTaken,
    LimitReached,
}

/// A claimed delivery with what the attempt needs.
#[derive(Clone, Debug, PartialEq)]
pub struct DueDelivery {
    pub delivery: Delivery,
    pub endpoint: Endpoint,
    pub plan: PlanId,
}

/// A finished attempt (or a delivery failed without one), to be written
/// back: the delivery's new state, its endpoint's failure record, and when
/// `disable` is set the endpoint switched off with its other pending
/// deliveries failed with that error.
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptRecord {
    pub delivery: Delivery,
    pub account: AccountId,
    pub health: EndpointHealth,
    pub disable: Option<String>,
}

/// Decides the deliveries one event creates, given the account's endpoints.
pub type FanOutRule = dyn Fn(&Event, &[Endpoint], PlanId) -> Vec<Delivery> + Send + Sync;

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait WebhookRepository: Send + Sync {
    /// Inserts unless the id was ever used or the account holds `max` endpoints.
    async fn create_endpoint(
        &self,
        endpoint: Endpoint,
        max: u32,
    ) -> Result<CreateOutcome, StoreError>;
    async fn endpoints(&self, account: &AccountId) -> Result<Vec<Endpoint>, StoreError>;
    async fn endpoint(
        &self,
        account: &AccountId,
        id: &WebhookId,
    ) -> Result<Option<Endpoint>, StoreError>;
    /// Writes only what `change` sets and answers the row as it then is;
    /// `None` when no such endpoint of the account. A column the change
    /// leaves alone keeps whatever a concurrent writer put there.
    async fn update_endpoint(
        &self,
        account: &AccountId,
        id: &WebhookId,
        change: EndpointChange,
    ) -> Result<Option<Endpoint>, StoreError>;
    /// Writes only the secret; false when no such endpoint of the account.
    async fn set_secret(
        &self,
        account: &AccountId,
        id: &WebhookId,
        secret: StoredSecret,
    ) -> Result<bool, StoreError>;
    /// Up to `limit` endpoints after `after` (by id) whose secret is plain
    /// or sealed under a key other than `current_key` (its hex id).
    async fn secrets_to_seal(
        &self,
        current_key: &str,
        after: Option<WebhookId>,
        limit: i64,
    ) -> Result<Vec<(WebhookId, StoredSecret)>, StoreError>;
    /// Replaces the secret only while it is still `old`.
    async fn replace_secret(
        &self,
        id: &WebhookId,
        old: StoredSecret,
        new: StoredSecret,
    ) -> Result<bool, StoreError>;
    /// Deletes it and its delivery log; its id is never used again.
    async fn delete_endpoint(
        &self,
        account: &AccountId,
        id: &WebhookId,
        at: Timestamp,
    ) -> Result<bool, StoreError>;
    async fn insert_delivery(
        &self,
        account: &AccountId,
        delivery: Delivery,
        manual: bool,
    ) -> Result<(), StoreError>;
    /// Counts the account's manual sends (tests and redeliveries) since
    /// `since` and, when fewer than `limit`, inserts `delivery` as one: under
    /// the account's row lock, so a burst cannot pass the count together.
    /// Answers the count before the insert.
    async fn insert_manual_delivery(
        &self,
        account: &AccountId,
        delivery: Delivery,
        since: Timestamp,
        limit: u64,
    ) -> Result<u64, StoreError>;
    async fn deliveries(
        &self,
        account: &AccountId,
        webhook: &WebhookId,
        status: Option<DeliveryStatus>,
        page: &PageRequest,
    ) -> Result<Vec<Delivery>, StoreError>;
    async fn delivery(
        &self,
        account: &AccountId,
        webhook: &WebhookId,
        id: &DeliveryId,
    ) -> Result<Option<Delivery>, StoreError>;

    /// Takes up to `limit` events not fanned out yet, applies `rule` to each
    /// with its account's endpoints and plan, stores the deliveries and marks
    /// the events done, in one transaction. Returns how many events.
    async fn fan_out(&self, limit: i64, rule: &FanOutRule) -> Result<usize, StoreError>;
    /// Leases up to `limit` pending deliveries due at `now` until
    /// `lease_until`, at most [`in_flight_cap`](crate::delivery::in_flight_cap)
    /// leased per endpoint at once; endpoints at their cap are skipped, so
    /// the others' due deliveries fill the free slots.
    async fn claim_due(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: i64,
    ) -> Result<Vec<DueDelivery>, StoreError>;
    /// Writes attempts' results (and their leases off), their endpoints'
    /// failure records (in order, as [`HealthWrite::merge`]), and for each
    /// with `disable` the endpoint off with its other pending deliveries
    /// failed with that error: all in one transaction.
    ///
    /// [`HealthWrite::merge`]: crate::delivery::HealthWrite::merge
    async fn record_attempts(&self, records: &[AttemptRecord]) -> Result<(), StoreError>;
    async fn delete_deliveries_before(&self, before: Timestamp) -> Result<u64, StoreError>;
}

/// Sends one attempt over HTTPS.
#[async_trait]
pub trait WebhookTransport: Send + Sync {
    async fn send(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: String,
    ) -> AttemptOutcome;
}

/// Tells the account an endpoint was switched off for failing (push, when on).
#[async_trait]
pub trait WebhookAlerts: Send + Sync {
    async fn webhook_disabled(&self, account: &AccountId, webhook: &WebhookId);
}

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error(transparent)]
    Rule(#[from] EndpointError),
    #[error("this webhook id was used before")]
    IdTaken,
    #[error("no such record")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The columns one `PATCH` writes: only those it changes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EndpointChange {
    pub url: Option<String>,
    pub events: Option<EventFilter>,
    pub meta: Option<SealedBox>,
    /// Status and failure record, and `active_since` when switched back on.
    pub status: Option<(EndpointStatus, EndpointHealth, Option<Timestamp>)>,
}

/// What `PATCH /webhook-endpoints/:id` may change.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EndpointPatch {
    pub url: Option<WebhookUrl>,
    pub events: Option<EventFilter>,
    pub meta: Option<SealedBox>,
    pub active: Option<bool>,
}

/// An endpoint and its signing secret in the clear, as creation and
/// rotation answer it (the only times it is shown).
#[derive(Clone, Debug, PartialEq)]
pub struct WithSecret {
    pub endpoint: Endpoint,
    pub secret: String,
}

#[derive(Clone)]
pub struct Webhooks {
    repo: Arc<dyn WebhookRepository>,
    clock: Arc<dyn Clock>,
    keys: Arc<ServerKeys>,
}

impl Webhooks {
    /// `keys` seal the signing secrets the store keeps.
    pub fn new(repo: Arc<dyn WebhookRepository>, clock: Arc<dyn Clock>, keys: ServerKeys) -> Self {
        Self {
            repo,
            clock,
            keys: Arc::new(keys),
        }
    }

    /// Seals every secret still stored in the clear (rows from before
    /// secrets were sealed) or under an older server key, under the current
    /// one. Run at start-up; returns (sealed, unreadable): an unreadable one
    /// was sealed under a key no longer configured and needs rotating.
    pub async fn seal_secrets(&self) -> Result<(u64, u64), StoreError> {
        const PAGE: i64 = 500;
        let current = self.keys.current_id();
        let (mut sealed, mut unreadable) = (0, 0);
        let mut after = None;
        loop {
            let rows = self
                .repo
                .secrets_to_seal(&current, after.clone(), PAGE)
                .await?;
            let last = rows.len() < usize::try_from(PAGE).unwrap_or(usize::MAX);
            for (id, old) in rows {
                after = Some(id.clone());
                let Ok(secret) = old.open(&self.keys) else {
                    unreadable += 1;
                    continue;
                };
                let new = StoredSecret::seal(&self.keys, &secret);
                if self.repo.replace_secret(&id, old, new).await? {
                    sealed += 1;
                }
            }
            if last {
                return Ok((sealed, unreadable));
            }
        }
    }

    pub async fn list(&self, account: &AccountId) -> Result<Vec<Endpoint>, WebhookError> {
        Ok(self.repo.endpoints(account).await?)
    }

    pub async fn get(&self, account: &AccountId, id: &WebhookId) -> Result<Endpoint, WebhookError> {
        self.repo
            .endpoint(account, id)
            .await?
            .ok_or(WebhookError::NotFound)
    }

    /// Creates an endpoint; its secret is returned beside it (shown once).
    pub async fn create(
        &self,
        account: &AccountId,
        plan_id: PlanId,
        id: WebhookId,
        url: WebhookUrl,
        events: EventFilter,
        meta: Option<SealedBox>,
    ) -> Result<WithSecret, WebhookError> {
        let limits = plan(plan_id);
        check_can_create(limits, 0)?;
        let now = self.clock.now();
        let secret = generate_secret();
        let endpoint = Endpoint {
            id,
            account: account.clone(),
            url: url.as_str().to_owned(),
            events,
            meta,
            secret: StoredSecret::seal(&self.keys, &secret),
            status: EndpointStatus::Active,
            active_since: now,
            health: EndpointHealth::default(),
            created_at: now,
        };
        match self
            .repo
            .create_endpoint(endpoint.clone(), MAX_ENDPOINTS_PER_ACCOUNT)
            .await?
        {
            CreateOutcome::Created => Ok(WithSecret { endpoint, secret }),
            CreateOutcome::IdTaken => Err(WebhookError::IdTaken),
            CreateOutcome::LimitReached => Err(EndpointError::LimitReached {
                limit: MAX_ENDPOINTS_PER_ACCOUNT,
            }
            .into()),
        }
    }

    pub async fn update(
        &self,
        account: &AccountId,
        id: &WebhookId,
        patch: EndpointPatch,
    ) -> Result<Endpoint, WebhookError> {
        let endpoint = self.get(account, id).await?;
        let status = patch.active.map(|active| {
            let was_active = endpoint.status.is_active();
            let (status, health) = EndpointStatus::patch(active, endpoint.health);
            let since = (active && !was_active).then(|| self.clock.now());
            (status, health, since)
        });
        let change = EndpointChange {
            url: patch.url.map(|url| url.as_str().to_owned()),
            events: patch.events,
            meta: patch.meta,
            status,
        };
        self.repo
            .update_endpoint(account, id, change)
            .await?
            .ok_or(WebhookError::NotFound)
    }

    pub async fn delete(&self, account: &AccountId, id: &WebhookId) -> Result<(), WebhookError> {
        if self
            .repo
            .delete_endpoint(account, id, self.clock.now())
            .await?
        {
            Ok(())
        } else {
            Err(WebhookError::NotFound)
        }
    }

    /// A new secret; the old one stops at once.
    pub async fn rotate_secret(
        &self,
        account: &AccountId,
        id: &WebhookId,
    ) -> Result<WithSecret, WebhookError> {
        let mut endpoint = self.get(account, id).await?;
        let secret = generate_secret();
        endpoint.secret = StoredSecret::seal(&self.keys, &secret);
        // Only the secret is written: a concurrent change to anything else
        // (the sender switching the endpoint off) stands.
        if !self
            .repo
            .set_secret(account, id, endpoint.secret.clone())
            .await?
        {
            return Err(WebhookError::NotFound);
        }
        Ok(WithSecret { endpoint, secret })
    }

    fn check_manual_send(plan_id: PlanId, endpoint: &Endpoint) -> Result<(), WebhookError> {
        check_plan(plan(plan_id))?;
        check_can_send(&endpoint.status)?;
        Ok(())
    }

    /// Inserts a test or redelivery if the hour's allowance has room
    /// (counted and inserted atomically by the store).
    async fn insert_manual(
        &self,
        account: &AccountId,
        delivery: &Delivery,
    ) -> Result<(), WebhookError> {
        let allowance = HourlyAllowance::at(self.clock.now());
        let used = self
            .repo
            .insert_manual_delivery(
                account,
                delivery.clone(),
                allowance.window_start(),
                MANUAL_SENDS_PER_HOUR,
            )
            .await?;
        allowance.check_manual_send(used)?;
        Ok(())
    }

    /// `POST .../test`: a `webhook.test` event, delivered like any other.
    pub async fn send_test(
        &self,
        account: &AccountId,
        plan_id: PlanId,
        id: &WebhookId,
    ) -> Result<Delivery, WebhookError> {
        let endpoint = self.get(account, id).await?;
        Self::check_manual_send(plan_id, &endpoint)?;
        let now = self.clock.now();
        let delivery = Delivery::new(
            endpoint.id.clone(),
            &WebhookEvent::test(&endpoint.id, now),
            now,
        );
        self.insert_manual(account, &delivery).await?;
        Ok(delivery)
    }

    /// `POST .../deliveries/:id/redeliver`: new delivery id, same event.
    pub async fn redeliver(
        &self,
        account: &AccountId,
        plan_id: PlanId,
        id: &WebhookId,
        delivery_id: &DeliveryId,
    ) -> Result<Delivery, WebhookError> {
        let endpoint = self.get(account, id).await?;
        let original = self
            .repo
            .delivery(account, id, delivery_id)
            .await?
            .ok_or(WebhookError::NotFound)?;
        Self::check_manual_send(plan_id, &endpoint)?;
        let delivery = original.redeliver(self.clock.now());
        self.insert_manual(account, &delivery).await?;
        Ok(delivery)
    }

    pub async fn deliveries(
        &self,
        account: &AccountId,
        id: &WebhookId,
        status: Option<DeliveryStatus>,
        request: &PageRequest,
    ) -> Result<Page<Delivery>, WebhookError> {
        self.get(account, id).await?;
        let rows = self.repo.deliveries(account, id, status, request).await?;
        Ok(Page::from_rows(rows, request, |delivery| Cursor {
            at: delivery.created_at,
            id: delivery.id.to_string(),
        }))
    }

    /// The delivery log's retention sweep: drops records older than 30 days.
    pub async fn sweep(&self) -> Result<u64, StoreError> {
        self.repo
            .delete_deliveries_before(self.clock.now() - DELIVERY_LOG_RETENTION)
            .await
    }
}

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
        let secret = endpoint.secret.open(&self.keys);
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::delivery::{DISABLED_ERROR, PLAN_ERROR};
    use crate::events::EventType;
    use sealpost_kernel::{EventId, TestClock};

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    /// Answers every attempt with `outcome` and remembers the URLs.
    struct FixedTransport {
        outcome: AttemptOutcome,
        sent: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl WebhookTransport for FixedTransport {
        async fn send(
            &self,
            url: &str,
            _headers: &[(&'static str, String)],
            _body: String,
        ) -> AttemptOutcome {
            self.sent.lock().unwrap().push(url.to_owned());
            self.outcome.clone()
        }
    }

    #[derive(Default)]
    struct Alerts(Mutex<Vec<WebhookId>>);

    #[async_trait]
    impl WebhookAlerts for Alerts {
        async fn webhook_disabled(&self, _account: &AccountId, webhook: &WebhookId) {
            self.0.lock().unwrap().push(webhook.clone());
        }
    }

    fn test_keys() -> ServerKeys {
        ServerKeys::new([3; 32], [])
    }

    fn due(n: usize, now: Timestamp, plan: PlanId, health: EndpointHealth) -> DueDelivery {
        let webhook = WebhookId::from_trusted(format!("whk_test{n}"));
        let event = WebhookEvent {
            id: EventId::generate(),
            event_type: EventType::AddressCreated,
            created_at: now,
            payload: serde_json::json!({"inboxId": "ibx_abcd"}),
        };
        DueDelivery {
            delivery: Delivery::new(webhook.clone(), &event, now),
            endpoint: Endpoint {
                id: webhook,
                account: AccountId::from_trusted("acct_test".to_owned()),
                url: format!("https://r{n}.hooks.test/hook"),
                events: EventFilter::parse(&["*"]).unwrap(),
                meta: None,
                secret: StoredSecret::seal(&test_keys(), &generate_secret()),
                status: EndpointStatus::Active,
                active_since: now,
                health,
                created_at: now,
            },
            plan,
        }
    }

    fn sender(
        repo: MockWebhookRepository,
        outcome: AttemptOutcome,
        now: Timestamp,
    ) -> (Sender, Arc<FixedTransport>, Arc<Alerts>) {
        let transport = Arc::new(FixedTransport {
            outcome,
            sent: Mutex::new(Vec::new()),
        });
        let alerts = Arc::new(Alerts::default());
        let sender = Sender::new(
            Arc::new(repo),
            transport.clone(),
            alerts.clone(),
            Arc::new(TestClock::at(now)),
            test_keys(),
        );
        (sender, transport, alerts)
    }

    #[tokio::test]
    async fn a_round_records_all_its_attempts_in_one_write() {
        let now = at("2026-01-01T00:00:00.000Z");
        let mut repo = MockWebhookRepository::new();
        repo.expect_fan_out().times(1).returning(|_, _| Ok(0));
        repo.expect_claim_due()
            .withf(move |claimed_at, until, limit| {
                *claimed_at == now && *until == now + LEASE && *limit == 10
            })
            .times(1)
            .returning(move |_, _, _| {
                Ok((0..3)
                    .map(|n| due(n, now, PlanId::Operator, EndpointHealth::default()))
                    .collect())
            });
        repo.expect_record_attempts()
            .withf(move |records| {
                records.len() == 3
                    && records.iter().all(|record| {
                        record.delivery.status == DeliveryStatus::Succeeded
                            && record.delivery.attempts == 1
                            && record.health.last_success_at == Some(now)
                            && record.disable.is_none()
                    })
            })
            .times(1)
            .returning(|_| Ok(()));
        let (sender, transport, alerts) =
            sender(repo, AttemptOutcome::Success { status: 200 }, now);
        assert_eq!(sender.run_once(10).await.unwrap(), (0, 3));
        assert_eq!(transport.sent.lock().unwrap().len(), 3);
        assert!(alerts.0.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn nothing_is_sent_without_webhooks_on_the_plan() {
        let now = at("2026-01-01T00:00:00.000Z");
        let mut repo = MockWebhookRepository::new();
        repo.expect_record_attempts()
            .withf(|records| {
                records.len() == 1
                    && records[0].delivery.status == DeliveryStatus::Failed
                    && records[0].delivery.error.as_deref() == Some(PLAN_ERROR)
                    && records[0].delivery.attempts == 0
            })
            .times(1)
            .returning(|_| Ok(()));
        let (sender, transport, _) = sender(repo, AttemptOutcome::Success { status: 200 }, now);
        sender
            .attempt(due(0, now, PlanId::Free, EndpointHealth::default()))
            .await
            .unwrap();
        assert!(transport.sent.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn three_days_of_failures_switch_off_and_alert_once_recorded() {
        let now = at("2026-01-04T00:00:00.000Z");
        let failing = EndpointHealth {
            failing_since: Some(at("2026-01-01T00:00:00.000Z")),
            last_success_at: None,
        };
        let mut repo = MockWebhookRepository::new();
        repo.expect_record_attempts()
            .withf(|records| {
                records.len() == 2
                    && records
                        .iter()
                        .all(|record| record.disable.as_deref() == Some(DISABLED_ERROR))
            })
            .times(1)
            .returning(|_| Ok(()));
        let (sender, _, alerts) = sender(repo, AttemptOutcome::from_status(500), now);
        let first = sender.send(due(1, now, PlanId::Operator, failing)).await;
        let second = sender.send(due(2, now, PlanId::Operator, failing)).await;
        // Sending alone writes nothing and alerts no one.
        assert!(alerts.0.lock().unwrap().is_empty());
        sender.record(&[first, second]).await.unwrap();
        assert_eq!(alerts.0.lock().unwrap().len(), 2);
        // An empty batch is not written at all.
        sender.record(&[]).await.unwrap();
    }

    #[tokio::test]
    async fn one_endpoint_switched_off_twice_in_a_batch_alerts_once() {
        let now = at("2026-01-04T00:00:00.000Z");
        let failing = EndpointHealth {
            failing_since: Some(at("2026-01-01T00:00:00.000Z")),
            last_success_at: None,
        };
        let mut repo = MockWebhookRepository::new();
        repo.expect_record_attempts().times(1).returning(|_| Ok(()));
        let (sender, _, alerts) = sender(repo, AttemptOutcome::from_status(500), now);
        let first = sender.send(due(1, now, PlanId::Operator, failing)).await;
        let again = sender.send(due(1, now, PlanId::Operator, failing)).await;
        assert!(first.disable.is_some() && again.disable.is_some());
        sender.record(&[first, again]).await.unwrap();
        assert_eq!(alerts.0.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_failed_write_is_reported_and_alerts_nobody() {
        let now = at("2026-01-04T00:00:00.000Z");
        let failing = EndpointHealth {
            failing_since: Some(at("2026-01-01T00:00:00.000Z")),
            last_success_at: None,
        };
        let mut repo = MockWebhookRepository::new();
        repo.expect_record_attempts()
            .times(1)
            .returning(|_| Err(StoreError::Failed("down".into())));
        let (sender, _, alerts) = sender(repo, AttemptOutcome::timeout(), now);
        let record = sender.send(due(1, now, PlanId::Operator, failing)).await;
        assert!(sender.record(&[record]).await.is_err());
        assert!(alerts.0.lock().unwrap().is_empty());
    }
}
