//! Webhook deliveries: what is sent, and the state machine of attempts
//! (docs/webhooks.md "How delivery works" and "Retries, auto-disable and
//! the plan"; docs/api.md "Limits").
//!
//! - A delivery is created `pending` with `nextAttemptAt` = now and sent at
//!   once. An attempt succeeds on any 2xx within 10 seconds; anything else
//!   (3xx, since redirects are not followed, 4xx, 5xx, a timeout, a connect
//!   or TLS error) is a failure.
//! - After a failed attempt the next one is due after 1 min, 5 min, 30 min,
//!   2 h, 6 h, 12 h, 12 h ([`RETRY_SCHEDULE`], counted from the failed
//!   attempt): eight attempts in all, then `failed`.
//! - The endpoint keeps `failingSince` (set at the first failure after a
//!   success, cleared by a success) and `lastSuccessAt`. When an attempt
//!   fails and `failingSince + 3 days <= now`, the endpoint is switched off
//!   (`disabledReason` `failing`), this delivery and every other pending one
//!   of the endpoint are failed, and events while it is off are never sent.
//! - While the plan has no webhooks, pending deliveries are failed ("plan
//!   has no webhooks") and nothing is sent or created; new events are
//!   delivered again once the plan includes webhooks ([`on_plan_change`]).
//! - A redelivery is a new delivery (new `whd_` id, `attempts` 0) of the
//!   same event: same event id, same body.
//!
//! The functions here decide; the sender and the store apply. The sender
//! should apply the endpoint's failure record atomically (`failing_since =
//! COALESCE(failing_since, now)`), since deliveries to one endpoint can run
//! side by side.

use chrono::TimeDelta;
use sealpost_kernel::{DeliveryId, EventId, Timestamp, WebhookId, string_enum, string_enum_serde};
use sealpost_plans::Plan;
use sealpost_signature::{
    DELIVERY_ID_HEADER, EVENT_ID_HEADER, EVENT_TYPE_HEADER, SIGNATURE_HEADER, sign,
};
use serde::Serialize;

use crate::endpoint::{EndpointHealth, EndpointStatus};
use crate::events::{EventFilter, EventType};

/// Waits after failed attempts 1 to 7 (docs/api.md "Limits").
pub const RETRY_SCHEDULE: [TimeDelta; 7] = [
    TimeDelta::minutes(1),
    TimeDelta::minutes(5),
    TimeDelta::minutes(30),
    TimeDelta::hours(2),
    TimeDelta::hours(6),
    TimeDelta::hours(12),
    TimeDelta::hours(12),
];
/// The first attempt plus one per retry.
pub const MAX_ATTEMPTS: u32 = RETRY_SCHEDULE.len() as u32 + 1;
/// The receiver answers within 10 seconds (docs/api.md "Limits").
pub const RESPONSE_TIMEOUT: TimeDelta = TimeDelta::seconds(10);

/// `User-Agent` of every delivery.
pub const USER_AGENT: &str = "Service-Webhooks/1";
/// `error` of deliveries failed by the plan rule.
pub const PLAN_ERROR: &str = "plan has no webhooks";
/// `error` of the other pending deliveries failed when their endpoint is
/// switched off for failing.
pub const DISABLED_ERROR: &str = "webhook disabled: every attempt failed for 3 days";

string_enum! {
    pub enum DeliveryStatus: "delivery status" {
        Pending => "pending",
        Succeeded => "succeeded",
        Failed => "failed",
    }
}
string_enum_serde!(DeliveryStatus);

/// One event as a webhook body: `{"id", "type", "createdAt", "payload"}`,
/// in that order. Payloads carry ids only.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WebhookEvent {
    pub id: EventId,
    #[serde(rename = "type")]
    pub event_type: EventType,
    #[serde(rename = "createdAt")]
    pub created_at: Timestamp,
    pub payload: serde_json::Value,
}

impl WebhookEvent {
    /// The `webhook.test` event of `POST /webhook-endpoints/:id/test`.
    #[must_use]
    pub fn test(webhook_id: &WebhookId, now: Timestamp) -> Self {
        Self {
            id: EventId::generate(),
            event_type: EventType::WebhookTest,
            created_at: now,
            payload: serde_json::json!({ "webhookId": webhook_id }),
        }
    }

