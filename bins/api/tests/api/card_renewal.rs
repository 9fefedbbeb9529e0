//! Plans that renew by card, against the Stripe stand-in and the test
//! clock: a card checkout starts a subscription, each renewal it bills
//! extends the paid period with no lapse, a redelivered renewal changes
//! nothing, renewal turned off in the portal reaches the account as
//! `subscription.updated {renewing: false}` and the period then ends as a
//! missed payment, as does a failed renewal charge; a downgrade to Free
//! scheduled while renewing stops the renewal at the provider, and one to a
//! cheaper paid plan renews that plan instead; a second card checkout stops
//! the subscription it replaces (later, by the sweep, when Stripe is down);
//! a payment that cannot renew is refused while the card renews, and one
//! started before the card checkout is a credit.

use chrono::TimeDelta;
use reqwest::StatusCode;
use sealpost_seal::AccountKeys;
use sealpost_testkit::TestApp;
use sealpost_testkit::payments::{PaymentStandIn, StandInSubscription, form_value};
use serde_json::{Value, json};

use crate::billing::{buy, checkout, refund_due, sandbox_form, subscription};
use crate::support::{Api, SignedIn, new_keys};

/// The API with card payments through the Stripe stand-in (and the
/// sandbox), the stand-in sending its notices to it.
async fn with_stripe() -> (Api, PaymentStandIn) {
    let stripe = PaymentStandIn::stripe().await;
    let api = Api::with(
        TestApp::spawn_with(|config| {
            config.stripe = Some(stripe.stripe_keys());
            config.billing_sandbox = true;
        })
        .await,
    );
    stripe.notify(&api.app);
    (api, stripe)
}

/// A card checkout for `plan`, paid at the stand-in.
async fn subscribe(
    api: &Api,
    stripe: &PaymentStandIn,
    owner: &SignedIn,
    plan: &str,
) -> StandInSubscription {
    let started = checkout(api, owner, plan, "stripe").await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
    let session = stripe.checkouts().last().unwrap().clone();
    let subscription = stripe.pay_checkout(&session.reference).await;
    assert_all_accepted(stripe);
    subscription
}

fn assert_all_accepted(stripe: &PaymentStandIn) {
    for sent in stripe.sent() {
        assert_eq!(sent.status, 200, "{}", sent.body);
    }
}

/// Moves the test clock on, signs in again (sessions last 30 days), and
/// lets the stand-in bill what ended.
async fn advance(
    api: &Api,
    stripe: &PaymentStandIn,
    owner: &mut SignedIn,
    keys: &AccountKeys,
    by: TimeDelta,
) -> usize {
    api.app.clock.advance(by);
    owner.token = api.sign_in(keys).await;
    let sent = stripe.bill_due().await;
    assert_all_accepted(stripe);
    sent
}

