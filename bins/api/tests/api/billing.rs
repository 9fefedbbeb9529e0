//! Billing over HTTP: providers, checkout with the sandbox and with Stripe's
//! notice path, payments settled once, the lapse sweep under the test clock,
//! held mail and its release.

use chrono::TimeDelta;
use reqwest::StatusCode;
use sealpost_seal::{AccountKeys, b64};
use sealpost_testkit::TestApp;
use sealpost_testkit::payments::{self, PaymentStandIn};
use serde_json::{Value, json};

use crate::support::{Api, Reply, SignedIn, SmtpClient, new_keys};

/// Starts a sandbox checkout for `plan`; returns the answer.
pub(crate) async fn checkout(api: &Api, owner: &SignedIn, plan: &str, provider: &str) -> Reply {
    api.post(
        "/billing/checkout",
        Some(&owner.token),
        json!({ "planId": plan, "provider": provider }),
    )
    .await
}

/// Posts the sandbox checkout form, as a browser would.
pub(crate) async fn sandbox_form(url: &str, outcome: &str) -> (StatusCode, String) {
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("outcome={outcome}"))
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.text().await.unwrap())
}

/// Checkout through the sandbox and pay; returns the payment id.
pub(crate) async fn buy(api: &Api, owner: &SignedIn, plan: &str) -> String {
    let started = checkout(api, owner, plan, "sandbox").await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
    let url = started.body["url"].as_str().unwrap().to_owned();
    let (status, page) = sandbox_form(&url, "paid").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    started.body["payment"]["id"].as_str().unwrap().to_owned()
}

