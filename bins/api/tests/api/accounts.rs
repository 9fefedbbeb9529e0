use chrono::TimeDelta;
use reqwest::StatusCode;
use serde_json::json;

use crate::support::{Api, new_keys};

#[tokio::test(flavor = "multi_thread")]
async fn register_sign_in_list_and_sign_out() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let first = api.register(&keys).await;
    assert_eq!(first.account_id, keys.account_id());

    let me = api.get("/accounts/me", Some(&first.token)).await;
    assert_eq!(me.status, StatusCode::OK);
    assert_eq!(me.body["account"]["id"], keys.account_id());
    assert_eq!(me.body["account"]["plan"]["id"], "free");
    assert_eq!(me.body["supportKey"], serde_json::Value::Null);

    let second = api.sign_in(&keys).await;
    assert_ne!(second, first.token);

    let listed = api.get("/accounts/sessions", Some(&second)).await;
    assert_eq!(listed.status, StatusCode::OK);
    let sessions = listed.body["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(
        sessions.iter().filter(|s| s["current"] == true).count(),
        1,
        "exactly one current session"
    );
    assert_eq!(
        sessions[0]["current"], true,
        "newest first: the second sign-in"
    );
    let expires = sessions[0]["expiresAt"].as_str().unwrap();
    assert!(expires.ends_with('Z') && expires.len() == 24, "{expires}");

    let revoked = api.delete("/accounts/sessions", Some(&second)).await;
    assert_eq!(revoked.status, StatusCode::OK);
    assert_eq!(revoked.body["revoked"], 1);
    let gone = api.get("/accounts/me", Some(&first.token)).await;
    assert_eq!(gone.status, StatusCode::UNAUTHORIZED);
    assert_eq!(gone.code(), "unauthenticated");

    let out = api
        .post("/accounts/signout", Some(&second), json!({}))
        .await;
    assert_eq!(out.status, StatusCode::NO_CONTENT);
    let after = api.get("/accounts/me", Some(&second)).await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED);
    assert_eq!(after.code(), "unauthenticated");
}