fn sent_of_type(stripe: &PaymentStandIn, kind: &str) -> usize {
    stripe
        .sent()
        .iter()
        .filter(|sent| serde_json::from_str::<Value>(&sent.body).unwrap()["type"] == kind)
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_subscription_renews_twice_across_period_ends_with_no_lapse() {
    let (api, stripe) = with_stripe().await;
    let (_, keys) = new_keys();
    let mut owner = api.register(&keys).await;
    subscribe(&api, &stripe, &owner, "scale").await;

    // Subscription mode, one recurring price every 30 days.
    let session = stripe.checkouts()[0].clone();
    assert_eq!(
        form_value(&session.body, "mode").as_deref(),
        Some("subscription")
    );
    assert_eq!(
        form_value(
            &session.body,
            "line_items[0][price_data][recurring][interval]"
        )
        .as_deref(),
        Some("day")
    );
    assert_eq!(
        form_value(
            &session.body,
            "line_items[0][price_data][recurring][interval_count]"
        )
        .as_deref(),
        Some("30")
    );
    assert_eq!(
        form_value(&session.body, "subscription_data[metadata][account_id]"),
        Some(owner.account_id.clone())
    );

    // The checkout and its first invoice: one period, renewing.
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "scale");
    assert_eq!(record["renewsAt"], "2026-12-22T12:00:00.000Z");
    assert_eq!(record["renewing"], true);
    assert_eq!(sent_of_type(&stripe, "invoice.paid"), 1);

    // First renewal: Stripe charges an hour after the period end; the
    // sweep before it does not lapse the account.
    api.app.clock.advance(TimeDelta::days(30));
    api.sweeps().run_once().await;
    assert_eq!(
        advance(&api, &stripe, &mut owner, &keys, TimeDelta::hours(1)).await,
        1
    );
    api.sweeps().run_once().await;
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "scale");
    assert_eq!(record["pause"], Value::Null);
    assert_eq!(record["renewsAt"], "2027-01-21T12:00:00.000Z");
    assert_eq!(record["renewing"], true);

    // Stripe delivers the same renewal again: nothing changes.
    let renewal = stripe.sent().len() - 1;
    stripe.redeliver(renewal).await;
    assert_all_accepted(&stripe);
    assert_eq!(
        subscription(&api, &owner).await["renewsAt"],
        "2027-01-21T12:00:00.000Z"
    );

    // Second renewal.
    assert_eq!(
        advance(&api, &stripe, &mut owner, &keys, TimeDelta::days(30)).await,
        1
    );
    api.sweeps().run_once().await;
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "scale");
    assert_eq!(record["pause"], Value::Null);
    assert_eq!(record["renewsAt"], "2027-02-20T12:00:00.000Z");

    // One subscription.updated (the checkout's), no lapse, no reminders:
    // the period renews by itself.
    assert_eq!(
        api.event_payloads(&owner.account_id, "subscription.updated")
            .await,
        vec![json!({ "planId": "scale", "renewing": true })]
    );
    assert_eq!(
        api.event_payloads(&owner.account_id, "notice.renewal_due")
            .await,
        Vec::<Value>::new()
    );
    // Each renewal is a paid payment of its own, recorded once.
    assert_eq!(renewal_payments(&api, &owner.account_id).await, 2);
    api.app.stop().await;
}

/// The paid renewals recorded for the account (an operator's query).
async fn renewal_payments(api: &Api, account: &str) -> i64 {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    let mut conn = api.app.db.connect().await;
    let row: Row = diesel::sql_query(
        "SELECT count(*) AS count FROM payments \
         WHERE account_id = $1 AND reference LIKE 'in_%' AND status = 'paid'",
    )
    .bind::<diesel::sql_types::Text, _>(account)
    .get_result(&mut conn)
    .await
    .unwrap();
    row.count
}

