//! Plans that renew by card: the renewal clock of a renewing period, the
//! lapse that waits for a renewal, and what the provider's subscription
//! notices do (docs/api.md, Billing).

use std::sync::{Arc, Mutex};

use chrono::TimeDelta;
use sealpost_activity::EventType;
use sealpost_kernel::{AccountId, PaymentId, PlanId, TestClock, Timestamp};
use sealpost_subscriptions::{MockSubscriptionRepository, PauseState, Subscriber};
use serde_json::json;

use crate::*;

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

fn account() -> AccountId {
    AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap()
}

const END: &str = "2026-12-22T12:00:00Z";

fn paid(plan: PlanId, renewing: bool) -> Subscriber {
    Subscriber {
        paid_until: Some(at(END)),
        renewing,
        ..Subscriber::on(plan, at("2026-11-01T08:00:00Z"))
    }
}

fn card(renewing: bool) -> CardAccount {
    CardAccount {
        account: account(),
        subscription: "sub_1".into(),
        customer: "cus_1".into(),
        plan: PlanId::Scale,
        renewing,
    }
}

fn subscription() -> Option<CardSubscription> {
    Some(CardSubscription {
        id: "sub_1".into(),
        customer: "cus_1".into(),
    })
}

struct Parts {
    repo: MockBillingRepository,
    accounts: MockSubscriptionRepository,
    provider: MockPaymentProvider,
}

fn mocks(subscriber: Subscriber) -> Parts {
    let mut provider = MockPaymentProvider::new();
    provider.expect_id().return_const(ProviderId::Stripe);
    let mut accounts = MockSubscriptionRepository::new();
    accounts
        .expect_subscriber()
        .returning(move |_| Ok(Some(subscriber)));
    Parts {
        repo: MockBillingRepository::new(),
        accounts,
        provider,
    }
}

fn billing(parts: Parts, now: Timestamp) -> Billing {
    Billing::new(
        Arc::new(parts.repo),
        Arc::new(parts.accounts),
        vec![Arc::new(parts.provider)],
        Arc::new(TestClock::at(now)),
    )
}

// ---- the renewal clock ----

#[test]
fn a_renewing_period_lapses_only_after_the_grace_and_one_that_is_not_at_its_end() {
    let end = at(END);
    assert!(!has_lapsed(&paid(PlanId::Scale, true), end));
    assert!(!has_lapsed(
        &paid(PlanId::Scale, true),
        end + RENEWAL_GRACE - TimeDelta::seconds(1)
    ));
    assert!(has_lapsed(&paid(PlanId::Scale, true), end + RENEWAL_GRACE));
    // Renewal off (at the portal, a failed charge, ended): at its end.
    assert!(has_lapsed(&paid(PlanId::Scale, false), end));
    assert_eq!(lapses_at(&paid(PlanId::Scale, false)), Some(end));
}

#[test]
fn a_renewal_adds_thirty_days_to_the_period_it_renews_even_when_reported_late() {
    let end = at(END);
    let renewing = paid(PlanId::Scale, true);
    let next = at("2027-01-21T12:00:00Z");
    // Early, on time, and an hour into the grace: no time lost or given.
    for reported in [end - TimeDelta::hours(1), end, end + TimeDelta::hours(1)] {
        assert_eq!(renewal_paid_until(&renewing, PlanId::Scale, reported), next);
    }
    // After a lapse (on Free, paused): a period from the payment, as any.
    let lapsed = Subscriber {
        paid_until: None,
        pause: Some(PauseState {
            plan: Some(PlanId::Scale),
            since: end + RENEWAL_GRACE,
            deletes_at: end + TimeDelta::days(22),
        }),
        ..Subscriber::on(PlanId::Free, at("2026-11-01T08:00:00Z"))
    };
    let late = end + TimeDelta::days(3);
    assert_eq!(
        renewal_paid_until(&lapsed, PlanId::Scale, late),
        late + PERIOD
    );
}

// ---- notices ----