pub(crate) async fn subscription(api: &Api, owner: &SignedIn) -> Value {
    let reply = api.get("/subscription", Some(&owner.token)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["subscription"].clone()
}

/// The ids of the account's paused addresses.
async fn paused_addresses(api: &Api, owner: &SignedIn) -> Vec<String> {
    let addresses = api.get("/inboxes", Some(&owner.token)).await;
    addresses.body["inboxes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|address| !address["pausedAt"].is_null())
        .map(|address| address["id"].as_str().unwrap().to_owned())
        .collect()
}

/// An address with its public key, so it takes mail.
pub(crate) async fn keyed_address(api: &Api, owner: &SignedIn, keys: &AccountKeys, id: &str) {
    let created = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": id, "domain": "mail.localhost", "prefix": "bill", "retentionDays": 90,
                    "publicKey": b64::encode(&keys.address_public_key(id, 0)) }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
}

async fn listed(api: &Api, owner: &SignedIn, address: &str) -> Vec<String> {
    let page = api
        .get(&format!("/inboxes/{address}/messages"), Some(&owner.token))
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    page.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn run_sweeps(api: &Api) {
    api.sweeps().run_once().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_free_account_upgrades_to_scale_through_the_sandbox_and_downgrades_back() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;

    let providers = api.get("/billing/providers", None).await;
    assert_eq!(
        providers.body,
        json!({ "providers": [{ "id": "sandbox", "kind": "sandbox" }] })
    );

    // A Scale-only feature is refused on Free.
    let exact =
        json!({ "id": "ibx_exact01", "domain": "mail.localhost", "localPart": "chosen.name" });
    let refused = api
        .post("/inboxes", Some(&owner.token), exact.clone())
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert_eq!(refused.code(), "plan_required");

    let started = checkout(&api, &owner, "scale", "sandbox").await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
    let payment = started.body["payment"].clone();
    let id = payment["id"].as_str().unwrap().to_owned();
    assert_eq!(
        started.body["url"],
        format!("{}/billing/sandbox/{id}", api.app.base_url)
    );
    assert_eq!(payment["status"], "pending");
    assert_eq!(payment["planId"], "scale");
    assert_eq!(payment["provider"], "sandbox");
    assert_eq!(payment["amount"], 4_900);
    assert_eq!(payment["currency"], "USD");
    assert_eq!(payment["createdAt"], "2026-11-22T12:00:00.000Z");
    // Nothing changes until it is paid.
    assert_eq!(subscription(&api, &owner).await["planId"], "free");

    let page = reqwest::get(started.body["url"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    assert!(html.contains("Scale plan, 30 days: 49.00 USD"), "{html}");

    let (status, html) = sandbox_form(started.body["url"].as_str().unwrap(), "paid").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("is paid"), "{html}");
    let paid = api
        .get(&format!("/billing/payments/{id}"), Some(&owner.token))
        .await;
    assert_eq!(paid.body["payment"]["status"], "paid");
    assert_eq!(
        paid.body["payment"]["settledAt"],
        "2026-11-22T12:00:00.000Z"
    );

    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "scale");
    assert_eq!(record["renewsAt"], "2026-12-22T12:00:00.000Z");
    assert_eq!(record["pause"], Value::Null);
    assert_eq!(record["balance"], json!({ "amount": 0, "currency": "USD" }));
    assert!(
        api.activity_kinds(&owner)
            .await
            .contains(&"subscription.updated".to_owned())
    );

    // The same notice again (the form posted twice): the plan changed once.
    let (status, _) = sandbox_form(started.body["url"].as_str().unwrap(), "paid").await;
    assert_eq!(status, StatusCode::OK);
    let updates = api.events(&owner.account_id, "subscription.updated").await;
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].0, json!({ "planId": "scale" }));

    // Scale allows the exact name.
    let created = api.post("/inboxes", Some(&owner.token), exact).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(
        created.body["inbox"]["emailAddress"],
        "chosen.name@mail.localhost"
    );

    // Four addresses do not fit Free: downgrade_blocked; three do.
    for id in ["ibx_extra01", "ibx_extra02", "ibx_extra03"] {
        api.create_address(&owner.token, id).await;
    }
    let blocked = api
        .post(
            "/subscription/plan",
            Some(&owner.token),
            json!({ "planId": "free" }),
        )
        .await;
    assert_eq!(blocked.status, StatusCode::CONFLICT, "{}", blocked.body);
    assert_eq!(blocked.code(), "downgrade_blocked");
    let deleted = api.delete("/inboxes/ibx_extra03", Some(&owner.token)).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let moved = api
        .post(
            "/subscription/plan",
            Some(&owner.token),
            json!({ "planId": "free" }),
        )
        .await;
    // In the paid month the move waits for its end (scheduled_downgrade.rs
    // follows it there).
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.body);
    assert_eq!(moved.body["subscription"]["planId"], "scale");
    assert_eq!(moved.body["subscription"]["pendingPlanId"], "free");
    let updates = api.events(&owner.account_id, "subscription.updated").await;
    assert_eq!(
        updates
            .iter()
            .map(|(payload, _)| payload.clone())
            .collect::<Vec<_>>(),
        vec![
            json!({ "planId": "scale" }),
            json!({ "planId": "scale", "pendingPlanId": "free" })
        ]
    );
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn checkout_refuses_what_it_cannot_sell_and_payments_are_the_owners_alone() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;

    let stripe = checkout(&api, &owner, "scale", "stripe").await;
    assert_eq!(
        stripe.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        stripe.body
    );
    assert_eq!(stripe.code(), "provider_unavailable");
    for plan in ["free", "enterprise"] {
        let refused = checkout(&api, &owner, plan, "sandbox").await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
        assert_eq!(refused.code(), "invalid_field");
    }
    for body in [
        json!({ "planId": "gold", "provider": "sandbox" }),
        json!({ "planId": "scale", "provider": "paypal" }),
        json!({ "planId": "scale" }),
    ] {
        let refused = api
            .post("/billing/checkout", Some(&owner.token), body)
            .await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    }
    // A failed payment changes nothing; its page says so.
    let started = checkout(&api, &owner, "operator", "sandbox").await;
    let url = started.body["url"].as_str().unwrap().to_owned();
    let id = started.body["payment"]["id"].as_str().unwrap().to_owned();
    let (status, _) = sandbox_form(&url, "failed").await;
    assert_eq!(status, StatusCode::OK);
    let failed = api
        .get(&format!("/billing/payments/{id}"), Some(&owner.token))
        .await;
    assert_eq!(failed.body["payment"]["status"], "failed");
    assert_eq!(subscription(&api, &owner).await["planId"], "free");
    let (status, _) = sandbox_form(&url, "maybe").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // Another account's payment is not found, like a missing one.
    let (_, other_keys) = new_keys();
    let other = api.register(&other_keys).await;
    let hidden = api
        .get(&format!("/billing/payments/{id}"), Some(&other.token))
        .await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    let missing = api
        .get("/billing/payments/pay_notanid", Some(&owner.token))
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    api.app.stop().await;

    // With the sandbox switched off by an operator, its pages are gone too.
    let api = Api::with(
        TestApp::spawn_with(|config| config.billing_disabled = vec!["sandbox".into()]).await,
    );
    assert_eq!(
        api.get("/billing/providers", None).await.body,
        json!({ "providers": [] })
    );
    let owner = api.register(&keys).await;
    let off = checkout(&api, &owner, "scale", "sandbox").await;
    assert_eq!(off.code(), "provider_unavailable");
    let page = reqwest::get(api.app.url(&format!("/billing/sandbox/{id}")))
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::NOT_FOUND);
    api.app.stop().await;
}

