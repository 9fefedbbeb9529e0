//! API keys over HTTP: managed with a session only, stored hashed, used as a
//! bearer everywhere the document marks `bearer`, refused (403
//! `session_required`) everywhere it marks `session`, paused by a lapse.

use chrono::TimeDelta;
use reqwest::{Method, StatusCode};
use sealpost_kernel::Clock;
use sealpost_seal::{SealedBox, context};
use serde_json::{Value, json};

use crate::billing::buy;
use crate::support::{Api, SignedIn, new_keys};

fn label(id: &str) -> Value {
    serde_json::to_value(SealedBox::seal(
        &[5; 32],
        &context::api_key_label(id),
        b"ci runner",
    ))
    .unwrap()
}

async fn create_key(api: &Api, owner: &SignedIn, id: &str) -> crate::support::Reply {
    create_labelled_key(api, owner, id, &label(id)).await
}

async fn create_labelled_key(
    api: &Api,
    owner: &SignedIn,
    id: &str,
    label: &Value,
) -> crate::support::Reply {
    api.post(
        "/api-keys",
        Some(&owner.token),
        json!({ "id": id, "label": label }),
    )
    .await
}

/// A key for `owner` (whose plan has keys); answers its token.
async fn key_token(api: &Api, owner: &SignedIn, id: &str) -> String {
    let created = create_key(api, owner, id).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    created.body["token"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_are_created_listed_and_revoked_by_a_session_and_work_at_once() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;

    let refused = create_key(&api, &owner, "key_free01").await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::FORBIDDEN, "plan_required"),
        "{}",
        refused.body
    );
    api.set_plan(&owner.account_id, "operator").await;

    let sent_label = label("key_ci01");
    let created = create_labelled_key(&api, &owner, "key_ci01", &sent_label).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let token = created.body["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("spk_"), "{token}");
    assert_eq!(created.body["apiKey"]["id"], "key_ci01");
    assert_eq!(
        created.body["apiKey"]["label"], sent_label,
        "the label as sealed"
    );
    assert_eq!(created.body["apiKey"]["lastUsedAt"], Value::Null);
    assert_eq!(created.body["apiKey"]["paused"], false);

    // The key reads like a session; its use is recorded to the hour.
    let addresses = api.get("/inboxes", Some(&token)).await;
    assert_eq!(addresses.status, StatusCode::OK, "{}", addresses.body);
    let listed = api.get("/api-keys", Some(&owner.token)).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    let now = api.app.clock.now();
    assert_eq!(
        listed.body["apiKeys"][0]["lastUsedAt"],
        json!(now.start_of_hour())
    );
    assert_eq!(listed.body["apiKeys"][0]["createdAt"], json!(now));
    assert!(
        !listed.body.to_string().contains(&token[4..]),
        "the list never shows the token"
    );

    // A key manages no keys.
    for (method, path, body) in [
        (Method::GET, "/api-keys", None),
        (
            Method::POST,
            "/api-keys",
            Some(json!({ "id": "key_ci02", "label": label("key_ci02") })),
        ),
        (Method::DELETE, "/api-keys/key_ci01", None),
    ] {
        let answer = api
            .send(
                method.clone(),
                path,
                Some(&token),
                body.map(|body| body.to_string().into()),
            )
            .await;
        assert_eq!(
            (answer.status, answer.code()),
            (StatusCode::FORBIDDEN, "session_required"),
            "{method} {path}"
        );
    }

    // An id is taken forever, even once its key is revoked.
    let again = create_key(&api, &owner, "key_ci01").await;
    assert_eq!(
        (again.status, again.code()),
        (StatusCode::CONFLICT, "id_taken")
    );
    let revoked = api.delete("/api-keys/key_ci01", Some(&owner.token)).await;
    assert_eq!(revoked.status, StatusCode::NO_CONTENT, "{}", revoked.body);
    let after = api.get("/inboxes", Some(&token)).await;
    assert_eq!(
        (after.status, after.code()),
        (StatusCode::UNAUTHORIZED, "unauthenticated")
    );
    let gone = api.delete("/api-keys/key_ci01", Some(&owner.token)).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    let reused = create_key(&api, &owner, "key_ci01").await;
    assert_eq!(reused.code(), "id_taken");
    let listed = api.get("/api-keys", Some(&owner.token)).await;
    assert_eq!(listed.body["apiKeys"], json!([]));

    // Another account's key looks missing.
    let (_, other_keys) = new_keys();
    let other = api.register(&other_keys).await;
    api.set_plan(&other.account_id, "operator").await;
    key_token(&api, &other, "key_other1").await;
    let foreign = api.delete("/api-keys/key_other1", Some(&owner.token)).await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_plan_limits_keys_and_usage_counts_them() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "scale").await;
    let usage = api.get("/usage", Some(&owner.token)).await;
    assert_eq!(usage.body["apiKeys"]["allowed"], true);
    assert_eq!(usage.body["apiKeys"]["used"], 0);
    let limit = usage.body["apiKeys"]["limit"].as_u64().unwrap();
    assert!(limit > 0);
    for n in 0..limit {
        key_token(&api, &owner, &format!("key_lim{n:03}")).await;
    }
    let over = create_key(&api, &owner, "key_over01").await;
    assert_eq!(
        (over.status, over.code()),
        (StatusCode::CONFLICT, "limit_reached"),
        "{}",
        over.body
    );
    let usage = api.get("/usage", Some(&owner.token)).await;
    assert_eq!(usage.body["apiKeys"]["used"], limit);
}

