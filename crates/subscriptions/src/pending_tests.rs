//! A move down while a paid period runs is scheduled for its end.

use std::sync::{Arc, Mutex};

use sealpost_kernel::{AccountId, PlanId, TestClock, Timestamp};
use serde_json::json;

use crate::*;

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

fn account() -> AccountId {
    AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap()
}

const PAID_UNTIL: &str = "2026-12-22T12:00:00Z";

fn paid(plan: PlanId, pending: Option<PlanId>) -> Subscriber {
    Subscriber {
        paid_until: Some(at(PAID_UNTIL)),
        pending_plan: pending,
        renewing: false,
        ..Subscriber::on(plan, at("2026-11-01T08:00:00Z"))
    }
}

/// Runs `change_plan(target)` at `now` on `before`; returns the change written.
async fn change(before: Subscriber, target: PlanId, now: &str) -> Option<PlanChange> {
    let written = Arc::new(Mutex::new(None));
    let slot = written.clone();
    let mut repo = MockSubscriptionRepository::new();
    repo.expect_subscriber()
        .returning(move |_| Ok(Some(before)));
    repo.expect_holdings().returning(|_| {
        Ok(Holdings {
            addresses: 1,
            paired: 1,
        })
    });
    repo.expect_set_plan().returning(move |change| {
        *slot.lock().unwrap() = Some(change);
        Ok(PlanChangeOutcome::Changed)
    });
    let service = Subscriptions::new(Arc::new(repo), Arc::new(TestClock::at(at(now))));
    service.change_plan(&account(), target).await.unwrap();
    written.lock().unwrap().take()
}

fn payloads(change: &PlanChange) -> Vec<serde_json::Value> {
    change
        .records
        .events
        .iter()
        .map(|e| e.payload.clone())
        .collect()
}

#[tokio::test]
async fn a_move_down_in_a_paid_period_is_scheduled_for_its_end() {
    let change = change(
        paid(PlanId::Scale, None),
        PlanId::Free,
        "2026-12-01T00:00:00Z",
    )
    .await
    .unwrap();
    assert_eq!(
        (change.from, change.to, change.timing),
        (PlanId::Scale, PlanId::Free, ChangeTiming::AtPeriodEnd)
    );
    assert_eq!(
        payloads(&change),
        vec![json!({ "planId": "scale", "pendingPlanId": "free" })]
    );
}

#[tokio::test]
async fn choosing_the_current_plan_again_takes_the_scheduled_move_back() {
    let before = paid(PlanId::Scale, Some(PlanId::Operator));
    let change = change(before, PlanId::Scale, "2026-12-01T00:00:00Z")
        .await
        .unwrap();
    assert_eq!(change.timing, ChangeTiming::Cancel);
    assert_eq!((change.from, change.to), (PlanId::Scale, PlanId::Scale));
    assert_eq!(
        payloads(&change),
        vec![json!({ "planId": "scale", "pendingPlanId": null })]
    );
}

#[tokio::test]
async fn choosing_the_pending_plan_again_writes_nothing() {
    let before = paid(PlanId::Scale, Some(PlanId::Free));
    assert_eq!(
        change(before, PlanId::Free, "2026-12-01T00:00:00Z").await,
        None
    );
}

#[tokio::test]
async fn without_a_running_period_a_move_down_is_immediate() {
    // The period ended (the sweep has not lapsed it yet), and Enterprise has none.
    for (before, now) in [
        (paid(PlanId::Scale, None), PAID_UNTIL),
        (
            Subscriber::on(PlanId::Enterprise, at("2026-11-01T08:00:00Z")),
            "2026-12-01T00:00:00Z",
        ),
    ] {
        let change = change(before, PlanId::Free, now).await.unwrap();
        assert_eq!(change.timing, ChangeTiming::Now);
        assert_eq!(payloads(&change), vec![json!({ "planId": "free" })]);
    }
}

#[test]
fn the_record_shows_the_pending_plan() {
    let record = Subscription::of(
        &paid(PlanId::Scale, Some(PlanId::Free)),
        PausedCounts::default(),
    );
    assert_eq!(record.pending_plan_id, Some(PlanId::Free));
    assert_eq!(record.renews_at, Some(at(PAID_UNTIL)));
}
