use std::sync::{Arc, Mutex};

use sealpost_activity::EventType;
use sealpost_kernel::{AccountId, PaymentId, PlanId, TestClock, Timestamp};
use sealpost_subscriptions::{
    ChangeError, Holdings, MockSubscriptionRepository, PauseState, Subscriber,
};
use serde_json::json;

use crate::*;

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

fn account() -> AccountId {
    AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap()
}

const CREATED: &str = "2026-11-01T08:00:00Z";
const NOW: &str = "2026-11-22T12:00:00Z";

fn on(plan: PlanId) -> Subscriber {
    Subscriber::on(plan, at(CREATED))
}

fn paid(plan: PlanId, until: &str) -> Subscriber {
    Subscriber {
        paid_until: Some(at(until)),
        ..on(plan)
    }
}

fn paused(lapsed: PlanId) -> Subscriber {
    Subscriber {
        pause: Some(PauseState {
            plan: Some(lapsed),
            since: at("2026-11-20T00:00:00Z"),
            deletes_at: at("2026-12-11T00:00:00Z"),
        }),
        ..on(PlanId::Free)
    }
}

fn holding(addresses: u64, paired: u64) -> Holdings {
    Holdings { addresses, paired }
}

// ---- payment states ----

#[test]
fn a_payment_is_paid_once_and_a_late_paid_after_failed_is_honoured() {
    use PaymentStatus::{Failed, Paid, Pending};
    assert_eq!(Pending.after(NoticeOutcome::Paid), Some(Paid));
    assert_eq!(Pending.after(NoticeOutcome::Failed), Some(Failed));
    assert_eq!(Failed.after(NoticeOutcome::Paid), Some(Paid));
    // Paid is final: a repeated notice, or a failure after it, changes nothing.
    assert_eq!(Paid.after(NoticeOutcome::Paid), None);
    assert_eq!(Paid.after(NoticeOutcome::Failed), None);
    assert_eq!(Failed.after(NoticeOutcome::Failed), None);
    for status in [Pending, Paid, Failed] {
        assert_eq!(status.after(NoticeOutcome::Ignored), None);
        assert_eq!(status.as_str().parse::<PaymentStatus>().unwrap(), status);
    }
}

// ---- the renewal clock ----

#[test]
fn paying_for_the_current_plan_before_its_period_ends_adds_thirty_days_to_it() {
    let subscriber = paid(PlanId::Scale, "2026-11-30T00:00:00Z");
    assert_eq!(
        paid_until(&subscriber, PlanId::Scale, at(NOW)),
        at("2026-12-30T00:00:00Z")
    );
}

#[test]
fn renewing_while_part_of_the_account_stays_paused_still_adds_to_the_period() {
    let partly = Subscriber {
        pause: Some(PauseState {
            plan: None,
            since: at("2026-11-20T00:00:00Z"),
            deletes_at: at("2026-12-11T00:00:00Z"),
        }),
        ..paid(PlanId::Operator, "2026-12-20T00:00:00Z")
    };
    assert_eq!(
        paid_until(&partly, PlanId::Operator, at(NOW)),
        at("2027-01-19T00:00:00Z")
    );
    // Its new period lapses like any other; a lapse not paid yet does not
    // lapse twice.
    assert!(has_lapsed(&partly, at("2026-12-20T00:00:00Z")));
    assert!(!has_lapsed(
        &paused(PlanId::Operator),
        at("2026-12-20T00:00:00Z")
    ));
}

#[test]
fn only_a_cheaper_plan_paid_while_a_dearer_period_runs_is_a_credit() {
    let now = at(NOW);
    let scale_running = paid(PlanId::Scale, "2026-12-20T00:00:00Z");
    assert!(settles_as_credit(&scale_running, PlanId::Operator, now));
    // The same plan renews, a dearer one upgrades.
    assert!(!settles_as_credit(&scale_running, PlanId::Scale, now));
    assert!(!settles_as_credit(&scale_running, PlanId::Fleet, now));
    // No running period: the period ended, Free, or paused after a lapse.
    let ended = paid(PlanId::Scale, "2026-11-22T12:00:00Z");
    assert!(!settles_as_credit(&ended, PlanId::Operator, now));
    assert!(!settles_as_credit(&on(PlanId::Free), PlanId::Operator, now));
    assert!(!settles_as_credit(
        &paused(PlanId::Scale),
        PlanId::Operator,
        now
    ));
    let mut part_paused = scale_running;
    part_paused.pause = Some(PauseState {
        plan: None,
        since: at("2026-11-20T00:00:00Z"),
        deletes_at: at("2026-12-11T00:00:00Z"),
    });
    assert!(!settles_as_credit(&part_paused, PlanId::Operator, now));
}

