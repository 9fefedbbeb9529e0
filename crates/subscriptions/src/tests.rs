use std::sync::{Arc, Mutex};

use sealpost_activity::{ActivityKind, EventType};
use sealpost_kernel::{AccountId, PlanId, TestClock, Timestamp};
use serde_json::json;

use crate::*;

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

fn account() -> AccountId {
    AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap()
}

const CREATED: &str = "2026-11-01T08:00:00Z";

fn subscriber(plan: PlanId) -> Subscriber {
    Subscriber::on(plan, at(CREATED))
}

fn service(repo: MockSubscriptionRepository, now: &str) -> Subscriptions {
    Subscriptions::new(Arc::new(repo), Arc::new(TestClock::at(at(now))))
}

// ---- windows ----

#[test]
fn windows_are_the_30_days_from_creation_the_clock_hour_and_the_utc_day() {
    let windows = UsageWindows::at(at(CREATED), at("2026-11-22T12:34:56.789Z"));
    assert_eq!(windows.received_start, at(CREATED));
    assert_eq!(windows.received_end, at("2026-12-01T08:00:00Z"));
    assert_eq!(windows.hour_start, at("2026-11-22T12:00:00Z"));
    assert_eq!(windows.hour_end, at("2026-11-22T13:00:00Z"));
    assert_eq!(windows.day_start, at("2026-11-22T00:00:00Z"));
    assert_eq!(windows.day_end, at("2026-11-23T00:00:00Z"));
}

#[test]
fn each_window_ends_exactly_where_the_next_begins() {
    // The received window's last millisecond, then its end.
    let last = UsageWindows::at(at(CREATED), at("2026-12-01T07:59:59.999Z"));
    assert_eq!(last.received_end, at("2026-12-01T08:00:00Z"));
    let next = UsageWindows::at(at(CREATED), at("2026-12-01T08:00:00Z"));
    assert_eq!(next.received_start, at("2026-12-01T08:00:00Z"));
    assert_eq!(next.received_end, at("2026-12-31T08:00:00Z"));
    // The hour and the day at their boundaries.
    let hour = UsageWindows::at(at(CREATED), at("2026-11-22T13:00:00Z"));
    assert_eq!(hour.hour_start, at("2026-11-22T13:00:00Z"));
    assert_eq!(hour.hour_end, at("2026-11-22T14:00:00Z"));
    let day = UsageWindows::at(at(CREATED), at("2026-11-22T23:59:59.999Z"));
    assert_eq!(day.day_end, at("2026-11-23T00:00:00Z"));
    assert_eq!(day.hour_end, at("2026-11-23T00:00:00Z"));
    let midnight = UsageWindows::at(at(CREATED), at("2026-11-23T00:00:00Z"));
    assert_eq!(midnight.day_end, at("2026-11-24T00:00:00Z"));
}

// ---- usage ----

fn counts() -> UsageCounts {
    UsageCounts {
        addresses: 4,
        assigned: 1,
        devices: 2,
        agents: 1,
        webhooks: 3,
        api_keys: 2,
        messages_stored: 7,
        received: 12,
        object_reads: 5,
        sent_hour: 3,
        sent_day: 9,
        domains: 2,
        stored_bytes: 4_096,
    }
}

