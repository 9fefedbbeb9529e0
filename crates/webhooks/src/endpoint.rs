//! Webhook endpoints: plan and count limits, status, the failure record,
//! secrets, the sealed `meta` check and the hourly allowance of tests plus
//! redeliveries (docs/api.md "Webhooks" and "Limits", docs/webhooks.md).

use chrono::TimeDelta;
use sealpost_kernel::{Timestamp, WebhookId, string_enum};
use sealpost_plans::Plan;
use sealpost_seal::{
    AtRestError, BoxShapeError, SealedBox, ServerKeys, b64, check_box, random_bytes,
};

/// 10 webhooks per account (docs/api.md "Limits").
pub const MAX_ENDPOINTS_PER_ACCOUNT: u32 = 10;
/// Webhook auto-disable after every attempt failed this long (docs/api.md
/// "Limits").
pub const AUTO_DISABLE_AFTER: TimeDelta = TimeDelta::days(3);
/// Webhook tests plus redeliveries per account and hour (docs/api.md "Limits").
pub const MANUAL_SENDS_PER_HOUR: u64 = 60;
/// Every secret starts with this (docs/webhooks.md "Verifying a delivery").
pub const SECRET_PREFIX: &str = "whsec_";
/// Largest sealed `meta` box, as JSON bytes (413 `too_large` above).
pub const META_MAX_LEN: usize = 4096;

/// A webhook rule that refuses a request. [`EndpointError::code`] gives the
/// API error code; the HTTP crate owns the status table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// 403 `plan_required`.
    #[error("the plan does not include webhooks; upgrade to Operator or higher")]
    PlanRequired,
    /// 409 `limit_reached`.
    #[error("the account already has {limit} webhooks")]
    LimitReached { limit: u32 },
    /// 409 `webhook_disabled`: a test or redelivery to a webhook that is off.
    #[error("the webhook is disabled; enable it first")]
    Disabled,
    /// 429 `rate_limited`, with `Retry-After`.
    #[error(
        "{MANUAL_SENDS_PER_HOUR} webhook tests and redeliveries an hour; try again in {retry_after_seconds} seconds"
    )]
    RateLimited { retry_after_seconds: u64 },
}

impl EndpointError {
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            EndpointError::PlanRequired => "plan_required",
            EndpointError::LimitReached { .. } => "limit_reached",
            EndpointError::Disabled => "webhook_disabled",
            EndpointError::RateLimited { .. } => "rate_limited",
        }
    }
}

/// Every webhook endpoint call needs a plan with webhooks (Operator and up).
pub fn check_plan(plan: &Plan) -> Result<(), EndpointError> {
    if plan.has_webhooks() {
        Ok(())
    } else {
        Err(EndpointError::PlanRequired)
    }
}

/// Creating one more endpoint when the account has `existing`.
pub fn check_can_create(plan: &Plan, existing: u64) -> Result<(), EndpointError> {
    check_plan(plan)?;
    let limit = plan.webhooks.min(MAX_ENDPOINTS_PER_ACCOUNT);
    if existing >= u64::from(limit) {
        return Err(EndpointError::LimitReached { limit });
    }
    Ok(())
}

/// A test or a redelivery needs the endpoint switched on.
pub fn check_can_send(status: &EndpointStatus) -> Result<(), EndpointError> {
    match status {
        EndpointStatus::Active => Ok(()),
        EndpointStatus::Disabled { .. } => Err(EndpointError::Disabled),
    }
}

/// The shape check of the sealed `meta` (the endpoint's name, sealed with
/// the vault key under `service/v1/webhook-meta:<id>`).
pub fn check_meta(meta: &serde_json::Value) -> Result<SealedBox, BoxShapeError> {
    check_box(meta, META_MAX_LEN)
}

/// A new signing secret: `whsec_` + 32 random bytes in base64url (49
/// characters). Shown once, on creation or rotation; the key of the
/// signature is the whole string (docs/protocol.md "Webhook signatures").
#[must_use]
pub fn generate_secret() -> String {
    format!("{SECRET_PREFIX}{}", b64::encode(&random_bytes::<32>()))
}

/// The purpose signing secrets are sealed for (`ServerKeys::seal`), beside
/// the endpoint's id.
pub const SECRET_PURPOSE: &str = "webhook-secret";

/// A signing secret as the store holds it.
#[derive(Clone, PartialEq, Eq)]
pub enum StoredSecret {
    /// Sealed under a server key for [`SECRET_PURPOSE`] and the endpoint's
    /// id: a value copied onto another endpoint does not open.
    Sealed(Vec<u8>),
    /// A row written before secrets were sealed, until the start-up pass
    /// ([`Webhooks::seal_secrets`](crate::service::Webhooks::seal_secrets))
    /// seals it.
    Plain(String),
}