#[tokio::test]
async fn a_paid_card_checkout_starts_a_renewing_subscription_in_its_settlement() {
    let now = at("2026-11-22T12:00:00Z");
    let mut parts = mocks(Subscriber::on(PlanId::Free, at("2026-11-01T08:00:00Z")));
    parts.repo.expect_payment_by_reference().returning(|_, _| {
        Ok(Some(Payment {
            id: PaymentId::generate(),
            account: account(),
            plan: PlanId::Scale,
            provider: ProviderId::Stripe,
            amount: 4_900,
            currency: "USD".into(),
            status: PaymentStatus::Pending,
            reference: "cs_1".into(),
            checkout_url: "https://checkout.example/cs_1".into(),
            created_at: at("2026-11-22T11:00:00Z"),
            settled_at: None,
        }))
    });
    parts.repo.expect_card_of().returning(|_| Ok(None));
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
    let notice = Notice {
        subscription: subscription(),
        ..Notice::checkout("cs_1", NoticeOutcome::Paid)
    };
    billing(parts, now)
        .settle(ProviderId::Stripe, &notice)
        .await
        .unwrap();
    let settlement = written.lock().unwrap().take().unwrap();
    assert_eq!(
        settlement.subscription,
        Some(SubscriptionStart {
            id: "sub_1".into(),
            customer: "cus_1".into(),
            plan: PlanId::Scale,
            supersedes: None,
        })
    );
    let purchase = settlement.purchase.unwrap();
    assert_eq!(purchase.paid_until, now + PERIOD);
    assert_eq!(
        purchase.records.events[0].payload,
        json!({ "planId": "scale", "renewing": true })
    );
}

#[tokio::test]
async fn a_renewal_is_recorded_as_a_payment_and_extends_the_period_with_no_lapse() {
    // Reported an hour after the period end: still 30 days from the end.
    let now = at(END) + TimeDelta::hours(1);
    let mut parts = mocks(paid(PlanId::Scale, true));
    parts
        .repo
        .expect_card_by_subscription()
        .withf(|subscription| subscription == "sub_1")
        .returning(|_| Ok(Some(card(true))));
    let created = Arc::new(Mutex::new(None::<Payment>));
    let slot = created.clone();
    let read = created.clone();
    parts
        .repo
        .expect_payment_by_reference()
        .withf(|provider, reference| *provider == ProviderId::Stripe && reference == "in_2")
        .returning(move |_, _| Ok(read.lock().unwrap().clone()));
    parts
        .repo
        .expect_create_renewal()
        .times(1)
        .returning(move |payment| {
            *slot.lock().unwrap() = Some(payment.clone());
            Ok(true)
        });
    let written = Arc::new(Mutex::new(None));
    let settled_slot = written.clone();
    parts
        .repo
        .expect_settle()
        .times(1)
        .returning(move |settlement| {
            *settled_slot.lock().unwrap() = Some(settlement);
            Ok(Applied::Done)
        });
    let notice = Notice {
        subscription: subscription(),
        ..Notice::checkout("in_2", NoticeOutcome::Renewed { amount: 4_900 })
    };
    let settled = billing(parts, now)
        .settle(ProviderId::Stripe, &notice)
        .await
        .unwrap();
    assert!(matches!(settled, Settled::Changed(ref p) if p.status == PaymentStatus::Paid));
    let payment = created.lock().unwrap().clone().unwrap();
    assert_eq!(
        (payment.plan, payment.amount, payment.reference.as_str()),
        (PlanId::Scale, 4_900, "in_2")
    );
    let settlement = written.lock().unwrap().take().unwrap();
    assert_eq!(settlement.subscription, None);
    let purchase = settlement.purchase.unwrap();
    assert_eq!(purchase.paid_until, at("2027-01-21T12:00:00Z"));
    assert!(
        purchase.records.events.is_empty(),
        "same plan, still renewing"
    );
}

