//! The sweep at the end of a paid period with a plan change scheduled.

use std::sync::{Arc, Mutex};

use sealpost_kernel::{AccountId, PlanId, TestClock, Timestamp};
use sealpost_subscriptions::{MockSubscriptionRepository, Subscriber};
use serde_json::json;

use crate::*;

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

fn account() -> AccountId {
    AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap()
}

const ENDED: &str = "2026-12-22T12:00:00Z";

fn ended(plan: PlanId, pending: Option<PlanId>) -> Subscriber {
    Subscriber {
        paid_until: Some(at(ENDED)),
        pending_plan: pending,
        renewing: false,
        ..Subscriber::on(plan, at("2026-11-01T08:00:00Z"))
    }
}

/// A billing whose store answers `subscribers` in turn and `pending` to
/// every `apply_pending`; returns it with the changes and lapses written.
#[allow(clippy::type_complexity)]
fn billing(
    subscribers: Vec<Subscriber>,
    pending: Applied,
) -> (
    Billing,
    Arc<Mutex<Vec<PendingApplied>>>,
    Arc<Mutex<Vec<Lapse>>>,
) {
    let mut repo = MockBillingRepository::new();
    repo.expect_lapsed_accounts()
        .times(1)
        .returning(|_, _| Ok(vec![account()]));
    let applied = Arc::new(Mutex::new(Vec::new()));
    let slot = applied.clone();
    repo.expect_apply_pending().returning(move |change| {
        slot.lock().unwrap().push(change);
        Ok(pending)
    });
    let lapses = Arc::new(Mutex::new(Vec::new()));
    let slot = lapses.clone();
    repo.expect_lapse().returning(move |lapse| {
        slot.lock().unwrap().push(lapse);
        Ok(Applied::Done)
    });
    let mut accounts = MockSubscriptionRepository::new();
    let queue = Mutex::new(subscribers);
    accounts
        .expect_subscriber()
        .returning(move |_| Ok(Some(queue.lock().unwrap().remove(0))));
    let billing = Billing::new(
        Arc::new(repo),
        Arc::new(accounts),
        Vec::new(),
        Arc::new(TestClock::at(at("2026-12-22T12:30:00Z"))),
    );
    (billing, applied, lapses)
}

#[tokio::test]
async fn a_move_to_free_scheduled_for_the_end_applies_instead_of_the_lapse() {
    let (billing, applied, lapses) = billing(
        vec![ended(PlanId::Scale, Some(PlanId::Free))],
        Applied::Done,
    );
    billing.sweep().await.unwrap();
    let applied = applied.lock().unwrap();
    assert_eq!(applied.len(), 1);
    let change = &applied[0];
    assert_eq!(
        (
            change.plan,
            change.to,
            change.paid_until,
            change.max_addresses,
            change.max_paired
        ),
        (PlanId::Scale, PlanId::Free, at(ENDED), 3, Some(1))
    );
    assert_eq!(
        change.records.events[0].payload,
        json!({ "planId": "free" })
    );
    assert!(lapses.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_pending_plan_that_no_longer_fits_is_dropped_and_the_period_lapses() {
    let (billing, applied, lapses) = billing(
        vec![
            ended(PlanId::Scale, Some(PlanId::Free)),
            ended(PlanId::Scale, None),
        ],
        Applied::Stale,
    );
    billing.sweep().await.unwrap();
    assert_eq!(applied.lock().unwrap().len(), 1);
    let lapses = lapses.lock().unwrap();
    assert_eq!(lapses.len(), 1);
    assert_eq!(lapses[0].plan, PlanId::Scale);
}

#[tokio::test]
async fn a_cheaper_paid_plan_applies_and_then_lapses_unpaid() {
    let (billing, applied, lapses) = billing(
        vec![
            ended(PlanId::Scale, Some(PlanId::Operator)),
            ended(PlanId::Operator, None),
        ],
        Applied::Done,
    );
    billing.sweep().await.unwrap();
    assert_eq!(applied.lock().unwrap()[0].to, PlanId::Operator);
    let lapses = lapses.lock().unwrap();
    assert_eq!(lapses.len(), 1);
    assert_eq!(lapses[0].plan, PlanId::Operator);
}