    /// The exact bytes sent (and signed) on every attempt.
    #[must_use]
    pub fn to_body(&self) -> String {
        // Ids, a timestamp and a JSON value: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Whether an event creates a delivery for an endpoint at fan-out: the plan
/// includes webhooks, the endpoint is on, and its filter takes the type.
/// `webhook.test` never comes from fan-out (only from the test endpoint).
#[must_use]
pub fn creates_delivery(
    plan: &Plan,
    status: &EndpointStatus,
    filter: &EventFilter,
    event_type: EventType,
) -> bool {
    plan.has_webhooks() && status.is_active() && !event_type.is_test() && filter.matches(event_type)
}

/// A webhook delivery record (docs/api.md "Webhooks": the delivery object).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub id: DeliveryId,
    pub webhook_id: WebhookId,
    pub event_id: EventId,
    pub event_type: EventType,
    /// The event exactly as sent.
    pub body: String,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub response_status: Option<u16>,
    pub error: Option<String>,
    pub created_at: Timestamp,
    pub last_attempt_at: Option<Timestamp>,
    pub next_attempt_at: Option<Timestamp>,
}

impl Delivery {
    /// A first delivery of `event` to an endpoint, due at once.
    #[must_use]
    pub fn new(webhook_id: WebhookId, event: &WebhookEvent, now: Timestamp) -> Self {
        Self {
            id: DeliveryId::generate(),
            webhook_id,
            event_id: event.id.clone(),
            event_type: event.event_type,
            body: event.to_body(),
            status: DeliveryStatus::Pending,
            attempts: 0,
            response_status: None,
            error: None,
            created_at: now,
            last_attempt_at: None,
            next_attempt_at: Some(now),
        }
    }

    /// `POST .../deliveries/:id/redeliver`: a new delivery (new id,
    /// `attempts` 0, due at once) of the same event, body unchanged.
    #[must_use]
    pub fn redeliver(&self, now: Timestamp) -> Self {
        Self {
            id: DeliveryId::generate(),
            webhook_id: self.webhook_id.clone(),
            event_id: self.event_id.clone(),
            event_type: self.event_type,
            body: self.body.clone(),
            status: DeliveryStatus::Pending,
            attempts: 0,
            response_status: None,
            error: None,
            created_at: now,
            last_attempt_at: None,
            next_attempt_at: Some(now),
        }
    }

    /// The input of [`after_attempt`].
    #[must_use]
    pub fn state(&self, endpoint: EndpointHealth) -> DeliveryState {
        DeliveryState {
            attempts: self.attempts,
            endpoint,
        }
    }

    /// Pending and due at `now`.
    #[must_use]
    pub fn is_due(&self, now: Timestamp) -> bool {
        self.status == DeliveryStatus::Pending && self.next_attempt_at.is_some_and(|at| at <= now)
    }

    /// Writes an attempt's decision into the record.
    pub fn apply(&mut self, decision: &AttemptDecision) {
        self.status = decision.status;
        self.attempts = decision.attempts;
        self.response_status = decision.response_status;
        self.error.clone_from(&decision.error);
        self.last_attempt_at = Some(decision.last_attempt_at);
        self.next_attempt_at = decision.next_attempt_at;
    }

    /// Fails a pending delivery without an attempt (the plan rule, or its
    /// endpoint switched off for failing). Finished deliveries are kept.
    pub fn fail_pending(&mut self, error: &str) {
        if self.status == DeliveryStatus::Pending {
            self.status = DeliveryStatus::Failed;
            self.error = Some(error.to_owned());
            self.next_attempt_at = None;
        }
    }

    /// The request headers of an attempt at `now_unix` (seconds), signed
    /// with the endpoint's current secret.
    #[must_use]
    pub fn headers(&self, secret: &str, now_unix: i64) -> Vec<(&'static str, String)> {
        vec![
            ("Content-Type", "application/json".to_owned()),
            ("User-Agent", USER_AGENT.to_owned()),
            (
                SIGNATURE_HEADER,
                sign(secret, now_unix, self.body.as_bytes()),
            ),
            (EVENT_ID_HEADER, self.event_id.to_string()),
            (EVENT_TYPE_HEADER, self.event_type.as_str().to_owned()),
            (DELIVERY_ID_HEADER, self.id.to_string()),
        ]
    }
}

/// What [`after_attempt`] needs: attempts made before this one and the
/// endpoint's failure record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryState {
    pub attempts: u32,
    pub endpoint: EndpointHealth,
}

