use chrono::TimeDelta;
use reqwest::StatusCode;
use serde_json::json;

use sealpost_seal::b64;

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
    api.create_address(&owner.token, "ibx_first01").await;
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
    let addresses = api.get("/inboxes", Some(&owner.token)).await;
    assert_eq!(addresses.body["inboxes"][0]["status"], "unassigned");
    assert!(
        addresses.body["inboxes"][0]
            .get("assignedWorkerId")
            .is_none()
    );
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

    // Last active at half past: the exact time counts, not its hour.
    api.app.clock.advance(TimeDelta::minutes(30));
    api.post("/workers/heartbeat", Some(&device.credential), json!({}))
        .await;
    api.app
        .clock
        .advance(TimeDelta::hours(2) - TimeDelta::minutes(1));
    sweeps.run_once().await;
    assert_eq!(
        api.event_types(&owner.account_id).await,
        vec!["worker.paired"],
        "not yet: 1 h 59 min quiet"
    );
    api.app.clock.advance(TimeDelta::minutes(2));
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
    // Shown to the hour (14:31 here).
    assert_eq!(
        own.body["worker"]["lastActiveAt"],
        "2026-11-22T14:00:00.000Z"
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
        &sealpost_seal::context::device_keys("wkr_phone01"),
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

#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_bad_codes_gets_ten_misses_and_no_more() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let http = reqwest::Client::new();
    let mut burst = tokio::task::JoinSet::new();
    for attempt in 0..30 {
        let request = http
            .post(api.app.url("/workers/pair/lookup"))
            .bearer_auth(&owner.token)
            .json(&json!({ "code": format!("{:08}", 90_000_000 + attempt) }));
        burst.spawn(async move { request.send().await.unwrap().status() });
    }
    let statuses = burst.join_all().await;
    let misses = statuses
        .iter()
        .filter(|status| **status == StatusCode::NOT_FOUND)
        .count();
    let limited = statuses
        .iter()
        .filter(|status| **status == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!((misses, limited), (10, 20), "{statuses:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lookup_does_not_take_over_a_session_another_account_detected() {
    let api = Api::spawn().await;
    let first = api.register(&new_keys().1).await;
    let second = api.register(&new_keys().1).await;
    let (_, code) = api.open_pairing().await;
    let found = api
        .post(
            "/workers/pair/lookup",
            Some(&first.token),
            json!({ "code": code }),
        )
        .await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.body);
    let session_id = found.body["session"]["id"].as_str().unwrap().to_owned();
    let taken = api
        .post(
            "/workers/pair/lookup",
            Some(&second.token),
            json!({ "code": code }),
        )
        .await;
    assert_eq!(taken.status, StatusCode::NOT_FOUND, "{}", taken.body);
    let claimed = api
        .post(
            "/workers/pair",
            Some(&first.token),
            json!({ "sessionId": session_id, "workerId": "wkr_first001", "profile": profile_box("wkr_first001") }),
        )
        .await;
    assert_eq!(claimed.status, StatusCode::CREATED, "{}", claimed.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_nobody_polls_expire_within_minutes() {
    let api = Api::spawn().await;
    let owner = api.register(&new_keys().1).await;
    let (abandoned, abandoned_code) = api.open_pairing().await;
    let (kept, kept_code) = api.open_pairing().await;
    for _ in 0..3 {
        api.app.clock.advance(TimeDelta::minutes(6));
        let polled = api
            .get(&format!("/workers/pairing-session/{kept}"), None)
            .await;
        assert_eq!(polled.status, StatusCode::OK, "{}", polled.body);
    }
    let gone = api
        .post(
            "/workers/pair/lookup",
            Some(&owner.token),
            json!({ "code": abandoned_code }),
        )
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    let polled = api
        .get(&format!("/workers/pairing-session/{abandoned}"), None)
        .await;
    assert_eq!(polled.status, StatusCode::NOT_FOUND);
    let found = api
        .post(
            "/workers/pair/lookup",
            Some(&owner.token),
            json!({ "code": kept_code }),
        )
        .await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn pairing_sessions_per_address_are_capped() {
    let api = Api::spawn().await;
    for _ in 0..20 {
        api.open_pairing().await;
    }
    let refused = api
        .post(
            "/workers/pairing-session",
            None,
            json!({ "platform": "android", "deviceName": "One too many", "publicKey": b64::encode(&[7u8; 32]) }),
        )
        .await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    assert!(refused.headers.contains_key("retry-after"));
    // Sessions nobody polls stop counting once they expire.
    api.app.clock.advance(TimeDelta::minutes(11));
    api.open_pairing().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sweep_keeps_claimed_sessions_whose_device_has_not_polled() {
    let api = Api::spawn().await;
    let owner = api.register(&new_keys().1).await;
    let (token, code) = api.open_pairing().await;
    let found = api
        .post(
            "/workers/pair/lookup",
            Some(&owner.token),
            json!({ "code": code }),
        )
        .await;
    let session_id = found.body["session"]["id"].as_str().unwrap().to_owned();
    let claimed = api
        .post(
            "/workers/pair",
            Some(&owner.token),
            json!({ "sessionId": session_id, "workerId": "wkr_late0001", "profile": profile_box("wkr_late0001") }),
        )
        .await;
    assert_eq!(claimed.status, StatusCode::CREATED, "{}", claimed.body);
    let (unclaimed, _) = api.open_pairing().await;
    api.app.clock.advance(TimeDelta::days(15));
    api.app.services().devices.sweep().await.unwrap();
    let polled = api
        .get(&format!("/workers/pairing-session/{token}"), None)
        .await;
    assert_eq!(polled.status, StatusCode::OK, "{}", polled.body);
    assert_eq!(polled.body["workerId"], "wkr_late0001");
    assert!(polled.body["credential"].is_string());
    let mut conn = api.app.db.connect().await;
    let left: i64 = diesel_async::RunQueryDsl::get_result(
        diesel::dsl::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
            "(SELECT count(*) FROM pairing_sessions)",
        )),
        &mut conn,
    )
    .await
    .unwrap();
    assert_eq!(left, 1, "only the claimed session is left");
    let gone = api
        .get(&format!("/workers/pairing-session/{unclaimed}"), None)
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_pairing_token_never_reaches_the_logs() {
    let logs = crate::support::captured_logs();
    let api = Api::spawn().await;
    let (token, _) = api.open_pairing().await;
    api.get(&format!("/workers/pairing-session/{token}"), None)
        .await;
    // A malformed and an unknown token, and a cancel.
    let unknown = format!("{}x", &token[..token.len() - 1]);
    for path in [
        format!("/workers/pairing-session/{unknown}"),
        format!("/workers/pairing-session/{token}%zz"),
    ] {
        api.get(&path, None).await;
    }
    api.delete(&format!("/workers/pairing-session/{token}"), None)
        .await;
    let text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(
        text.contains("/workers/pairing-session/{token}"),
        "the logs see the requests"
    );
    assert!(!text.contains(&token), "the token is logged");
    assert!(!text.contains(&unknown), "a guessed token is logged");
}