#[test]
fn any_other_payment_starts_a_thirty_day_period_at_the_paid_date() {
    let now = at(NOW);
    let thirty_on = at("2026-12-22T12:00:00Z");
    // An upgrade.
    assert_eq!(paid_until(&on(PlanId::Free), PlanId::Scale, now), thirty_on);
    assert_eq!(
        paid_until(
            &paid(PlanId::Operator, "2026-11-30T00:00:00Z"),
            PlanId::Scale,
            now
        ),
        thirty_on
    );
    // The same plan after its period ended, and while paused.
    assert_eq!(
        paid_until(
            &paid(PlanId::Scale, "2026-11-01T00:00:00Z"),
            PlanId::Scale,
            now
        ),
        thirty_on
    );
    assert_eq!(
        paid_until(&paused(PlanId::Scale), PlanId::Scale, now),
        thirty_on
    );
}

#[test]
fn a_paid_plan_lapses_when_its_period_ends_and_free_or_paused_never_do() {
    let subscriber = paid(PlanId::Operator, NOW);
    assert!(!has_lapsed(&subscriber, at("2026-11-22T11:59:59.999Z")));
    assert!(has_lapsed(&subscriber, at(NOW)));
    assert!(!has_lapsed(&on(PlanId::Free), at(NOW)));
    assert!(!has_lapsed(&on(PlanId::Enterprise), at(NOW)));
    let already = Subscriber {
        paid_until: Some(at("2026-11-01T00:00:00Z")),
        ..paused(PlanId::Operator)
    };
    assert!(!has_lapsed(&already, at(NOW)));
}

// ---- what checkout sells ----

#[test]
fn checkout_sells_priced_plans_and_a_cheaper_one_only_when_the_holdings_fit() {
    let scale = paid(PlanId::Scale, "2026-11-30T00:00:00Z");
    for plan in [PlanId::Free, PlanId::Enterprise] {
        assert_eq!(
            check_checkout(&scale, &holding(0, 0), plan),
            Err(CheckoutRefusal::NotForSale(plan))
        );
    }
    assert_eq!(
        check_checkout(&on(PlanId::Free), &holding(3, 1), PlanId::Scale),
        Ok(())
    );
    assert_eq!(
        check_checkout(&scale, &holding(500, 20), PlanId::Scale),
        Ok(())
    );
    assert!(matches!(
        check_checkout(&scale, &holding(500, 5), PlanId::Operator),
        Err(CheckoutRefusal::DoesNotFit(
            ChangeError::DowngradeBlocked { .. }
        ))
    ));
    // Paused: the payment releases what the plan holds; the rest stays paused.
    assert_eq!(
        check_checkout(&paused(PlanId::Scale), &holding(500, 20), PlanId::Operator),
        Ok(())
    );
}

// ---- the service ----

struct Parts {
    repo: MockBillingRepository,
    accounts: MockSubscriptionRepository,
    provider: MockPaymentProvider,
}

impl Parts {
    /// Every payment lookup finds a payment of `plan` in `status`.
    fn answer_payment(&mut self, plan: PlanId, status: PaymentStatus) {
        self.repo
            .expect_payment_by_reference()
            .returning(move |_, _| Ok(Some(pending(plan, status))));
    }

    /// Every account read finds `subscriber`.
    fn answer_subscriber(&mut self, subscriber: Subscriber) {
        self.accounts
            .expect_subscriber()
            .returning(move |_| Ok(Some(subscriber)));
    }
}

fn parts() -> Parts {
    let mut provider = MockPaymentProvider::new();
    provider.expect_id().return_const(ProviderId::Stripe);
    Parts {
        repo: MockBillingRepository::new(),
        accounts: MockSubscriptionRepository::new(),
        provider,
    }
}

fn billing(parts: Parts, now: &str) -> Billing {
    Billing::new(
        Arc::new(parts.repo),
        Arc::new(parts.accounts),
        vec![Arc::new(parts.provider)],
        Arc::new(TestClock::at(at(now))),
    )
}