impl StoredSecret {
    /// `secret` of endpoint `id` sealed under the current server key.
    #[must_use]
    pub fn seal(keys: &ServerKeys, id: &WebhookId, secret: &str) -> Self {
        Self::Sealed(keys.seal(SECRET_PURPOSE, id.as_str(), secret.as_bytes()))
    }

    /// The secret itself, of endpoint `id`.
    ///
    /// # Errors
    /// When it was sealed under a key no longer configured, changed, sealed
    /// for another endpoint, or is of the old form bound to no endpoint
    /// (sealed again at start-up: [`open_for_reseal`](Self::open_for_reseal)).
    pub fn open(&self, keys: &ServerKeys, id: &WebhookId) -> Result<String, AtRestError> {
        match self {
            Self::Plain(secret) => Ok(secret.clone()),
            Self::Sealed(sealed) => utf8(&keys.open(SECRET_PURPOSE, id.as_str(), sealed)?),
        }
    }

    /// Like [`open`](Self::open), and the old form bound to no endpoint too:
    /// for the start-up pass that seals it again.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_for_reseal(
        &self,
        keys: &ServerKeys,
        id: &WebhookId,
    ) -> Result<String, AtRestError> {
        match self {
            Self::Plain(secret) => Ok(secret.clone()),
            Self::Sealed(sealed) => {
                utf8(&keys.open_for_reseal(SECRET_PURPOSE, id.as_str(), sealed)?)
            }
        }
    }

    /// Whether it should be sealed (again) under the current key.
    #[must_use]
    pub fn needs_seal(&self, keys: &ServerKeys) -> bool {
        match self {
            Self::Plain(_) => true,
            Self::Sealed(sealed) => keys.needs_reseal(sealed),
        }
    }
}

fn utf8(bytes: &[u8]) -> Result<String, AtRestError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| AtRestError::Malformed)
}

// Never printed: a plaintext row would otherwise reach logs.
impl std::fmt::Debug for StoredSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Sealed(_) => "StoredSecret::Sealed(..)",
            Self::Plain(_) => "StoredSecret::Plain(..)",
        })
    }
}

string_enum! {
    /// Why an endpoint is off (`disabledReason`).
    pub enum DisabledReason: "disabled reason" {
        /// `PATCH status=disabled`.
        Manual => "manual",
        /// Every attempt failed for three days.
        Failing => "failing",
    }
}

/// `status` and `disabledReason` of an endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EndpointStatus {
    Active,
    Disabled { reason: DisabledReason },
}

impl EndpointStatus {
    /// `active` or `disabled`.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            EndpointStatus::Active => "active",
            EndpointStatus::Disabled { .. } => "disabled",
        }
    }

    /// `disabledReason`: null while active.
    #[must_use]
    pub fn disabled_reason(&self) -> Option<DisabledReason> {
        match self {
            EndpointStatus::Active => None,
            EndpointStatus::Disabled { reason } => Some(*reason),
        }
    }

    #[must_use]
    pub fn is_active(&self) -> bool {
        matches!(self, EndpointStatus::Active)
    }

    /// Rebuilds the status from its stored columns.
    #[must_use]
    pub fn from_parts(active: bool, reason: Option<DisabledReason>) -> Self {
        if active {
            EndpointStatus::Active
        } else {
            EndpointStatus::Disabled {
                reason: reason.unwrap_or(DisabledReason::Manual),
            }
        }
    }

    /// `PATCH status=active|disabled`: the new status and the new failure
    /// record. Switching on clears the failure record (docs/webhooks.md);
    /// switching off keeps it.
    #[must_use]
    pub fn patch(active: bool, health: EndpointHealth) -> (EndpointStatus, EndpointHealth) {
        if active {
            (EndpointStatus::Active, health.cleared())
        } else {
            (
                EndpointStatus::Disabled {
                    reason: DisabledReason::Manual,
                },
                health,
            )
        }
    }
}

/// The endpoint's failure record: `failingSince` and `lastSuccessAt`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointHealth {
    /// Set at the first failed attempt after a success (or ever), cleared by
    /// a success: while set, every attempt since then has failed.
    pub failing_since: Option<Timestamp>,
    pub last_success_at: Option<Timestamp>,
}

impl EndpointHealth {
    /// After a 2xx: no longer failing.
    #[must_use]
    pub fn record_success(self, now: Timestamp) -> Self {
        Self {
            failing_since: None,
            last_success_at: Some(now),
        }
    }