#[tokio::test]
async fn a_renewal_notice_that_comes_again_changes_nothing() {
    let mut parts = mocks(paid(PlanId::Scale, true));
    parts
        .repo
        .expect_card_by_subscription()
        .returning(|_| Ok(Some(card(true))));
    parts.repo.expect_payment_by_reference().returning(|_, _| {
        Ok(Some(Payment {
            id: PaymentId::generate(),
            account: account(),
            plan: PlanId::Scale,
            provider: ProviderId::Stripe,
            amount: 4_900,
            currency: "USD".into(),
            status: PaymentStatus::Paid,
            reference: "in_2".into(),
            checkout_url: String::new(),
            created_at: at(END),
            settled_at: Some(at(END)),
        }))
    });
    parts.repo.expect_create_renewal().never();
    parts.repo.expect_settle().never();
    let notice = Notice {
        subscription: subscription(),
        ..Notice::checkout("in_2", NoticeOutcome::Renewed { amount: 4_900 })
    };
    let settled = billing(parts, at(END))
        .settle(ProviderId::Stripe, &notice)
        .await
        .unwrap();
    assert_eq!(settled, Settled::Unchanged);
}

#[tokio::test]
async fn renewal_turned_off_writes_subscription_updated_once() {
    let mut parts = mocks(paid(PlanId::Scale, true));
    parts
        .repo
        .expect_card_by_subscription()
        .times(1)
        .returning(|_| Ok(Some(card(true))));
    let written = Arc::new(Mutex::new(None));
    let slot = written.clone();
    parts
        .repo
        .expect_set_renewing()
        .times(1)
        .returning(move |change| {
            *slot.lock().unwrap() = Some(change);
            Ok(Applied::Done)
        });
    let notice = Notice {
        subscription: subscription(),
        ..Notice::checkout("sub_1", NoticeOutcome::Renewing(false))
    };
    let settled = billing(parts, at(END))
        .settle(ProviderId::Stripe, &notice)
        .await
        .unwrap();
    assert_eq!(settled, Settled::Renewing(false));
    let change = written.lock().unwrap().take().unwrap();
    assert_eq!(
        (change.subscription.as_str(), change.plan, change.renewing),
        ("sub_1", PlanId::Scale, false)
    );
    assert_eq!(
        change.records.events[0].kind,
        EventType::SubscriptionUpdated
    );
    assert_eq!(
        change.records.events[0].payload,
        json!({ "planId": "scale", "renewing": false })
    );

    // Already off: nothing is written.
    let mut parts = mocks(paid(PlanId::Scale, false));
    parts
        .repo
        .expect_card_by_subscription()
        .returning(|_| Ok(Some(card(false))));
    parts.repo.expect_set_renewing().never();
    let settled = billing(parts, at(END))
        .settle(ProviderId::Stripe, &notice)
        .await
        .unwrap();
    assert_eq!(settled, Settled::Unchanged);
}

#[tokio::test]
async fn notices_about_a_subscription_not_kept_here_are_acknowledged() {
    let mut parts = mocks(paid(PlanId::Scale, true));
    parts
        .repo
        .expect_card_by_subscription()
        .returning(|_| Ok(None));
    parts.repo.expect_create_renewal().never();
    parts.repo.expect_set_renewing().never();
    // Renewal off: if it is one a later checkout replaced, it needs no
    // stopping any more.
    parts
        .repo
        .expect_queued_subscription_stopped()
        .withf(|subscription| subscription == "sub_1")
        .times(1)
        .returning(|_| Ok(false));
    let billing = billing(parts, at(END));
    for outcome in [
        NoticeOutcome::Renewed { amount: 4_900 },
        NoticeOutcome::Renewing(false),
    ] {
        let notice = Notice {
            subscription: subscription(),
            ..Notice::checkout("in_9", outcome)
        };
        assert_eq!(
            billing.settle(ProviderId::Stripe, &notice).await.unwrap(),
            Settled::UnknownReference
        );
    }
}

// ---- the portal and scheduled moves ----