/// The ids and states of one page of `GET /billing/payments`, and its cursor.
async fn payment_page(api: &Api, owner: &SignedIn, query: &str) -> (Vec<(String, String)>, Value) {
    let reply = api
        .get(&format!("/billing/payments{query}"), Some(&owner.token))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let listed = reply.body["payments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|payment| {
            (
                payment["id"].as_str().unwrap().to_owned(),
                payment["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (listed, reply.body["nextCursor"].clone())
}

#[tokio::test(flavor = "multi_thread")]
async fn payment_history_lists_the_accounts_payments_newest_first_in_pages() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    assert_eq!(
        payment_page(&api, &owner, "").await,
        (vec![], Value::Null),
        "no payment yet"
    );

    // Paid, then failed, then still pending, a minute apart.
    let paid = buy(&api, &owner, "operator").await;
    api.app.clock.advance(TimeDelta::minutes(1));
    let failing = checkout(&api, &owner, "scale", "sandbox").await;
    let failed = failing.body["payment"]["id"].as_str().unwrap().to_owned();
    let (status, _) = sandbox_form(failing.body["url"].as_str().unwrap(), "failed").await;
    assert_eq!(status, StatusCode::OK);
    api.app.clock.advance(TimeDelta::minutes(1));
    let started = checkout(&api, &owner, "scale", "sandbox").await;
    let pending = started.body["payment"]["id"].as_str().unwrap().to_owned();

    let (all, next) = payment_page(&api, &owner, "").await;
    assert_eq!(
        all,
        vec![
            (pending.clone(), "pending".to_owned()),
            (failed.clone(), "failed".to_owned()),
            (paid.clone(), "paid".to_owned()),
        ]
    );
    assert!(next.is_null());

    // Each entry is the payment object of `GET /billing/payments/:id`: no
    // provider reference, nothing of the card.
    let listed = api.get("/billing/payments", Some(&owner.token)).await;
    let one = api
        .get(&format!("/billing/payments/{pending}"), Some(&owner.token))
        .await;
    assert_eq!(listed.body["payments"][0], one.body["payment"]);
    let mut fields: Vec<&str> = listed.body["payments"][0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "amount",
            "createdAt",
            "currency",
            "id",
            "planId",
            "provider",
            "settledAt",
            "status",
            "url"
        ]
    );

    // Pages of two: the cursor leads to the rest, the last page has none.
    let (first, cursor) = payment_page(&api, &owner, "?limit=2").await;
    assert_eq!(first.len(), 2);
    assert_eq!(first[0].0, pending);
    let cursor = cursor.as_str().expect("a next cursor").to_owned();
    let (rest, end) = payment_page(&api, &owner, &format!("?limit=2&cursor={cursor}")).await;
    assert_eq!(rest, vec![(paid.clone(), "paid".to_owned())]);
    assert!(end.is_null());

    // A limit out of range or a cursor not handed out: 400 naming the field.
    for query in ["?limit=0", "?limit=201", "?limit=x", "?cursor=nonsense"] {
        let refused = api
            .get(&format!("/billing/payments{query}"), Some(&owner.token))
            .await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{query}");
        assert_eq!(refused.code(), "invalid_field", "{query}");
    }

    // Another account sees none of them; no token is 401.
    let (_, other_keys) = new_keys();
    let other = api.register(&other_keys).await;
    assert_eq!(payment_page(&api, &other, "").await, (vec![], Value::Null));
    assert_eq!(
        api.get("/billing/payments", None).await.status,
        StatusCode::UNAUTHORIZED
    );
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lapse_pauses_holds_mail_and_paying_releases_it_in_order_with_events() {
    let mut api = Api::spawn().await;
    let smtp = api.app.spawn_smtp().await;
    let (_, keys) = new_keys();
    let mut owner = api.register(&keys).await;
    buy(&api, &owner, "operator").await;
    keyed_address(&api, &owner, &keys, "ibx_lapse01").await;
    keyed_address(&api, &owner, &keys, "ibx_lapse02").await;
    api.pair(&owner.token, "wkr_lapse01").await;
    let before = api.deliver(&owner, "ibx_lapse01").await;

    // One minute before the period ends nothing happens; at its end it lapses.
    api.app
        .clock
        .advance(TimeDelta::days(30) - TimeDelta::minutes(1));
    run_sweeps(&api).await;
    owner.token = api.sign_in(&keys).await;
    assert_eq!(subscription(&api, &owner).await["pause"], Value::Null);
    api.app.clock.advance(TimeDelta::minutes(1));
    run_sweeps(&api).await;
    // Sessions last 30 days too.
    owner.token = api.sign_in(&keys).await;
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "free");
    assert_eq!(record["renewsAt"], Value::Null);
    assert_eq!(
        record["pause"],
        json!({
            "planId": "operator",
            "since": "2026-12-22T12:00:00.000Z",
            "deletesAt": "2027-01-12T12:00:00.000Z",
            "addresses": 2,
            "devices": 1,
            "apiKeys": 0,
            "domains": 0,
        })
    );
    let addresses = api.get("/inboxes", Some(&owner.token)).await;
    for address in addresses.body["inboxes"].as_array().unwrap() {
        assert_eq!(address["pausedAt"], "2026-12-22T12:00:00.000Z", "{address}");
    }
    let device = api.get("/workers/wkr_lapse01", Some(&owner.token)).await;
    assert_eq!(
        device.body["worker"]["pausedAt"],
        "2026-12-22T12:00:00.000Z"
    );
    let usage = api.get("/usage", Some(&owner.token)).await;
    assert_eq!(usage.body["plan"]["id"], "free");
    assert_eq!(usage.body["messagesReceived"]["limit"], 100_000);
    assert_eq!(
        api.events(&owner.account_id, "subscription.updated")
            .await
            .last()
            .unwrap()
            .0,
        json!({ "planId": "free" })
    );

    // Mail arriving while paused is accepted and held: stored, not listed, no event.
    let received_before = api
        .events(&owner.account_id, "message.received")
        .await
        .len();
    let mut held = Vec::new();
    for address in ["ibx_lapse02", "ibx_lapse01"] {
        api.app.clock.advance(TimeDelta::minutes(5));
        held.push((api.deliver(&owner, address).await, address));
    }
    // And by SMTP: 250 once stored, held like the rest.
    api.app.clock.advance(TimeDelta::minutes(5));
    let addresses = api.get("/inboxes", Some(&owner.token)).await;
    let address = addresses.body["inboxes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|address| address["id"] == "ibx_lapse02")
        .unwrap()["emailAddress"]
        .as_str()
        .unwrap()
        .to_owned();
    let (mut client, _) = SmtpClient::connect(smtp).await;
    assert_eq!(client.command("EHLO client.example").await, 250);
    assert_eq!(client.command("MAIL FROM:<sender@example.com>").await, 250);
    assert_eq!(client.command(&format!("RCPT TO:<{address}>")).await, 250);
    assert_eq!(
        client
            .data("From: sender@example.com\r\nSubject: while paused\r\n\r\nheld")
            .await,
        250
    );
    let by_smtp = {
        use diesel_async::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Text)]
            id: String,
            #[diesel(sql_type = diesel::sql_types::Bool)]
            held: bool,
        }
        let mut conn = api.app.db.connect().await;
        let rows: Vec<Row> = diesel::sql_query(
            "SELECT id, held FROM messages WHERE inbox_id = 'ibx_lapse02' ORDER BY received_at DESC LIMIT 1",
        )
        .load(&mut conn)
        .await
        .unwrap();
        assert!(rows[0].held, "mail to a paused address is held");
        rows[0].id.clone()
    };
    held.push((by_smtp, "ibx_lapse02"));
    assert_eq!(
        listed(&api, &owner, "ibx_lapse01").await,
        vec![before.clone()]
    );
    assert_eq!(
        listed(&api, &owner, "ibx_lapse02").await,
        Vec::<String>::new()
    );
    let overview = api.get("/overview", Some(&owner.token)).await;
    assert_eq!(overview.body["messages"]["held"], 3);
    assert_eq!(
        api.events(&owner.account_id, "message.received")
            .await
            .len(),
        received_before
    );

    // Paying releases everything the plan holds, and the mail in arrival order.
    // (Fleet: devices are unlimited, so every paused device comes back.)
    api.app.clock.advance(TimeDelta::hours(1));
    buy(&api, &owner, "fleet").await;
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "fleet");
    assert_eq!(record["pause"], Value::Null);
    assert_eq!(record["renewsAt"], "2027-01-21T13:15:00.000Z");
    let device = api.get("/workers/wkr_lapse01", Some(&owner.token)).await;
    assert_eq!(device.body["worker"]["pausedAt"], Value::Null);
    let released = api.events(&owner.account_id, "message.received").await;
    let released = &released[received_before..];
    assert_eq!(
        released
            .iter()
            .map(|(payload, _)| payload.clone())
            .collect::<Vec<_>>(),
        held.iter()
            .map(|(message, address)| json!({ "messageId": message, "inboxId": address }))
            .collect::<Vec<_>>()
    );
    assert!(released.iter().all(|(_, at)| at == "2026-12-22T13:15:00"));
    assert_eq!(listed(&api, &owner, "ibx_lapse02").await.len(), 2);
    assert_eq!(listed(&api, &owner, "ibx_lapse01").await.len(), 2);
    // The three held messages count in the received window they arrived in
    // (the second one: the first message's window ended at day 30).
    let usage = api.get("/usage", Some(&owner.token)).await;
    assert_eq!(usage.body["messagesReceived"]["used"], 3);
    assert_eq!(usage.body["messagesStored"], 4);
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn paying_for_a_smaller_plan_releases_what_it_holds_and_keeps_the_rest_paused() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let mut owner = api.register(&keys).await;
    buy(&api, &owner, "scale").await;
    // 101 addresses: one more than Operator holds.
    for n in 0..101 {
        api.create_address(&owner.token, &format!("ibx_many{n:03}"))
            .await;
    }
    api.app.clock.advance(TimeDelta::days(31));
    run_sweeps(&api).await;
    owner.token = api.sign_in(&keys).await;
    assert_eq!(subscription(&api, &owner).await["pause"]["addresses"], 101);

    buy(&api, &owner, "operator").await;
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "operator");
    assert_eq!(record["pause"]["planId"], Value::Null);
    assert_eq!(record["pause"]["addresses"], 1);
    assert_eq!(record["pause"]["since"], "2026-12-23T12:00:00.000Z");
    // The newest stays paused; the oldest were released first.
    assert_eq!(paused_addresses(&api, &owner).await, vec!["ibx_many100"]);
    // The received limit is the paid plan's again.
    let usage = api.get("/usage", Some(&owner.token)).await;
    assert_eq!(usage.body["messagesReceived"]["limit"], 100_000);

    // Deleting the paused one leaves nothing paused: `pause` is null, and
    // the sweep does not pause the account again while the period runs.
    let deleted = api.delete("/inboxes/ibx_many100", Some(&owner.token)).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    run_sweeps(&api).await;
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "operator");
    assert_eq!(record["pause"], Value::Null);
    // The sweep ended the pause record too, not only its display.
    {
        use diesel_async::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Bool)]
            paused: bool,
        }
        let mut conn = api.app.db.connect().await;
        let row: Row = diesel::sql_query(
            "SELECT paused_since IS NOT NULL AS paused FROM accounts WHERE id = $1",
        )
        .bind::<diesel::sql_types::Text, _>(&owner.account_id)
        .get_result(&mut conn)
        .await
        .unwrap();
        assert!(!row.paused);
    }
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_stripe_notice_pays_once_however_often_it_arrives() {
    const SECRET: &str = payments::STRIPE_WEBHOOK_SECRET;
    let stripe = PaymentStandIn::stripe().await;
    let api =
        Api::with(TestApp::spawn_with(|config| config.stripe = Some(stripe.stripe_keys())).await);
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let started = checkout(&api, &owner, "fleet", "stripe").await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
    let id = started.body["payment"]["id"].as_str().unwrap().to_owned();
    let [session] = stripe.checkouts().try_into().unwrap();
    assert!(
        session
            .text()
            .contains(&format!("client_reference_id={id}")),
        "{}",
        session.text()
    );
    assert_eq!(
        started.body["url"],
        format!("https://checkout.stripe.com/c/pay/{}", session.reference)
    );

    let body = json!({
        "id": "evt_1", "object": "event", "type": "checkout.session.completed",
        "data": { "object": { "id": session.reference, "object": "checkout.session",
                               "client_reference_id": id, "payment_status": "paid" } },
    })
    .to_string();
    let now = sealpost_kernel::Clock::now(api.app.clock.as_ref()).unix_seconds();
    let post = |signature: String| {
        let url = api.app.url("/billing/notices/stripe");
        let body = body.clone();
        async move {
            reqwest::Client::new()
                .post(url)
                .header("Stripe-Signature", signature)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    // A wrong secret or an old signature is refused and changes nothing.
    let forged = sealpost_webhooks::signature::sign("whsec_other", now, body.as_bytes());
    assert_eq!(post(forged).await, StatusCode::BAD_REQUEST);
    let stale = sealpost_webhooks::signature::sign(SECRET, now - 301, body.as_bytes());
    assert_eq!(post(stale).await, StatusCode::BAD_REQUEST);
    assert_eq!(subscription(&api, &owner).await["planId"], "free");

    let signed = sealpost_webhooks::signature::sign(SECRET, now, body.as_bytes());
    assert_eq!(post(signed.clone()).await, StatusCode::OK);
    assert_eq!(post(signed).await, StatusCode::OK);
    assert_eq!(subscription(&api, &owner).await["planId"], "fleet");
    assert_eq!(
        api.events(&owner.account_id, "subscription.updated")
            .await
            .len(),
        1
    );
    let paid = api
        .get(&format!("/billing/payments/{id}"), Some(&owner.token))
        .await;
    assert_eq!(paid.body["payment"]["status"], "paid");
    assert_eq!(paid.body["payment"]["amount"], 19_900);
    api.app.stop().await;
}

/// A crypto checkout creates its invoice through the BTCPay adapter, over
/// HTTP, and sends the payer to the invoice's checkout link.
#[tokio::test(flavor = "multi_thread")]
async fn a_crypto_checkout_creates_a_btcpay_invoice_for_the_payment() {
    let btcpay = PaymentStandIn::btcpay().await;
    let api =
        Api::with(TestApp::spawn_with(|config| config.btcpay = Some(btcpay.btcpay_keys())).await);
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let started = checkout(&api, &owner, "scale", "btcpay").await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
    let id = started.body["payment"]["id"].as_str().unwrap();
    let [invoice] = btcpay.checkouts().try_into().unwrap();
    assert_eq!(
        invoice.header("authorization"),
        Some(format!("token {}", payments::BTCPAY_API_KEY).as_str())
    );
    let body: Value = serde_json::from_slice(&invoice.body).unwrap();
    assert_eq!(body["metadata"]["orderId"], id);
    assert_eq!(
        started.body["url"],
        format!("https://btcpay.test/i/{}", invoice.reference)
    );
    assert_eq!(subscription(&api, &owner).await["planId"], "free");
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_pause_still_holds_at_deletes_at_is_deleted_and_the_pause_ends() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let mut owner = api.register(&keys).await;
    buy(&api, &owner, "operator").await;
    keyed_address(&api, &owner, &keys, "ibx_gone01").await;
    api.pair(&owner.token, "wkr_gone01").await;
    api.app.clock.advance(TimeDelta::days(30));
    run_sweeps(&api).await;
    owner.token = api.sign_in(&keys).await;
    let pause = subscription(&api, &owner).await["pause"].clone();
    assert_eq!(pause["deletesAt"], "2027-01-12T12:00:00.000Z");
    let held = api.deliver(&owner, "ibx_gone01").await;

    // A minute before deletesAt nothing goes.
    api.app
        .clock
        .advance(TimeDelta::days(21) - TimeDelta::minutes(1));
    run_sweeps(&api).await;
    assert_eq!(subscription(&api, &owner).await["pause"]["addresses"], 1);
    api.app.clock.advance(TimeDelta::minutes(1));
    // Paid at deletesAt, before the sweep ran: the plan applies, but what is
    // being deleted does not come back (so the sweep never deletes what a
    // payment released).
    buy(&api, &owner, "operator").await;
    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "operator");
    assert_eq!(record["pause"]["planId"], Value::Null);
    assert_eq!(record["pause"]["addresses"], 1);
    run_sweeps(&api).await;

    let record = subscription(&api, &owner).await;
    assert_eq!(record["planId"], "operator");
    assert_eq!(record["pause"], Value::Null);
    let addresses = api.get("/inboxes", Some(&owner.token)).await;
    assert_eq!(addresses.body["inboxes"], json!([]));
    let device = api.get("/workers/wkr_gone01", Some(&owner.token)).await;
    assert_eq!(device.status, StatusCode::NOT_FOUND);
    let message = api
        .get(&format!("/messages/{held}"), Some(&owner.token))
        .await;
    assert_eq!(message.status, StatusCode::NOT_FOUND);
    let types = api.event_types(&owner.account_id).await;
    assert!(types.contains(&"inbox.deleted".to_owned()), "{types:?}");
    assert!(types.contains(&"worker.removed".to_owned()), "{types:?}");
    // The deleted address is retired like any other.
    let again = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": "ibx_gone01", "domain": "mail.localhost" }),
        )
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mail_stored_held_after_its_address_was_released_is_listed_by_the_next_sweep() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    keyed_address(&api, &owner, &keys, "ibx_late01").await;
    let message = api.deliver(&owner, "ibx_late01").await;
    // What a delivery racing a release leaves: its RCPT saw the address
    // paused, so it was stored held, but the address is no longer paused.
    {
        use diesel_async::RunQueryDsl;
        let mut conn = api.app.db.connect().await;
        diesel::sql_query("UPDATE messages SET held = true WHERE id = $1")
            .bind::<diesel::sql_types::Text, _>(&message)
            .execute(&mut conn)
            .await
            .unwrap();
    }
    assert_eq!(
        listed(&api, &owner, "ibx_late01").await,
        Vec::<String>::new()
    );
    let before = api
        .events(&owner.account_id, "message.received")
        .await
        .len();

    api.app.clock.advance(TimeDelta::hours(1));
    run_sweeps(&api).await;
    assert_eq!(
        listed(&api, &owner, "ibx_late01").await,
        vec![message.clone()]
    );
    let received = api.events(&owner.account_id, "message.received").await;
    assert_eq!(received.len(), before + 1);
    assert_eq!(
        received.last().unwrap(),
        &(
            json!({ "messageId": message, "inboxId": "ibx_late01" }),
            "2026-11-22T13:00:00".to_owned()
        )
    );
    api.app.stop().await;
}