#[tokio::test(flavor = "multi_thread")]
async fn renewal_turned_off_in_the_portal_is_announced_and_the_period_then_lapses() {
    let (api, stripe) = with_stripe().await;
    let (_, keys) = new_keys();
    let mut owner = api.register(&keys).await;
    let sub = subscribe(&api, &stripe, &owner, "operator").await;
    // Something for a lapse to pause.
    api.create_address(&owner.token, "ibx_card01").await;

    // The portal: a session for the account's customer.
    let portal = api
        .post("/billing/portal", Some(&owner.token), json!({}))
        .await;
    assert_eq!(portal.status, StatusCode::OK, "{}", portal.body);
    assert_eq!(
        portal.body["url"],
        "https://billing.stripe.com/p/session/bps_test_1"
    );
    assert_eq!(stripe.portal_sessions(), vec![sub.customer.clone()]);

    // The payer turns renewal off there.
    api.app.clock.advance(TimeDelta::days(1));
    stripe.portal_set_renewal(&sub.id, false).await;
    assert_all_accepted(&stripe);
    let record = subscription(&api, &owner).await;
    assert_eq!(record["renewing"], false);
    assert_eq!(record["planId"], "operator");
    assert_eq!(record["renewsAt"], "2026-12-22T12:00:00.000Z");
    // Once: the same notice again writes nothing.
    stripe.redeliver(stripe.sent().len() - 1).await;
    assert_eq!(
        api.event_payloads(&owner.account_id, "subscription.updated")
            .await,
        vec![
            json!({ "planId": "operator", "renewing": true }),
            json!({ "planId": "operator", "renewing": false }),
        ]
    );
    assert!(
        api.activity_kinds(&owner)
            .await
            .iter()
            .filter(|kind| *kind == "subscription.updated")
            .count()
            >= 2
    );

    // It no longer renews by itself: reminded 7 days before its end.
    api.app
        .clock
        .advance(TimeDelta::days(22) + TimeDelta::hours(1));
    api.sweeps().run_once().await;
    assert_eq!(
        api.event_payloads(&owner.account_id, "notice.renewal_due")
            .await,
        vec![json!({ "renewsAt": "2026-12-22T12:00:00.000Z", "daysLeft": 7 })]
    );

    // At its end Stripe ends the subscription, charging nothing, and the
    // period lapses: the missed-payment path.
    advance(&api, &stripe, &mut owner, &keys, TimeDelta::days(7)).await;
    assert_eq!(sent_of_type(&stripe, "customer.subscription.deleted"), 1);
    assert_eq!(sent_of_type(&stripe, "invoice.paid"), 1);
    api.sweeps().run_once().await;
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "free");
    assert_eq!(record["renewing"], false);
    assert_eq!(record["pause"]["planId"], "operator");
    assert_eq!(record["pause"]["addresses"], 1);
    assert_eq!(
        api.event_payloads(&owner.account_id, "subscription.updated")
            .await
            .last(),
        Some(&json!({ "planId": "free" }))
    );
    // The portal stays reachable for the customer's invoices.
    let portal = api
        .post("/billing/portal", Some(&owner.token), json!({}))
        .await;
    assert_eq!(portal.status, StatusCode::OK, "{}", portal.body);
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_renewal_charge_is_a_missed_payment() {
    let (api, stripe) = with_stripe().await;
    let (_, keys) = new_keys();
    let mut owner = api.register(&keys).await;
    subscribe(&api, &stripe, &owner, "scale").await;
    api.create_address(&owner.token, "ibx_card02").await;
    stripe.fail_renewals(true);
    advance(
        &api,
        &stripe,
        &mut owner,
        &keys,
        TimeDelta::days(30) + TimeDelta::hours(1),
    )
    .await;
    assert_eq!(sent_of_type(&stripe, "invoice.payment_failed"), 1);
    assert_eq!(subscription(&api, &owner).await["renewing"], false);
    // The next sweep: no renewal awaited any more, the period lapses.
    api.sweeps().run_once().await;
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "free");
    assert_eq!(record["pause"]["planId"], "scale");
    assert_eq!(
        api.event_payloads(&owner.account_id, "subscription.updated")
            .await,
        vec![
            json!({ "planId": "scale", "renewing": true }),
            json!({ "planId": "scale", "renewing": false }),
            json!({ "planId": "free" }),
        ]
    );
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_downgrade_scheduled_while_renewing_stops_the_renewal_and_applies_at_the_end() {
    let (api, stripe) = with_stripe().await;
    let (_, keys) = new_keys();
    let mut owner = api.register(&keys).await;
    let sub = subscribe(&api, &stripe, &owner, "scale").await;

    let moved = api
        .post(
            "/subscription/plan",
            Some(&owner.token),
            json!({ "planId": "free" }),
        )
        .await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.body);
    assert_eq!(moved.body["subscription"]["pendingPlanId"], "free");
    // Stripe was told, and its notice came back before the answer.
    assert!(stripe.subscriptions()[0].cancel_at_period_end);
    assert_eq!(moved.body["subscription"]["renewing"], false);
    assert_eq!(sub.id, stripe.subscriptions()[0].id);

    // At the end: nothing charged, the move applied, nothing paused.
    advance(&api, &stripe, &mut owner, &keys, TimeDelta::days(30)).await;
    api.sweeps().run_once().await;
    assert_eq!(sent_of_type(&stripe, "invoice.paid"), 1, "only the first");
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "free");
    assert_eq!(record["pause"], Value::Null);
    assert_eq!(record["renewsAt"], Value::Null);
    assert_eq!(record["renewing"], false);
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn payments_that_cannot_renew_say_so_and_have_no_portal() {
    let (api, _stripe) = with_stripe().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    buy(&api, &owner, "operator").await;
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "operator");
    assert_eq!(record["renewing"], false);
    let portal = api
        .post("/billing/portal", Some(&owner.token), json!({}))
        .await;
    assert_eq!(portal.status, StatusCode::NOT_FOUND, "{}", portal.body);
    assert_eq!(portal.code(), "not_found");
    api.app.stop().await;
}

/// Subscriptions queued to be stopped at the provider (an
/// operator's query).
async fn queued_to_stop(api: &Api) -> Vec<String> {
    queued_to_stop_where(api, "true").await
}