#[tokio::test]
async fn the_portal_is_the_card_customers_and_none_without_a_card_subscription() {
    let mut parts = mocks(paid(PlanId::Scale, true));
    parts
        .repo
        .expect_card_of()
        .times(1)
        .returning(|_| Ok(Some(card(true))));
    parts
        .provider
        .expect_portal()
        .withf(|customer| customer == "cus_1")
        .returning(|_| Ok("https://billing.example/p/1".into()));
    assert_eq!(
        billing(parts, at(END)).portal(&account()).await.unwrap(),
        "https://billing.example/p/1"
    );

    let mut parts = mocks(paid(PlanId::Scale, false));
    parts.repo.expect_card_of().returning(|_| Ok(None));
    parts.provider.expect_portal().never();
    assert!(matches!(
        billing(parts, at(END)).portal(&account()).await,
        Err(BillingError::NoCardSubscription)
    ));
}

#[tokio::test]
async fn a_move_scheduled_while_renewing_stops_the_renewal_at_the_provider() {
    let scheduled = Subscriber {
        pending_plan: Some(PlanId::Free),
        ..paid(PlanId::Scale, true)
    };
    let mut parts = mocks(scheduled);
    parts
        .repo
        .expect_card_of()
        .returning(|_| Ok(Some(card(true))));
    parts
        .provider
        .expect_set_renewal()
        .withf(|subscription, renewing| subscription == "sub_1" && !renewing)
        .times(1)
        .returning(|_, _| Ok(()));
    billing(parts, at(END) - TimeDelta::days(3))
        .follow_plan_change(&account())
        .await
        .unwrap();

    // Nothing scheduled, or not renewing: the provider is not asked.
    for subscriber in [
        paid(PlanId::Scale, true),
        Subscriber {
            pending_plan: Some(PlanId::Free),
            ..paid(PlanId::Scale, false)
        },
    ] {
        let mut parts = mocks(subscriber);
        parts
            .repo
            .expect_card_of()
            .returning(|_| Ok(Some(card(true))));
        parts.provider.expect_set_renewal().never();
        billing(parts, at(END) - TimeDelta::days(3))
            .follow_plan_change(&account())
            .await
            .unwrap();
    }
}

// ---- a second card checkout ----

fn pending_payment(provider: ProviderId, plan: PlanId, reference: &str) -> Payment {
    Payment {
        id: PaymentId::generate(),
        account: account(),
        plan,
        provider,
        amount: i64::from(sealpost_plans::plan(plan).price_cents.unwrap()),
        currency: "USD".into(),
        status: PaymentStatus::Pending,
        reference: reference.into(),
        checkout_url: format!("https://checkout.example/{reference}"),
        created_at: at("2026-11-22T11:00:00Z"),
        settled_at: None,
    }
}

/// A second card checkout, paid while the first subscription (`sub_1`)
/// renews: the settlement records `sub_1` as superseded and the provider is
/// asked to stop its renewal (`reachable`: it answers).
async fn second_checkout(reachable: bool, forgotten: usize) -> Settlement {
    let now = at("2026-11-25T12:00:00Z");
    let mut parts = mocks(paid(PlanId::Scale, true));
    parts.repo.expect_payment_by_reference().returning(|_, _| {
        Ok(Some(pending_payment(
            ProviderId::Stripe,
            PlanId::Fleet,
            "cs_2",
        )))
    });
    parts
        .repo
        .expect_card_of()
        .returning(|_| Ok(Some(card(true))));
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
    parts
        .provider
        .expect_set_renewal()
        .withf(|subscription, renewing| subscription == "sub_1" && !renewing)
        .times(1)
        .returning(move |_, _| {
            if reachable {
                Ok(())
            } else {
                Err(ProviderError::Unreachable("down".into()))
            }
        });
    parts
        .repo
        .expect_queued_subscription_stopped()
        .withf(|subscription| subscription == "sub_1")
        .times(forgotten)
        .returning(|_| Ok(true));
    let notice = Notice {
        subscription: Some(CardSubscription {
            id: "sub_2".into(),
            customer: "cus_1".into(),
        }),
        ..Notice::checkout("cs_2", NoticeOutcome::Paid)
    };
    let settled = billing(parts, now)
        .settle(ProviderId::Stripe, &notice)
        .await
        .unwrap();
    assert!(matches!(settled, Settled::Changed(ref p) if p.status == PaymentStatus::Paid));
    written.lock().unwrap().take().unwrap()
}

