use reqwest::{Method, StatusCode};
use sealpost_testkit::TestApp;
use serde_json::json;

use crate::support::{Api, new_keys};

/// A registration of `keys` that gives `auth_public_key` as its key.
fn registration_with(
    keys: &sealpost_seal::AccountKeys,
    auth_public_key: &str,
) -> serde_json::Value {
    json!({
        "accountId": keys.account_id(),
        "authVerifier": sealpost_seal::b64::encode(&keys.auth_verifier()),
        "authPublicKey": auth_public_key,
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_that_are_not_json_or_have_bad_fields() {
    let api = Api::spawn().await;
    let not_json = api
        .send(Method::POST, "/accounts", None, Some("not json".into()))
        .await;
    assert_eq!(
        (not_json.status, not_json.code()),
        (StatusCode::BAD_REQUEST, "invalid_json")
    );
    let empty = api
        .send(Method::POST, "/accounts/challenge", None, Some("".into()))
        .await;
    assert_eq!(empty.code(), "invalid_json");

    let wrong_type = api
        .post("/accounts/challenge", None, json!({ "accountId": 42 }))
        .await;
    assert_eq!(wrong_type.code(), "invalid_field");
    assert!(
        wrong_type.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("accountId"),
        "the message names the field: {}",
        wrong_type.body
    );
    let missing = api
        .post("/accounts", None, json!({ "accountId": "acct_x" }))
        .await;
    assert_eq!(missing.code(), "invalid_field");

    let malformed_id = api
        .post(
            "/accounts/challenge",
            None,
            json!({ "accountId": "acct_NOT-AN-ID" }),
        )
        .await;
    assert_eq!(
        (malformed_id.status, malformed_id.code()),
        (StatusCode::BAD_REQUEST, "invalid_id")
    );

    let (_, keys) = new_keys();
    let bad_key = api
        .post("/accounts", None, registration_with(&keys, "c2hvcnQ"))
        .await;
    assert_eq!(bad_key.code(), "invalid_key");
    // Nothing was stored by the refused registration: the id is still free.
    api.register(&keys).await;
}

/// X25519 with a low-order point gives an all-zero secret whatever the
/// other key: a box sealed to such a key opens for anyone, and a handshake
/// with it proves nothing. Every endpoint that takes a public key refuses
/// one (the all-zero point here; the seal crate's tests hold the others).
#[tokio::test(flavor = "multi_thread")]
async fn every_endpoint_taking_a_public_key_refuses_a_low_order_point() {
    let api = Api::spawn().await;
    let low_order = sealpost_seal::b64::encode(&[0u8; 32]);
    let (_, keys) = new_keys();
    let registration = api
        .post("/accounts", None, registration_with(&keys, &low_order))
        .await;
    assert_eq!(registration.code(), "invalid_key", "{}", registration.body);
    // Nothing was stored by the refused registration: the id is still free.
    let owner = api.register(&keys).await;

    let pairing = api
        .post(
            "/workers/pairing-session",
            None,
            json!({ "platform": "android", "deviceName": "Phone", "publicKey": low_order }),
        )
        .await;
    assert_eq!(pairing.code(), "invalid_key", "{}", pairing.body);

    let (_, member_keys) = new_keys();
    let pin = sealpost_seal::SealedBox::seal(&member_keys.auth_public_key(), "pin", b"1234");
    let add_member = api
        .post(
            "/team/members",
            Some(&owner.token),
            json!({ "memberId": member_keys.account_id(), "publicKey": low_order, "pin": pin }),
        )
        .await;
    assert_eq!(add_member.code(), "invalid_key", "{}", add_member.body);

    // On a live address of the owner's, which keeps its key.
    api.keyed_address(&owner, &keys, "ibx_abcd", "live").await;
    let key = sealpost_seal::b64::encode(&keys.address_public_key("ibx_abcd", 0));
    let rotation = api
        .post(
            "/inboxes/ibx_abcd/rotate",
            Some(&owner.token),
            json!({ "epoch": 1, "publicKey": low_order, "grants": [] }),
        )
        .await;
    assert_eq!(rotation.code(), "invalid_key", "{}", rotation.body);
    let listed = api.get("/inboxes", Some(&owner.token)).await;
    let kept = &listed.body["inboxes"][0];
    assert_eq!(kept["id"], "ibx_abcd", "{}", listed.body);
    assert_eq!(kept["keyEpoch"], 0, "{}", listed.body);
    assert_eq!(kept["publicKey"], key.as_str(), "{}", listed.body);
    for (refused, field) in [
        (&registration, "authPublicKey: "),
        (&pairing, "publicKey: "),
        (&add_member, "publicKey: "),
        (&rotation, "publicKey: "),
    ] {
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
        assert!(
            refused.body["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with(field),
            "the message names the field {field}: {}",
            refused.body
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_body_is_too_large() {
    let api = Api::spawn().await;
    let huge = json!({ "accountId": "a".repeat(300 * 1024) });
    let reply = api.post("/accounts/challenge", None, huge).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::PAYLOAD_TOO_LARGE, "too_large")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_paths_answer_the_error_body() {
    let api = Api::spawn().await;
    let reply = api.get("/no/such/thing", None).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::NOT_FOUND, "not_found")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn probes_and_request_ids() {
    let api = Api::spawn().await;
    let health = api.get("/healthz", None).await;
    assert_eq!(
        (health.status, health.body["status"].as_str()),
        (StatusCode::OK, Some("up"))
    );
    let ready = api.get("/readyz", None).await;
    assert_eq!(
        (ready.status, ready.body["status"].as_str()),
        (StatusCode::OK, Some("ready"))
    );
    assert!(health.headers.get("x-request-id").is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_edge_limit_answers_429_with_retry_after() {
    let app = TestApp::spawn_with(|config| config.edge_rate_per_minute = 3).await;
    let api = Api::with(app);
    for _ in 0..3 {
        let reply = api.get("/accounts/me", None).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    }
    let limited = api.get("/accounts/me", None).await;
    assert_eq!(
        (limited.status, limited.code()),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    let retry_after: u64 = limited.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=20).contains(&retry_after), "{retry_after}");
    // Probes stay reachable for the orchestrator.
    assert_eq!(api.get("/healthz", None).await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_served_openapi_document_is_the_committed_one() {
    let api = Api::spawn().await;
    let served = api.get("/openapi.json", None).await;
    assert_eq!(served.status, StatusCode::OK);
    for path in [
        "/accounts",
        "/accounts/verify",
        "/accounts/sessions/{id}",
        "/readyz",
    ] {
        assert!(
            served.body["paths"].get(path).is_some(),
            "{path} is documented"
        );
    }
    let committed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/openapi.json"
        ))
        .expect("docs/openapi.json exists; write it with `cargo xtask openapi`"),
    )
    .unwrap();
    assert_eq!(
        served.body, committed,
        "docs/openapi.json is stale: run `cargo xtask openapi`"
    );
}
