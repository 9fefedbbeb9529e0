//! The push sender against local stand-ins for APNs (HTTP/2) and FCM
//! (HTTP/1.1 with its OAuth 2.0 token endpoint), over TLS with a test CA:
//! signed JWTs, headers, generic payloads, coalescing under the test clock,
//! preferences and mutes, and each provider answer.

use chrono::TimeDelta;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use reqwest::StatusCode;
use sealpost_config::{ApnsKeys, FcmKeys};
use sealpost_notifications::push::PushSender;
use sealpost_seal::{AccountKeys, b64};
use sealpost_testkit::TestApp;
use sealpost_testkit::push::{
    ApnsStandIn, FCM_TEST_KEY, FCM_TEST_PUBLIC_KEY, FcmStandIn, PushRequest, TestCa,
};
use sealpost_testkit::receiver::Receiver;
use serde_json::{Value, json};

use crate::support::{Api, SignedIn, new_keys};
use crate::tickets::SupportKeys;

const TEAM_ID: &str = "TEAM123456";
const KEY_ID: &str = "KEY1234567";
const TOPIC: &str = "net.sealpost.app";
const PROJECT: &str = "sealpost-test";
const CLIENT_EMAIL: &str = "push@sealpost-test.iam.gserviceaccount.com";
const IOS_TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const ANDROID_TOKEN: &str = "fcm-token:APA91b_android-1";
/// Appears in the test mail's sender, subject and body; never in a push.
const MARKER: &str = "ZebraMarker7741";

struct Push {
    api: Api,
    apns: ApnsStandIn,
    fcm: FcmStandIn,
    /// The APNs signing key's public half, to check JWT signatures.
    apns_public_pem: String,
    /// The support team's key pair the stack is configured with.
    support: SupportKeys,
}

async fn setup() -> Push {
    let ca = TestCa::new();
    let apns = ApnsStandIn::start(&ca).await;
    let fcm = FcmStandIn::start(&ca).await;
    let dir = std::env::temp_dir().join(format!("sealpost-push-{}", uuid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, &ca.ca_pem).unwrap();
    let apns_key = rcgen::KeyPair::generate().unwrap();
    let key_file = dir.join(format!("AuthKey_{KEY_ID}.p8"));
    std::fs::write(&key_file, apns_key.serialize_pem()).unwrap();
    let credentials_file = dir.join("service-account.json");
    std::fs::write(
        &credentials_file,
        json!({
            "type": "service_account",
            "project_id": PROJECT,
            "private_key_id": "key-1",
            "private_key": FCM_TEST_KEY,
            "client_email": CLIENT_EMAIL,
            "token_uri": "https://oauth2.googleapis.com/token",
        })
        .to_string(),
    )
    .unwrap();
    let (apns_url, fcm_url, token_url) = (apns.url(), fcm.url(), fcm.token_url());
    let support = SupportKeys::generate();
    let support_key = b64::encode(&support.public);
    let app = TestApp::spawn_with(move |config| {
        config.support_key = Some(support_key);
        config.apns = Some(ApnsKeys {
            key_file,
            key_id: KEY_ID.to_owned(),
            team_id: TEAM_ID.to_owned(),
            topic: TOPIC.to_owned(),
            url: apns_url,
        });
        config.fcm = Some(FcmKeys {
            credentials_file,
            project_id: None,
            url: fcm_url,
            token_url: Some(token_url),
        });
        config.push_ca_file = Some(ca_file);
    })
    .await;
    Push {
        api: Api::with(app),
        apns,
        fcm,
        apns_public_pem: apns_key.public_key_pem(),
        support,
    }
}

fn uuid_like() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

fn sender(api: &Api) -> PushSender {
    let store = sealpost_store_pg::PgStore::connect(&api.app.db.url, 4).unwrap();
    sealpost_jobs::push_sender(&store, &api.app.config, api.app.clock.clone()).unwrap()
}

async fn register_token(api: &Api, owner: &SignedIn, token: &str, platform: &str) {
    let added = api
        .post(
            "/notifications/devices",
            Some(&owner.token),
            json!({ "token": token, "platform": platform }),
        )
        .await;
    assert!(added.status.is_success(), "{}", added.body);
}

/// An address with a public key, so it takes mail.
async fn keyed_address(api: &Api, owner: &SignedIn, id: &str) -> Value {
    let reply = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": id, "domain": "mail.localhost", "prefix": "push",
                    "publicKey": b64::encode(&[9; 32]) }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    reply.body["inbox"].clone()
}