/// How one attempt went, as the sender saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// An answer within the timeout. Only 2xx counts as success; another
    /// status here is treated as [`AttemptOutcome::Failure`].
    Success { status: u16 },
    /// A non-2xx answer (`status` set) or no answer at all (timeout,
    /// connect, TLS: `status` none).
    Failure { status: Option<u16>, error: String },
}

impl AttemptOutcome {
    /// An HTTP answer with this status: 2xx success, anything else failure.
    #[must_use]
    pub fn from_status(status: u16) -> Self {
        if (200..300).contains(&status) {
            AttemptOutcome::Success { status }
        } else {
            AttemptOutcome::Failure {
                status: Some(status),
                error: status_error(status),
            }
        }
    }

    /// No answer within [`RESPONSE_TIMEOUT`].
    #[must_use]
    pub fn timeout() -> Self {
        AttemptOutcome::Failure {
            status: None,
            error: "no response within 10 seconds".to_owned(),
        }
    }

    /// Could not connect, TLS failed, the name did not resolve or resolved
    /// to a refused address: `error` says which.
    #[must_use]
    pub fn unreachable(error: impl Into<String>) -> Self {
        AttemptOutcome::Failure {
            status: None,
            error: error.into(),
        }
    }

    #[must_use]
    pub fn is_success(&self) -> bool {
        matches!(self, AttemptOutcome::Success { status } if (200..300).contains(status))
    }

    /// `responseStatus`: the HTTP status if there was an answer.
    #[must_use]
    pub fn response_status(&self) -> Option<u16> {
        match self {
            AttemptOutcome::Success { status } => Some(*status),
            AttemptOutcome::Failure { status, .. } => *status,
        }
    }

    fn error(&self) -> Option<String> {
        match self {
            AttemptOutcome::Success { status } if (200..300).contains(status) => None,
            AttemptOutcome::Success { status } => Some(status_error(*status)),
            AttemptOutcome::Failure { error, .. } => Some(error.clone()),
        }
    }
}

fn status_error(status: u16) -> String {
    if (300..400).contains(&status) {
        format!("HTTP {status}: redirects are not followed")
    } else {
        format!("HTTP {status}")
    }
}

/// The result of one attempt, to write back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptDecision {
    pub status: DeliveryStatus,
    /// Attempts made, this one included.
    pub attempts: u32,
    pub last_attempt_at: Timestamp,
    /// When to try again; `None` once the delivery is finished.
    pub next_attempt_at: Option<Timestamp>,
    pub response_status: Option<u16>,
    pub error: Option<String>,
    /// The endpoint's new failure record.
    pub endpoint: EndpointHealth,
    /// Every attempt has failed for three days: switch the endpoint off
    /// (`disabled`, reason `failing`), fail its other pending deliveries with
    /// [`DISABLED_ERROR`], and send the push notification if it is on.
    pub disable_endpoint: bool,
}

/// The delivery state machine: given the state before an attempt and how it
/// went at `now`, the delivery's and the endpoint's next state.
#[must_use]
pub fn after_attempt(
    state: &DeliveryState,
    outcome: AttemptOutcome,
    now: Timestamp,
) -> AttemptDecision {
    let attempts = state.attempts.saturating_add(1);
    let response_status = outcome.response_status();
    if outcome.is_success() {
        return AttemptDecision {
            status: DeliveryStatus::Succeeded,
            attempts,
            last_attempt_at: now,
            next_attempt_at: None,
            response_status,
            error: None,
            endpoint: state.endpoint.record_success(now),
            disable_endpoint: false,
        };
    }
    let error = outcome.error();
    let endpoint = state.endpoint.record_failure(now);
    if endpoint.must_disable(now) {
        return AttemptDecision {
            status: DeliveryStatus::Failed,
            attempts,
            last_attempt_at: now,
            next_attempt_at: None,
            response_status,
            error: Some(match error {
                Some(error) => format!("{error}; {DISABLED_ERROR}"),
                None => DISABLED_ERROR.to_owned(),
            }),
            endpoint,
            disable_endpoint: true,
        };
    }
    let next_attempt_at = usize::try_from(attempts - 1)
        .ok()
        .and_then(|index| RETRY_SCHEDULE.get(index))
        .map(|wait| now + *wait);
    AttemptDecision {
        status: if next_attempt_at.is_some() {
            DeliveryStatus::Pending
        } else {
            DeliveryStatus::Failed
        },
        attempts,
        last_attempt_at: now,
        next_attempt_at,
        response_status,
        error,
        endpoint,
        disable_endpoint: false,
    }
}

