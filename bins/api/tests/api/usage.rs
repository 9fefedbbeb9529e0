//! Plans, usage, overview, subscription and plan changes over HTTP.

use chrono::TimeDelta;
use reqwest::StatusCode;
use sealpost_seal::b64;
use serde_json::{Value, json};

use crate::support::{Api, SignedIn, new_keys};

async fn change_plan(api: &Api, owner: &SignedIn, plan: &str) -> crate::support::Reply {
    api.post(
        "/subscription/plan",
        Some(&owner.token),
        json!({ "planId": plan }),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_matches_the_counters_after_a_scripted_sequence() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;

    // Four addresses, one of them assigned to the one paired device.
    let created = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": "ibx_usage01", "domain": "mail.localhost", "prefix": "use",
                    "publicKey": b64::encode(&keys.address_public_key("ibx_usage01", 0)) }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    for id in ["ibx_usage02", "ibx_usage03", "ibx_usage04"] {
        api.create_address(&owner.token, id).await;
    }
    let device = api.pair(&owner.token, "wkr_usage01").await;
    let assigned = api
        .post(
            "/workers/wkr_usage01/inboxes",
            Some(&owner.token),
            json!({ "inboxId": "ibx_usage02" }),
        )
        .await;
    assert_eq!(assigned.status, StatusCode::OK, "{}", assigned.body);

    // Two messages in; one body read (one object read), one marked read.
    let first = api.deliver(&owner, "ibx_usage01").await;
    api.deliver(&owner, "ibx_usage01").await;
    let read = api
        .get(&format!("/messages/{first}"), Some(&owner.token))
        .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    let marked = api
        .post(
            &format!("/messages/{first}/read"),
            Some(&owner.token),
            json!({}),
        )
        .await;
    assert_eq!(marked.status, StatusCode::NO_CONTENT, "{}", marked.body);

    let webhook = api
        .post(
            "/webhook-endpoints",
            Some(&owner.token),
            json!({ "id": "whk_usage01", "url": "https://hooks.example.com/usage", "events": ["*"] }),
        )
        .await;
    assert_eq!(webhook.status, StatusCode::CREATED, "{}", webhook.body);

    // What the two messages take sealed: their content boxes as served, in
    // the binary layout they are stored in (neither has an attachment).
    let listed = api
        .get("/inboxes/ibx_usage01/messages", Some(&owner.token))
        .await;
    let stored_bytes: usize = listed.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| {
            let sealed: sealpost_seal::SealedBox =
                serde_json::from_value(message["content"].clone()).unwrap();
            sealed.to_binary().unwrap().len()
        })
        .sum();

    // The account was created at 12:00:00 on the test clock.
    api.app.clock.advance(TimeDelta::minutes(30));
    let expected = json!({
        "plan": { "id": "operator", "name": "Operator" },
        "addresses": { "used": 4, "limit": 100, "remaining": 96, "assigned": 1 },
        "messagesReceived": { "used": 2, "limit": 100_000, "windowEndsAt": "2026-12-22T12:00:00.000Z" },
        "messagesSent": {
            "hour": { "used": 0, "limit": 60, "windowEndsAt": "2026-11-22T13:00:00.000Z" },
            "day": { "used": 0, "limit": 1_000, "windowEndsAt": "2026-11-23T00:00:00.000Z" },
        },
        "objectReads": { "used": 1, "limit": 10_000, "windowEndsAt": "2026-11-22T13:00:00.000Z" },
        "devices": { "used": 1, "limit": 10 },
        "paired": { "used": 1, "limit": 10 },
        "agents": { "used": 0, "allowed": true },
        "apiKeys": { "used": 0, "limit": 25, "allowed": true },
        "webhooks": { "used": 1, "limit": 10, "allowed": true },
        "domains": { "used": 0, "limit": 0 },
        "messagesStored": 2,
        "storedBytes": { "used": stored_bytes, "limit": 25_u64 << 30 },
    });
    let usage = api.get("/usage", Some(&owner.token)).await;
    assert_eq!(usage.status, StatusCode::OK, "{}", usage.body);
    assert_eq!(usage.body, expected);
    // Reading usage spends nothing: the same numbers again, from any bearer.
    let again = api.get("/usage", Some(&owner.token)).await;
    assert_eq!(again.body, expected);
    let by_device = api.get("/usage", Some(&device.credential)).await;
    assert_eq!(by_device.body, expected);

    let overview = api.get("/overview", Some(&owner.token)).await;
    assert_eq!(overview.status, StatusCode::OK, "{}", overview.body);
    assert_eq!(
        overview.body,
        json!({
            "planId": "operator",
            "addresses": { "total": 4, "assigned": 1, "unassigned": 3 },
            "devices": { "total": 1, "online": 1, "offline": 0, "disabled": 0 },
            "agents": 0,
            "messages": { "stored": 2, "unread": 1, "held": 0 },
            "webhooks": { "total": 1, "active": 1, "failing": 0, "disabled": 0 },
        })
    );

    let subscription = api.get("/subscription", Some(&owner.token)).await;
    assert_eq!(
        subscription.body,
        json!({ "subscription": {
            "planId": "operator", "planName": "Operator",
            "balance": { "amount": 0, "currency": "USD" },
            "pause": null, "renewsAt": null, "pendingPlanId": null, "pendingAt": null,
            "renewing": false,
        } })
    );

    // The windows roll: a new clock hour clears object reads; mail past its
    // retention is no longer stored, though it still counts as received.
    api.app.clock.advance(TimeDelta::days(8));
    let later = api.get("/usage", Some(&owner.token)).await;
    assert_eq!(later.body["objectReads"]["used"], 0);
    assert_eq!(
        later.body["objectReads"]["windowEndsAt"],
        "2026-11-30T13:00:00.000Z"
    );
    assert_eq!(later.body["messagesReceived"]["used"], 2);
    assert_eq!(later.body["messagesStored"], 0);
    // Past the 30-day session too: sign in again.
    api.app.clock.advance(TimeDelta::days(22));
    let token = api.sign_in(&keys).await;
    let next_window = api.get("/usage", Some(&token)).await;
    assert_eq!(
        next_window.body["messagesReceived"],
        json!({ "used": 0, "limit": 100_000, "windowEndsAt": "2027-01-21T12:00:00.000Z" })
    );

    let anonymous = api.get("/usage", None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_downgrade_to_free_is_refused_until_addresses_and_devices_fit() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    for id in ["ibx_down001", "ibx_down002", "ibx_down003", "ibx_down004"] {
        api.create_address(&owner.token, id).await;
    }
    api.pair(&owner.token, "wkr_down001").await;

    // Four addresses, one device.
    let refused = change_plan(&api, &owner, "free").await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::CONFLICT, "downgrade_blocked")
    );
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("4 addresses"), "{message}");
    assert!(!message.contains("device"), "{message}");

    // Three addresses, two devices.
    let deleted = api.delete("/inboxes/ibx_down004", Some(&owner.token)).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    api.pair(&owner.token, "wkr_down002").await;
    let refused = change_plan(&api, &owner, "free").await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::CONFLICT, "downgrade_blocked")
    );
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("2 paired devices"), "{message}");
    assert!(!message.contains("addresses"), "{message}");
    assert!(
        api.event_payloads(&owner.account_id, "subscription.updated")
            .await
            .is_empty(),
        "a refused change writes nothing"
    );

    // Three addresses, one device: it fits.
    let removed = api.delete("/workers/wkr_down002", Some(&owner.token)).await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT);
    let moved = change_plan(&api, &owner, "free").await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.body);
    assert_eq!(moved.body["subscription"]["planId"], "free");
    assert_eq!(moved.body["subscription"]["planName"], "Free");
    let me = api.get("/accounts/me", Some(&owner.token)).await;
    assert_eq!(me.body["account"]["plan"]["id"], "free");
    let usage = api.get("/usage", Some(&owner.token)).await;
    assert_eq!(usage.body["plan"], json!({ "id": "free", "name": "Free" }));
    assert_eq!(
        usage.body["addresses"],
        json!({ "used": 3, "limit": 3, "remaining": 0, "assigned": 0 })
    );

    // subscription.updated, in the activity log and the outbox.
    assert_eq!(api.activity_kinds(&owner).await[0], "subscription.updated");
    assert_eq!(
        api.event_payloads(&owner.account_id, "subscription.updated")
            .await,
        vec![json!({ "planId": "free" })]
    );

    // Moving to the plan already held changes nothing and records nothing.
    let same = change_plan(&api, &owner, "free").await;
    assert_eq!(same.status, StatusCode::OK, "{}", same.body);
    assert_eq!(same.body["subscription"]["planId"], "free");
    assert_eq!(
        api.event_payloads(&owner.account_id, "subscription.updated")
            .await
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn upgrades_need_payment_and_the_request_is_checked() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;

    for plan in ["operator", "scale", "fleet", "enterprise"] {
        let upgrade = change_plan(&api, &owner, plan).await;
        assert_eq!(
            (upgrade.status, upgrade.code()),
            (StatusCode::PAYMENT_REQUIRED, "payment_required"),
            "{plan}"
        );
    }
    let unknown = change_plan(&api, &owner, "gold").await;
    assert_eq!(
        (unknown.status, unknown.code()),
        (StatusCode::BAD_REQUEST, "invalid_field")
    );
    assert!(
        unknown.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("planId")
    );
    let missing = api
        .post("/subscription/plan", Some(&owner.token), json!({}))
        .await;
    assert_eq!(missing.code(), "invalid_field");

    // Session only: a device credential may read, not change.
    let device = api.pair(&owner.token, "wkr_upgr001").await;
    let by_device = change_plan(
        &api,
        &SignedIn {
            token: device.credential.clone(),
            account_id: owner.account_id.clone(),
        },
        "free",
    )
    .await;
    assert_eq!(
        (by_device.status, by_device.code()),
        (StatusCode::FORBIDDEN, "session_required")
    );
    let read = api.get("/subscription", Some(&device.credential)).await;
    assert_eq!(read.body["subscription"]["planId"], "free");

    // From Scale down to Operator needs no payment; Enterprise is by contract.
    api.set_plan(&owner.account_id, "scale").await;
    let enterprise = change_plan(&api, &owner, "enterprise").await;
    assert_eq!(enterprise.code(), "payment_required");
    let down = change_plan(&api, &owner, "operator").await;
    assert_eq!(down.status, StatusCode::OK, "{}", down.body);
    assert_eq!(
        api.event_payloads(&owner.account_id, "subscription.updated")
            .await,
        vec![json!({ "planId": "operator" })]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn plans_list_the_contract_table() {
    let api = Api::spawn().await;
    let plans = api.get("/plans", None).await;
    assert_eq!(plans.status, StatusCode::OK, "{}", plans.body);
    #[allow(clippy::too_many_arguments)]
    fn plan(
        id: &str,
        name: &str,
        price: Value,
        purchasable: bool,
        limits: (u64, Value, u64, u64, u64, u64, u64, u64, u64, u64, bool),
    ) -> Value {
        let (addresses, devices, received, hour, day, reads, gib, domains, webhooks, team, keys) =
            limits;
        json!({
            "id": id, "name": name, "priceCents": price, "currency": "USD", "period": "30 days",
            "purchasable": purchasable,
            "limits": {
                "addresses": addresses, "devices": devices, "receivedPer30Days": received,
                "sendsPerHour": hour, "sendsPerDay": day, "objectReadsPerHour": reads,
                "storedBytes": gib << 30, "ownDomains": domains, "webhooks": webhooks, "teamMembers": team,
                "apiKeys": if keys { 25 } else { 0 }, "agents": keys,
            },
        })
    }
    assert_eq!(
        plans.body,
        json!({ "plans": [
            plan("free", "Free", json!(0), false,
                (3, json!(1), 3_000, 60, 200, 1_000, 1, 0, 0, 0, false)),
            plan("operator", "Operator", json!(900), true,
                (100, json!(10), 100_000, 60, 1_000, 10_000, 25, 0, 10, 0, true)),
            plan("scale", "Scale", json!(4_900), true,
                (1_000, json!(50), 1_000_000, 60, 5_000, 50_000, 250, 10, 10, 0, true)),
            plan("fleet", "Fleet", json!(19_900), true,
                (10_000, Value::Null, 20_000_000, 600, 20_000, 200_000, 2_048, 50, 10, 25, true)),
            plan("enterprise", "Enterprise", Value::Null, false,
                (100_000, Value::Null, 100_000_000, 3_600, 100_000, 1_000_000, 20_480, 50, 10, 100, true)),
        ] })
    );
}
