//! The sender against a real HTTPS receiver: TLS with a test CA, a pinned
//! host, signatures checked against the raw bytes, the retry schedule under
//! the test clock.

use chrono::TimeDelta;
use reqwest::StatusCode;
use sealpost_testkit::TestApp;
use sealpost_webhooks::Sender;
use serde_json::{Value, json};

use crate::support::{Api, SignedIn, new_keys};
use diesel_async::RunQueryDsl;
use sealpost_seal::ServerKeys;
use sealpost_testkit::receiver::Receiver;

/// The server key of these tests, known so a test can seal a value in the
/// old form by hand.
const SERVER_KEY: [u8; 32] = [21; 32];

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
        config.server_keys = Some(ServerKeys::new(SERVER_KEY, []));
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
    let staff = crate::support::staff_client(&api, &crate::support::staff_token(&api, "ada").await);
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
    let staff = crate::support::staff_client(&api, &crate::support::staff_token(&api, "ada").await);
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

/// `secret` sealed as values were before they were bound to their row:
/// `1 || key id || nonce || AES-256-GCM(secret)` with the purpose alone as
/// associated data, the key id the first 4 bytes of
/// HMAC-SHA256(key, "sealpost server key id").
fn sealed_in_the_old_form(key: [u8; 32], purpose: &str, secret: &str) -> Vec<u8> {
    use ring::{aead, hmac};
    let id = hmac::sign(
        &hmac::Key::new(hmac::HMAC_SHA256, &key),
        b"sealpost server key id",
    );
    let nonce = sealpost_seal::random_bytes::<12>();
    let aead_key = aead::LessSafeKey::new(aead::UnboundKey::new(&aead::AES_256_GCM, &key).unwrap());
    let mut body = secret.as_bytes().to_vec();
    aead_key
        .seal_in_place_append_tag(
            aead::Nonce::assume_unique_for_key(nonce),
            aead::Aad::from(purpose.as_bytes()),
            &mut body,
        )
        .unwrap();
    [&[1][..], &id.as_ref()[..4], &nonce, &body].concat()
}

#[derive(diesel::QueryableByName)]
struct SealedRow {
    #[diesel(sql_type = diesel::sql_types::Bytea)]
    secret_sealed: Vec<u8>,
}

async fn sealed_secret(api: &Api, id: &str) -> Vec<u8> {
    let mut conn = api.app.db.connect().await;
    diesel::sql_query("SELECT secret_sealed FROM webhooks WHERE id = $1")
        .bind::<diesel::sql_types::Text, _>(id)
        .get_result::<SealedRow>(&mut conn)
        .await
        .unwrap()
        .secret_sealed
}

async fn set_sealed_secret(api: &Api, id: &str, sealed: &[u8]) {
    let mut conn = api.app.db.connect().await;
    let updated = diesel::sql_query("UPDATE webhooks SET secret_sealed = $1 WHERE id = $2")
        .bind::<diesel::sql_types::Bytea, _>(sealed)
        .bind::<diesel::sql_types::Text, _>(id)
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(updated, 1);
}

/// Someone who can write the database but holds no server key copies the
/// sealed secret of a webhook whose secret they know onto another one: the
/// other endpoint's deliveries must not go out signed with the known secret.
#[tokio::test(flavor = "multi_thread")]
async fn a_sealed_secret_copied_onto_another_webhook_does_not_open() {
    let Setup {
        api,
        owner,
        receiver,
        secret,
    } = setup(200, json!(["inbox.created"])).await;
    let created = api
        .post(
            "/webhook-endpoints",
            Some(&owner.token),
            json!({ "id": "whk_hook02", "url": format!("https://hooks.test:{}/other", receiver.addr.port()), "events": ["inbox.created"] }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let known = sealed_secret(&api, "whk_hook01").await;
    set_sealed_secret(&api, "whk_hook02", &known).await;

    api.create_address(&owner.token, "ibx_copied1").await;
    let sender = sender(&api);
    sender.run_once(10).await.unwrap();
    let now = sealpost_kernel::Clock::now(&*api.app.clock).unix_seconds();
    let requests = receiver.requests();
    let signed_with_known: Vec<_> = requests
        .iter()
        .filter(|request| {
            let signature = request.header("Service-Signature").unwrap_or_default();
            sealpost_webhooks::verify(&secret, signature, &request.body, now).is_ok()
        })
        .collect();
    assert_eq!(
        signed_with_known.len(),
        1,
        "only whk_hook01's own delivery is signed with its secret ({} requests)",
        requests.len()
    );
    let other = api
        .get(
            "/webhook-endpoints/whk_hook02/deliveries",
            Some(&owner.token),
        )
        .await;
    let other = other.body["deliveries"].as_array().unwrap().clone();
    assert_eq!(other.len(), 1, "{other:?}");
    assert_eq!(other[0]["status"], "failed", "{other:?}");
    assert_eq!(
        other[0]["error"],
        sealpost_webhooks::SECRET_UNREADABLE_ERROR,
        "{other:?}"
    );
}

/// A secret sealed in the old form (bound to the purpose alone) is sealed
/// again, bound to its webhook, when a process starts, and deliveries keep
/// their signature.
#[tokio::test(flavor = "multi_thread")]
async fn an_old_form_secret_is_sealed_again_bound_and_still_signs() {
    let Setup {
        api,
        owner,
        receiver,
        secret,
    } = setup(200, json!(["inbox.created"])).await;
    let old_form = sealed_in_the_old_form(SERVER_KEY, "webhook-secret", &secret);
    set_sealed_secret(&api, "whk_hook01", &old_form).await;

    // A process starts (no HTTP, no jobs): its start-up pass seals again.
    let options = sealpost_api_server::StartOptions {
        http_threads: 1,
        background_jobs: false,
    };
    sealpost_api_server::start(&api.app.config, api.app.clock.clone(), None, options)
        .await
        .unwrap()
        .stop()
        .await;
    let resealed = sealed_secret(&api, "whk_hook01").await;
    assert_ne!(resealed, old_form, "the old form was rewritten");
    assert_eq!(resealed[0], 2, "in the bound form");
    let keys = ServerKeys::new(SERVER_KEY, []);
    assert_eq!(
        keys.open("webhook-secret", "whk_hook01", &resealed)
            .unwrap()
            .as_slice(),
        secret.as_bytes()
    );
    assert!(
        keys.open("webhook-secret", "whk_hook02", &resealed)
            .is_err(),
        "bound to its webhook"
    );

    api.create_address(&owner.token, "ibx_oldform").await;
    assert_eq!(sender(&api).run_once(10).await.unwrap(), (1, 1));
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1);
    let now = sealpost_kernel::Clock::now(&*api.app.clock).unix_seconds();
    sealpost_webhooks::verify(
        &secret,
        requests[0].header("Service-Signature").unwrap(),
        &requests[0].body,
        now,
    )
    .expect("signed with the same secret");
    assert_eq!(deliveries(&api, &owner).await[0]["status"], "succeeded");
}