/// Those of them whose account was erased: no account id is kept.
async fn queued_to_stop_without_account(api: &Api) -> Vec<String> {
    queued_to_stop_where(api, "account_id IS NULL").await
}

async fn queued_to_stop_where(api: &Api, condition: &str) -> Vec<String> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        subscription_id: String,
    }
    let mut conn = api.app.db.connect().await;
    let rows: Vec<Row> = diesel::sql_query(format!(
        "SELECT subscription_id FROM card_subscriptions_to_stop WHERE {condition} \
         ORDER BY subscription_id"
    ))
    .load(&mut conn)
    .await
    .unwrap();
    rows.into_iter().map(|row| row.subscription_id).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_card_checkout_stops_the_subscription_it_replaces() {
    let (api, stripe) = with_stripe().await;
    let (_, keys) = new_keys();
    let mut owner = api.register(&keys).await;
    let first = subscribe(&api, &stripe, &owner, "scale").await;
    api.app.clock.advance(TimeDelta::days(3));
    let second = subscribe(&api, &stripe, &owner, "fleet").await;

    // The first no longer renews at Stripe; the second does.
    let kept = stripe.subscriptions();
    assert_eq!(
        (kept[0].id.as_str(), kept[0].cancel_at_period_end),
        (first.id.as_str(), true)
    );
    assert_eq!(
        (kept[1].id.as_str(), kept[1].cancel_at_period_end),
        (second.id.as_str(), false)
    );
    assert_eq!(
        stripe.subscription_updates(),
        vec![(first.id.clone(), "cancel_at_period_end=true".to_owned())]
    );
    assert_eq!(queued_to_stop(&api).await, Vec::<String>::new());
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "fleet");
    assert_eq!(record["renewing"], true);
    assert_eq!(record["renewsAt"], "2026-12-25T12:00:00.000Z");

    // At the first one's period end it ends, charging nothing; the
    // account's renews on its own clock.
    advance(
        &api,
        &stripe,
        &mut owner,
        &keys,
        TimeDelta::days(27) + TimeDelta::hours(1),
    )
    .await;
    assert_eq!(sent_of_type(&stripe, "customer.subscription.deleted"), 1);
    advance(&api, &stripe, &mut owner, &keys, TimeDelta::days(3)).await;
    assert_eq!(stripe.subscriptions()[0].status, "canceled");
    api.sweeps().run_once().await;
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "fleet");
    assert_eq!(record["renewing"], true);
    assert_eq!(record["renewsAt"], "2027-01-24T12:00:00.000Z");
    assert_eq!(renewal_payments(&api, &owner.account_id).await, 1);
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replaced_subscription_stripe_could_not_be_told_about_is_stopped_by_the_sweep() {
    let (api, stripe) = with_stripe().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let first = subscribe(&api, &stripe, &owner, "scale").await;
    let started = checkout(&api, &owner, "fleet", "stripe").await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
    let session = stripe.checkouts().last().unwrap().clone();

    // Stripe's API is down when the payment settles: it settles all the
    // same, and the first subscription is kept to be stopped.
    stripe.set_unavailable(true);
    stripe.pay_checkout(&session.reference).await;
    assert_all_accepted(&stripe);
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "fleet");
    assert_eq!(record["renewing"], true);
    assert!(!stripe.subscriptions()[0].cancel_at_period_end);
    assert_eq!(queued_to_stop(&api).await, vec![first.id.clone()]);

    // Still down at the next sweep: tried, kept.
    api.sweeps().run_once().await;
    assert!(!stripe.subscriptions()[0].cancel_at_period_end);
    assert_eq!(queued_to_stop(&api).await, vec![first.id.clone()]);

    // Back: the sweep stops it, and it is forgotten.
    stripe.set_unavailable(false);
    api.app.clock.advance(TimeDelta::hours(1));
    api.sweeps().run_once().await;
    assert_all_accepted(&stripe);
    assert!(stripe.subscriptions()[0].cancel_at_period_end);
    assert!(!stripe.subscriptions()[1].cancel_at_period_end);
    assert_eq!(queued_to_stop(&api).await, Vec::<String>::new());
    api.sweeps().run_once().await;
    assert_eq!(stripe.subscription_updates().len(), 1, "stopped once");
    assert_eq!(subscription(&api, &owner).await["renewing"], true);
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn erasing_an_account_stops_its_card_renewal_at_once_or_by_the_sweep() {
    let (api, stripe) = with_stripe().await;
    let (_, first_keys) = new_keys();
    let (_, second_keys) = new_keys();
    let first = api.register(&first_keys).await;
    let second = api.register(&second_keys).await;
    let first_subscription = subscribe(&api, &stripe, &first, "scale").await;
    let second_subscription = subscribe(&api, &stripe, &second, "scale").await;

    // Stripe down: the account goes all the same; its subscription is kept
    // to be stopped, with no account id, until Stripe can be told.
    stripe.set_unavailable(true);
    let erased = api.delete("/accounts/me", Some(&second.token)).await;
    assert_eq!(erased.status, StatusCode::NO_CONTENT, "{}", erased.body);
    assert!(!stripe.subscriptions()[1].cancel_at_period_end);
    assert_eq!(
        queued_to_stop_without_account(&api).await,
        vec![second_subscription.id.clone()]
    );

    // Stripe up: an erasure stops its own account's renewal at once, and
    // only that one: another's queued stop is the sweep's work.
    stripe.set_unavailable(false);
    let erased = api.delete("/accounts/me", Some(&first.token)).await;
    assert_eq!(erased.status, StatusCode::NO_CONTENT, "{}", erased.body);
    assert_eq!(
        stripe.subscription_updates(),
        vec![(
            first_subscription.id.clone(),
            "cancel_at_period_end=true".to_owned()
        )]
    );
    assert_eq!(
        queued_to_stop(&api).await,
        vec![second_subscription.id.clone()]
    );

    api.app.clock.advance(TimeDelta::hours(1));
    api.sweeps().run_once().await;
    assert!(stripe.subscriptions()[1].cancel_at_period_end);
    assert_eq!(queued_to_stop(&api).await, Vec::<String>::new());

    // At the period's end both end, charging nothing; their notices, for
    // accounts that are gone, are accepted.
    api.app.clock.advance(TimeDelta::days(31));
    stripe.bill_due().await;
    assert_all_accepted(&stripe);
    let kept = stripe.subscriptions();
    let ended: Vec<&str> = kept.iter().map(|kept| kept.status.as_str()).collect();
    assert_eq!(ended, ["canceled", "canceled"]);
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_payment_that_cannot_renew_is_refused_while_the_card_renews_and_an_earlier_one_is_a_credit()
 {
    let stripe = PaymentStandIn::stripe().await;
    let btcpay = PaymentStandIn::btcpay().await;
    let api = Api::with(
        TestApp::spawn_with(|config| {
            config.stripe = Some(stripe.stripe_keys());
            config.btcpay = Some(btcpay.btcpay_keys());
            config.billing_sandbox = true;
        })
        .await,
    );
    stripe.notify(&api.app);
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    // A checkout that cannot renew, started before the card's.
    let earlier = checkout(&api, &owner, "scale", "sandbox").await;
    assert_eq!(earlier.status, StatusCode::CREATED, "{}", earlier.body);
    let sub = subscribe(&api, &stripe, &owner, "scale").await;
    let renewing = subscription(&api, &owner).await;
    assert_eq!(renewing["renewing"], true);

    // While the card renews, crypto (and the sandbox) would pay twice.
    for provider in ["btcpay", "sandbox"] {
        for plan in ["scale", "fleet"] {
            let refused = checkout(&api, &owner, plan, provider).await;
            assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.body);
            assert_eq!(refused.code(), "renewal_active");
            let message = refused.body["error"]["message"].as_str().unwrap();
            assert!(
                message.contains("turn renewal off in the billing portal"),
                "{message}"
            );
        }
    }
    assert!(btcpay.checkouts().is_empty(), "the provider is not asked");

    // The earlier one is paid now: a credit, its refund due; the period
    // the card pays for, and its renewal, stay.
    let (status, page) = sandbox_form(earlier.body["url"].as_str().unwrap(), "paid").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let id = earlier.body["payment"]["id"].as_str().unwrap();
    let paid = api
        .get(&format!("/billing/payments/{id}"), Some(&owner.token))
        .await;
    assert_eq!(paid.body["payment"]["status"], "paid");
    assert_eq!(refund_due(&api, id).await, Some(true));
    assert_eq!(subscription(&api, &owner).await, renewing);

    // Renewal off in the portal: crypto pays the next period again.
    stripe.portal_set_renewal(&sub.id, false).await;
    assert_all_accepted(&stripe);
    let crypto = checkout(&api, &owner, "scale", "btcpay").await;
    assert_eq!(crypto.status, StatusCode::CREATED, "{}", crypto.body);
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_move_to_a_cheaper_paid_plan_while_renewing_renews_that_plan_from_the_next_period() {
    let (api, stripe) = with_stripe().await;
    let (_, keys) = new_keys();
    let mut owner = api.register(&keys).await;
    let sub = subscribe(&api, &stripe, &owner, "scale").await;

    let moved = api
        .post(
            "/subscription/plan",
            Some(&owner.token),
            json!({ "planId": "operator" }),
        )
        .await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.body);
    assert_eq!(moved.body["subscription"]["planId"], "scale");
    assert_eq!(moved.body["subscription"]["pendingPlanId"], "operator");
    // Still renewing, at Operator's price from the next period on.
    assert_eq!(moved.body["subscription"]["renewing"], true);
    let kept = stripe.subscriptions()[0].clone();
    assert_eq!((kept.amount, kept.cancel_at_period_end), (900, false));
    let (id, form) = stripe.subscription_updates().last().unwrap().clone();
    assert_eq!(id, sub.id);
    let field = |name: &str| form_value(form.as_bytes(), name);
    assert_eq!(field("items[0][id]"), Some(sub.item.clone()));
    assert_eq!(
        field("items[0][price_data][product]"),
        Some(sub.product.clone())
    );
    assert_eq!(
        field("items[0][price_data][unit_amount]").as_deref(),
        Some("900")
    );
    assert_eq!(
        field("items[0][price_data][currency]").as_deref(),
        Some("usd")
    );
    assert_eq!(field("proration_behavior").as_deref(), Some("none"));
    assert_all_accepted(&stripe);

    // Stripe renews at the period end: the next period is Operator's, with
    // no lapse and no time lost.
    assert_eq!(
        advance(
            &api,
            &stripe,
            &mut owner,
            &keys,
            TimeDelta::days(30) + TimeDelta::hours(1)
        )
        .await,
        1
    );
    api.sweeps().run_once().await;
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "operator");
    assert_eq!(record["pendingPlanId"], Value::Null);
    assert_eq!(record["renewing"], true);
    assert_eq!(record["pause"], Value::Null);
    assert_eq!(record["renewsAt"], "2027-01-21T12:00:00.000Z");
    assert_eq!(
        api.event_payloads(&owner.account_id, "subscription.updated")
            .await
            .last(),
        Some(&json!({ "planId": "operator" }))
    );
    assert_eq!(renewal_payments(&api, &owner.account_id).await, 1);

    // And on: the next renewal is Operator's too.
    advance(&api, &stripe, &mut owner, &keys, TimeDelta::days(30)).await;
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "operator");
    assert_eq!(record["renewsAt"], "2027-02-20T12:00:00.000Z");
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn taking_back_a_move_down_while_renewing_switches_the_price_back() {
    let (api, stripe) = with_stripe().await;
    let (_, keys) = new_keys();
    let mut owner = api.register(&keys).await;
    subscribe(&api, &stripe, &owner, "scale").await;
    for (plan, amount) in [("operator", 900), ("scale", 4_900)] {
        let moved = api
            .post(
                "/subscription/plan",
                Some(&owner.token),
                json!({ "planId": plan }),
            )
            .await;
        assert_eq!(moved.status, StatusCode::OK, "{}", moved.body);
        assert_eq!(moved.body["subscription"]["renewing"], true);
        assert_eq!(stripe.subscriptions()[0].amount, amount, "{plan}");
    }
    assert_eq!(stripe.subscription_updates().len(), 2);
    let record = subscription(&api, &owner).await;
    assert_eq!(record["pendingPlanId"], Value::Null);

    advance(
        &api,
        &stripe,
        &mut owner,
        &keys,
        TimeDelta::days(30) + TimeDelta::hours(1),
    )
    .await;
    api.sweeps().run_once().await;
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "scale");
    assert_eq!(record["renewsAt"], "2027-01-21T12:00:00.000Z");
    assert_eq!(record["renewing"], true);
    api.app.stop().await;
}
