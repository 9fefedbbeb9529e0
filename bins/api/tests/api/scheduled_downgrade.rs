//! A downgrade while a paid period runs waits for its end: `GET
//! /subscription` shows it as `pendingPlanId`, choosing the current plan
//! again cancels it, and the hourly sweep applies it at the period end
//! instead of lapsing the account.

use chrono::TimeDelta;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::billing::buy;
use crate::support::{Api, SignedIn, new_keys};

async fn choose(api: &Api, owner: &SignedIn, plan: &str) -> Value {
    let reply = api
        .post(
            "/subscription/plan",
            Some(&owner.token),
            json!({ "planId": plan }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["subscription"].clone()
}

async fn subscription(api: &Api, owner: &SignedIn) -> Value {
    let reply = api.get("/subscription", Some(&owner.token)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["subscription"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_downgrade_in_a_paid_period_waits_for_its_end_and_can_be_taken_back() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let mut owner = api.register(&keys).await;
    buy(&api, &owner, "scale").await;
    let renews_at = "2026-12-22T12:00:00.000Z";

    let scheduled = choose(&api, &owner, "free").await;
    assert_eq!(scheduled["planId"], "scale");
    assert_eq!(scheduled["renewsAt"], renews_at);
    assert_eq!(scheduled["pendingPlanId"], "free");
    assert_eq!(scheduled["pendingAt"], renews_at);
    assert_eq!(subscription(&api, &owner).await, scheduled);

    // Choosing the current plan again takes the change back.
    let kept = choose(&api, &owner, "scale").await;
    assert_eq!(kept["planId"], "scale");
    assert_eq!(kept["pendingPlanId"], Value::Null);
    assert_eq!(kept["pendingAt"], Value::Null);

    // Scheduled again: the sweep applies it at the period end, no pause.
    choose(&api, &owner, "free").await;
    api.app
        .clock
        .advance(TimeDelta::days(30) - TimeDelta::hours(1));
    api.sweeps().run_once().await;
    // Sessions last 30 days: sign in again.
    owner.token = api.sign_in(&keys).await;
    assert_eq!(subscription(&api, &owner).await["planId"], "scale");
    api.app.clock.advance(TimeDelta::hours(2));
    api.sweeps().run_once().await;
    let ended = subscription(&api, &owner).await;
    assert_eq!(ended["planId"], "free");
    assert_eq!(ended["renewsAt"], Value::Null);
    assert_eq!(ended["pendingPlanId"], Value::Null);
    assert_eq!(ended["pause"], Value::Null);

    assert_eq!(
        api.event_payloads(&owner.account_id, "subscription.updated")
            .await,
        vec![
            json!({ "planId": "scale" }),
            json!({ "planId": "scale", "pendingPlanId": "free" }),
            json!({ "planId": "scale", "pendingPlanId": null }),
            json!({ "planId": "scale", "pendingPlanId": "free" }),
            json!({ "planId": "free" }),
        ]
    );
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upgrade_still_needs_payment_and_a_payment_drops_the_scheduled_change() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    buy(&api, &owner, "scale").await;
    choose(&api, &owner, "operator").await;

    let upgrade = api
        .post(
            "/subscription/plan",
            Some(&owner.token),
            json!({ "planId": "fleet" }),
        )
        .await;
    assert_eq!(
        upgrade.status,
        StatusCode::PAYMENT_REQUIRED,
        "{}",
        upgrade.body
    );
    assert_eq!(
        subscription(&api, &owner).await["pendingPlanId"],
        "operator"
    );

    buy(&api, &owner, "fleet").await;
    let upgraded = subscription(&api, &owner).await;
    assert_eq!(upgraded["planId"], "fleet");
    assert_eq!(upgraded["pendingPlanId"], Value::Null);
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_period_ending_in_a_move_to_free_is_not_reminded_to_renew() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    buy(&api, &owner, "scale").await;
    choose(&api, &owner, "free").await;
    // Within the last 7 days, then the last day: no reminder either time.
    api.app
        .clock
        .advance(TimeDelta::days(23) + TimeDelta::hours(1));
    api.sweeps().run_once().await;
    api.app.clock.advance(TimeDelta::days(6));
    api.sweeps().run_once().await;
    assert_eq!(
        api.event_payloads(&owner.account_id, "notice.renewal_due")
            .await,
        Vec::<Value>::new()
    );
    api.app.stop().await;
}