#[tokio::test]
async fn usage_reports_every_field_from_the_counters_and_the_plan_table() {
    let mut repo = MockSubscriptionRepository::new();
    repo.expect_subscriber()
        .returning(|_| Ok(Some(subscriber(PlanId::Operator))));
    repo.expect_usage_counts()
        .withf(|account_id, windows, now| {
            *account_id == account()
                && windows.received_start == at(CREATED)
                && windows.hour_start == at("2026-11-22T12:00:00Z")
                && *now == at("2026-11-22T12:30:00Z")
        })
        .times(1)
        .returning(|_, _, _| Ok(counts()));
    repo.expect_set_plan().never();
    let usage = service(repo, "2026-11-22T12:30:00Z")
        .usage(&account())
        .await
        .unwrap();
    let window = |used, limit, ends: &str| WindowUsage {
        used,
        limit,
        window_ends_at: at(ends),
    };
    assert_eq!(
        usage,
        Usage {
            plan: PlanId::Operator,
            addresses: AddressUsage {
                used: 4,
                limit: 100,
                remaining: 96,
                assigned: 1
            },
            messages_received: window(12, 100_000, "2026-12-01T08:00:00Z"),
            messages_sent: SentUsage {
                hour: window(3, 60, "2026-11-22T13:00:00Z"),
                day: window(9, 1_000, "2026-11-23T00:00:00Z"),
            },
            object_reads: window(5, 10_000, "2026-11-22T13:00:00Z"),
            devices: CountUsage {
                used: 2,
                limit: Some(10)
            },
            paired: CountUsage {
                used: 3,
                limit: Some(10)
            },
            agents: AllowedUsage {
                used: 1,
                allowed: true
            },
            api_keys: GatedUsage {
                used: 2,
                limit: Some(u64::from(sealpost_plans::API_KEYS_PER_PAID_PLAN)),
                allowed: true
            },
            webhooks: GatedUsage {
                used: 3,
                limit: Some(10),
                allowed: true
            },
            domains: CountUsage {
                used: 2,
                limit: Some(0)
            },
            messages_stored: 7,
            stored_bytes: StoredBytesUsage {
                used: 4_096,
                limit: 25 * 1024 * 1024 * 1024
            },
        }
    );
}

#[test]
fn free_shows_what_it_does_not_include_as_not_allowed_with_limit_0() {
    let now = at("2026-11-22T12:30:00Z");
    let usage = Usage::compute(&subscriber(PlanId::Free), now, &UsageCounts::default());
    assert_eq!(usage.plan, PlanId::Free);
    assert_eq!(
        usage.addresses,
        AddressUsage {
            used: 0,
            limit: 3,
            remaining: 3,
            assigned: 0
        }
    );
    assert_eq!(usage.messages_received.limit, 3_000);
    assert_eq!(usage.messages_sent.hour.limit, 60);
    assert_eq!(usage.messages_sent.day.limit, 200);
    assert_eq!(usage.object_reads.limit, 1_000);
    assert_eq!(usage.devices.limit, Some(1));
    assert_eq!(usage.paired.limit, Some(1));
    assert!(!usage.agents.allowed);
    assert_eq!(
        usage.api_keys,
        GatedUsage {
            used: 0,
            limit: Some(0),
            allowed: false
        }
    );
    assert_eq!(
        usage.webhooks,
        GatedUsage {
            used: 0,
            limit: Some(0),
            allowed: false
        }
    );
    assert_eq!(usage.domains.limit, Some(0));
}

#[test]
fn fleet_devices_are_unlimited_and_remaining_never_goes_below_zero() {
    let now = at("2026-11-22T12:30:00Z");
    let usage = Usage::compute(
        &subscriber(PlanId::Fleet),
        now,
        &UsageCounts {
            devices: 400,
            ..UsageCounts::default()
        },
    );
    assert_eq!(
        usage.devices,
        CountUsage {
            used: 400,
            limit: None
        }
    );
    assert_eq!(usage.paired.limit, None);
    assert_eq!(usage.messages_sent.hour.limit, 600);
    assert_eq!(usage.domains.limit, Some(50));

    // Over the limit after a plan change elsewhere: remaining is 0, not negative.
    let over = Usage::compute(
        &subscriber(PlanId::Free),
        now,
        &UsageCounts {
            addresses: 5,
            ..UsageCounts::default()
        },
    );
    assert_eq!(over.addresses.remaining, 0);
}

#[tokio::test]
async fn reading_usage_twice_gives_the_same_numbers_and_writes_nothing() {
    let mut repo = MockSubscriptionRepository::new();
    repo.expect_subscriber()
        .times(2)
        .returning(|_| Ok(Some(subscriber(PlanId::Scale))));
    repo.expect_usage_counts()
        .times(2)
        .returning(|_, _, _| Ok(counts()));
    repo.expect_set_plan().never();
    let service = service(repo, "2026-11-22T12:30:00Z");
    let first = service.usage(&account()).await.unwrap();
    let second = service.usage(&account()).await.unwrap();
    assert_eq!(first, second);
}