/// Released held mail takes a new place in commit order: a waiter whose
/// cursor is already past later mail still gets it when it is released.
#[tokio::test(flavor = "multi_thread")]
async fn a_waiter_past_held_mail_gets_it_when_it_is_released() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    keyed_address(&api, &owner, &keys, "ibx_late02").await;
    let held = api.deliver(&owner, "ibx_late02").await;
    {
        use diesel_async::RunQueryDsl;
        let mut conn = api.app.db.connect().await;
        diesel::sql_query("UPDATE messages SET held = true WHERE id = $1")
            .bind::<diesel::sql_types::Text, _>(&held)
            .execute(&mut conn)
            .await
            .unwrap();
    }
    api.app.clock.advance(TimeDelta::minutes(1));
    let later = api.deliver(&owner, "ibx_late02").await;
    let ids = |reply: &Reply| -> Vec<String> {
        reply.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|message| message["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let seen = api
        .get(
            "/inboxes/ibx_late02/messages/wait?timeout=1",
            Some(&owner.token),
        )
        .await;
    assert_eq!(seen.status, StatusCode::OK);
    assert_eq!(ids(&seen), vec![later]);
    let cursor = seen.body["cursor"].as_str().unwrap().to_owned();

    api.app.clock.advance(TimeDelta::hours(1));
    run_sweeps(&api).await;
    let released = api
        .get(
            &format!("/inboxes/ibx_late02/messages/wait?timeout=1&after={cursor}"),
            Some(&owner.token),
        )
        .await;
    assert_eq!(released.status, StatusCode::OK);
    assert_eq!(ids(&released), vec![held]);
    api.app.stop().await;
}

/// Two checkouts started on Free: the cheaper invoice expires, the dearer
/// one is paid, then the expired one confirms (a late crypto payment). It
/// buys nothing: the plan, its period and every address stay, and the
/// payment is paid with its refund due (docs/api.md, Billing).
#[tokio::test(flavor = "multi_thread")]
async fn a_cheaper_invoice_confirmed_after_an_upgrade_is_a_credit_not_a_downgrade() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let operator = checkout(&api, &owner, "operator", "sandbox").await;
    let operator_url = operator.body["url"].as_str().unwrap().to_owned();
    let operator_id = operator.body["payment"]["id"].as_str().unwrap().to_owned();
    let (status, page) = sandbox_form(&operator_url, "failed").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    buy(&api, &owner, "scale").await;
    // More than Operator holds.
    for n in 0..101 {
        api.create_address(&owner.token, &format!("ibx_order{n:03}"))
            .await;
    }
    let upgraded = subscription(&api, &owner).await;
    assert_eq!(upgraded["planId"], "scale");

    api.app.clock.advance(TimeDelta::hours(1));
    let (status, page) = sandbox_form(&operator_url, "paid").await;
    assert_eq!(status, StatusCode::OK, "{page}");

    assert_eq!(subscription(&api, &owner).await, upgraded);
    assert_eq!(paused_addresses(&api, &owner).await, Vec::<String>::new());
    assert_eq!(
        api.events(&owner.account_id, "subscription.updated")
            .await
            .len(),
        1,
        "only the upgrade"
    );
    let paid = api
        .get(
            &format!("/billing/payments/{operator_id}"),
            Some(&owner.token),
        )
        .await;
    assert_eq!(paid.body["payment"]["status"], "paid");
    assert_eq!(refund_due(&api, &operator_id).await, Some(true));
    api.app.stop().await;
}