    /// After a failed attempt: `failing_since` starts now unless it is
    /// already running.
    #[must_use]
    pub fn record_failure(self, now: Timestamp) -> Self {
        Self {
            failing_since: Some(self.failing_since.unwrap_or(now)),
            ..self
        }
    }

    /// Every attempt has failed for [`AUTO_DISABLE_AFTER`] (inclusive).
    #[must_use]
    pub fn must_disable(&self, now: Timestamp) -> bool {
        self.failing_since
            .is_some_and(|since| since + AUTO_DISABLE_AFTER <= now)
    }

    /// Switched on again by its owner: the failure record is cleared.
    #[must_use]
    pub fn cleared(self) -> Self {
        Self {
            failing_since: None,
            ..self
        }
    }
}

/// The account's allowance of webhook tests plus redeliveries: 60 in each
/// clock hour (UTC), counted across all its endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HourlyAllowance {
    pub now: Timestamp,
}

impl HourlyAllowance {
    #[must_use]
    pub fn at(now: Timestamp) -> Self {
        Self { now }
    }

    /// Start of the hour whose sends count (`createdAt >= window_start`).
    #[must_use]
    pub fn window_start(&self) -> Timestamp {
        self.now.start_of_hour()
    }

    /// One more test or redelivery when `used_this_hour` were made since
    /// [`Self::window_start`]. Refused with the whole seconds until the next
    /// clock hour (at least 1).
    pub fn check_manual_send(&self, used_this_hour: u64) -> Result<(), EndpointError> {
        if used_this_hour < MANUAL_SENDS_PER_HOUR {
            return Ok(());
        }
        let next_hour = self.window_start() + TimeDelta::hours(1);
        let millis = u64::try_from((next_hour - self.now).num_milliseconds()).unwrap_or(0);
        let seconds = millis.div_ceil(1000).max(1);
        Err(EndpointError::RateLimited {
            retry_after_seconds: seconds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sealpost_kernel::{Clock, PlanId, TestClock};
    use sealpost_plans::plan;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    #[test]
    fn free_has_no_webhooks() {
        assert_eq!(
            check_can_create(plan(PlanId::Free), 0),
            Err(EndpointError::PlanRequired)
        );
        assert_eq!(EndpointError::PlanRequired.code(), "plan_required");
        assert_eq!(
            check_plan(plan(PlanId::Free)),
            Err(EndpointError::PlanRequired)
        );
    }

    #[test]
    fn ten_per_account_on_every_paid_plan() {
        for id in [
            PlanId::Operator,
            PlanId::Scale,
            PlanId::Fleet,
            PlanId::Enterprise,
        ] {
            let p = plan(id);
            assert_eq!(check_plan(p), Ok(()));
            assert_eq!(check_can_create(p, 0), Ok(()));
            assert_eq!(check_can_create(p, 9), Ok(()));
            let err = check_can_create(p, 10).unwrap_err();
            assert_eq!(err, EndpointError::LimitReached { limit: 10 });
            assert_eq!(err.code(), "limit_reached");
            assert_eq!(
                check_can_create(p, 11),
                Err(EndpointError::LimitReached { limit: 10 })
            );
        }
    }

    #[test]
    fn tests_and_redeliveries_need_an_active_endpoint() {
        assert_eq!(check_can_send(&EndpointStatus::Active), Ok(()));
        for reason in [DisabledReason::Manual, DisabledReason::Failing] {
            let err = check_can_send(&EndpointStatus::Disabled { reason }).unwrap_err();
            assert_eq!(err, EndpointError::Disabled);
            assert_eq!(err.code(), "webhook_disabled");
        }
    }

    #[test]
    fn secrets_are_whsec_and_32_random_bytes() {
        let secret = generate_secret();
        let body = secret.strip_prefix("whsec_").unwrap();
        assert_eq!(b64::decode(body).unwrap().len(), 32);
        assert_eq!(secret.len(), 6 + 43);
        assert_ne!(secret, generate_secret());
    }

    #[test]
    fn status_and_reason() {
        assert_eq!(EndpointStatus::Active.as_str(), "active");
        assert_eq!(EndpointStatus::Active.disabled_reason(), None);
        let off = EndpointStatus::Disabled {
            reason: DisabledReason::Failing,
        };
        assert_eq!(off.as_str(), "disabled");
        assert_eq!(
            off.disabled_reason().map(DisabledReason::as_str),
            Some("failing")
        );
        assert!(!off.is_active());
        assert_eq!(
            EndpointStatus::from_parts(false, Some(DisabledReason::Failing)),
            off
        );
        assert_eq!(
            EndpointStatus::from_parts(true, Some(DisabledReason::Failing)),
            EndpointStatus::Active
        );
        for reason in [DisabledReason::Manual, DisabledReason::Failing] {
            assert_eq!(reason.as_str().parse::<DisabledReason>(), Ok(reason));
        }
        assert!("other".parse::<DisabledReason>().is_err());
    }

    #[test]
    fn switching_on_clears_the_failure_record() {
        let failing = EndpointHealth {
            failing_since: Some(at("2026-01-01T00:00:00Z")),
            last_success_at: Some(at("2025-12-31T00:00:00Z")),
        };
        let (status, health) = EndpointStatus::patch(true, failing);
        assert_eq!(status, EndpointStatus::Active);
        assert_eq!(health.failing_since, None);
        assert_eq!(health.last_success_at, failing.last_success_at);
        let (status, health) = EndpointStatus::patch(false, failing);
        assert_eq!(
            status,
            EndpointStatus::Disabled {
                reason: DisabledReason::Manual
            }
        );
        assert_eq!(health, failing);
    }

    #[test]
    fn failure_record_keeps_the_first_failure() {
        let clock = TestClock::at(at("2026-01-01T00:00:00Z"));
        let t0 = clock.now();
        let h = EndpointHealth::default().record_failure(t0);
        assert_eq!(h.failing_since, Some(t0));
        clock.advance(TimeDelta::hours(5));
        let h = h.record_failure(clock.now());
        assert_eq!(h.failing_since, Some(t0), "a later failure keeps the start");
        clock.advance(TimeDelta::hours(1));
        let h = h.record_success(clock.now());
        assert_eq!(h.failing_since, None);
        assert_eq!(h.last_success_at, Some(clock.now()));
        clock.advance(TimeDelta::minutes(1));
        let h = h.record_failure(clock.now());
        assert_eq!(
            h.failing_since,
            Some(clock.now()),
            "restarts after a success"
        );
    }

    #[test]
    fn must_disable_exactly_at_three_days() {
        let t0 = at("2026-01-01T00:00:00Z");
        let h = EndpointHealth::default().record_failure(t0);
        assert!(!h.must_disable(t0));
        assert!(!h.must_disable(t0 + TimeDelta::days(3) - TimeDelta::milliseconds(1)));
        assert!(h.must_disable(t0 + TimeDelta::days(3)));
        assert!(h.must_disable(t0 + TimeDelta::days(4)));
        assert!(!EndpointHealth::default().must_disable(t0 + TimeDelta::days(30)));
    }

    #[test]
    fn sixty_manual_sends_an_hour() {
        let clock = TestClock::at(at("2026-01-01T10:15:00.000Z"));
        let allowance = HourlyAllowance::at(clock.now());
        assert_eq!(allowance.window_start(), at("2026-01-01T10:00:00Z"));
        assert_eq!(allowance.check_manual_send(0), Ok(()));
        assert_eq!(allowance.check_manual_send(59), Ok(()));
        let err = allowance.check_manual_send(60).unwrap_err();
        assert_eq!(
            err,
            EndpointError::RateLimited {
                retry_after_seconds: 45 * 60
            }
        );
        assert_eq!(err.code(), "rate_limited");
        assert!(allowance.check_manual_send(61).is_err());
    }

    #[test]
    fn retry_after_counts_to_the_next_clock_hour() {
        let cases = [
            ("2026-01-01T10:00:00.000Z", 3600),
            ("2026-01-01T10:59:59.000Z", 1),
            ("2026-01-01T10:59:59.999Z", 1),
            ("2026-01-01T10:59:58.500Z", 2),
            ("2026-01-01T10:30:00.001Z", 1800),
            ("2026-01-01T23:59:00.000Z", 60),
        ];
        for (now, expected) in cases {
            let err = HourlyAllowance::at(at(now)).check_manual_send(60);
            assert_eq!(
                err,
                Err(EndpointError::RateLimited {
                    retry_after_seconds: expected
                }),
                "{now}"
            );
        }
    }

    #[test]
    fn meta_is_a_box_of_bounded_size() {
        let good = serde_json::json!({
            "v": 2,
            "epk": b64::encode(&[1; 32]),
            "n": b64::encode(&[2; 12]),
            "c": b64::encode(b"name"),
            "t": b64::encode(&[3; 16]),
        });
        assert!(check_meta(&good).is_ok());
        assert!(check_meta(&serde_json::json!({"v": 3})).is_err());
        let mut big = good.clone();
        big["c"] = serde_json::Value::String(b64::encode(&[0; META_MAX_LEN]));
        assert_eq!(check_meta(&big), Err(BoxShapeError::TooLarge));
    }
}