/// Mail with the marker in its sender, subject and body, through `POST /messages`.
async fn deliver_marked(api: &Api, owner: &SignedIn, address: &str) {
    let raw = format!(
        "From: {MARKER} <{MARKER}@example.com>\r\nSubject: {MARKER} subject\r\n\r\n{MARKER} body"
    );
    let posted = api
        .post(
            "/messages",
            Some(&owner.token),
            json!({ "inboxId": address, "raw": b64::encode(raw.as_bytes()) }),
        )
        .await;
    assert_eq!(posted.status, StatusCode::CREATED, "{}", posted.body);
}

/// Runs a round, lets every batch's window pass, runs another.
async fn push_now(api: &Api, sender: &PushSender) {
    sender.run_round(64).await.unwrap();
    api.app.clock.advance(TimeDelta::seconds(61));
    sender.run_round(64).await.unwrap();
}

async fn count(api: &Api, sql: &str) -> i64 {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = api.app.db.connect().await;
    let row: Row = diesel::sql_query(sql).get_result(&mut conn).await.unwrap();
    row.n
}

async fn tokens_held(api: &Api) -> i64 {
    count(api, "SELECT count(*) AS n FROM push_devices").await
}

async fn pushes_waiting(api: &Api) -> i64 {
    count(api, "SELECT count(*) AS n FROM push_deliveries").await
}

fn no_validation_of_exp(algorithm: Algorithm) -> Validation {
    let mut validation = Validation::new(algorithm);
    validation.validate_exp = false;
    validation.required_spec_claims.clear();
    validation
}

fn bearer(request: &PushRequest) -> String {
    request
        .header("authorization")
        .unwrap()
        .strip_prefix("bearer ")
        .or_else(|| {
            request
                .header("authorization")
                .unwrap()
                .strip_prefix("Bearer ")
        })
        .unwrap()
        .to_owned()
}

