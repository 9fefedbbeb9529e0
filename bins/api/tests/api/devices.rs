use chrono::TimeDelta;
use reqwest::StatusCode;
use serde_json::json;

use crate::support::{Api, new_keys, profile_box};

#[tokio::test(flavor = "multi_thread")]
async fn pairing_hands_the_credential_over_once_and_disabling_revokes_it() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;

    let (token, code) = api.open_pairing().await;
    assert_eq!(code.len(), 8);
    let poll = api
        .get(&format!("/workers/pairing-session/{token}"), None)
        .await;
    assert_eq!(poll.body["state"], "waiting");

    let looked_up = api
        .post(
            "/workers/pair/lookup",
            Some(&owner.token),
            json!({ "code": code }),
        )
        .await;
    assert_eq!(looked_up.status, StatusCode::OK);
    assert_eq!(looked_up.body["session"]["deviceName"], "Test phone");
    assert_eq!(looked_up.body["session"]["platform"], "android");
    let poll = api
        .get(&format!("/workers/pairing-session/{token}"), None)
        .await;
    assert_eq!(poll.body["state"], "operator_detected");
    assert!(poll.body.get("credential").is_none());

    let session_id = looked_up.body["session"]["id"].as_str().unwrap();
    let claimed = api
        .post(
            "/workers/pair",
            Some(&owner.token),
            json!({ "sessionId": session_id, "workerId": "wkr_phone01", "profile": profile_box("wkr_phone01") }),
        )
        .await;
    assert_eq!(claimed.status, StatusCode::CREATED, "{}", claimed.body);
    assert_eq!(claimed.body["worker"]["status"], "online");
    assert_eq!(
        claimed.body["worker"]["lastActiveAt"],
        "2026-11-22T12:00:00.000Z"
    );

    let first = api
        .get(&format!("/workers/pairing-session/{token}"), None)
        .await;
    assert_eq!(first.body["state"], "awaiting_inbox");
    let credential = first.body["credential"].as_str().unwrap().to_owned();
    let second = api
        .get(&format!("/workers/pairing-session/{token}"), None)
        .await;
    assert!(
        second.body.get("credential").is_none(),
        "handed over once: {}",
        second.body
    );

    let own = api.get("/workers/wkr_phone01", Some(&credential)).await;
    assert_eq!(own.status, StatusCode::OK);
    let beat = api
        .post("/workers/heartbeat", Some(&credential), json!({}))
        .await;
    assert_eq!(beat.status, StatusCode::OK);

    // A second claim of the same session is refused.
    let again = api
        .post(
            "/workers/pair",
            Some(&owner.token),
            json!({ "sessionId": session_id, "workerId": "wkr_phone02", "profile": profile_box("wkr_phone02") }),
        )
        .await;
    assert_eq!(
        (again.status, again.code()),
        (StatusCode::CONFLICT, "already_used")
    );
    // ... and it cannot be cancelled any more.
    let cancel = api
        .delete(&format!("/workers/pairing-session/{token}"), None)
        .await;
    assert_eq!(
        (cancel.status, cancel.code()),
        (StatusCode::CONFLICT, "already_used")
    );

    let disabled = api
        .patch(
            "/workers/wkr_phone01",
            Some(&owner.token),
            json!({ "status": "disabled" }),
        )
        .await;
    assert_eq!(disabled.body["worker"]["status"], "disabled");
    let refused = api.get("/workers/wkr_phone01", Some(&credential)).await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::UNAUTHORIZED, "unauthenticated")
    );

    assert_eq!(
        api.event_types(&owner.account_id).await,
        vec!["worker.paired"]
    );
    let activity = api.get("/activity", Some(&owner.token)).await;
    assert_eq!(activity.body["activity"][0]["kind"], "worker.paired");
    assert_eq!(activity.body["activity"][0]["workerId"], "wkr_phone01");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unclaimed_session_can_be_cancelled() {
    let api = Api::spawn().await;
    let (token, _) = api.open_pairing().await;
    let cancel = api
        .delete(&format!("/workers/pairing-session/{token}"), None)
        .await;
    assert_eq!(cancel.status, StatusCode::NO_CONTENT);
    let poll = api
        .get(&format!("/workers/pairing-session/{token}"), None)
        .await;
    assert_eq!(
        (poll.status, poll.code()),
        (StatusCode::NOT_FOUND, "not_found")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn free_accounts_pair_one_device() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.pair(&owner.token, "wkr_first1").await;
    let (_, code) = api.open_pairing().await;
    let looked_up = api
        .post(
            "/workers/pair/lookup",
            Some(&owner.token),
            json!({ "code": code }),
        )
        .await;
    let claimed = api
        .post(
            "/workers/pair",
            Some(&owner.token),
            json!({ "sessionId": looked_up.body["session"]["id"], "workerId": "wkr_second", "profile": profile_box("wkr_second") }),
        )
        .await;
    assert_eq!(
        (claimed.status, claimed.code()),
        (StatusCode::PAYMENT_REQUIRED, "worker_limit_reached")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ten_failed_lookups_in_five_minutes_then_429() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    for attempt in 0..10 {
        let miss = api
            .post(
                "/workers/pair/lookup",
                Some(&owner.token),
                json!({ "code": format!("{:08}", attempt) }),
            )
            .await;
        assert_eq!(miss.status, StatusCode::NOT_FOUND, "attempt {attempt}");
    }
    let (_, code) = api.open_pairing().await;
    let limited = api
        .post(
            "/workers/pair/lookup",
            Some(&owner.token),
            json!({ "code": code }),
        )
        .await;
    assert_eq!(
        (limited.status, limited.code()),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    let retry: u64 = limited.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=300).contains(&retry), "{retry}");

    // The limit is per IP too: another account from the same address is limited.
    let (_, other_keys) = new_keys();
    let other = api.register(&other_keys).await;
    let also = api
        .post(
            "/workers/pair/lookup",
            Some(&other.token),
            json!({ "code": code }),
        )
        .await;
    assert_eq!(also.code(), "rate_limited");

    // Five minutes later the window has moved on.
    api.app.clock.advance(TimeDelta::minutes(5));
    let found = api
        .post(
            "/workers/pair/lookup",
            Some(&owner.token),
            json!({ "code": code }),
        )
        .await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn removing_a_device_unassigns_its_addresses_and_retires_its_id() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let device = api.pair(&owner.token, "wkr_phone01").await;
    api.create_inbox(&owner.token, "ibx_first01").await;
    let assigned = api
        .post(
            "/workers/wkr_phone01/inboxes",
            Some(&owner.token),
            json!({ "inboxId": "ibx_first01" }),
        )
        .await;
    assert_eq!(assigned.status, StatusCode::OK, "{}", assigned.body);
    assert_eq!(assigned.body["inbox"]["status"], "active");

    let removed = api.delete("/workers/wkr_phone01", Some(&owner.token)).await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT);
    assert_eq!(
        api.get("/workers/wkr_phone01", Some(&device.credential))
            .await
            .code(),
        "unauthenticated"
    );
    let inboxes = api.get("/inboxes", Some(&owner.token)).await;
    assert_eq!(inboxes.body["inboxes"][0]["status"], "unassigned");
    assert!(inboxes.body["inboxes"][0].get("assignedWorkerId").is_none());
    assert_eq!(
        api.event_types(&owner.account_id).await,
        vec![
            "worker.paired",
            "inbox.created",
            "inbox.assigned",
            "inbox.removed",
            "worker.removed"
        ]
    );

    // The id can never be claimed again.
    let (_, code) = api.open_pairing().await;
    let looked_up = api
        .post(
            "/workers/pair/lookup",
            Some(&owner.token),
            json!({ "code": code }),
        )
        .await;
    let reused = api
        .post(
            "/workers/pair",
            Some(&owner.token),
            json!({ "sessionId": looked_up.body["session"]["id"], "workerId": "wkr_phone01", "profile": profile_box("wkr_phone01") }),
        )
        .await;
    assert_eq!(
        (reused.status, reused.code()),
        (StatusCode::CONFLICT, "id_taken")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_quiet_hours_disconnect_and_activity_reconnects() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let device = api.pair(&owner.token, "wkr_phone01").await;
    let sweeps = api.sweeps();

    api.app.clock.advance(TimeDelta::hours(2));
    sweeps.run_once().await;
    assert_eq!(
        api.event_types(&owner.account_id).await,
        vec!["worker.paired"],
        "not yet"
    );
    api.app.clock.advance(TimeDelta::hours(1));
    sweeps.run_once().await;
    sweeps.run_once().await;
    assert_eq!(
        api.event_types(&owner.account_id).await,
        vec!["worker.paired", "worker.disconnected"],
        "reported once"
    );
    let listed = api.get("/workers", Some(&owner.token)).await;
    assert_eq!(listed.body["workers"][0]["status"], "offline");

    api.post("/workers/heartbeat", Some(&device.credential), json!({}))
        .await;
    api.post("/workers/heartbeat", Some(&device.credential), json!({}))
        .await;
    assert_eq!(
        api.event_types(&owner.account_id).await,
        vec!["worker.paired", "worker.disconnected", "worker.connected"]
    );
    let own = api
        .get("/workers/wkr_phone01", Some(&device.credential))
        .await;
    assert_eq!(own.body["worker"]["status"], "online");
    assert_eq!(
        own.body["worker"]["lastActiveAt"],
        "2026-11-22T15:00:00.000Z"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn key_bundles_go_to_the_device_and_profiles_are_checked() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let device = api.pair(&owner.token, "wkr_phone01").await;
    let bundle = serde_json::to_value(sealpost_seal::SealedBox::seal(
        &[7u8; 32],
        &sealpost_seal::context::worker_keys("wkr_phone01"),
        b"{}",
    ))
    .unwrap();
    let set = api
        .post(
            "/workers/wkr_phone01/keys",
            Some(&owner.token),
            json!({ "keys": bundle }),
        )
        .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    let read = api
        .get("/workers/wkr_phone01/keys", Some(&device.credential))
        .await;
    assert_eq!(read.body["keys"], bundle);

    let bad = api
        .patch(
            "/workers/wkr_phone01",
            Some(&owner.token),
            json!({ "profile": { "v": 2, "epk": "AA" } }),
        )
        .await;
    assert_eq!(
        (bad.status, bad.code()),
        (StatusCode::BAD_REQUEST, "invalid_box")
    );
    let status = api
        .patch(
            "/workers/wkr_phone01",
            Some(&owner.token),
            json!({ "status": "online" }),
        )
        .await;
    assert_eq!(status.code(), "invalid_field");
}