fn pending(plan: PlanId, status: PaymentStatus) -> Payment {
    Payment {
        id: PaymentId::generate(),
        account: account(),
        plan,
        provider: ProviderId::Stripe,
        amount: 4_900,
        currency: "USD".into(),
        status,
        reference: "cs_test_1".into(),
        checkout_url: "https://checkout.example/cs_test_1".into(),
        created_at: at("2026-11-22T11:00:00Z"),
        settled_at: None,
    }
}

#[tokio::test]
async fn checkout_asks_the_provider_then_records_the_pending_payment() {
    let mut parts = parts();
    parts.answer_subscriber(on(PlanId::Free));
    parts
        .accounts
        .expect_holdings()
        .returning(|_| Ok(holding(2, 1)));
    parts
        .provider
        .expect_start_checkout()
        .times(1)
        .returning(|request| {
            assert_eq!(request.amount, 4_900);
            assert_eq!(request.currency, "USD");
            assert_eq!(request.plan, PlanId::Scale);
            assert_eq!(request.description, "Sealpost Scale, 30 days");
            Ok(CheckoutSession {
                url: "https://checkout.example/cs_test_1".into(),
                reference: "cs_test_1".into(),
            })
        });
    let stored = Arc::new(Mutex::new(None));
    let slot = stored.clone();
    parts
        .repo
        .expect_create_payment()
        .times(1)
        .returning(move |payment| {
            *slot.lock().unwrap() = Some(payment.clone());
            Ok(())
        });
    let payment = billing(parts, NOW)
        .checkout(&account(), PlanId::Scale, ProviderId::Stripe)
        .await
        .unwrap();
    assert_eq!(payment.status, PaymentStatus::Pending);
    assert_eq!(payment.reference, "cs_test_1");
    assert_eq!(payment.created_at, at(NOW));
    assert_eq!(stored.lock().unwrap().as_ref(), Some(&payment));
}

#[tokio::test]
async fn checkout_stores_nothing_when_the_provider_is_off_or_refuses() {
    // Not enabled in this deployment.
    let result = billing(parts(), NOW)
        .checkout(&account(), PlanId::Scale, ProviderId::Btcpay)
        .await;
    assert!(matches!(
        result,
        Err(BillingError::ProviderUnavailable {
            provider: ProviderId::Btcpay,
            ..
        })
    ));

    let mut parts = parts();
    parts.answer_subscriber(on(PlanId::Free));
    parts
        .accounts
        .expect_holdings()
        .returning(|_| Ok(holding(0, 0)));
    parts
        .provider
        .expect_start_checkout()
        .returning(|_| Err(ProviderError::Unreachable("connection refused".into())));
    parts.repo.expect_create_payment().never();
    let result = billing(parts, NOW)
        .checkout(&account(), PlanId::Scale, ProviderId::Stripe)
        .await;
    assert!(matches!(
        result,
        Err(BillingError::ProviderUnavailable { reason, .. })
            if reason.contains("cannot be reached") && !reason.contains("connection refused")
    ));
}

#[tokio::test]
async fn a_switched_off_provider_takes_no_checkout_but_its_notices_still_settle() {
    let mut parts = parts();
    parts.provider.expect_start_checkout().never();
    parts.answer_payment(PlanId::Scale, PaymentStatus::Pending);
    parts.answer_subscriber(on(PlanId::Free));
    parts
        .repo
        .expect_settle()
        .times(1)
        .returning(|_| Ok(Applied::Done));
    let billing = billing(parts, NOW).switch_off([ProviderId::Stripe]);
    assert_eq!(billing.providers(), Vec::<ProviderId>::new());
    let refused = billing
        .checkout(&account(), PlanId::Scale, ProviderId::Stripe)
        .await;
    assert!(matches!(
        refused,
        Err(BillingError::ProviderUnavailable { reason, .. }) if reason.contains("switched it off")
    ));
    let settled = billing
        .settle(ProviderId::Stripe, &paid_notice())
        .await
        .unwrap();
    assert!(matches!(settled, Settled::Changed(ref p) if p.status == PaymentStatus::Paid));
}

fn paid_notice() -> Notice {
    Notice::checkout("cs_test_1", NoticeOutcome::Paid)
}