#[tokio::test]
async fn an_unknown_account_is_not_found() {
    let mut repo = MockSubscriptionRepository::new();
    repo.expect_subscriber().returning(|_| Ok(None));
    let result = service(repo, "2026-11-22T12:30:00Z")
        .usage(&account())
        .await;
    assert!(matches!(result, Err(SubscriptionError::NotFound)));
}

// ---- overview and subscription ----

#[tokio::test]
async fn overview_totals_its_parts() {
    let mut repo = MockSubscriptionRepository::new();
    repo.expect_subscriber()
        .returning(|_| Ok(Some(subscriber(PlanId::Operator))));
    repo.expect_overview_counts().returning(|_, _| {
        Ok(OverviewCounts {
            addresses: 5,
            assigned: 2,
            devices_online: 1,
            devices_offline: 2,
            devices_disabled: 1,
            agents: 1,
            messages_stored: 9,
            messages_unread: 4,
            messages_held: 2,
            webhooks_failing: 1,
            webhooks_active: 2,
            webhooks_disabled: 1,
        })
    });
    let overview = service(repo, "2026-11-22T12:30:00Z")
        .overview(&account())
        .await
        .unwrap();
    assert_eq!(
        overview,
        Overview {
            plan_id: PlanId::Operator,
            addresses: AddressCounts {
                total: 5,
                assigned: 2,
                unassigned: 3
            },
            devices: DeviceCounts {
                total: 4,
                online: 1,
                offline: 2,
                disabled: 1
            },
            agents: 1,
            messages: MessageCounts {
                stored: 9,
                unread: 4,
                held: 2
            },
            webhooks: WebhookCounts {
                total: 4,
                active: 2,
                failing: 1,
                disabled: 1
            },
        }
    );
}

#[test]
fn the_subscription_has_no_billing_history_yet() {
    assert_eq!(
        Subscription::on(PlanId::Scale),
        Subscription {
            plan_id: PlanId::Scale,
            balance: Money {
                amount: 0,
                currency: "USD"
            },
            pause: None,
            renews_at: None,
            pending_plan_id: None,
            renewing: false,
        }
    );
}

// ---- the change rule ----

fn holding(addresses: u64, paired: u64) -> Holdings {
    Holdings { addresses, paired }
}

#[test]
fn the_same_plan_is_a_no_op() {
    for plan in PlanId::ALL {
        assert_eq!(
            change_plan(plan, plan, &holding(1_000_000, 1_000_000)),
            Ok(Change::Unchanged(plan))
        );
    }
}

#[test]
fn a_dearer_plan_needs_payment_and_enterprise_is_always_dearer() {
    use PlanId::*;
    for (from, to) in [
        (Free, Operator),
        (Free, Fleet),
        (Operator, Scale),
        (Scale, Fleet),
        (Fleet, Enterprise),
        (Free, Enterprise),
    ] {
        assert_eq!(
            change_plan(from, to, &holding(0, 0)),
            Err(ChangeError::PaymentRequired { target: to }),
            "{from} -> {to}"
        );
    }
    let message = ChangeError::PaymentRequired { target: Enterprise }.to_string();
    assert!(message.contains("contract"), "{message}");
    let message = ChangeError::PaymentRequired { target: Scale }.to_string();
    assert!(message.contains("checkout"), "{message}");
}

#[test]
fn a_cheaper_plan_is_allowed_when_addresses_and_devices_fit() {
    use PlanId::*;
    assert_eq!(
        change_plan(Operator, Free, &holding(3, 1)),
        Ok(Change::Moved {
            from: Operator,
            to: Free
        })
    );
    assert_eq!(
        change_plan(Enterprise, Fleet, &holding(10_000, 5_000)),
        Ok(Change::Moved {
            from: Enterprise,
            to: Fleet
        })
    );
    assert_eq!(
        change_plan(Fleet, Scale, &holding(1_000, 50)),
        Ok(Change::Moved {
            from: Fleet,
            to: Scale
        })
    );
}

#[test]
fn too_many_addresses_block_a_downgrade_and_the_message_says_so() {
    let result = change_plan(PlanId::Operator, PlanId::Free, &holding(4, 1));
    assert_eq!(
        result,
        Err(ChangeError::DowngradeBlocked {
            target: PlanId::Free,
            addresses: Some(Excess { held: 4, limit: 3 }),
            paired: None,
        })
    );
    let message = result.unwrap_err().to_string();
    assert_eq!(
        message,
        "the account holds more than the Free plan allows: 4 addresses (the plan allows 3; delete 1 address)"
    );
}