/// Attempts in flight per endpoint (across all senders) while it is healthy.
pub const HEALTHY_IN_FLIGHT: u32 = 8;
/// Attempts in flight per endpoint while it is failing (`failingSince` set):
/// a receiver that times out holds at most this many attempt slots for its
/// 10 seconds, and one that answers errors costs little until its retries.
pub const FAILING_IN_FLIGHT: u32 = 2;
const _: () = assert!(FAILING_IN_FLIGHT >= 1 && FAILING_IN_FLIGHT < HEALTHY_IN_FLIGHT);

/// How many attempts to one endpoint may be in flight at once.
#[must_use]
pub fn in_flight_cap(health: &EndpointHealth) -> u32 {
    if health.failing_since.is_some() {
        FAILING_IN_FLIGHT
    } else {
        HEALTHY_IN_FLIGHT
    }
}

/// An endpoint's failure record as written after several attempts recorded
/// together: what one write must do so that the result is the same as
/// writing each attempt's record in turn (a success clears `failingSince`
/// and sets `lastSuccessAt`; a failure sets `failingSince` unless it is
/// already set).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HealthWrite {
    /// An attempt succeeded: `failingSince` is cleared (then set to
    /// `failing_since` if a later one failed) and `lastSuccessAt` written.
    pub succeeded: bool,
    /// Written when `succeeded`.
    pub last_success_at: Option<Timestamp>,
    /// After `succeeded`, the new `failingSince`; otherwise the value for
    /// `failingSince = COALESCE(failingSince, this)`.
    pub failing_since: Option<Timestamp>,
}

impl HealthWrite {
    /// Folds the endpoint records of attempts, in the order they finished.
    #[must_use]
    pub fn merge(records: impl IntoIterator<Item = EndpointHealth>) -> Option<HealthWrite> {
        let mut write: Option<HealthWrite> = None;
        for health in records {
            write = Some(match (write, health.failing_since) {
                // A success: whatever came before is overwritten.
                (_, None) => HealthWrite {
                    succeeded: true,
                    last_success_at: health.last_success_at,
                    failing_since: None,
                },
                (None, Some(since)) => HealthWrite {
                    succeeded: false,
                    last_success_at: None,
                    failing_since: Some(since),
                },
                // A failure after others: the earliest start is kept.
                (Some(before), Some(since)) => HealthWrite {
                    failing_since: Some(before.failing_since.unwrap_or(since)),
                    ..before
                },
            });
        }
        write
    }
}

/// What the account's plan means for its deliveries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanEffect {
    /// The plan includes webhooks: deliveries are created and sent.
    Deliver,
    /// The plan has none: mark every pending delivery failed with `error`,
    /// send nothing, and create no deliveries for new events, until the plan
    /// includes webhooks again.
    Hold { error: &'static str },
}

impl PlanEffect {
    #[must_use]
    pub fn sends(&self) -> bool {
        matches!(self, PlanEffect::Deliver)
    }

    /// The `error` to fail pending deliveries with, if they must be failed.
    #[must_use]
    pub fn fail_pending_with(&self) -> Option<&'static str> {
        match self {
            PlanEffect::Deliver => None,
            PlanEffect::Hold { error } => Some(error),
        }
    }
}