#[tokio::test]
async fn a_second_card_checkout_stops_the_subscription_it_replaces() {
    let settlement = second_checkout(true, 1).await;
    assert_eq!(
        settlement.subscription,
        Some(SubscriptionStart {
            id: "sub_2".into(),
            customer: "cus_1".into(),
            plan: PlanId::Fleet,
            supersedes: Some("sub_1".into()),
        })
    );
}

#[tokio::test]
async fn a_replaced_subscription_the_provider_cannot_be_told_about_stays_recorded() {
    // The payment settles all the same; `sub_1` stays for the sweep.
    let settlement = second_checkout(false, 0).await;
    assert_eq!(
        settlement.subscription.unwrap().supersedes.as_deref(),
        Some("sub_1")
    );
}

#[tokio::test]
async fn a_checkout_replacing_a_subscription_that_no_longer_renews_stops_nothing() {
    let mut parts = mocks(paid(PlanId::Scale, false));
    parts.repo.expect_payment_by_reference().returning(|_, _| {
        Ok(Some(pending_payment(
            ProviderId::Stripe,
            PlanId::Fleet,
            "cs_2",
        )))
    });
    parts
        .repo
        .expect_card_of()
        .returning(|_| Ok(Some(card(false))));
    let written = Arc::new(Mutex::new(None));
    let slot = written.clone();
    parts.repo.expect_settle().returning(move |settlement| {
        *slot.lock().unwrap() = Some(settlement);
        Ok(Applied::Done)
    });
    parts.provider.expect_set_renewal().never();
    let notice = Notice {
        subscription: Some(CardSubscription {
            id: "sub_2".into(),
            customer: "cus_1".into(),
        }),
        ..Notice::checkout("cs_2", NoticeOutcome::Paid)
    };
    billing(parts, at("2026-11-25T12:00:00Z"))
        .settle(ProviderId::Stripe, &notice)
        .await
        .unwrap();
    let settlement = written.lock().unwrap().take().unwrap();
    assert_eq!(settlement.subscription.unwrap().supersedes, None);
}

#[tokio::test]
async fn the_sweep_stops_replaced_subscriptions_until_the_provider_confirms() {
    let mut parts = mocks(paid(PlanId::Fleet, true));
    parts
        .repo
        .expect_subscriptions_to_stop()
        .times(1)
        .returning(|_| Ok(vec!["sub_1".into(), "sub_3".into()]));
    parts
        .provider
        .expect_set_renewal()
        .withf(|subscription, renewing| subscription == "sub_1" && !renewing)
        .times(1)
        .returning(|_, _| Ok(()));
    parts
        .provider
        .expect_set_renewal()
        .withf(|subscription, renewing| subscription == "sub_3" && !renewing)
        .times(1)
        .returning(|_, _| Err(ProviderError::Unreachable("down".into())));
    // Only the one the provider stopped is forgotten.
    parts
        .repo
        .expect_queued_subscription_stopped()
        .withf(|subscription| subscription == "sub_1")
        .times(1)
        .returning(|_| Ok(true));
    let report = billing(parts, at(END))
        .stop_queued_subscriptions()
        .await
        .unwrap();
    assert_eq!(report.stopped, 1);
    assert_eq!(report.failed.len(), 1);
    assert_eq!(report.failed[0].0, "sub_3");
}

// ---- a provider that cannot renew beside a renewing card ----