#[tokio::test]
async fn a_paid_notice_changes_the_plan_with_subscription_updated_in_one_settlement() {
    let mut parts = parts();
    parts.answer_payment(PlanId::Scale, PaymentStatus::Pending);
    parts.answer_subscriber(on(PlanId::Free));
    let written = Arc::new(Mutex::new(None));
    let slot = written.clone();
    parts
        .repo
        .expect_settle()
        .times(1)
        .returning(move |settlement| {
            *slot.lock().unwrap() = Some(settlement);
            Ok(Applied::Done)
        });
    let settled = billing(parts, NOW)
        .settle(ProviderId::Stripe, &paid_notice())
        .await
        .unwrap();
    assert!(matches!(settled, Settled::Changed(ref p) if p.status == PaymentStatus::Paid));
    let settlement = written.lock().unwrap().take().unwrap();
    assert_eq!(
        (settlement.from, settlement.to, settlement.at),
        (PaymentStatus::Pending, PaymentStatus::Paid, at(NOW))
    );
    assert_eq!(
        settlement
            .records
            .notices
            .iter()
            .map(|notice| notice.kind)
            .collect::<Vec<_>>(),
        [sealpost_activity::NoticeKind::PaymentPaid]
    );
    let purchase = settlement.purchase.unwrap();
    assert_eq!(
        (
            purchase.from_plan,
            purchase.plan,
            purchase.paid_until,
            purchase.limits,
            purchase.deletes_at
        ),
        (
            PlanId::Free,
            PlanId::Scale,
            at("2026-12-22T12:00:00Z"),
            HoldingLimits {
                addresses: 1_000,
                devices: Some(50),
                api_keys: sealpost_plans::API_KEYS_PER_PAID_PLAN,
            },
            at("2026-12-13T12:00:00Z")
        )
    );
    assert!(!purchase.was_paused);
    assert_eq!(purchase.records.events.len(), 1);
    assert_eq!(
        purchase.records.events[0].kind,
        EventType::SubscriptionUpdated
    );
    assert_eq!(
        purchase.records.events[0].payload,
        json!({ "planId": "scale" })
    );
    assert_eq!(purchase.records.activity.len(), 1);
}

/// An expired Operator invoice confirmed after the account paid for Scale:
/// paid, a credit with its refund due, and nothing of the plan touched.
#[tokio::test]
async fn a_cheaper_payment_settling_after_an_upgrade_is_a_credit_not_a_downgrade() {
    let mut parts = parts();
    parts.answer_payment(PlanId::Operator, PaymentStatus::Failed);
    parts.answer_subscriber(paid(PlanId::Scale, "2026-12-20T00:00:00Z"));
    let written = Arc::new(Mutex::new(None));
    let slot = written.clone();
    parts
        .repo
        .expect_settle()
        .times(1)
        .returning(move |settlement| {
            *slot.lock().unwrap() = Some(settlement);
            Ok(Applied::Done)
        });
    let settled = billing(parts, NOW)
        .settle(ProviderId::Stripe, &paid_notice())
        .await
        .unwrap();
    assert!(matches!(settled, Settled::Changed(ref p) if p.status == PaymentStatus::Paid));
    let settlement = written.lock().unwrap().take().unwrap();
    assert_eq!(
        (settlement.from, settlement.to),
        (PaymentStatus::Failed, PaymentStatus::Paid)
    );
    assert_eq!(settlement.purchase, None, "no plan, period or fit change");
    assert_eq!(
        settlement.credit,
        Some(Credit {
            plan: PlanId::Scale,
            paid_until: at("2026-12-20T00:00:00Z"),
        })
    );
    assert!(
        settlement.records.events.is_empty(),
        "no subscription.updated"
    );
}