/// The payment's refund flag, from the database (an operator's query).
pub(crate) async fn refund_due(api: &Api, payment: &str) -> Option<bool> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        refund_due: bool,
    }
    let mut conn = api.app.db.connect().await;
    let rows: Vec<Row> = diesel::sql_query("SELECT refund_due FROM payments WHERE id = $1")
        .bind::<diesel::sql_types::Text, _>(payment)
        .load(&mut conn)
        .await
        .unwrap();
    rows.as_slice().first().map(|row| row.refund_due)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_notice_arriving_twice_at_once_pays_once() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let started = checkout(&api, &owner, "scale", "sandbox").await;
    let url = started.body["url"].as_str().unwrap().to_owned();
    for _ in 0..5 {
        let (first, second) = tokio::join!(sandbox_form(&url, "paid"), sandbox_form(&url, "paid"));
        assert_eq!((first.0, second.0), (StatusCode::OK, StatusCode::OK));
    }
    assert_eq!(
        subscription(&api, &owner).await["renewsAt"],
        "2026-12-22T12:00:00.000Z"
    );
    assert_eq!(
        api.events(&owner.account_id, "subscription.updated")
            .await
            .len(),
        1
    );
    api.app.stop().await;
}

/// The sweep reads what an expired pause holds, then deletes it row by row:
/// whatever a payment released in between stays, because the store re-checks
/// the pause's `deletesAt` and the row's pause in the transaction that deletes.
#[tokio::test(flavor = "multi_thread")]
async fn a_release_between_the_sweeps_read_and_its_delete_wins() {
    use sealpost_activity::Records;
    use sealpost_billing::{BillingRepository, Deleted, PausedDeletion};
    use sealpost_kernel::{AccountId, AddressId, DeviceId, Timestamp};

    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let mut owner = api.register(&keys).await;
    buy(&api, &owner, "operator").await;
    keyed_address(&api, &owner, &keys, "ibx_race01").await;
    keyed_address(&api, &owner, &keys, "ibx_race02").await;
    api.pair(&owner.token, "wkr_race01").await;
    api.app.clock.advance(TimeDelta::days(30));
    run_sweeps(&api).await;
    owner.token = api.sign_in(&keys).await;
    let pause = subscription(&api, &owner).await["pause"].clone();
    let deletes_at = Timestamp::parse(pause["deletesAt"].as_str().unwrap()).unwrap();

    let store = sealpost_store_pg::PgStore::connect(&api.app.db.url, 2).unwrap();
    let account = AccountId::parse(&owner.account_id).unwrap();
    // What a sweep at deletesAt reads.
    let held = store.paused_holdings(&account).await.unwrap();
    assert_eq!(held.addresses.len(), 2);
    assert_eq!(held.devices, vec![DeviceId::parse("wkr_race01").unwrap()]);
    let delete_address = |id: &str, due: Timestamp| {
        let id = AddressId::parse(id).unwrap();
        let mut records = Records::new();
        records.address_deleted(&account, &id, due);
        PausedDeletion {
            account: account.clone(),
            id,
            due,
            assigned: Vec::new(),
            records,
        }
    };

    // Decided before deletesAt: not due, nothing goes.
    let early = delete_address("ibx_race01", deletes_at - TimeDelta::minutes(1));
    assert_eq!(
        store.delete_paused_address(early).await.unwrap(),
        Deleted::Spared
    );
    // A release of one address (what a payment's fit does to a row) after
    // the read: that one stays, the one still paused goes.
    {
        use diesel_async::RunQueryDsl;
        let mut conn = api.app.db.connect().await;
        diesel::sql_query("UPDATE addresses SET paused_at = NULL WHERE id = 'ibx_race01'")
            .execute(&mut conn)
            .await
            .unwrap();
    }
    for (id, outcome) in [
        ("ibx_race01", Deleted::Spared),
        ("ibx_race02", Deleted::Deleted),
    ] {
        let deletion = delete_address(id, deletes_at);
        assert_eq!(
            store.delete_paused_address(deletion).await.unwrap(),
            outcome
        );
    }
    // A payment before deletesAt releases the rest and ends the pause: the
    // device the sweep read as paused stays.
    buy(&api, &owner, "operator").await;
    assert_eq!(subscription(&api, &owner).await["pause"], Value::Null);
    let device = DeviceId::parse("wkr_race01").unwrap();
    let mut records = Records::new();
    records.device_removed(&account, &device, deletes_at);
    let removal = PausedDeletion {
        account: account.clone(),
        id: device,
        due: deletes_at,
        assigned: Vec::new(),
        records,
    };
    assert_eq!(
        store.remove_paused_device(removal).await.unwrap(),
        Deleted::Spared
    );

    let addresses = api.get("/inboxes", Some(&owner.token)).await;
    let left: Vec<&str> = addresses.body["inboxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|address| address["id"].as_str().unwrap())
        .collect();
    assert_eq!(left, vec!["ibx_race01"]);
    let device = api.get("/workers/wkr_race01", Some(&owner.token)).await;
    assert_eq!(device.status, StatusCode::OK);
    assert_eq!(
        api.event_payloads(&owner.account_id, "inbox.deleted").await,
        vec![json!({ "inboxId": "ibx_race02" })]
    );
    assert!(
        api.event_payloads(&owner.account_id, "worker.removed")
            .await
            .is_empty()
    );
    api.app.stop().await;
}