fn now_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Each push's kind (`newMail`, ...) as FCM received it.
fn fcm_kinds(fcm: &FcmStandIn) -> Vec<(String, String)> {
    fcm.sends()
        .iter()
        .map(|send| {
            let data = &send.json()["message"]["data"];
            (
                data["kind"].as_str().unwrap().to_owned(),
                data["count"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn pushes_reach_apns_and_fcm_signed_and_with_generic_text_only() {
    let Push {
        api,
        apns,
        fcm,
        apns_public_pem,
        ..
    } = setup().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    register_token(&api, &owner, IOS_TOKEN, "ios").await;
    register_token(&api, &owner, ANDROID_TOKEN, "android").await;
    let address = keyed_address(&api, &owner, "ibx_marked").await;
    let address = address["emailAddress"].as_str().unwrap().to_owned();
    deliver_marked(&api, &owner, "ibx_marked").await;
    deliver_marked(&api, &owner, "ibx_marked").await;

    let sender = sender(&api);
    let first = sender.run_round(64).await.unwrap();
    assert_eq!((first.released, first.attempts), (0, 0), "{first:?}");
    assert!(apns.requests().is_empty(), "new mail waits for its minute");
    api.app.clock.advance(TimeDelta::seconds(60));
    let second = sender.run_round(64).await.unwrap();
    assert_eq!((second.released, second.attempts), (2, 2), "{second:?}");
    assert_eq!(pushes_waiting(&api).await, 0);

    // APNs: HTTP/2, the device path, Apple's headers, an ES256 provider token.
    let pushes = apns.requests();
    assert_eq!(pushes.len(), 1);
    let push = &pushes[0];
    assert_eq!(push.method, "POST");
    assert_eq!(push.path, format!("/3/device/{IOS_TOKEN}"));
    assert_eq!(push.header("apns-topic"), Some(TOPIC));
    assert_eq!(push.header("apns-push-type"), Some("alert"));
    assert_eq!(push.header("apns-priority"), Some("10"));
    let jwt = bearer(push);
    let decoded = jsonwebtoken::decode::<Value>(
        &jwt,
        &DecodingKey::from_ec_pem(apns_public_pem.as_bytes()).unwrap(),
        &no_validation_of_exp(Algorithm::ES256),
    )
    .expect("the provider token is signed with the APNs key");
    assert_eq!(decoded.header.kid.as_deref(), Some(KEY_ID));
    assert_eq!(decoded.claims["iss"], TEAM_ID);
    let iat = decoded.claims["iat"].as_u64().unwrap();
    assert!(now_seconds().abs_diff(iat) < 60);
    let body = push.json();
    assert_eq!(body["aps"]["alert"]["title"], "New mail");
    assert_eq!(body["aps"]["alert"]["body"], "You have 2 new messages.");
    assert_eq!(
        (body["kind"].as_str(), body["count"].as_u64()),
        (Some("newMail"), Some(2))
    );

    // FCM: the assertion exchanged for an access token, then messages:send.
    let exchanges = fcm.token_requests();
    assert_eq!(exchanges.len(), 1);
    let form: Vec<(String, String)> = url::form_urlencoded::parse(&exchanges[0].body)
        .into_owned()
        .collect();
    assert_eq!(
        form[0],
        (
            "grant_type".to_owned(),
            "urn:ietf:params:oauth:grant-type:jwt-bearer".to_owned()
        )
    );
    assert_eq!(form[1].0, "assertion");
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_audience(&[fcm.token_url()]);
    validation.set_issuer(&[CLIENT_EMAIL]);
    let assertion = jsonwebtoken::decode::<Value>(
        &form[1].1,
        &DecodingKey::from_rsa_pem(FCM_TEST_PUBLIC_KEY.as_bytes()).unwrap(),
        &validation,
    )
    .expect("the assertion is signed with the service-account key");
    assert_eq!(assertion.header.kid.as_deref(), Some("key-1"));
    assert_eq!(
        assertion.claims["scope"],
        "https://www.googleapis.com/auth/firebase.messaging"
    );
    assert_eq!(
        assertion.claims["exp"].as_u64().unwrap() - assertion.claims["iat"].as_u64().unwrap(),
        3600
    );
    let sends = fcm.sends();
    assert_eq!(sends.len(), 1);
    assert_eq!(
        sends[0].path,
        format!("/v1/projects/{PROJECT}/messages:send")
    );
    assert_eq!(bearer(&sends[0]), "test-access-1");
    let message = &sends[0].json()["message"];
    assert_eq!(message["token"], ANDROID_TOKEN);
    assert_eq!(message["notification"]["body"], "You have 2 new messages.");
    assert_eq!(message["data"], json!({ "kind": "newMail", "count": "2" }));
    assert_eq!(message["android"]["priority"], "HIGH");

    // Generic text only: nothing of the mail or the address.
    for request in apns.requests().iter().chain(fcm.sends().iter()) {
        let text = request.text();
        for secret in [MARKER, address.as_str(), "ibx_marked", "example.com"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }

    // A sign-in later: the provider token and the access token are reused.
    api.sign_in(&keys).await;
    push_now(&api, &sender).await;
    let pushes = apns.requests();
    assert_eq!(pushes.len(), 2);
    assert_eq!(pushes[1].json()["aps"]["alert"]["title"], "New sign-in");
    assert_eq!(bearer(&pushes[1]), jwt);
    assert_eq!(fcm.token_requests().len(), 1);
    assert_eq!(fcm_kinds(&fcm)[1], ("newSignIn".to_owned(), "1".to_owned()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hundred_mails_within_the_minute_are_one_push_with_the_count() {
    let Push { api, apns, .. } = setup().await;
    let owner = api.register(&new_keys().1).await;
    register_token(&api, &owner, IOS_TOKEN, "ios").await;
    keyed_address(&api, &owner, "ibx_burst").await;
    let sender = sender(&api);
    for n in 0..100 {
        deliver_marked(&api, &owner, "ibx_burst").await;
        api.app.clock.advance(TimeDelta::milliseconds(500));
        if n % 10 == 9 {
            // The batch grows across rounds; it is not sent before its minute.
            sender.run_round(64).await.unwrap();
            assert!(apns.requests().is_empty(), "after {} mails", n + 1);
        }
    }
    // 50 seconds have passed; the minute ends 60 seconds after the first mail.
    api.app.clock.advance(TimeDelta::seconds(10));
    sender.run_round(64).await.unwrap();
    let pushes = apns.requests();
    assert_eq!(pushes.len(), 1);
    assert_eq!(pushes[0].json()["count"], 100);
    assert_eq!(
        pushes[0].json()["aps"]["alert"]["body"],
        "You have 100 new messages."
    );
    // The next mail opens a new batch.
    deliver_marked(&api, &owner, "ibx_burst").await;
    push_now(&api, &sender).await;
    let pushes = apns.requests();
    assert_eq!(pushes.len(), 2);
    assert_eq!(pushes[1].json()["count"], 1);
}

/// Switches the account's webhook off the way three days of failures do.
async fn fail_a_webhook_for_three_days(api: &Api, owner: &SignedIn) {
    let receiver = Receiver::start(500).await;
    let port = receiver.addr.port();
    let ca_file = std::env::temp_dir().join(format!("sealpost-push-hook-ca-{port}.pem"));
    std::fs::write(&ca_file, &receiver.ca_pem).unwrap();
    let mut config = api.app.config.clone();
    config.webhook_resolve = Some(format!("hooks.test=127.0.0.1:{port}"));
    config.webhook_ca_file = Some(ca_file);
    let created = api
        .post(
            "/webhook-endpoints",
            Some(&owner.token),
            json!({ "id": "whk_failing", "url": format!("https://hooks.test:{port}/hook"), "events": ["inbox.created"] }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let store = sealpost_store_pg::PgStore::connect(&api.app.db.url, 2).unwrap();
    let webhooks = sealpost_jobs::webhook_sender(&store, &config, api.app.clock.clone()).unwrap();
    api.create_address(&owner.token, "ibx_hook1").await;
    webhooks.run_once(10).await.unwrap();
    api.app.clock.advance(TimeDelta::days(3));
    api.create_address(&owner.token, "ibx_hook2").await;
    webhooks.run_once(10).await.unwrap();
    let webhook =
        api.get("/webhook-endpoints", Some(&owner.token)).await.body["webhooks"][0].clone();
    assert_eq!(webhook["disabledReason"], "failing");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_kind_is_pushed_and_each_switch_and_mute_is_honoured() {
    let Push { api, fcm, .. } = setup().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    register_token(&api, &owner, ANDROID_TOKEN, "android").await;
    let sender = sender(&api);

    // Every kind on: each arrives once.
    keyed_address(&api, &owner, "ibx_kinds").await;
    deliver_marked(&api, &owner, "ibx_kinds").await;
    api.pair(&owner.token, "wkr_phone1").await;
    api.sign_in(&keys).await;
    let checkout = api
        .post(
            "/billing/checkout",
            Some(&owner.token),
            json!({ "planId": "scale", "provider": "sandbox" }),
        )
        .await;
    assert_eq!(checkout.status, StatusCode::CREATED, "{}", checkout.body);
    let paid = reqwest::Client::new()
        .post(checkout.body["url"].as_str().unwrap())
        .header("content-type", "application/x-www-form-urlencoded")
        .body("outcome=paid")
        .send()
        .await
        .unwrap();
    assert_eq!(paid.status(), StatusCode::OK);
    push_now(&api, &sender).await;
    let mut kinds = fcm_kinds(&fcm);
    kinds.sort();
    assert_eq!(
        kinds,
        [
            // The payment and the plan change it made: one push.
            ("billing", "2"),
            ("devicePaired", "1"),
            ("newMail", "1"),
            ("newSignIn", "1"),
        ]
        .map(|(kind, count)| (kind.to_owned(), count.to_owned()))
    );
    // Three hours without activity: the hourly sweep reports the device offline.
    api.app.clock.advance(TimeDelta::hours(3));
    api.sweeps().run_once().await;
    push_now(&api, &sender).await;
    assert_eq!(
        fcm_kinds(&fcm).last().unwrap(),
        &("deviceOffline".to_owned(), "1".to_owned())
    );
    // A webhook switched off after three days of failures.
    fail_a_webhook_for_three_days(&api, &owner).await;
    push_now(&api, &sender).await;
    assert_eq!(
        fcm_kinds(&fcm).last().unwrap(),
        &("webhookFailures".to_owned(), "1".to_owned())
    );
    let title = fcm.sends().last().unwrap().json()["message"]["notification"]["title"].clone();
    assert_eq!(title, "Webhook switched off");

    // Switched off kinds and a muted address are not pushed; the rest are.
    let sent_before = fcm.sends().len();
    let patched = api
        .patch(
            "/notifications/preferences",
            Some(&owner.token),
            json!({ "newSignIn": false, "devicePaired": false }),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK);
    keyed_address(&api, &owner, "ibx_quiet").await;
    let muted = api
        .patch(
            "/notifications/inboxes/ibx_quiet",
            Some(&owner.token),
            json!({ "muted": true }),
        )
        .await;
    assert_eq!(muted.status, StatusCode::OK);
    api.sign_in(&keys).await;
    api.pair(&owner.token, "wkr_phone2").await;
    deliver_marked(&api, &owner, "ibx_quiet").await;
    deliver_marked(&api, &owner, "ibx_quiet").await;
    deliver_marked(&api, &owner, "ibx_kinds").await;
    push_now(&api, &sender).await;
    assert_eq!(
        fcm_kinds(&fcm)[sent_before..],
        [("newMail".to_owned(), "1".to_owned())]
    );
}

/// A staff reply (and a resolution) reaches the account's phones as a
/// `support` push, with generic words only; the `support` switch stops it.
#[tokio::test(flavor = "multi_thread")]
async fn a_staff_reply_and_a_resolution_are_support_pushes() {
    use sealpost_client::Client;
    use sealpost_client::support::{self, TicketHeader};

    let Push {
        api,
        fcm,
        support: support_keys,
        ..
    } = setup().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    register_token(&api, &owner, ANDROID_TOKEN, "android").await;
    let sender = sender(&api);
    let client = Client::new(api.app.base_url.clone())
        .unwrap()
        .with_token(owner.token.clone());
    let sealed = support::seal_new_ticket(
        &keys,
        &support_keys.public,
        &TicketHeader::new("billing", "normal", &format!("{MARKER} subject")),
        &format!("{MARKER} question"),
    );
    client.create_ticket(&sealed.request).await.unwrap();
    let staff = crate::support::staff_client(&api, &crate::support::staff_token(&api, "ada").await);
    let reply = support::seal_message(
        &support_keys.public,
        &keys.vault_public_key(),
        &sealed.ticket_id,
        &format!("{MARKER} answer"),
    );
    staff.staff_reply(&sealed.ticket_id, &reply).await.unwrap();
    push_now(&api, &sender).await;
    assert_eq!(fcm_kinds(&fcm), [("support".to_owned(), "1".to_owned())]);
    let pushed = fcm.sends().last().unwrap().json();
    assert_eq!(pushed["message"]["notification"]["title"], "Support");
    assert!(
        !pushed.to_string().contains(MARKER),
        "no ticket words in a push"
    );

    // The account switches support pushes off: the resolution is not pushed.
    let patched = api
        .patch(
            "/notifications/preferences",
            Some(&owner.token),
            json!({ "support": false }),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    staff.staff_resolve(&sealed.ticket_id).await.unwrap();
    push_now(&api, &sender).await;
    assert_eq!(fcm.sends().len(), 1, "nothing pushed with support off");
}

#[tokio::test(flavor = "multi_thread")]
async fn provider_answers_decide_between_retry_removal_and_drop() {
    let Push { api, apns, fcm, .. } = setup().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    register_token(&api, &owner, IOS_TOKEN, "ios").await;
    register_token(&api, &owner, ANDROID_TOKEN, "android").await;
    let sender = sender(&api);

    // 503 and 429: kept and tried again later, not before.
    apns.answer(503, Some("ServiceUnavailable"));
    fcm.answer(429, Some("QUOTA_EXCEEDED"));
    api.sign_in(&keys).await;
    push_now(&api, &sender).await;
    assert_eq!((apns.requests().len(), fcm.sends().len()), (1, 1));
    assert_eq!(pushes_waiting(&api).await, 2);
    api.app.clock.advance(TimeDelta::seconds(29));
    assert_eq!(sender.run_round(64).await.unwrap().attempts, 0);
    api.app.clock.advance(TimeDelta::seconds(1));
    assert_eq!(sender.run_round(64).await.unwrap().attempts, 2);
    assert_eq!((apns.requests().len(), fcm.sends().len()), (2, 2));
    assert_eq!(pushes_waiting(&api).await, 0);
    assert_eq!(tokens_held(&api).await, 2);

    // 400: dropped at once, never retried; the tokens stay.
    apns.answer(400, Some("BadExpirationDate"));
    fcm.answer(400, Some("INVALID_ARGUMENT"));
    api.sign_in(&keys).await;
    push_now(&api, &sender).await;
    assert_eq!((apns.requests().len(), fcm.sends().len()), (3, 3));
    assert_eq!(pushes_waiting(&api).await, 0);
    api.app.clock.advance(TimeDelta::minutes(10));
    assert_eq!(sender.run_round(64).await.unwrap().attempts, 0);
    assert_eq!(tokens_held(&api).await, 2);

    // 410 and UNREGISTERED: the tokens are removed.
    apns.answer(410, Some("Unregistered"));
    fcm.answer(404, Some("UNREGISTERED"));
    api.sign_in(&keys).await;
    push_now(&api, &sender).await;
    assert_eq!((apns.requests().len(), fcm.sends().len()), (4, 4));
    assert_eq!(tokens_held(&api).await, 0);
    let shown = api
        .delete(
            &format!("/notifications/devices/{IOS_TOKEN}"),
            Some(&owner.token),
        )
        .await;
    assert_eq!(shown.status, StatusCode::NOT_FOUND);

    // FCM 401: the cached access token is dropped and a new one got for the retry.
    register_token(&api, &owner, ANDROID_TOKEN, "android").await;
    fcm.answer(401, None);
    api.sign_in(&keys).await;
    push_now(&api, &sender).await;
    assert_eq!(pushes_waiting(&api).await, 1);
    api.app.clock.advance(TimeDelta::seconds(30));
    assert_eq!(sender.run_round(64).await.unwrap().attempts, 1);
    assert_eq!(fcm.token_requests().len(), 2);
    let sends = fcm.sends();
    assert_eq!(bearer(&sends[sends.len() - 2]), "test-access-1");
    assert_eq!(bearer(sends.last().unwrap()), "test-access-2");
    assert_eq!(pushes_waiting(&api).await, 0);
    let removed = api
        .delete(
            &format!("/notifications/devices/{ANDROID_TOKEN}"),
            Some(&owner.token),
        )
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT);

    // With no token left, nothing is queued at all.
    api.sign_in(&keys).await;
    push_now(&api, &sender).await;
    assert_eq!(pushes_waiting(&api).await, 0);
    assert_eq!((apns.requests().len(), fcm.sends().len()), (4, 6));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_out_of_reach_is_tried_again_later() {
    // Nothing listens where APNs is said to be.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}", closed.local_addr().unwrap());
    drop(closed);
    let key_file = std::env::temp_dir().join(format!("sealpost-push-key-{}.p8", uuid_like()));
    std::fs::write(
        &key_file,
        rcgen::KeyPair::generate().unwrap().serialize_pem(),
    )
    .unwrap();
    let app = TestApp::spawn_with(move |config| {
        config.apns = Some(ApnsKeys {
            key_file,
            key_id: KEY_ID.to_owned(),
            team_id: TEAM_ID.to_owned(),
            topic: TOPIC.to_owned(),
            url,
        });
    })
    .await;
    let api = Api::with(app);
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    register_token(&api, &owner, IOS_TOKEN, "ios").await;
    let sender = sender(&api);
    api.sign_in(&keys).await;
    push_now(&api, &sender).await;
    assert_eq!(pushes_waiting(&api).await, 1);
    assert_eq!(
        count(
            &api,
            "SELECT count(*) AS n FROM push_deliveries WHERE attempts = 1"
        )
        .await,
        1
    );
    assert_eq!(tokens_held(&api).await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_provider_pushes_are_dropped_and_nothing_is_sent() {
    let api = Api::spawn().await;
    let (_, keys): (_, AccountKeys) = new_keys();
    let owner = api.register(&keys).await;
    register_token(&api, &owner, IOS_TOKEN, "ios").await;
    register_token(&api, &owner, ANDROID_TOKEN, "android").await;
    let sender = sender(&api);
    api.sign_in(&keys).await;
    sender.run_round(64).await.unwrap();
    api.app.clock.advance(TimeDelta::seconds(16));
    let round = sender.run_round(64).await.unwrap();
    assert_eq!((round.released, round.attempts), (2, 2));
    assert_eq!(pushes_waiting(&api).await, 0);
    assert_eq!(tokens_held(&api).await, 2);
}