#[test]
fn more_than_one_device_blocks_moving_to_free() {
    let result = change_plan(PlanId::Operator, PlanId::Free, &holding(1, 2));
    assert_eq!(
        result,
        Err(ChangeError::DowngradeBlocked {
            target: PlanId::Free,
            addresses: None,
            paired: Some(Excess { held: 2, limit: 1 }),
        })
    );
    assert!(
        result
            .unwrap_err()
            .to_string()
            .contains("2 paired devices (the plan allows 1; remove 1 device)")
    );
}

#[test]
fn both_excesses_are_named_and_device_limits_apply_between_paid_plans() {
    let message = change_plan(PlanId::Scale, PlanId::Free, &holding(5, 3))
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("5 addresses") && message.contains("3 paired devices"),
        "{message}"
    );
    assert_eq!(
        change_plan(PlanId::Scale, PlanId::Operator, &holding(10, 11)),
        Err(ChangeError::DowngradeBlocked {
            target: PlanId::Operator,
            addresses: None,
            paired: Some(Excess {
                held: 11,
                limit: 10
            }),
        })
    );
    assert!(matches!(
        change_plan(PlanId::Fleet, PlanId::Scale, &holding(1_001, 0)),
        Err(ChangeError::DowngradeBlocked { .. })
    ));
}

// ---- the change, through the repository ----

#[tokio::test]
async fn a_change_writes_subscription_updated_with_the_plan_guarded_by_the_target_limits() {
    let written = Arc::new(Mutex::new(None));
    let slot = written.clone();
    let mut repo = MockSubscriptionRepository::new();
    // The decision reads Operator; the answer is read back after the write.
    let mut sequence = mockall::Sequence::new();
    repo.expect_subscriber()
        .times(1)
        .in_sequence(&mut sequence)
        .returning(|_| Ok(Some(subscriber(PlanId::Operator))));
    repo.expect_subscriber()
        .times(1)
        .in_sequence(&mut sequence)
        .returning(|_| Ok(Some(subscriber(PlanId::Free))));
    repo.expect_holdings().returning(|_| Ok(holding(2, 1)));
    repo.expect_set_plan().times(1).returning(move |change| {
        *slot.lock().unwrap() = Some(change);
        Ok(PlanChangeOutcome::Changed)
    });
    let subscription = service(repo, "2026-11-22T12:30:00Z")
        .change_plan(&account(), PlanId::Free)
        .await
        .unwrap();
    assert_eq!(subscription.plan_id, PlanId::Free);
    let change = written.lock().unwrap().take().unwrap();
    assert_eq!(
        (
            change.from,
            change.to,
            change.max_addresses,
            change.max_paired
        ),
        (PlanId::Operator, PlanId::Free, 3, Some(1))
    );
    assert_eq!(change.records.activity.len(), 1);
    assert_eq!(
        change.records.activity[0].kind,
        ActivityKind::SubscriptionUpdated
    );
    assert_eq!(change.records.activity[0].at, at("2026-11-22T12:30:00Z"));
    assert_eq!(change.records.events.len(), 1);
    assert_eq!(
        change.records.events[0].kind,
        EventType::SubscriptionUpdated
    );
    assert_eq!(
        change.records.events[0].payload,
        json!({ "planId": "free" })
    );
}

#[tokio::test]
async fn refused_and_unchanged_plans_write_nothing() {
    for (current, target) in [
        (PlanId::Free, PlanId::Operator),
        (PlanId::Operator, PlanId::Free),
        (PlanId::Operator, PlanId::Operator),
    ] {
        let mut repo = MockSubscriptionRepository::new();
        repo.expect_subscriber()
            .returning(move |_| Ok(Some(subscriber(current))));
        repo.expect_holdings().returning(|_| Ok(holding(4, 2)));
        repo.expect_set_plan().never();
        let result = service(repo, "2026-11-22T12:30:00Z")
            .change_plan(&account(), target)
            .await;
        match (current, target) {
            (PlanId::Operator, PlanId::Operator) => {
                assert_eq!(result.unwrap().plan_id, PlanId::Operator);
            }
            (PlanId::Free, _) => assert!(matches!(
                result,
                Err(SubscriptionError::Change(
                    ChangeError::PaymentRequired { .. }
                ))
            )),
            _ => assert!(matches!(
                result,
                Err(SubscriptionError::Change(
                    ChangeError::DowngradeBlocked { .. }
                ))
            )),
        }
    }
}