#[tokio::test]
async fn a_repeated_notice_a_renewal_and_an_unknown_checkout_change_nothing_twice() {
    // Already paid: the second notice writes nothing.
    let mut parts = parts();
    parts.answer_payment(PlanId::Scale, PaymentStatus::Paid);
    parts.repo.expect_settle().never();
    let settled = billing(parts, NOW)
        .settle(ProviderId::Stripe, &paid_notice())
        .await
        .unwrap();
    assert_eq!(settled, Settled::Unchanged);

    // A checkout this service never started.
    let mut parts = self::parts();
    parts
        .repo
        .expect_payment_by_reference()
        .returning(|_, _| Ok(None));
    parts.repo.expect_settle().never();
    let settled = billing(parts, NOW)
        .settle(ProviderId::Stripe, &paid_notice())
        .await
        .unwrap();
    assert_eq!(settled, Settled::UnknownReference);

    // Renewing the current plan: the period grows, no subscription.updated.
    let mut parts = self::parts();
    parts.answer_payment(PlanId::Scale, PaymentStatus::Pending);
    parts.answer_subscriber(paid(PlanId::Scale, "2026-11-30T00:00:00Z"));
    parts.repo.expect_settle().times(1).returning(|settlement| {
        let purchase = settlement.purchase.unwrap();
        assert_eq!(purchase.paid_until, at("2026-12-30T00:00:00Z"));
        assert_eq!(purchase.from_paid_until, Some(at("2026-11-30T00:00:00Z")));
        assert!(purchase.records.events.is_empty());
        Ok(Applied::Done)
    });
    billing(parts, NOW)
        .settle(ProviderId::Stripe, &paid_notice())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_failed_notice_buys_nothing_and_ignored_ones_read_nothing() {
    let mut parts = parts();
    parts.answer_payment(PlanId::Scale, PaymentStatus::Pending);
    parts.accounts.expect_subscriber().never();
    parts.repo.expect_settle().times(1).returning(|settlement| {
        assert_eq!(settlement.to, PaymentStatus::Failed);
        assert_eq!(settlement.purchase, None);
        // The account's phones hear of it (push `billing`).
        assert_eq!(settlement.records.notices.len(), 1);
        assert_eq!(
            settlement.records.notices[0].kind,
            sealpost_activity::NoticeKind::PaymentFailed
        );
        Ok(Applied::Done)
    });
    let settled = billing(parts, NOW)
        .settle(
            ProviderId::Stripe,
            &Notice::checkout("cs_test_1", NoticeOutcome::Failed),
        )
        .await
        .unwrap();
    assert!(matches!(
        settled,
        Settled::Changed(ref p) if p.status == PaymentStatus::Failed && p.settled_at == Some(at(NOW))
    ));

    let mut parts = self::parts();
    parts.repo.expect_payment_by_reference().never();
    let settled = billing(parts, NOW)
        .settle(
            ProviderId::Stripe,
            &Notice::checkout(String::new(), NoticeOutcome::Ignored),
        )
        .await
        .unwrap();
    assert_eq!(settled, Settled::Unchanged);
}

#[tokio::test]
async fn paying_while_paused_releases_what_the_paid_plan_holds() {
    let mut parts = parts();
    parts.answer_payment(PlanId::Operator, PaymentStatus::Pending);
    parts.answer_subscriber(paused(PlanId::Scale));
    parts.repo.expect_settle().times(1).returning(|settlement| {
        let purchase = settlement.purchase.unwrap();
        assert!(purchase.was_paused);
        assert_eq!(
            purchase.limits,
            HoldingLimits {
                addresses: 100,
                devices: Some(10),
                api_keys: sealpost_plans::API_KEYS_PER_PAID_PLAN,
            }
        );
        assert_eq!(purchase.paid_until, at("2026-12-22T12:00:00Z"));
        Ok(Applied::Done)
    });
    billing(parts, NOW)
        .settle(ProviderId::Stripe, &paid_notice())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_stale_settlement_is_decided_again_on_a_fresh_read() {
    let mut parts = parts();
    let reads = Arc::new(Mutex::new(0));
    let seen = reads.clone();
    parts
        .repo
        .expect_payment_by_reference()
        .returning(move |_, _| {
            let mut seen = seen.lock().unwrap();
            *seen += 1;
            // The first decision raced with another notice that paid it.
            let status = if *seen == 1 {
                PaymentStatus::Pending
            } else {
                PaymentStatus::Paid
            };
            Ok(Some(pending(PlanId::Scale, status)))
        });
    parts.answer_subscriber(on(PlanId::Free));
    parts
        .repo
        .expect_settle()
        .times(1)
        .returning(|_| Ok(Applied::Stale));
    let settled = billing(parts, NOW)
        .settle(ProviderId::Stripe, &paid_notice())
        .await
        .unwrap();
    assert_eq!(settled, Settled::Unchanged);
    assert_eq!(*reads.lock().unwrap(), 2);
}

#[tokio::test]
async fn the_sweep_pauses_lapsed_accounts_onto_free_with_deletes_at_21_days_out() {
    let mut parts = parts();
    parts
        .repo
        .expect_lapsed_accounts()
        .times(1)
        .returning(|_, _| Ok(vec![account()]));
    parts.answer_subscriber(paid(PlanId::Scale, "2026-11-22T00:00:00Z"));
    let written = Arc::new(Mutex::new(None));
    let slot = written.clone();
    parts.repo.expect_lapse().times(1).returning(move |lapse| {
        *slot.lock().unwrap() = Some(lapse);
        Ok(Applied::Done)
    });
    let report = billing(parts, NOW).sweep().await.unwrap();
    assert_eq!((report.paused, report.failed.len()), (1, 0));
    let lapse = written.lock().unwrap().take().unwrap();
    assert_eq!(
        (lapse.plan, lapse.paid_until, lapse.since, lapse.deletes_at),
        (
            PlanId::Scale,
            at("2026-11-22T00:00:00Z"),
            at(NOW),
            at("2026-12-13T12:00:00Z")
        )
    );
    assert_eq!(lapse.records.events[0].payload, json!({ "planId": "free" }));
}

#[tokio::test]
async fn one_account_failing_to_lapse_does_not_stop_the_others() {
    let other = AccountId::parse("acct_bbbbbbbbbbbbbbbbbbbbbbbb").unwrap();
    let mut parts = parts();
    let due = vec![account(), other.clone()];
    parts
        .repo
        .expect_lapsed_accounts()
        .times(1)
        .returning(move |_, _| Ok(due.clone()));
    parts.answer_subscriber(paid(PlanId::Scale, "2026-11-22T00:00:00Z"));
    let failing = account();
    parts.repo.expect_lapse().times(2).returning(move |lapse| {
        if lapse.account == failing {
            Err(sealpost_kernel::StoreError::Failed(
                "deadlock detected".into(),
            ))
        } else {
            Ok(Applied::Done)
        }
    });
    let report = billing(parts, NOW).sweep().await.unwrap();
    assert_eq!(report.paused, 1);
    assert_eq!(report.failed.len(), 1);
    assert_eq!(report.failed[0].0, account());
}

#[tokio::test]
async fn the_sweep_leaves_an_account_that_paid_in_the_meantime() {
    let mut parts = parts();
    parts
        .repo
        .expect_lapsed_accounts()
        .returning(|_, _| Ok(vec![account()]));
    parts.answer_subscriber(paid(PlanId::Scale, "2026-12-22T00:00:00Z"));
    parts.repo.expect_lapse().never();
    let report = billing(parts, NOW).sweep().await.unwrap();
    assert_eq!((report.paused, report.failed.len()), (0, 0));
}

#[tokio::test]
async fn the_sandbox_checkout_is_a_page_of_the_service_named_by_the_payment() {
    let sandbox = SandboxProvider::new("http://127.0.0.1:8080/");
    let payment = PaymentId::generate();
    let session = sandbox
        .start_checkout(&CheckoutRequest {
            payment: payment.clone(),
            account: account(),
            plan: PlanId::Scale,
            amount: 4_900,
            currency: "USD",
            description: "Sealpost Scale, 30 days".into(),
        })
        .await
        .unwrap();
    assert_eq!(
        session.url,
        format!("http://127.0.0.1:8080/billing/sandbox/{payment}")
    );
    assert_eq!(
        SandboxProvider::notice(&payment, NoticeOutcome::Paid).reference,
        session.reference
    );
}

// ---- at a pause's deletesAt ----

fn address(id: &str) -> sealpost_kernel::AddressId {
    sealpost_kernel::AddressId::parse(id).unwrap()
}

fn device(id: &str) -> sealpost_kernel::DeviceId {
    sealpost_kernel::DeviceId::parse(id).unwrap()
}

/// One expired pause holding `addresses` and `devices`.
fn expired_pause(parts: &mut Parts, addresses: &[&str], devices: &[&str]) {
    parts
        .repo
        .expect_expired_pauses()
        .withf(|now, _| *now == at(NOW))
        .times(1)
        .returning(|_, _| Ok(vec![account()]));
    let held = PausedHoldings {
        addresses: addresses.iter().map(|id| address(id)).collect(),
        devices: devices.iter().map(|id| device(id)).collect(),
    };
    parts
        .repo
        .expect_paused_holdings()
        .times(1)
        .returning(move |_| Ok(held.clone()));
}

#[tokio::test]
async fn at_deletes_at_what_the_pause_holds_is_deleted_with_its_events_then_the_pause_ends() {
    let mut parts = parts();
    expired_pause(&mut parts, &["ibx_held01"], &["wkr_held01"]);
    let mut seq = mockall::Sequence::new();
    parts
        .repo
        .expect_delete_paused_address()
        .withf(|deletion| {
            deletion.id == address("ibx_held01")
                && deletion.due == at(NOW)
                && deletion.records.events.len() == 1
                && deletion.records.events[0].kind == EventType::AddressDeleted
                && deletion.records.events[0].payload == json!({ "inboxId": "ibx_held01" })
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_| Ok(Deleted::Deleted));
    // The device still has an active address assigned: it is unassigned
    // with its `inbox.removed`, as the owner's removal would.
    parts
        .repo
        .expect_device_addresses()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| Ok(vec![address("ibx_live01")]));
    parts
        .repo
        .expect_remove_paused_device()
        .withf(|deletion| {
            let kinds: Vec<EventType> = deletion.records.events.iter().map(|e| e.kind).collect();
            deletion.id == device("wkr_held01")
                && deletion.assigned == vec![address("ibx_live01")]
                && kinds == vec![EventType::AddressRemoved, EventType::DeviceRemoved]
                && deletion.records.events[1].payload == json!({ "workerId": "wkr_held01" })
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_| Ok(Deleted::Deleted));
    parts
        .repo
        .expect_end_pause()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_| Ok(Applied::Done));
    let done = billing(parts, NOW).delete_expired_pauses().await.unwrap();
    assert_eq!(
        done,
        PauseDeletions {
            addresses: 1,
            devices: 1
        }
    );
}

#[tokio::test]
async fn what_a_payment_released_before_the_delete_is_spared_and_not_counted() {
    let mut parts = parts();
    expired_pause(&mut parts, &["ibx_held01", "ibx_held02"], &["wkr_held01"]);
    parts
        .repo
        .expect_delete_paused_address()
        .times(2)
        .returning(|deletion| {
            Ok(if deletion.id == address("ibx_held01") {
                Deleted::Spared
            } else {
                Deleted::Deleted
            })
        });
    parts
        .repo
        .expect_device_addresses()
        .times(1)
        .returning(|_, _| Ok(Vec::new()));
    parts
        .repo
        .expect_remove_paused_device()
        .times(1)
        .returning(|_| Ok(Deleted::Spared));
    // Something is still paused: the pause stays.
    parts
        .repo
        .expect_end_pause()
        .times(1)
        .returning(|_| Ok(Applied::Stale));
    let done = billing(parts, NOW).delete_expired_pauses().await.unwrap();
    assert_eq!(
        done,
        PauseDeletions {
            addresses: 1,
            devices: 0
        }
    );
}

#[tokio::test]
async fn a_device_whose_addresses_changed_meanwhile_is_decided_again() {
    let mut parts = parts();
    expired_pause(&mut parts, &[], &["wkr_held01"]);
    let reads = Arc::new(Mutex::new(0));
    let counter = reads.clone();
    parts
        .repo
        .expect_device_addresses()
        .times(2)
        .returning(move |_, _| {
            let mut reads = counter.lock().unwrap();
            *reads += 1;
            Ok(if *reads == 1 {
                vec![address("ibx_live01")]
            } else {
                Vec::new()
            })
        });
    parts
        .repo
        .expect_remove_paused_device()
        .times(2)
        .returning(|deletion| {
            Ok(if deletion.assigned.is_empty() {
                Deleted::Deleted
            } else {
                Deleted::Stale
            })
        });
    parts
        .repo
        .expect_end_pause()
        .times(1)
        .returning(|_| Ok(Applied::Done));
    let done = billing(parts, NOW).delete_expired_pauses().await.unwrap();
    assert_eq!(done.devices, 1);
    assert_eq!(*reads.lock().unwrap(), 2);
}

#[tokio::test]
async fn a_failing_deletion_stops_the_pass_before_the_pause_ends() {
    let mut parts = parts();
    expired_pause(&mut parts, &["ibx_held01"], &[]);
    parts
        .repo
        .expect_delete_paused_address()
        .times(1)
        .returning(|_| {
            Err(sealpost_kernel::StoreError::Failed(
                "deadlock detected".into(),
            ))
        });
    parts.repo.expect_end_pause().never();
    let result = billing(parts, NOW).delete_expired_pauses().await;
    assert!(matches!(result, Err(BillingError::Store(_))), "{result:?}");
}