/// The plan rule, applied when the plan changes and checked by the sender
/// before each attempt.
#[must_use]
pub fn on_plan_change(plan: &Plan) -> PlanEffect {
    if plan.has_webhooks() {
        PlanEffect::Deliver
    } else {
        PlanEffect::Hold { error: PLAN_ERROR }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::DisabledReason;
    use sealpost_kernel::{Clock, PlanId, TestClock};
    use sealpost_plans::plan;
    use sealpost_signature::verify;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    fn webhook() -> WebhookId {
        WebhookId::parse("whk_test1").unwrap()
    }

    fn event(now: Timestamp) -> WebhookEvent {
        WebhookEvent {
            id: EventId::generate(),
            event_type: EventType::MessageReceived,
            created_at: now,
            payload: serde_json::json!({"messageId": "msg_x", "inboxId": "ibx_abcd"}),
        }
    }

    fn fail() -> AttemptOutcome {
        AttemptOutcome::from_status(500)
    }

    #[test]
    fn schedule_is_the_spec_one() {
        let minutes: Vec<i64> = RETRY_SCHEDULE.iter().map(|d| d.num_minutes()).collect();
        assert_eq!(minutes, [1, 5, 30, 120, 360, 720, 720]);
        assert_eq!(MAX_ATTEMPTS, 8);
    }

    #[test]
    fn eight_attempts_on_the_full_schedule_then_failed() {
        let t0 = at("2026-03-01T00:00:00Z");
        let clock = TestClock::at(t0);
        let mut delivery = Delivery::new(webhook(), &event(t0), t0);
        let mut health = EndpointHealth::default();
        // Attempt n happens at t0 + these offsets (minutes).
        let expected = [0, 1, 6, 36, 156, 516, 1236, 1956];
        let mut times = Vec::new();
        while delivery.status == DeliveryStatus::Pending {
            let due = delivery.next_attempt_at.unwrap();
            clock.set(due);
            assert!(delivery.is_due(clock.now()));
            assert!(!delivery.is_due(clock.now() - TimeDelta::milliseconds(1)));
            times.push((due - t0).num_minutes());
            let decision = after_attempt(&delivery.state(health), fail(), clock.now());
            assert!(!decision.disable_endpoint);
            assert_eq!(decision.endpoint.failing_since, Some(t0));
            health = decision.endpoint;
            delivery.apply(&decision);
            assert_eq!(delivery.attempts as usize, times.len());
            assert_eq!(delivery.last_attempt_at, Some(clock.now()));
        }
        assert_eq!(times, expected);
        assert_eq!(delivery.status, DeliveryStatus::Failed);
        assert_eq!(delivery.attempts, 8);
        assert_eq!(delivery.next_attempt_at, None);
        assert_eq!(delivery.response_status, Some(500));
        assert_eq!(delivery.error.as_deref(), Some("HTTP 500"));
        assert!(!delivery.is_due(clock.now() + TimeDelta::days(1)));
    }

    #[test]
    fn each_retry_waits_from_the_failed_attempt() {
        let now = at("2026-03-01T12:00:00Z");
        for (before, wait) in RETRY_SCHEDULE.iter().enumerate() {
            let state = DeliveryState {
                attempts: before as u32,
                endpoint: EndpointHealth::default(),
            };
            let decision = after_attempt(&state, fail(), now);
            assert_eq!(decision.status, DeliveryStatus::Pending);
            assert_eq!(decision.attempts, before as u32 + 1);
            assert_eq!(decision.next_attempt_at, Some(now + *wait));
        }
        let last = DeliveryState {
            attempts: 7,
            endpoint: EndpointHealth::default(),
        };
        let decision = after_attempt(&last, fail(), now);
        assert_eq!(decision.status, DeliveryStatus::Failed);
        assert_eq!(decision.attempts, 8);
        assert_eq!(decision.next_attempt_at, None);
    }

    #[test]
    fn success_clears_failing_since() {
        let t0 = at("2026-03-01T00:00:00Z");
        let failing = EndpointHealth {
            failing_since: Some(t0),
            last_success_at: Some(t0 - TimeDelta::days(1)),
        };
        let now = t0 + TimeDelta::hours(2);
        let state = DeliveryState {
            attempts: 3,
            endpoint: failing,
        };
        let decision = after_attempt(&state, AttemptOutcome::from_status(204), now);
        assert_eq!(decision.status, DeliveryStatus::Succeeded);
        assert_eq!(decision.attempts, 4);
        assert_eq!(decision.next_attempt_at, None);
        assert_eq!(decision.response_status, Some(204));
        assert_eq!(decision.error, None);
        assert_eq!(decision.endpoint.failing_since, None);
        assert_eq!(decision.endpoint.last_success_at, Some(now));
        assert!(!decision.disable_endpoint);

        // The next failure starts a new failing period.
        let later = now + TimeDelta::minutes(10);
        let state = DeliveryState {
            attempts: 0,
            endpoint: decision.endpoint,
        };
        let decision = after_attempt(&state, AttemptOutcome::timeout(), later);
        assert_eq!(decision.endpoint.failing_since, Some(later));
        assert_eq!(decision.endpoint.last_success_at, Some(now));
    }

    #[test]
    fn only_2xx_is_success() {
        let now = at("2026-03-01T00:00:00Z");
        let state = DeliveryState {
            attempts: 0,
            endpoint: EndpointHealth::default(),
        };
        for status in [200, 201, 202, 204, 299] {
            let outcome = AttemptOutcome::from_status(status);
            assert!(outcome.is_success(), "{status}");
            let decision = after_attempt(&state, outcome, now);
            assert_eq!(decision.status, DeliveryStatus::Succeeded, "{status}");
        }
        for status in [
            100, 199, 300, 301, 302, 307, 308, 400, 404, 410, 429, 500, 503,
        ] {
            let outcome = AttemptOutcome::from_status(status);
            assert!(!outcome.is_success(), "{status}");
            let decision = after_attempt(&state, outcome, now);
            assert_eq!(decision.status, DeliveryStatus::Pending, "{status}");
            assert_eq!(decision.response_status, Some(status));
            assert!(
                decision
                    .error
                    .unwrap()
                    .starts_with(&format!("HTTP {status}"))
            );
        }
        let redirect = after_attempt(&state, AttemptOutcome::from_status(302), now);
        assert_eq!(
            redirect.error.as_deref(),
            Some("HTTP 302: redirects are not followed")
        );
        // A "success" the sender built with a non-2xx status is a failure.
        let odd = after_attempt(&state, AttemptOutcome::Success { status: 302 }, now);
        assert_eq!(odd.status, DeliveryStatus::Pending);
        assert_eq!(odd.endpoint.failing_since, Some(now));
        assert!(odd.error.is_some());
    }

    #[test]
    fn transport_failures_have_no_status() {
        let now = at("2026-03-01T00:00:00Z");
        let state = DeliveryState {
            attempts: 0,
            endpoint: EndpointHealth::default(),
        };
        for outcome in [
            AttemptOutcome::timeout(),
            AttemptOutcome::unreachable("connection refused"),
            AttemptOutcome::unreachable("TLS handshake failed"),
        ] {
            let decision = after_attempt(&state, outcome.clone(), now);
            assert_eq!(decision.status, DeliveryStatus::Pending);
            assert_eq!(decision.response_status, None);
            assert_eq!(decision.next_attempt_at, Some(now + TimeDelta::minutes(1)));
            assert!(decision.error.is_some());
        }
        let decision = after_attempt(&state, AttemptOutcome::timeout(), now);
        assert_eq!(
            decision.error.as_deref(),
            Some("no response within 10 seconds")
        );
    }

    #[test]
    fn auto_disable_exactly_at_three_days() {
        let t0 = at("2026-03-01T00:00:00Z");
        let failing = EndpointHealth {
            failing_since: Some(t0),
            last_success_at: None,
        };
        let state = DeliveryState {
            attempts: 2,
            endpoint: failing,
        };

        let just_before = t0 + TimeDelta::days(3) - TimeDelta::milliseconds(1);
        let decision = after_attempt(&state, fail(), just_before);
        assert!(!decision.disable_endpoint);
        assert_eq!(decision.status, DeliveryStatus::Pending);

        let exactly = t0 + TimeDelta::days(3);
        let decision = after_attempt(&state, fail(), exactly);
        assert!(decision.disable_endpoint);
        assert_eq!(decision.status, DeliveryStatus::Failed);
        assert_eq!(decision.next_attempt_at, None);
        assert_eq!(decision.attempts, 3);
        assert_eq!(decision.endpoint.failing_since, Some(t0));
        assert_eq!(
            decision.error.as_deref(),
            Some("HTTP 500; webhook disabled: every attempt failed for 3 days")
        );

        // A success at that moment keeps the endpoint on.
        let decision = after_attempt(&state, AttemptOutcome::from_status(200), exactly);
        assert!(!decision.disable_endpoint);
        assert_eq!(decision.endpoint.failing_since, None);
    }

    #[test]
    fn auto_disable_across_deliveries_with_a_clock() {
        // One delivery gives up after about 33 hours; a stream of failing
        // deliveries switches the endpoint off once three days have passed.
        let t0 = at("2026-03-01T00:00:00Z");
        let clock = TestClock::at(t0);
        let mut health = EndpointHealth::default();
        let mut disabled_at = None;
        while disabled_at.is_none() {
            let mut delivery = Delivery::new(webhook(), &event(clock.now()), clock.now());
            while delivery.status == DeliveryStatus::Pending {
                clock.set(delivery.next_attempt_at.unwrap());
                let decision = after_attempt(&delivery.state(health), fail(), clock.now());
                health = decision.endpoint;
                delivery.apply(&decision);
                if decision.disable_endpoint {
                    disabled_at = Some(clock.now());
                }
            }
            clock.advance(TimeDelta::hours(1));
        }
        let disabled_at = disabled_at.unwrap();
        assert!(disabled_at >= t0 + TimeDelta::days(3));
        assert!(disabled_at < t0 + TimeDelta::days(4));
        assert_eq!(health.failing_since, Some(t0));
    }

    #[test]
    fn disabling_fails_the_other_pending_deliveries() {
        let now = at("2026-03-05T00:00:00Z");
        let mut pending = Delivery::new(webhook(), &event(now), now);
        let mut done = Delivery::new(webhook(), &event(now), now);
        done.apply(&after_attempt(
            &done.state(EndpointHealth::default()),
            AttemptOutcome::from_status(200),
            now,
        ));
        pending.fail_pending(DISABLED_ERROR);
        done.fail_pending(DISABLED_ERROR);
        assert_eq!(pending.status, DeliveryStatus::Failed);
        assert_eq!(pending.error.as_deref(), Some(DISABLED_ERROR));
        assert_eq!(pending.next_attempt_at, None);
        assert_eq!(pending.attempts, 0);
        assert_eq!(done.status, DeliveryStatus::Succeeded, "finished ones stay");
        assert_eq!(done.error, None);
    }

    #[test]
    fn plan_rule() {
        let free = on_plan_change(plan(PlanId::Free));
        assert_eq!(
            free,
            PlanEffect::Hold {
                error: "plan has no webhooks"
            }
        );
        assert!(!free.sends());
        assert_eq!(free.fail_pending_with(), Some("plan has no webhooks"));
        for id in [
            PlanId::Operator,
            PlanId::Scale,
            PlanId::Fleet,
            PlanId::Enterprise,
        ] {
            let effect = on_plan_change(plan(id));
            assert_eq!(effect, PlanEffect::Deliver);
            assert!(effect.sends());
            assert_eq!(effect.fail_pending_with(), None);
        }
        let now = at("2026-03-01T00:00:00Z");
        let mut delivery = Delivery::new(webhook(), &event(now), now);
        delivery.fail_pending(PLAN_ERROR);
        assert_eq!(delivery.status, DeliveryStatus::Failed);
        assert_eq!(delivery.error.as_deref(), Some("plan has no webhooks"));
        assert!(!delivery.is_due(now));
    }

    #[test]
    fn fan_out_rules() {
        let operator = plan(PlanId::Operator);
        let free = plan(PlanId::Free);
        let active = EndpointStatus::Active;
        let off = EndpointStatus::Disabled {
            reason: DisabledReason::Manual,
        };
        let all = EventFilter::All;
        let only = EventFilter::parse(&["inbox.created"]).unwrap();
        assert!(creates_delivery(
            operator,
            &active,
            &all,
            EventType::MessageReceived
        ));
        assert!(creates_delivery(
            operator,
            &active,
            &only,
            EventType::AddressCreated
        ));
        assert!(!creates_delivery(
            operator,
            &active,
            &only,
            EventType::AddressDeleted
        ));
        assert!(!creates_delivery(
            operator,
            &off,
            &all,
            EventType::MessageReceived
        ));
        assert!(!creates_delivery(
            free,
            &active,
            &all,
            EventType::MessageReceived
        ));
        assert!(!creates_delivery(
            operator,
            &active,
            &all,
            EventType::WebhookTest
        ));
    }

    #[test]
    fn redelivery_is_a_new_delivery_of_the_same_event() {
        let t0 = at("2026-03-01T00:00:00Z");
        let mut original = Delivery::new(webhook(), &event(t0), t0);
        for _ in 0..8 {
            let decision = after_attempt(
                &original.state(EndpointHealth::default()),
                fail(),
                t0 + TimeDelta::minutes(1),
            );
            original.apply(&decision);
        }
        assert_eq!(original.status, DeliveryStatus::Failed);
        let later = t0 + TimeDelta::days(2);
        let again = original.redeliver(later);
        assert_ne!(again.id, original.id);
        assert_eq!(again.event_id, original.event_id);
        assert_eq!(again.event_type, original.event_type);
        assert_eq!(again.webhook_id, original.webhook_id);
        assert_eq!(again.body, original.body);
        assert_eq!(again.attempts, 0);
        assert_eq!(again.status, DeliveryStatus::Pending);
        assert_eq!(again.response_status, None);
        assert_eq!(again.error, None);
        assert_eq!(again.created_at, later);
        assert_eq!(again.last_attempt_at, None);
        assert_eq!(again.next_attempt_at, Some(later));
        assert!(again.is_due(later));
    }

    #[test]
    fn body_matches_the_contract_vector() {
        let event = WebhookEvent {
            id: EventId::from_trusted("evt_vector".to_owned()),
            event_type: EventType::WebhookTest,
            created_at: at("2026-11-22T00:00:00.000Z"),
            payload: serde_json::json!({"webhookId": "whk_vector"}),
        };
        assert_eq!(
            event.to_body(),
            r#"{"id":"evt_vector","type":"webhook.test","createdAt":"2026-11-22T00:00:00.000Z","payload":{"webhookId":"whk_vector"}}"#
        );
        let test = WebhookEvent::test(&webhook(), event.created_at);
        assert_eq!(test.event_type, EventType::WebhookTest);
        assert_eq!(test.payload, serde_json::json!({"webhookId": "whk_test1"}));
        assert!(EventId::parse(test.id.as_str()).is_ok());
    }

    #[test]
    fn headers_are_signed_and_name_the_event() {
        let now = at("2026-03-01T00:00:00Z");
        let delivery = Delivery::new(webhook(), &event(now), now);
        let secret = crate::endpoint::generate_secret();
        let unix = now.unix_seconds();
        let headers = delivery.headers(&secret, unix);
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(get("User-Agent"), "Service-Webhooks/1");
        assert_eq!(get("Content-Type"), "application/json");
        assert_eq!(get("Service-Event-Id"), delivery.event_id.as_str());
        assert_eq!(get("Service-Event-Type"), "message.received");
        assert_eq!(get("Service-Delivery-Id"), delivery.id.as_str());
        let signature = get("Service-Signature");
        assert!(signature.starts_with(&format!("t={unix},v1=")));
        assert_eq!(
            verify(&secret, &signature, delivery.body.as_bytes(), unix),
            Ok(())
        );
        // A redelivery carries the same event id and a new delivery id.
        let again = delivery.redeliver(now);
        let headers = again.headers(&secret, unix);
        assert!(headers.contains(&("Service-Event-Id", delivery.event_id.to_string())));
        assert!(!headers.contains(&("Service-Delivery-Id", delivery.id.to_string())));
    }

    #[test]
    fn status_names() {
        for status in DeliveryStatus::ALL {
            assert_eq!(status.as_str().parse::<DeliveryStatus>(), Ok(status));
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(
                serde_json::from_str::<DeliveryStatus>(&json).unwrap(),
                status
            );
        }
        assert!("done".parse::<DeliveryStatus>().is_err());
    }

    #[test]
    fn a_failing_endpoint_gets_fewer_attempts_in_flight() {
        let healthy = EndpointHealth::default();
        assert_eq!(in_flight_cap(&healthy), HEALTHY_IN_FLIGHT);
        let now = at("2026-01-01T00:00:00.000Z");
        let failing = healthy.record_failure(now);
        assert_eq!(in_flight_cap(&failing), FAILING_IN_FLIGHT);
        // One success and it is back to the full cap.
        assert_eq!(
            in_flight_cap(&failing.record_success(now)),
            HEALTHY_IN_FLIGHT
        );
    }

    #[test]
    fn attempts_recorded_together_write_the_same_failure_record() {
        let t1 = at("2026-01-01T00:00:01.000Z");
        let t2 = at("2026-01-01T00:00:02.000Z");
        let t3 = at("2026-01-01T00:00:03.000Z");
        let ok = |t| EndpointHealth::default().record_success(t);
        let failed = |t| EndpointHealth::default().record_failure(t);
        assert_eq!(HealthWrite::merge([]), None);
        // Successes only: cleared, the last success kept.
        assert_eq!(
            HealthWrite::merge([ok(t1), ok(t2)]),
            Some(HealthWrite {
                succeeded: true,
                last_success_at: Some(t2),
                failing_since: None
            })
        );
        // Failures only: the earliest start, never a later one.
        assert_eq!(
            HealthWrite::merge([failed(t2), failed(t1), failed(t3)]),
            Some(HealthWrite {
                succeeded: false,
                last_success_at: None,
                failing_since: Some(t2)
            })
        );
        // A success then failures: cleared, then failing from the first of them.
        assert_eq!(
            HealthWrite::merge([failed(t1), ok(t2), failed(t3), failed(t3)]),
            Some(HealthWrite {
                succeeded: true,
                last_success_at: Some(t2),
                failing_since: Some(t3)
            })
        );
        // Failures then a success: cleared.
        assert_eq!(
            HealthWrite::merge([failed(t1), failed(t2), ok(t3)]),
            Some(HealthWrite {
                succeeded: true,
                last_success_at: Some(t3),
                failing_since: None
            })
        );
    }
}