/// Every operation of the document, called with an API key: one marked
/// `session` answers 403 `session_required`, one marked `device` 403
/// `device_required`, and one marked `bearer` lets the key through (any
/// answer but 401 or those two refusals).
#[tokio::test(flavor = "multi_thread")]
async fn a_key_is_refused_exactly_where_the_document_says_session() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    let token = key_token(&api, &owner, "key_walk01").await;
    let document = api.get("/openapi.json", None).await.body;
    let schemes: Vec<&String> = document["components"]["securitySchemes"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(schemes, ["bearer", "device", "session", "staff"]);
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for (template, item) in document["paths"].as_object().unwrap() {
        let path = template
            .split('/')
            .map(|segment| {
                if segment.starts_with('{') {
                    "x1"
                } else {
                    segment
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        for (method, operation) in item.as_object().unwrap() {
            let Some(scheme) = operation["security"][0]
                .as_object()
                .and_then(|requirement| requirement.keys().next())
            else {
                continue;
            };
            if operation["responses"]["200"]["content"]
                .get("text/event-stream")
                .is_some()
            {
                // A stream never ends: its status alone says the key was taken.
                let response = reqwest::Client::new()
                    .get(api.app.url(&path))
                    .bearer_auth(&token)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), StatusCode::OK, "{method} {template}");
                *seen.entry(scheme.clone()).or_default() += 1;
                continue;
            }
            let body = operation
                .get("requestBody")
                .map(|_| reqwest::Body::from("{}"));
            let answer = api
                .send(
                    method.to_ascii_uppercase().parse().unwrap(),
                    &path,
                    Some(&token),
                    body,
                )
                .await;
            let name = format!("{method} {template}: {} {}", answer.status, answer.body);
            match scheme.as_str() {
                "session" => assert_eq!(
                    (answer.status, answer.code()),
                    (StatusCode::FORBIDDEN, "session_required"),
                    "{name}"
                ),
                "device" => assert_eq!(
                    (answer.status, answer.code()),
                    (StatusCode::FORBIDDEN, "device_required"),
                    "{name}"
                ),
                "bearer" => {
                    assert_ne!(answer.status, StatusCode::UNAUTHORIZED, "{name}");
                    assert!(
                        !["session_required", "device_required"].contains(&answer.code()),
                        "{name}"
                    );
                }
                "staff" => assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{name}"),
                other => panic!("{name}: unknown scheme {other}"),
            }
            *seen.entry(scheme.clone()).or_default() += 1;
        }
    }
    for scheme in ["bearer", "session", "device", "staff"] {
        assert!(
            seen.get(scheme).is_some_and(|n| *n > 0),
            "{scheme}: {seen:?}"
        );
    }
    // The walk changed nothing the key may not change: the key still works.
    assert_eq!(
        api.get("/inboxes", Some(&token)).await.status,
        StatusCode::OK
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lapse_pauses_keys_and_paying_releases_them() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let mut owner = api.register(&keys).await;
    buy(&api, &owner, "operator").await;
    let token = key_token(&api, &owner, "key_lapse1").await;
    crate::billing::keyed_address(&api, &owner, &keys, "ibx_keylapse1").await;

    api.app.clock.advance(TimeDelta::days(30));
    api.sweeps().run_once().await;
    owner.token = api.sign_in(&keys).await;
    let paused = api.get("/inboxes", Some(&token)).await;
    assert_eq!(
        (paused.status, paused.code()),
        (StatusCode::PAYMENT_REQUIRED, "payment_required"),
        "{}",
        paused.body
    );
    let record = api.get("/subscription", Some(&owner.token)).await;
    assert_eq!(record.body["subscription"]["pause"]["apiKeys"], 1);
    let listed = api.get("/api-keys", Some(&owner.token)).await;
    assert_eq!(listed.body["apiKeys"][0]["paused"], true);

    buy(&api, &owner, "operator").await;
    let released = api.get("/inboxes", Some(&token)).await;
    assert_eq!(released.status, StatusCode::OK, "{}", released.body);
    let listed = api.get("/api-keys", Some(&owner.token)).await;
    assert_eq!(listed.body["apiKeys"][0]["paused"], false);
}
