//! Ownership (docs/protocol.md "Errors"): another account's record answers 404
//! exactly like a missing one, and a device credential reaches only its own
//! device. Session-only endpoints answer 403 `session_required` to a device.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{Api, new_keys, profile_box};

struct Case {
    method: Method,
    path: &'static str,
    body: Option<Value>,
    session_only: bool,
}

fn case(method: Method, path: &'static str, body: Option<Value>, session_only: bool) -> Case {
    Case {
        method,
        path,
        body,
        session_only,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn other_accounts_and_other_devices_get_404() {
    let api = Api::spawn().await;
    // The owner has two devices (Operator plan) and an address on the first.
    let (_, owner_keys) = new_keys();
    let owner = api.register(&owner_keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    api.pair(&owner.token, "wkr_target1").await;
    let sibling = api.pair(&owner.token, "wkr_sibling").await;
    api.create_address(&owner.token, "ibx_target1").await;
    let assigned = api
        .post(
            "/workers/wkr_target1/inboxes",
            Some(&owner.token),
            json!({ "inboxId": "ibx_target1" }),
        )
        .await;
    assert_eq!(assigned.status, StatusCode::OK);
    let keys_box = serde_json::to_value(sealpost_seal::SealedBox::seal(
        &[1; 32],
        &sealpost_seal::context::device_keys("wkr_target1"),
        b"{}",
    ))
    .unwrap();
    api.post(
        "/workers/wkr_target1/keys",
        Some(&owner.token),
        json!({ "keys": keys_box }),
    )
    .await;

    // A stranger with a session and a device of their own.
    let (_, stranger_keys) = new_keys();
    let stranger = api.register(&stranger_keys).await;
    let stranger_device = api.pair(&stranger.token, "wkr_stranger").await;
    api.create_address(&stranger.token, "ibx_stranger").await;

    let cases = vec![
        case(Method::GET, "/workers/wkr_target1", None, false),
        case(
            Method::PATCH,
            "/workers/wkr_target1",
            Some(json!({ "profile": profile_box("wkr_target1") })),
            true,
        ),
        case(
            Method::PATCH,
            "/workers/wkr_target1",
            Some(json!({ "status": "disabled" })),
            true,
        ),
        case(
            Method::POST,
            "/workers/wkr_target1/keys",
            Some(json!({ "keys": keys_box })),
            true,
        ),
        case(Method::GET, "/workers/wkr_target1/keys", None, false),
        case(
            Method::POST,
            "/workers/wkr_target1/inboxes",
            Some(json!({ "inboxId": "ibx_target1" })),
            true,
        ),
        case(
            Method::POST,
            "/workers/wkr_target1/inboxes",
            Some(json!({ "inboxId": "ibx_stranger" })),
            true,
        ),
        case(
            Method::DELETE,
            "/workers/wkr_target1/inboxes/ibx_target1",
            None,
            true,
        ),
        case(
            Method::PATCH,
            "/inboxes/ibx_target1",
            Some(json!({ "retentionDays": 1 })),
            true,
        ),
        case(Method::DELETE, "/inboxes/ibx_target1", None, true),
        case(Method::DELETE, "/workers/wkr_target1", None, true),
    ];
    for case in &cases {
        let body = case
            .body
            .as_ref()
            .map(|b| reqwest::Body::from(b.to_string()));
        let by_stranger = api
            .send(case.method.clone(), case.path, Some(&stranger.token), body)
            .await;
        assert_eq!(
            (by_stranger.status, by_stranger.code()),
            (StatusCode::NOT_FOUND, "not_found"),
            "{} {} by another account",
            case.method,
            case.path
        );
        for (label, credential) in [
            ("sibling device", &sibling.credential),
            ("stranger's device", &stranger_device.credential),
        ] {
            let body = case
                .body
                .as_ref()
                .map(|b| reqwest::Body::from(b.to_string()));
            let by_device = api
                .send(case.method.clone(), case.path, Some(credential), body)
                .await;
            let expected = if case.session_only {
                (StatusCode::FORBIDDEN, "session_required")
            } else {
                (StatusCode::NOT_FOUND, "not_found")
            };
            assert_eq!(
                (by_device.status, by_device.code()),
                expected,
                "{} {} by the {label}",
                case.method,
                case.path
            );
        }
    }

    // Lists never show another account's records, and a device sees only itself.
    let devices = api.get("/workers", Some(&stranger.token)).await;
    assert_eq!(devices.body["workers"].as_array().unwrap().len(), 1);
    assert_eq!(devices.body["workers"][0]["id"], "wkr_stranger");
    let own_only = api.get("/workers", Some(&sibling.credential)).await;
    assert_eq!(own_only.body["workers"].as_array().unwrap().len(), 1);
    assert_eq!(own_only.body["workers"][0]["id"], "wkr_sibling");
    let addresses = api.get("/inboxes", Some(&sibling.credential)).await;
    assert_eq!(
        addresses.body["inboxes"],
        json!([]),
        "nothing is assigned to the sibling"
    );
    let activity = api.get("/activity", Some(&stranger.token)).await;
    assert!(
        activity.body["activity"]
            .as_array()
            .unwrap()
            .iter()
            .all(|entry| entry["operatorId"] == stranger.account_id.as_str())
    );

    // Session-only endpoints refuse any device, and device-only ones refuse sessions.
    for (method, path, body) in [
        (
            Method::POST,
            "/inboxes",
            json!({ "id": "ibx_device01", "domain": "mail.localhost" }),
        ),
        (
            Method::POST,
            "/workers/pair/lookup",
            json!({ "code": "12345678" }),
        ),
        (
            Method::POST,
            "/workers/pair",
            json!({ "sessionId": "x", "workerId": "wkr_abcd", "profile": {} }),
        ),
        (Method::DELETE, "/accounts/sessions", json!({})),
        (Method::GET, "/accounts/sessions", json!({})),
        (Method::POST, "/accounts/signout", json!({})),
        (Method::DELETE, "/accounts/me", json!({})),
    ] {
        let reply = api
            .send(
                method.clone(),
                path,
                Some(&sibling.credential),
                Some(body.to_string().into()),
            )
            .await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::FORBIDDEN, "session_required"),
            "{method} {path}"
        );
    }
    let heartbeat = api
        .post("/workers/heartbeat", Some(&owner.token), json!({}))
        .await;
    assert_eq!(
        (heartbeat.status, heartbeat.code()),
        (StatusCode::FORBIDDEN, "device_required")
    );
    let device_mail = api.get("/workers/messages", Some(&owner.token)).await;
    assert_eq!(
        (device_mail.status, device_mail.code()),
        (StatusCode::FORBIDDEN, "device_required")
    );

    // Everything the owner had is untouched.
    let target = api.get("/workers/wkr_target1", Some(&owner.token)).await;
    assert_eq!(target.body["worker"]["status"], "online");
    let address = api.get("/inboxes", Some(&owner.token)).await;
    assert_eq!(address.body["inboxes"][0]["retentionDays"], 7);
    assert_eq!(
        address.body["inboxes"][0]["assignedWorkerId"],
        "wkr_target1"
    );
}
