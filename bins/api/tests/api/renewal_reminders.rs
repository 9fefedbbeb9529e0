//! Reminders before a paid period that cannot renew ends: 7 days and 1 day
//! before `renewsAt`, each once, from the hourly sweeps, as a `billing`
//! push notice and an activity entry.

use chrono::TimeDelta;
use serde_json::json;

use crate::billing::buy;
use crate::support::{Api, new_keys};

#[tokio::test(flavor = "multi_thread")]
async fn a_period_that_cannot_renew_is_reminded_seven_days_and_one_day_before_its_end() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    buy(&api, &owner, "operator").await;
    // Paid at 12:00 on the test clock: the period ends 30 days later.
    let renews_at = "2026-12-22T12:00:00.000Z";
    let reminders = async || {
        api.event_payloads(&owner.account_id, "notice.renewal_due")
            .await
    };
    let entries = async || {
        api.activity_kinds(&owner)
            .await
            .into_iter()
            .filter(|kind| kind == "subscription.renewal_due")
            .count()
    };

    // More than 7 days before the end: nothing.
    api.app
        .clock
        .advance(TimeDelta::days(23) - TimeDelta::hours(1));
    api.sweeps().run_once().await;
    assert_eq!(reminders().await, Vec::<serde_json::Value>::new());

    // Within 7 days: one reminder, however often the sweep runs.
    api.app.clock.advance(TimeDelta::hours(2));
    api.sweeps().run_once().await;
    api.sweeps().run_once().await;
    assert_eq!(
        reminders().await,
        vec![json!({ "renewsAt": renews_at, "daysLeft": 7 })]
    );
    assert_eq!(entries().await, 1);

    // Within the last day: the second and last.
    api.app.clock.advance(TimeDelta::days(6));
    api.sweeps().run_once().await;
    api.sweeps().run_once().await;
    assert_eq!(
        reminders().await,
        vec![
            json!({ "renewsAt": renews_at, "daysLeft": 7 }),
            json!({ "renewsAt": renews_at, "daysLeft": 1 }),
        ]
    );
    assert_eq!(entries().await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn paying_again_starts_the_reminders_of_the_new_period() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    buy(&api, &owner, "operator").await;
    api.app
        .clock
        .advance(TimeDelta::days(29) + TimeDelta::hours(1));
    api.sweeps().run_once().await;
    // Only the last-day reminder: the 7-day one's time has passed with it.
    let reminders = api
        .event_payloads(&owner.account_id, "notice.renewal_due")
        .await;
    assert_eq!(
        reminders,
        vec![json!({ "renewsAt": "2026-12-22T12:00:00.000Z", "daysLeft": 1 })]
    );

    // Renewed: 30 more days; its own reminders come near its own end.
    buy(&api, &owner, "operator").await;
    api.sweeps().run_once().await;
    assert_eq!(
        api.event_payloads(&owner.account_id, "notice.renewal_due")
            .await
            .len(),
        1
    );
    api.app.clock.advance(TimeDelta::days(24));
    api.sweeps().run_once().await;
    let reminders = api
        .event_payloads(&owner.account_id, "notice.renewal_due")
        .await;
    assert_eq!(
        reminders.last(),
        Some(&json!({ "renewsAt": "2027-01-21T12:00:00.000Z", "daysLeft": 7 }))
    );
}
