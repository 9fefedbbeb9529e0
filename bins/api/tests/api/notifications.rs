//! `/notifications`: preferences, address mutes and push tokens.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::{Api, new_keys};

#[tokio::test(flavor = "multi_thread")]
async fn preferences_start_on_and_a_patch_changes_only_what_it_sends() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let shown = api
        .get("/notifications/preferences", Some(&owner.token))
        .await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    assert_eq!(
        shown.body,
        json!({
            "preferences": {
                "newMail": true, "devicePaired": true, "deviceOffline": true,
                "newSignIn": true, "billing": true, "support": true, "webhookFailures": true
            },
            "mutedInboxes": []
        })
    );
    let patched = api
        .patch(
            "/notifications/preferences",
            Some(&owner.token),
            json!({ "newMail": false, "webhookFailures": false }),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    let again = api
        .patch(
            "/notifications/preferences",
            Some(&owner.token),
            json!({ "billing": false, "newMail": null }),
        )
        .await;
    assert_eq!(
        again.body["preferences"],
        json!({
            "newMail": false, "devicePaired": true, "deviceOffline": true,
            "newSignIn": true, "billing": false, "support": true, "webhookFailures": false
        })
    );
    let shown = api
        .get("/notifications/preferences", Some(&owner.token))
        .await;
    assert_eq!(shown.body, again.body);

    // Another account is untouched.
    let other = api.register(&new_keys().1).await;
    let theirs = api
        .get("/notifications/preferences", Some(&other.token))
        .await;
    assert_eq!(theirs.body["preferences"]["newMail"], true);

    for (body, field) in [
        (json!({ "newMail": "yes" }), "newMail"),
        (json!({ "newmail": false }), "newmail"),
    ] {
        let bad = api
            .patch("/notifications/preferences", Some(&owner.token), body)
            .await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
        assert_eq!(bad.code(), "invalid_field");
        assert!(
            bad.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains(field),
            "{}",
            bad.body
        );
    }
    let anonymous = api.get("/notifications/preferences", None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_address_is_muted_by_its_owner_only() {
    let api = Api::spawn().await;
    let owner = api.register(&new_keys().1).await;
    let other = api.register(&new_keys().1).await;
    api.create_address(&owner.token, "ibx_muted1").await;
    api.create_address(&other.token, "ibx_theirs1").await;

    let muted = api
        .patch(
            "/notifications/inboxes/ibx_muted1",
            Some(&owner.token),
            json!({ "muted": true }),
        )
        .await;
    assert_eq!(muted.status, StatusCode::OK, "{}", muted.body);
    assert_eq!(
        muted.body,
        json!({ "inboxId": "ibx_muted1", "muted": true })
    );
    // Muting twice is the same.
    let twice = api
        .patch(
            "/notifications/inboxes/ibx_muted1",
            Some(&owner.token),
            json!({ "muted": true }),
        )
        .await;
    assert_eq!(twice.status, StatusCode::OK);
    let shown = api
        .get("/notifications/preferences", Some(&owner.token))
        .await;
    assert_eq!(shown.body["mutedInboxes"], json!(["ibx_muted1"]));

    for path in [
        "/notifications/inboxes/ibx_theirs1",
        "/notifications/inboxes/ibx_nothere",
        "/notifications/inboxes/not-an-id",
    ] {
        let refused = api
            .patch(path, Some(&owner.token), json!({ "muted": true }))
            .await;
        assert_eq!(refused.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(refused.code(), "not_found");
    }
    let bad = api
        .patch(
            "/notifications/inboxes/ibx_muted1",
            Some(&owner.token),
            json!({ "muted": "no" }),
        )
        .await;
    assert_eq!(bad.code(), "invalid_field");

    // A device credential mutes only the addresses assigned to it.
    let paired = api.pair(&owner.token, "wkr_phone1").await;
    api.create_address(&owner.token, "ibx_other1").await;
    let not_its = api
        .patch(
            "/notifications/inboxes/ibx_other1",
            Some(&paired.credential),
            json!({ "muted": true }),
        )
        .await;
    assert_eq!(not_its.status, StatusCode::NOT_FOUND);
    let assigned = api
        .post(
            "/workers/wkr_phone1/inboxes",
            Some(&owner.token),
            json!({ "inboxId": "ibx_other1" }),
        )
        .await;
    assert_eq!(assigned.status, StatusCode::OK, "{}", assigned.body);
    let its_own = api
        .patch(
            "/notifications/inboxes/ibx_other1",
            Some(&paired.credential),
            json!({ "muted": true }),
        )
        .await;
    assert_eq!(its_own.status, StatusCode::OK, "{}", its_own.body);

    let unmuted = api
        .patch(
            "/notifications/inboxes/ibx_muted1",
            Some(&owner.token),
            json!({ "muted": false }),
        )
        .await;
    assert_eq!(unmuted.body["muted"], false);
    let shown = api
        .get("/notifications/preferences", Some(&owner.token))
        .await;
    assert_eq!(shown.body["mutedInboxes"], json!(["ibx_other1"]));

    // A deleted address takes its mute with it.
    let deleted = api.delete("/inboxes/ibx_other1", Some(&owner.token)).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let shown = api
        .get("/notifications/preferences", Some(&owner.token))
        .await;
    assert_eq!(shown.body["mutedInboxes"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn push_tokens_register_idempotently_and_stay_with_the_account_holding_them() {
    let api = Api::spawn().await;
    let first = api.register(&new_keys().1).await;
    let second = api.register(&new_keys().1).await;
    let token = "cXn3:APA91bH-phone_token.1";

    let added = api
        .post(
            "/notifications/devices",
            Some(&first.token),
            json!({ "token": token, "platform": "android" }),
        )
        .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.body);
    assert_eq!(added.body["device"]["token"], token);
    assert_eq!(added.body["device"]["platform"], "android");
    let registered_at = added.body["device"]["registeredAt"].clone();
    assert!(registered_at.is_string());

    api.app.clock.advance(chrono::TimeDelta::minutes(5));
    let again = api
        .post(
            "/notifications/devices",
            Some(&first.token),
            json!({ "token": token, "platform": "android" }),
        )
        .await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    assert_eq!(again.body["device"]["registeredAt"], registered_at);
    assert_eq!(
        push_device_owners(&api, token).await,
        vec![first.account_id.clone()]
    );

    // Another account registering the same token is refused: a token is
    // one phone's, and it stays with the account that holds it.
    let taken = api
        .post(
            "/notifications/devices",
            Some(&second.token),
            json!({ "token": token, "platform": "ios" }),
        )
        .await;
    assert_eq!(
        (taken.status, taken.code()),
        (StatusCode::CONFLICT, "already_used"),
        "{}",
        taken.body
    );
    assert_eq!(
        push_device_owners(&api, token).await,
        vec![first.account_id.clone()]
    );
    // The phone leaves the first account (removing its token there), then
    // signs in to the second: now the token is free to register.
    let left = api
        .delete(
            &format!("/notifications/devices/{token}"),
            Some(&first.token),
        )
        .await;
    assert_eq!(left.status, StatusCode::NO_CONTENT);
    let moved = api
        .post(
            "/notifications/devices",
            Some(&second.token),
            json!({ "token": token, "platform": "android" }),
        )
        .await;
    assert_eq!(moved.status, StatusCode::CREATED, "{}", moved.body);
    assert_eq!(
        push_device_owners(&api, token).await,
        vec![second.account_id.clone()]
    );
    let gone = api
        .delete(
            &format!("/notifications/devices/{token}"),
            Some(&first.token),
        )
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    let removed = api
        .delete(
            &format!("/notifications/devices/{token}"),
            Some(&second.token),
        )
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT);
    assert!(push_device_owners(&api, token).await.is_empty());
    let twice = api
        .delete(
            &format!("/notifications/devices/{token}"),
            Some(&second.token),
        )
        .await;
    assert_eq!(twice.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_tokens_and_platforms_are_refused_with_invalid_field() {
    let api = Api::spawn().await;
    let owner = api.register(&new_keys().1).await;
    for (body, field) in [
        (json!({ "token": "abc", "platform": "windows" }), "platform"),
        (json!({ "token": "", "platform": "ios" }), "token"),
        (
            json!({ "token": "a".repeat(4097), "platform": "ios" }),
            "token",
        ),
        (json!({ "token": "a b", "platform": "ios" }), "token"),
        (json!({ "platform": "ios" }), "token"),
    ] {
        let refused = api
            .post("/notifications/devices", Some(&owner.token), body)
            .await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
        assert_eq!(refused.code(), "invalid_field");
        assert!(
            refused.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains(field),
            "{}",
            refused.body
        );
    }
    let longest = api
        .post(
            "/notifications/devices",
            Some(&owner.token),
            json!({ "token": "a".repeat(4096), "platform": "ios" }),
        )
        .await;
    assert_eq!(longest.status, StatusCode::CREATED);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_account_keeps_its_twenty_newest_tokens() {
    let api = Api::spawn().await;
    let owner = api.register(&new_keys().1).await;
    for n in 0..22 {
        api.app.clock.advance(chrono::TimeDelta::seconds(1));
        let added = api
            .post(
                "/notifications/devices",
                Some(&owner.token),
                json!({ "token": format!("token{n:02}"), "platform": "ios" }),
            )
            .await;
        assert_eq!(added.status, StatusCode::CREATED);
    }
    for (token, held) in [
        ("token00", false),
        ("token01", false),
        ("token02", true),
        ("token21", true),
    ] {
        assert_eq!(
            !push_device_owners(&api, token).await.is_empty(),
            held,
            "{token}"
        );
    }
}

async fn push_device_owners(api: &Api, token: &str) -> Vec<String> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        account_id: String,
    }
    let mut conn = api.app.db.connect().await;
    let rows: Vec<Row> = diesel::sql_query("SELECT account_id FROM push_devices WHERE token = $1")
        .bind::<diesel::sql_types::Text, _>(token)
        .load(&mut conn)
        .await
        .unwrap();
    rows.into_iter().map(|row| row.account_id).collect()
}
