//! The sender against a real HTTPS receiver: TLS with a test CA, a pinned
//! host, signatures checked against the raw bytes, the retry schedule under
//! the test clock.

use chrono::TimeDelta;
use reqwest::StatusCode;
use sealpost_testkit::TestApp;
use sealpost_webhooks::Sender;
use serde_json::{Value, json};

use crate::support::{Api, SignedIn, new_keys};
use sealpost_testkit::receiver::Receiver;

struct Setup {
    api: Api,
    owner: SignedIn,
    receiver: Receiver,
    secret: String,
}

async fn setup(status: u16, events: Value) -> Setup {
    let receiver = Receiver::start(status).await;
    let ca_file =
        std::env::temp_dir().join(format!("sealpost-test-ca-{}.pem", receiver.addr.port()));
    std::fs::write(&ca_file, &receiver.ca_pem).unwrap();
    let addr = receiver.addr;
    let app = TestApp::spawn_with(move |config| {
        config.webhook_resolve = Some(format!("hooks.test=127.0.0.1:{}", addr.port()));
        config.webhook_ca_file = Some(ca_file);
    })
    .await;
    let api = Api::with(app);
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    let created = api
        .post(
            "/webhook-endpoints",
            Some(&owner.token),
            json!({ "id": "whk_hook01", "url": format!("https://hooks.test:{}/hook", addr.port()), "events": events }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let secret = created.body["secret"].as_str().unwrap().to_owned();
    Setup {
        api,
        owner,
        receiver,
        secret,
    }
}

fn sender(api: &Api) -> Sender {
    let store = sealpost_store_pg::PgStore::connect(&api.app.db.url, 4).unwrap();
    sealpost_jobs::webhook_sender(&store, &api.app.config, api.app.clock.clone()).unwrap()
}

async fn deliveries(api: &Api, owner: &SignedIn) -> Vec<Value> {
    api.get(
        "/webhook-endpoints/whk_hook01/deliveries",
        Some(&owner.token),
    )
    .await
    .body["deliveries"]
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn events_arrive_signed_over_https_with_every_header() {
    let Setup {
        api,
        owner,
        receiver,
        secret,
    } = setup(200, json!(["inbox.created"])).await;
    api.create_address(&owner.token, "ibx_hooked1").await;
    let sender = sender(&api);
    assert_eq!(sender.run_once(10).await.unwrap(), (1, 1));

    let requests = receiver.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    let now = sealpost_kernel::Clock::now(&*api.app.clock).unix_seconds();
    let signature = request.header("Service-Signature").unwrap();
    sealpost_webhooks::verify(&secret, signature, &request.body, now)
        .expect("signature over the raw body");
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(body["type"], "inbox.created");
    assert_eq!(body["payload"], json!({ "inboxId": "ibx_hooked1" }));
    assert_eq!(request.header("Service-Event-Id"), body["id"].as_str());
    assert_eq!(request.header("Service-Event-Type"), Some("inbox.created"));
    assert_eq!(request.header("User-Agent"), Some("Service-Webhooks/1"));
    assert!(
        request
            .header("Service-Delivery-Id")
            .unwrap()
            .starts_with("whd_")
    );
    // The SDK's receiver helper accepts it too.
    let headers: Vec<(String, String)> = request.headers.clone();
    let now_ts = sealpost_kernel::Clock::now(&*api.app.clock);
    sealpost_client::verify_webhook(&secret, &headers, &request.body, now_ts)
        .expect("the SDK verifies it");

    let log = deliveries(&api, &owner).await;
    assert_eq!(log[0]["status"], "succeeded");
    assert_eq!(log[0]["responseStatus"], 200);
    let webhook =
        api.get("/webhook-endpoints", Some(&owner.token)).await.body["webhooks"][0].clone();
    assert!(webhook["lastSuccessAt"].is_string());

    // Redelivery: a new delivery id, the same event id.
    let delivery_id = log[0]["id"].as_str().unwrap();
    api.post(
        &format!("/webhook-endpoints/whk_hook01/deliveries/{delivery_id}/redeliver"),
        Some(&owner.token),
        json!({}),
    )
    .await;
    sender.run_once(10).await.unwrap();
    let requests = receiver.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].header("Service-Event-Id"),
        requests[0].header("Service-Event-Id")
    );
    assert_ne!(
        requests[1].header("Service-Delivery-Id"),
        requests[0].header("Service-Delivery-Id")
    );

    // Events the filter does not take create nothing.
    api.create_address(&owner.token, "ibx_hooked2").await;
    api.delete("/inboxes/ibx_hooked2", Some(&owner.token)).await;
    assert_eq!(
        sender.run_once(10).await.unwrap(),
        (2, 1),
        "only inbox.created is sent"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sender_that_dies_mid_attempt_loses_nothing() {
    let Setup {
        api,
        owner,
        receiver,
        ..
    } = setup(200, json!(["*"])).await;
    api.create_address(&owner.token, "ibx_crash01").await;
    // A first sender fans out and leases the delivery, then dies before sending.
    use sealpost_webhooks::WebhookRepository;
    let store = sealpost_store_pg::PgStore::connect(&api.app.db.url, 2).unwrap();
    store
        .fan_out(100, &sealpost_webhooks::fan_out_rule)
        .await
        .unwrap();
    let now = sealpost_kernel::Clock::now(&*api.app.clock);
    let leased = store
        .claim_due(now, now + TimeDelta::seconds(60), 10)
        .await
        .unwrap();
    assert_eq!(leased.len(), 1);
    drop(leased);

    // Another sender does not take it while the lease runs...
    let sender = sender(&api);
    assert_eq!(sender.run_once(10).await.unwrap(), (0, 0));
    // ... and delivers it once the lease has run out.
    api.app.clock.advance(TimeDelta::seconds(61));
    assert_eq!(sender.run_once(10).await.unwrap(), (0, 1));
    assert_eq!(receiver.requests().len(), 1);
    assert_eq!(deliveries(&api, &owner).await[0]["status"], "succeeded");
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_follow_the_retry_schedule_and_three_days_switch_the_endpoint_off() {
    let Setup {
        api,
        owner,
        receiver,
        ..
    } = setup(500, json!(["*"])).await;
    api.create_address(&owner.token, "ibx_retry01").await;
    let sender = sender(&api);
    sender.run_once(10).await.unwrap();
    let first = &deliveries(&api, &owner).await[0];
    assert_eq!(
        (first["status"].as_str(), first["attempts"].as_u64()),
        (Some("pending"), Some(1))
    );
    assert_eq!(first["responseStatus"], 500);
    assert_eq!(first["nextAttemptAt"], "2026-11-22T12:01:00.000Z");

    // Not due yet: nothing is sent.
    api.app.clock.advance(TimeDelta::seconds(59));
    assert_eq!(sender.run_once(10).await.unwrap().1, 0);
    // The schedule: 1 min, 5 min, 30 min, 2 h, 6 h, 12 h, 12 h; eight attempts in all.
    api.app.clock.advance(TimeDelta::seconds(1));
    let waits = [5, 30, 120, 360, 720, 720];
    sender.run_once(10).await.unwrap();
    for minutes in waits {
        api.app.clock.advance(TimeDelta::minutes(minutes));
        assert_eq!(
            sender.run_once(10).await.unwrap().1,
            1,
            "attempt after {minutes} min"
        );
    }
    let done = &deliveries(&api, &owner).await[0];
    assert_eq!(
        (done["status"].as_str(), done["attempts"].as_u64()),
        (Some("failed"), Some(8))
    );
    assert_eq!(receiver.requests().len(), 8);
    let webhook =
        api.get("/webhook-endpoints", Some(&owner.token)).await.body["webhooks"][0].clone();
    assert_eq!(
        webhook["status"], "active",
        "32.6 hours of failures: not three days yet"
    );
    assert_eq!(webhook["failingSince"], "2026-11-22T12:00:00.000Z");

    // Keep failing until three days have passed since the first failure.
    api.app
        .clock
        .set(sealpost_kernel::Timestamp::parse("2026-11-25T11:59:00Z").unwrap());
    api.create_address(&owner.token, "ibx_retry02").await;
    sender.run_once(10).await.unwrap();
    api.create_address(&owner.token, "ibx_retry03").await;
    api.app.clock.advance(TimeDelta::minutes(1));
    sender.run_once(10).await.unwrap();
    let webhook =
        api.get("/webhook-endpoints", Some(&owner.token)).await.body["webhooks"][0].clone();
    assert_eq!(
        (
            webhook["status"].as_str(),
            webhook["disabledReason"].as_str()
        ),
        (Some("disabled"), Some("failing"))
    );
    let pending = api
        .get(
            "/webhook-endpoints/whk_hook01/deliveries?status=pending",
            Some(&owner.token),
        )
        .await;
    assert_eq!(
        pending.body["deliveries"],
        json!([]),
        "its pending deliveries were failed"
    );

    // Events while it is off are never sent, also after it is switched on again.
    let sent_before = receiver.requests().len();
    api.create_address(&owner.token, "ibx_offline").await;
    sender.run_once(10).await.unwrap();
    receiver.answer(200);
    let on = api
        .patch(
            "/webhook-endpoints/whk_hook01",
            Some(&owner.token),
            json!({ "status": "active" }),
        )
        .await;
    assert_eq!(
        on.body["webhook"]["failingSince"],
        Value::Null,
        "enabling clears the failure record"
    );
    sender.run_once(10).await.unwrap();
    assert_eq!(receiver.requests().len(), sent_before);
    api.app.clock.advance(TimeDelta::seconds(1));
    api.create_address(&owner.token, "ibx_online1").await;
    sender.run_once(10).await.unwrap();
    assert_eq!(receiver.requests().len(), sent_before + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_goes_out_while_the_plan_lacks_webhooks() {
    let Setup {
        api,
        owner,
        receiver,
        ..
    } = setup(200, json!(["*"])).await;
    api.create_address(&owner.token, "ibx_plan001").await;
    let sender = sender(&api);
    // Fanned out while on Operator, then the plan drops to Free before sending.
    use sealpost_webhooks::WebhookRepository;
    let store = sealpost_store_pg::PgStore::connect(&api.app.db.url, 2).unwrap();
    store
        .fan_out(100, &sealpost_webhooks::fan_out_rule)
        .await
        .unwrap();
    api.set_plan(&owner.account_id, "free").await;
    sender.run_once(10).await.unwrap();
    assert!(receiver.requests().is_empty());
    api.set_plan(&owner.account_id, "operator").await;
    let log = deliveries(&api, &owner).await;
    assert_eq!(
        (log[0]["status"].as_str(), log[0]["error"].as_str()),
        (Some("failed"), Some("plan has no webhooks"))
    );
    // While on Free, new events create nothing either.
    api.set_plan(&owner.account_id, "free").await;
    api.create_address(&owner.token, "ibx_plan002").await;
    sender.run_once(10).await.unwrap();
    api.set_plan(&owner.account_id, "operator").await;
    assert_eq!(deliveries(&api, &owner).await.len(), 1);
    assert!(receiver.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_suspended_account_s_webhooks_wait_and_go_out_after_the_suspension() {
    let Setup {
        api,
        owner,
        receiver,
        ..
    } = setup(200, json!(["inbox.created"])).await;
    let (_, token) = api.app.services().staff.create_token("ada").await.unwrap();
    let staff = sealpost_client::Client::new(api.app.base_url.clone())
        .unwrap()
        .with_token(token);
    api.create_address(&owner.token, "ibx_held001").await;
    staff
        .set_suspended(&owner.account_id, true, "spam run")
        .await
        .unwrap();
    let sender = sender(&api);
    sender.run_once(10).await.unwrap();
    sender.run_once(10).await.unwrap();
    assert!(
        receiver.requests().is_empty(),
        "nothing goes out while suspended"
    );

    staff
        .set_suspended(&owner.account_id, false, "appeal granted")
        .await
        .unwrap();
    sender.run_once(10).await.unwrap();
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1, "the held delivery goes out, once");
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(body["payload"], json!({ "inboxId": "ibx_held001" }));
    let log = deliveries(&api, &owner).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["status"], "succeeded");
    assert_eq!(
        log[0]["attempts"], 1,
        "no attempt was spent while suspended"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_name_resolving_to_loopback_is_refused_unless_pinned() {
    let Setup {
        api,
        owner,
        receiver,
        ..
    } = setup(200, json!(["*"])).await;
    // Registration refuses `localhost`; a name that resolves there by DNS is
    // caught at connect time. Plant such a URL directly.
    {
        use diesel_async::RunQueryDsl;
        let mut conn = api.app.db.connect().await;
        diesel::sql_query("UPDATE webhooks SET url = $1")
            .bind::<diesel::sql_types::Text, _>(format!(
                "https://localhost:{}/hook",
                receiver.addr.port()
            ))
            .execute(&mut conn)
            .await
            .unwrap();
    }
    api.create_address(&owner.token, "ibx_ssrf001").await;
    sender(&api).run_once(10).await.unwrap();
    assert!(
        receiver.requests().is_empty(),
        "nothing reached the loopback receiver"
    );
    let log = deliveries(&api, &owner).await;
    assert_eq!(log[0]["status"], "pending");
    assert!(
        log[0]["error"].as_str().unwrap().contains("not allowed"),
        "{}",
        log[0]["error"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn deliveries_wait_while_staff_pause_webhooks_and_go_out_after() {
    let Setup {
        api,
        owner,
        receiver,
        ..
    } = setup(200, json!(["inbox.created"])).await;
    let (_, token) = api.app.services().staff.create_token("ada").await.unwrap();
    let staff = sealpost_client::Client::new(api.app.base_url.clone())
        .unwrap()
        .with_token(token);
    let switch = |paused| sealpost_client::support::SwitchesRequest {
        webhooks_paused: Some(paused),
        ..Default::default()
    };
    staff.update_switches(&switch(true)).await.unwrap();
    api.create_address(&owner.token, "ibx_paused01").await;
    let sender = sender(&api);
    sender.run_once(10).await.unwrap();
    sender.run_once(10).await.unwrap();
    assert!(
        receiver.requests().is_empty(),
        "nothing goes out while webhooks are paused"
    );

    staff.update_switches(&switch(false)).await.unwrap();
    sender.run_once(10).await.unwrap();
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1, "the waiting delivery goes out, once");
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(body["payload"], json!({ "inboxId": "ibx_paused01" }));
    let log = deliveries(&api, &owner).await;
    assert_eq!(log[0]["status"], "succeeded");
    assert_eq!(log[0]["attempts"], 1, "no attempt was spent while paused");
}
