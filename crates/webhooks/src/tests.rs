use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use sealpost_kernel::{AccountId, EventId, PlanId, StoreError, TestClock, Timestamp, WebhookId};
use sealpost_seal::ServerKeys;

use crate::delivery::{DISABLED_ERROR, PLAN_ERROR};
use crate::events::EventType;
use crate::*;

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
            secret: StoredSecret::seal(&test_keys(), &webhook, &generate_secret()),
            id: webhook,
            account: AccountId::from_trusted("acct_test".to_owned()),
            url: format!("https://r{n}.hooks.test/hook"),
            events: EventFilter::parse(&["*"]).unwrap(),
            meta: None,
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
    let (sender, transport, alerts) = sender(repo, AttemptOutcome::Success { status: 200 }, now);
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

/// The plan read before the store's lock moved to one without webhooks:
/// the store says so and the endpoint is refused, not created on it.
#[tokio::test]
async fn a_plan_changed_under_the_lock_is_decided_again() {
    let now = at("2026-01-01T00:00:00.000Z");
    let mut repo = MockWebhookRepository::new();
    repo.expect_create_endpoint()
        .withf(|_, plan, max| *plan == PlanId::Scale && *max == MAX_ENDPOINTS_PER_ACCOUNT)
        .times(1)
        .returning(|_, _, _| Ok(CreateOutcome::PlanChanged(PlanId::Free)));
    let webhooks = Webhooks::new(Arc::new(repo), Arc::new(TestClock::at(now)), test_keys());
    let refused = webhooks
        .create(
            &AccountId::from_trusted("acct_test".to_owned()),
            PlanId::Scale,
            WebhookId::from_trusted("whk_plan1".to_owned()),
            url::validate_url("https://hooks.example.com/in", &[]).unwrap(),
            EventFilter::parse(&["*"]).unwrap(),
            None,
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(WebhookError::Rule(EndpointError::PlanRequired))
        ),
        "{refused:?}"
    );
}
