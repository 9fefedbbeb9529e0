//! Agents: pairing sessions opened as `kind: agent` (machines such as CI
//! runners), allowed from Operator up, counted in `paired` and `agents`.

use reqwest::StatusCode;
use serde_json::json;

use sealpost_seal::b64;

use crate::support::{Api, new_keys, profile_box};

/// Opens a pairing session of `kind` (none: the field left out) and looks
/// its code up as `owner`; returns (token, the lookup's session).
async fn open_and_look_up(
    api: &Api,
    owner: &str,
    kind: Option<&str>,
) -> (String, serde_json::Value) {
    let mut body = json!({ "platform": "unknown", "deviceName": "CI runner", "publicKey": b64::encode(&[9u8; 32]) });
    if let Some(kind) = kind {
        body["kind"] = json!(kind);
    }
    let opened = api.post("/workers/pairing-session", None, body).await;
    assert_eq!(opened.status, StatusCode::CREATED, "{}", opened.body);
    let code = opened.body["code"].as_str().unwrap();
    let looked_up = api
        .post("/workers/pair/lookup", Some(owner), json!({ "code": code }))
        .await;
    assert_eq!(looked_up.status, StatusCode::OK, "{}", looked_up.body);
    (
        opened.body["token"].as_str().unwrap().to_owned(),
        looked_up.body["session"].clone(),
    )
}

async fn claim(
    api: &Api,
    owner: &str,
    session: &serde_json::Value,
    id: &str,
) -> crate::support::Reply {
    api.post(
        "/workers/pair",
        Some(owner),
        json!({ "sessionId": session["id"], "workerId": id, "profile": profile_box(id) }),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_free_account_cannot_claim_an_agent() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;

    let (token, session) = open_and_look_up(&api, &owner.token, Some("agent")).await;
    // The operator sees what the session makes before claiming it.
    assert_eq!(session["kind"], "agent");
    let refused = claim(&api, &owner.token, &session, "wkr_runner1").await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::FORBIDDEN, "plan_required"),
        "{}",
        refused.body
    );
    // Nothing was made: the session still waits, no device, no event.
    let poll = api
        .get(&format!("/workers/pairing-session/{token}"), None)
        .await;
    assert_eq!(poll.body["state"], "operator_detected");
    let listed = api.get("/workers", Some(&owner.token)).await;
    assert_eq!(listed.body["workers"], json!([]));
    assert!(api.event_types(&owner.account_id).await.is_empty());

    // A session opened without a kind makes a device, as before.
    let (_, session) = open_and_look_up(&api, &owner.token, None).await;
    assert_eq!(session["kind"], "device");
    let claimed = claim(&api, &owner.token, &session, "wkr_phone1").await;
    assert_eq!(claimed.status, StatusCode::CREATED, "{}", claimed.body);
    assert_eq!(claimed.body["worker"]["kind"], "device");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_account_pairs_an_agent_counted_apart_from_devices() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    api.pair(&owner.token, "wkr_phone1").await;

    let (token, session) = open_and_look_up(&api, &owner.token, Some("agent")).await;
    assert_eq!(session["kind"], "agent");
    let claimed = claim(&api, &owner.token, &session, "wkr_runner1").await;
    assert_eq!(claimed.status, StatusCode::CREATED, "{}", claimed.body);
    assert_eq!(claimed.body["worker"]["kind"], "agent");
    // The agent gets its credential like a device.
    let polled = api
        .get(&format!("/workers/pairing-session/{token}"), None)
        .await;
    assert_eq!(polled.body["workerId"], "wkr_runner1");
    let credential = polled.body["credential"].as_str().unwrap();
    let own = api.get("/workers/wkr_runner1", Some(credential)).await;
    assert_eq!(own.body["worker"]["kind"], "agent");

    let usage = api.get("/usage", Some(&owner.token)).await;
    assert_eq!(usage.status, StatusCode::OK, "{}", usage.body);
    assert_eq!(usage.body["devices"], json!({ "used": 1, "limit": 10 }));
    assert_eq!(usage.body["paired"], json!({ "used": 2, "limit": 10 }));
    assert_eq!(usage.body["agents"], json!({ "used": 1, "allowed": true }));

    let paired = api.event_payloads(&owner.account_id, "worker.paired").await;
    assert_eq!(
        paired,
        vec![
            json!({ "workerId": "wkr_phone1", "kind": "device" }),
            json!({ "workerId": "wkr_runner1", "kind": "agent" }),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_kind_is_refused_when_the_session_opens() {
    let api = Api::spawn().await;
    let opened = api
        .post(
            "/workers/pairing-session",
            None,
            json!({ "platform": "unknown", "deviceName": "x", "publicKey": b64::encode(&[9u8; 32]), "kind": "robot" }),
        )
        .await;
    assert_eq!(
        (opened.status, opened.code()),
        (StatusCode::BAD_REQUEST, "invalid_field"),
        "{}",
        opened.body
    );
    assert!(
        opened.body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("kind"),
        "{}",
        opened.body
    );
}