fn with_btcpay(mut parts: Parts) -> (Parts, MockPaymentProvider) {
    let mut btcpay = MockPaymentProvider::new();
    btcpay.expect_id().return_const(ProviderId::Btcpay);
    parts
        .accounts
        .expect_holdings()
        .returning(|_| Ok(Default::default()));
    (parts, btcpay)
}

fn billing_with(parts: Parts, other: MockPaymentProvider, now: Timestamp) -> Billing {
    Billing::new(
        Arc::new(parts.repo),
        Arc::new(parts.accounts),
        vec![Arc::new(parts.provider), Arc::new(other)],
        Arc::new(TestClock::at(now)),
    )
}

#[tokio::test]
async fn a_crypto_checkout_is_refused_while_the_card_renews() {
    let (parts, mut btcpay) = with_btcpay(mocks(paid(PlanId::Scale, true)));
    btcpay.expect_start_checkout().never();
    let refused = billing_with(parts, btcpay, at("2026-12-01T12:00:00Z"))
        .checkout(&account(), PlanId::Scale, ProviderId::Btcpay)
        .await;
    match refused {
        Err(BillingError::Refused(refusal @ CheckoutRefusal::CardRenews("crypto"))) => {
            assert!(refusal.to_string().contains("billing portal"), "{refusal}");
        }
        other => panic!("{other:?}"),
    }

    // Renewal off: crypto pays the next period as before.
    let (mut parts, mut btcpay) = with_btcpay(mocks(paid(PlanId::Scale, false)));
    btcpay.expect_start_checkout().times(1).returning(|_| {
        Ok(CheckoutSession {
            url: "https://btcpay.example/i/1".into(),
            reference: "inv_1".into(),
        })
    });
    parts
        .repo
        .expect_create_payment()
        .times(1)
        .returning(|_| Ok(()));
    billing_with(parts, btcpay, at("2026-12-01T12:00:00Z"))
        .checkout(&account(), PlanId::Scale, ProviderId::Btcpay)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_crypto_payment_settling_while_the_card_renews_is_a_credit() {
    // Started before the card checkout, confirmed after it.
    let (mut parts, btcpay) = with_btcpay(mocks(paid(PlanId::Scale, true)));
    parts.repo.expect_payment_by_reference().returning(|_, _| {
        Ok(Some(pending_payment(
            ProviderId::Btcpay,
            PlanId::Fleet,
            "inv_1",
        )))
    });
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
    let settled = billing_with(parts, btcpay, at("2026-12-01T12:00:00Z"))
        .settle(
            ProviderId::Btcpay,
            &Notice::checkout("inv_1", NoticeOutcome::Paid),
        )
        .await
        .unwrap();
    assert!(matches!(settled, Settled::Changed(ref p) if p.status == PaymentStatus::Paid));
    let settlement = written.lock().unwrap().take().unwrap();
    assert_eq!(settlement.purchase, None);
    assert_eq!(
        settlement.credit,
        Some(Credit {
            plan: PlanId::Scale,
            paid_until: at(END),
        })
    );
}

// ---- a move down between paid plans while renewing ----

#[tokio::test]
async fn a_move_to_a_cheaper_paid_plan_while_renewing_switches_the_price_and_keeps_renewing() {
    let scheduled = Subscriber {
        pending_plan: Some(PlanId::Operator),
        ..paid(PlanId::Scale, true)
    };
    let mut parts = mocks(scheduled);
    parts
        .repo
        .expect_card_of()
        .returning(|_| Ok(Some(card(true))));
    parts.provider.expect_set_renewal().never();
    parts
        .provider
        .expect_set_price()
        .withf(|subscription, amount, currency| {
            subscription == "sub_1" && *amount == 900 && currency == "USD"
        })
        .times(1)
        .returning(|_, _, _| Ok(()));
    parts
        .repo
        .expect_set_card_plan()
        .withf(|change| {
            *change
                == CardPlanChange {
                    account: account(),
                    subscription: "sub_1".into(),
                    plan: PlanId::Operator,
                }
        })
        .times(1)
        .returning(|_| Ok(Applied::Done));
    billing(parts, at(END) - TimeDelta::days(3))
        .follow_plan_change(&account())
        .await
        .unwrap();

    // The provider unreachable: 503, the stored plan unchanged.
    let mut parts = mocks(Subscriber {
        pending_plan: Some(PlanId::Operator),
        ..paid(PlanId::Scale, true)
    });
    parts
        .repo
        .expect_card_of()
        .returning(|_| Ok(Some(card(true))));
    parts
        .provider
        .expect_set_price()
        .returning(|_, _, _| Err(ProviderError::Unreachable("down".into())));
    parts.repo.expect_set_card_plan().never();
    assert!(matches!(
        billing(parts, at(END) - TimeDelta::days(3))
            .follow_plan_change(&account())
            .await,
        Err(BillingError::ProviderUnavailable { .. })
    ));
}

#[tokio::test]
async fn taking_the_move_back_switches_the_price_back() {
    // The price was switched to Operator; the move is taken back.
    let mut parts = mocks(paid(PlanId::Scale, true));
    parts.repo.expect_card_of().returning(|_| {
        Ok(Some(CardAccount {
            plan: PlanId::Operator,
            ..card(true)
        }))
    });
    parts
        .provider
        .expect_set_price()
        .withf(|subscription, amount, _| subscription == "sub_1" && *amount == 4_900)
        .times(1)
        .returning(|_, _, _| Ok(()));
    parts
        .repo
        .expect_set_card_plan()
        .withf(|change| change.plan == PlanId::Scale)
        .times(1)
        .returning(|_| Ok(Applied::Done));
    billing(parts, at(END) - TimeDelta::days(2))
        .follow_plan_change(&account())
        .await
        .unwrap();
}

#[tokio::test]
async fn the_renewal_after_a_switched_price_pays_the_next_period_of_the_cheaper_plan() {
    let scheduled = Subscriber {
        pending_plan: Some(PlanId::Operator),
        ..paid(PlanId::Scale, true)
    };
    // Reported a little before the period end and an hour after it.
    for reported in [
        at(END) - TimeDelta::minutes(5),
        at(END) + TimeDelta::hours(1),
    ] {
        let mut parts = mocks(scheduled);
        parts.repo.expect_card_by_subscription().returning(|_| {
            Ok(Some(CardAccount {
                plan: PlanId::Operator,
                ..card(true)
            }))
        });
        let created = Arc::new(Mutex::new(None::<Payment>));
        let slot = created.clone();
        let read = created.clone();
        parts
            .repo
            .expect_payment_by_reference()
            .returning(move |_, _| Ok(read.lock().unwrap().clone()));
        parts
            .repo
            .expect_create_renewal()
            .returning(move |payment| {
                *slot.lock().unwrap() = Some(payment.clone());
                Ok(true)
            });
        let written = Arc::new(Mutex::new(None));
        let settled_slot = written.clone();
        parts
            .repo
            .expect_settle()
            .times(1)
            .returning(move |settlement| {
                *settled_slot.lock().unwrap() = Some(settlement);
                Ok(Applied::Done)
            });
        let notice = Notice {
            subscription: subscription(),
            ..Notice::checkout("in_2", NoticeOutcome::Renewed { amount: 900 })
        };
        billing(parts, reported)
            .settle(ProviderId::Stripe, &notice)
            .await
            .unwrap();
        assert_eq!(
            created.lock().unwrap().as_ref().unwrap().plan,
            PlanId::Operator
        );
        let settlement = written.lock().unwrap().take().unwrap();
        assert_eq!(settlement.credit, None, "{reported}");
        let purchase = settlement.purchase.unwrap();
        assert_eq!(
            (purchase.plan, purchase.paid_until),
            (PlanId::Operator, at("2027-01-21T12:00:00Z"))
        );
        assert_eq!(
            purchase.records.events[0].payload,
            json!({ "planId": "operator" })
        );
    }
}