#[tokio::test(flavor = "multi_thread")]
async fn revoking_one_session_by_id() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let first = api.register(&keys).await;
    let second = api.sign_in(&keys).await;
    let listed = api.get("/accounts/sessions", Some(&second)).await;
    let other_id = listed.body["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["current"] == false)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let reply = api
        .delete(&format!("/accounts/sessions/{other_id}"), Some(&second))
        .await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let revoked = api.get("/accounts/me", Some(&first.token)).await;
    assert_eq!(revoked.code(), "unauthenticated");
    // Already gone, and another account's or a made-up id: 404 alike.
    let again = api
        .delete(&format!("/accounts/sessions/{other_id}"), Some(&second))
        .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    assert_eq!(again.code(), "not_found");
    let bogus = api
        .delete("/accounts/sessions/nonsense", Some(&second))
        .await;
    assert_eq!(bogus.status, StatusCode::NOT_FOUND);

    let (_, stranger_keys) = new_keys();
    let stranger = api.register(&stranger_keys).await;
    let current_id = api.get("/accounts/sessions", Some(&second)).await.body["sessions"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let foreign = api
        .delete(
            &format!("/accounts/sessions/{current_id}"),
            Some(&stranger.token),
        )
        .await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
    assert_eq!(
        api.get("/accounts/me", Some(&second)).await.status,
        StatusCode::OK
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_failed_sign_in_is_unauthenticated() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    api.register(&keys).await;
    let account_id = keys.account_id();

    // A wrong proof.
    let (nonce, key) = api.challenge(&account_id).await;
    let mut proof = keys.handshake_proof(&key, &nonce, &account_id);
    proof[5] ^= 0x40;
    let wrong = api.verify(&account_id, &nonce, &proof).await;
    assert_eq!(
        (wrong.status, wrong.code()),
        (StatusCode::UNAUTHORIZED, "unauthenticated")
    );

    // A nonce used twice: the second, right, attempt fails too.
    let right = keys.handshake_proof(&key, &nonce, &account_id);
    let reused = api.verify(&account_id, &nonce, &right).await;
    assert_eq!(
        (reused.status, reused.code()),
        (StatusCode::UNAUTHORIZED, "unauthenticated")
    );
    let (nonce, key) = api.challenge(&account_id).await;
    let proof = keys.handshake_proof(&key, &nonce, &account_id);
    assert_eq!(
        api.verify(&account_id, &nonce, &proof).await.status,
        StatusCode::OK
    );
    let twice = api.verify(&account_id, &nonce, &proof).await;
    assert_eq!(
        (twice.status, twice.code()),
        (StatusCode::UNAUTHORIZED, "unauthenticated")
    );

    // A nonce older than two minutes.
    let (nonce, key) = api.challenge(&account_id).await;
    api.app
        .clock
        .advance(TimeDelta::minutes(2) + TimeDelta::milliseconds(1));
    let proof = keys.handshake_proof(&key, &nonce, &account_id);
    let stale = api.verify(&account_id, &nonce, &proof).await;
    assert_eq!(
        (stale.status, stale.code()),
        (StatusCode::UNAUTHORIZED, "unauthenticated")
    );

    // An unknown account gets a challenge of the same shape, and then 401.
    let (_, unknown) = new_keys();
    let unknown_id = unknown.account_id();
    let challenge = api
        .post(
            "/accounts/challenge",
            None,
            json!({ "accountId": unknown_id }),
        )
        .await;
    let known = api
        .post(
            "/accounts/challenge",
            None,
            json!({ "accountId": account_id }),
        )
        .await;
    assert_eq!(challenge.status, known.status);
    let keys_of = |v: &serde_json::Value| {
        let mut k: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys_of(&challenge.body), keys_of(&known.body));
    let (nonce, key) = api.challenge(&unknown_id).await;
    let proof = unknown.handshake_proof(&key, &nonce, &unknown_id);
    let missing = api.verify(&unknown_id, &nonce, &proof).await;
    assert_eq!(
        (missing.status, missing.code()),
        (StatusCode::UNAUTHORIZED, "unauthenticated")
    );

    // A proof that is not even base64url: still 401, and the nonce is spent.
    let (nonce, key) = api.challenge(&account_id).await;
    let garbled = api
        .post(
            "/accounts/verify",
            None,
            json!({ "accountId": account_id, "nonce": nonce, "proof": "***" }),
        )
        .await;
    assert_eq!(garbled.code(), "unauthenticated");
    let proof = keys.handshake_proof(&key, &nonce, &account_id);
    assert_eq!(
        api.verify(&account_id, &nonce, &proof).await.code(),
        "unauthenticated"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_expire_after_thirty_days() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let signed_in = api.register(&keys).await;
    api.app
        .clock
        .advance(TimeDelta::days(30) - TimeDelta::seconds(1));
    assert_eq!(
        api.get("/accounts/me", Some(&signed_in.token)).await.status,
        StatusCode::OK
    );
    api.app.clock.advance(TimeDelta::seconds(1));
    let expired = api.get("/accounts/me", Some(&signed_in.token)).await;
    assert_eq!(
        (expired.status, expired.code()),
        (StatusCode::UNAUTHORIZED, "session_expired")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_or_malformed_tokens_are_unauthenticated() {
    let api = Api::spawn().await;
    let none = api.get("/accounts/me", None).await;
    assert_eq!(
        (none.status, none.code()),
        (StatusCode::UNAUTHORIZED, "unauthenticated")
    );
    let made_up = api
        .get(
            "/accounts/me",
            Some("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
        )
        .await;
    assert_eq!(made_up.code(), "unauthenticated");
    let short = api.get("/accounts/sessions", Some("abc")).await;
    assert_eq!(short.code(), "unauthenticated");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_erased_account_is_gone_and_its_id_never_returns() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let signed_in = api.register(&keys).await;
    let again = api
        .post(
            "/accounts",
            None,
            json!({
                "accountId": keys.account_id(),
                "authVerifier": sealpost_seal::b64::encode(&keys.auth_verifier()),
                "authPublicKey": sealpost_seal::b64::encode(&keys.auth_public_key()),
            }),
        )
        .await;
    assert_eq!(
        (again.status, again.code()),
        (StatusCode::CONFLICT, "id_taken")
    );

    let erased = api.delete("/accounts/me", Some(&signed_in.token)).await;
    assert_eq!(erased.status, StatusCode::NO_CONTENT);
    assert_eq!(
        api.get("/accounts/me", Some(&signed_in.token)).await.code(),
        "unauthenticated"
    );

    let account_id = keys.account_id();
    let (nonce, key) = api.challenge(&account_id).await;
    let proof = keys.handshake_proof(&key, &nonce, &account_id);
    assert_eq!(
        api.verify(&account_id, &nonce, &proof).await.code(),
        "unauthenticated"
    );

    let reregister = api
        .post(
            "/accounts",
            None,
            json!({
                "accountId": account_id,
                "authVerifier": sealpost_seal::b64::encode(&keys.auth_verifier()),
                "authPublicKey": sealpost_seal::b64::encode(&keys.auth_public_key()),
            }),
        )
        .await;
    assert_eq!(
        (reregister.status, reregister.code()),
        (StatusCode::CONFLICT, "id_taken")
    );
}

/// `POST /accounts` from `client`, as a trusted proxy on loopback names it.
async fn register_from(api: &Api, client: &str) -> reqwest::Response {
    let (_, keys) = new_keys();
    reqwest::Client::new()
        .post(api.app.url("/accounts"))
        .header("x-forwarded-for", client)
        .json(&json!({
            "accountId": keys.account_id(),
            "authVerifier": sealpost_seal::b64::encode(&keys.auth_verifier()),
            "authPublicKey": sealpost_seal::b64::encode(&keys.auth_public_key()),
        }))
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_client_network_registers_a_limited_number_of_accounts_an_hour() {
    let api = Api::with(
        sealpost_testkit::TestApp::spawn_with(|config| {
            config.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
            config.registrations_per_network = 3;
        })
        .await,
    );
    // Three addresses of one /24: three accounts.
    for client in ["198.51.100.7", "198.51.100.8", "198.51.100.9"] {
        assert_eq!(
            register_from(&api, client).await.status(),
            StatusCode::CREATED
        );
    }
    // A fourth address of the same /24 is refused until the first leaves the hour.
    let refused = register_from(&api, "198.51.100.200").await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(retry_after, "3600");
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited");

    // Another network is not held by it; an IPv6 /48 counts as one network.
    assert_eq!(
        register_from(&api, "198.51.101.7").await.status(),
        StatusCode::CREATED
    );
    for client in ["2001:db8:1:1::1", "2001:db8:1:2::1", "2001:db8:1:ffff::1"] {
        assert_eq!(
            register_from(&api, client).await.status(),
            StatusCode::CREATED
        );
    }
    assert_eq!(
        register_from(&api, "2001:db8:1:abcd::9").await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );

    // An hour later the first network registers again.
    api.app.clock.advance(TimeDelta::hours(1));
    assert_eq!(
        register_from(&api, "198.51.100.7").await.status(),
        StatusCode::CREATED
    );
    // Only a hash of each network is kept: no client address in any table.
    let everything = crate::storage::database_text(&api).await;
    for network in ["198.51.100", "198.51.101", "2001:db8:1"] {
        assert!(!everything.contains(network), "{network} stored");
    }

    // The sweep removes what no longer counts: only the newest stays.
    api.app.services().accounts.sweep().await.unwrap();
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = api.app.db.connect().await;
    let left: Count = diesel_async::RunQueryDsl::get_result(
        diesel::sql_query("SELECT count(*) AS n FROM registrations"),
        &mut conn,
    )
    .await
    .unwrap();
    assert_eq!(left.n, 1);
}