#[tokio::test]
async fn a_stale_change_is_decided_again_on_fresh_counts() {
    let mut repo = MockSubscriptionRepository::new();
    repo.expect_subscriber()
        .returning(|_| Ok(Some(subscriber(PlanId::Operator))));
    // An address was created between the first decision and its write.
    let reads = Arc::new(Mutex::new(0));
    let seen = reads.clone();
    repo.expect_holdings().returning(move |_| {
        let mut seen = seen.lock().unwrap();
        *seen += 1;
        Ok(holding(if *seen == 1 { 3 } else { 4 }, 1))
    });
    repo.expect_set_plan()
        .times(1)
        .returning(|_| Ok(PlanChangeOutcome::Stale));
    let result = service(repo, "2026-11-22T12:30:00Z")
        .change_plan(&account(), PlanId::Free)
        .await;
    assert!(matches!(
        result,
        Err(SubscriptionError::Change(ChangeError::DowngradeBlocked {
            addresses: Some(Excess { held: 4, limit: 3 }),
            ..
        }))
    ));
    assert_eq!(*reads.lock().unwrap(), 2);
}

// ---- billing state on the record ----

#[test]
fn a_paused_subscription_shows_the_lapsed_plan_its_counts_and_the_lapsed_received_limit() {
    let since = at("2026-12-01T08:00:00Z");
    let paused = Subscriber {
        plan: PlanId::Free,
        created_at: at(CREATED),
        paid_until: None,
        pause: Some(PauseState {
            plan: Some(PlanId::Scale),
            since,
            deletes_at: at("2026-12-22T08:00:00Z"),
        }),
        pending_plan: None,
        renewing: false,
    };
    let record = Subscription::of(
        &paused,
        PausedCounts {
            addresses: 4,
            devices: 2,
            api_keys: 3,
            domains: 1,
        },
    );
    assert_eq!(
        record.pause,
        Some(Pause {
            plan_id: Some(PlanId::Scale),
            since,
            deletes_at: at("2026-12-22T08:00:00Z"),
            addresses: 4,
            devices: 2,
            api_keys: 3,
            domains: 1,
        })
    );
    let usage = Usage::compute(&paused, since, &UsageCounts::default());
    assert_eq!(usage.plan, PlanId::Free);
    assert_eq!(usage.messages_received.limit, 1_000_000);
    assert_eq!(usage.addresses.limit, 3);

    // Paid for a smaller plan with something left paused: planId null, and
    // the received limit is the current plan's again.
    let released = Subscriber {
        plan: PlanId::Operator,
        paid_until: Some(at("2026-12-31T08:00:00Z")),
        pause: paused.pause.map(|state| PauseState {
            plan: None,
            ..state
        }),
        ..paused
    };
    let record = Subscription::of(
        &released,
        PausedCounts {
            addresses: 1,
            devices: 0,
            api_keys: 0,
            domains: 0,
        },
    );
    assert_eq!(record.pause.unwrap().plan_id, None);
    // `pause` is null when nothing is paused (the owner deleted what was).
    assert_eq!(
        Subscription::of(&released, PausedCounts::default()).pause,
        None
    );
    // Own domains are held with a pause but never keep one open: with only
    // domains left, nothing is paused (the billing store ends such a pause).
    let only_domains = PausedCounts {
        domains: 2,
        api_keys: 1,
        ..PausedCounts::default()
    };
    assert!(!only_domains.holds_anything());
    assert_eq!(Subscription::of(&released, only_domains).pause, None);
    assert_eq!(record.renews_at, Some(at("2026-12-31T08:00:00Z")));
    let usage = Usage::compute(&released, since, &UsageCounts::default());
    assert_eq!(usage.messages_received.limit, 100_000);
}
