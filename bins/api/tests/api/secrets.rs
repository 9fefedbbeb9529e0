//! The service's own secrets at rest (`SEALPOST_SERVER_KEY`): challenge
//! secrets derived, never stored; webhook secrets sealed; no start without
//! the key; old rows and old keys sealed again at start-up.

use diesel::QueryableByName;
use diesel_async::RunQueryDsl;
use reqwest::StatusCode;
use sealpost_api_server::{Running, StartOptions};
use sealpost_config::Config;
use sealpost_seal::{ServerKeys, b64, random_bytes};
use serde_json::json;

use crate::storage::{database_text, hex};
use crate::support::{Api, new_keys};

/// Another API process over the same database and clock, under `config`.
async fn second_api(api: &Api, config: &Config) -> (Running, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let options = StartOptions {
        http_threads: 1,
        background_jobs: false,
    };
    let running =
        sealpost_api_server::start(config, api.app.clock.clone(), Some(listener), options)
            .await
            .expect("starting a second API");
    (running, base)
}

fn other_key() -> ServerKeys {
    ServerKeys::new(random_bytes::<32>(), [])
}

#[tokio::test(flavor = "multi_thread")]
async fn no_challenge_or_webhook_secret_is_stored_and_sign_in_still_works() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    let created = api
        .post(
            "/webhook-endpoints",
            Some(&owner.token),
            json!({ "id": "whk_secret1", "url": "https://hooks.example.com/x", "events": ["*"] }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let first = created.body["secret"].as_str().unwrap().to_owned();
    let rotated = api
        .post(
            "/webhook-endpoints/whk_secret1/rotate-secret",
            Some(&owner.token),
            json!({}),
        )
        .await;
    assert_eq!(rotated.status, StatusCode::OK, "{}", rotated.body);
    let second = rotated.body["secret"].as_str().unwrap().to_owned();
    assert!(second.starts_with("whsec_") && second != first);

    // A challenge waiting for its proof: its secret is the nonce's
    // derivation under the server key, and must not be in any row.
    let (nonce, challenge_key) = api.challenge(&owner.account_id).await;
    let server_keys = api.app.config.server_keys.clone().unwrap();
    let challenge_secret = server_keys.derive("sign-in challenge", nonce.as_bytes());
    assert_eq!(
        sealpost_seal::ChallengeKeypair::from_secret(*challenge_secret).public,
        challenge_key
    );

    let everything = database_text(&api).await;
    assert!(everything.contains("whk_secret1"), "the scan sees the data");
    for (label, secret) in [
        ("first webhook secret", first.clone()),
        ("rotated webhook secret", second.clone()),
        ("its base64url part", second["whsec_".len()..].to_owned()),
        ("its hex", hex(second.as_bytes())),
        ("challenge secret (hex)", hex(&*challenge_secret)),
        (
            "challenge secret (base64url)",
            b64::encode(&*challenge_secret),
        ),
    ] {
        assert!(
            !everything.contains(&secret),
            "{label} is stored in the clear"
        );
    }

    // The waiting challenge still signs in, and so does a fresh one.
    let proof = keys.handshake_proof(&challenge_key, &nonce, &owner.account_id);
    let verified = api.verify(&owner.account_id, &nonce, &proof).await;
    assert_eq!(verified.status, StatusCode::OK, "{}", verified.body);
    api.sign_in(&keys).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_server_key_the_challenge_cannot_be_answered() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;

    // Everything the database holds, but another server key: the process
    // cannot re-create the challenge's secret, so the right proof fails.
    let mut config = api.app.config.clone();
    config.server_keys = Some(other_key());
    let (other, base) = second_api(&api, &config).await;
    let http = reqwest::Client::new();
    let verify = |nonce: String, proof: [u8; 32]| {
        http.post(format!("{base}/accounts/verify"))
            .json(&json!({ "accountId": owner.account_id, "nonce": nonce, "proof": b64::encode(&proof) }))
            .send()
    };
    let (nonce, challenge_key) = api.challenge(&owner.account_id).await;
    let proof = keys.handshake_proof(&challenge_key, &nonce, &owner.account_id);
    let refused = verify(nonce, proof).await.unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);

    // The same process answers challenges it issued itself.
    let issued: serde_json::Value = http
        .post(format!("{base}/accounts/challenge"))
        .json(&json!({ "accountId": owner.account_id }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let nonce = issued["nonce"].as_str().unwrap().to_owned();
    let key = b64::decode_32(issued["challengeKey"].as_str().unwrap()).unwrap();
    let proof = keys.handshake_proof(&key, &nonce, &owner.account_id);
    assert_eq!(verify(nonce, proof).await.unwrap().status(), StatusCode::OK);
    other.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_and_the_jobs_refuse_to_start_without_a_server_key() {
    let api = Api::spawn().await;
    let mut config = api.app.config.clone();
    config.server_keys = None;
    for http in [true, false] {
        let listener = http.then(|| std::net::TcpListener::bind("127.0.0.1:0").unwrap());
        let options = StartOptions {
            http_threads: 1,
            background_jobs: !http,
        };
        let Err(error) =
            sealpost_api_server::start(&config, api.app.clock.clone(), listener, options).await
        else {
            panic!("started without SEALPOST_SERVER_KEY");
        };
        let message = format!("{error:#}");
        assert!(
            message.contains("SEALPOST_SERVER_KEY is unset"),
            "{message}"
        );
    }
}

#[derive(QueryableByName)]
struct SecretRow {
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    secret: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Bytea>)]
    secret_sealed: Option<Vec<u8>>,
}

async fn stored_secret(api: &Api, id: &str) -> SecretRow {
    let mut conn = api.app.db.connect().await;
    diesel::sql_query("SELECT secret, secret_sealed FROM webhooks WHERE id = $1")
        .bind::<diesel::sql_types::Text, _>(id)
        .get_result(&mut conn)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn plain_rows_and_rows_under_an_old_key_are_sealed_again_at_start() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    let created = api
        .post(
            "/webhook-endpoints",
            Some(&owner.token),
            json!({ "id": "whk_legacy1", "url": "https://hooks.example.com/x", "events": ["*"] }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    // A row as it was before secrets were sealed.
    let legacy = format!("whsec_{}", b64::encode(&random_bytes::<32>()));
    let mut conn = api.app.db.connect().await;
    diesel::sql_query(
        "UPDATE webhooks SET secret = $1, secret_sealed = NULL WHERE id = 'whk_legacy1'",
    )
    .bind::<diesel::sql_types::Text, _>(&legacy)
    .execute(&mut conn)
    .await
    .unwrap();

    // A jobs process starts with the same key: it seals the plain row.
    let keys_now = api.app.config.server_keys.clone().unwrap();
    api.app.spawn_jobs().await.stop().await;
    let row = stored_secret(&api, "whk_legacy1").await;
    assert_eq!(row.secret, None);
    let sealed = row.secret_sealed.unwrap();
    assert!(!keys_now.needs_reseal(&sealed));
    assert_eq!(
        keys_now
            .open("webhook-secret", "whk_legacy1", &sealed)
            .unwrap()
            .as_slice(),
        legacy.as_bytes()
    );

    // Rotation: a key being retired sealed the row; a new key is current
    // and the retired one is listed in SEALPOST_SERVER_KEYS_OLD.
    let retired = random_bytes::<32>();
    let under_retired =
        ServerKeys::new(retired, []).seal("webhook-secret", "whk_legacy1", legacy.as_bytes());
    diesel::sql_query("UPDATE webhooks SET secret_sealed = $1 WHERE id = 'whk_legacy1'")
        .bind::<diesel::sql_types::Bytea, _>(&under_retired)
        .execute(&mut conn)
        .await
        .unwrap();
    let new_text = ServerKeys::generate_text();
    let old_text = b64::encode(&retired);
    let mut config = api.app.config.clone();
    let rotated = ServerKeys::from_text(&new_text, &[&old_text]).unwrap();
    config.server_keys = Some(rotated.clone());
    let options = StartOptions {
        http_threads: 1,
        background_jobs: true,
    };
    sealpost_api_server::start(&config, api.app.clock.clone(), None, options)
        .await
        .unwrap()
        .stop()
        .await;
    let sealed = stored_secret(&api, "whk_legacy1")
        .await
        .secret_sealed
        .unwrap();
    assert!(!rotated.needs_reseal(&sealed), "sealed under the new key");
    let only_new = ServerKeys::from_text(&new_text, &[]).unwrap();
    assert_eq!(
        only_new
            .open("webhook-secret", "whk_legacy1", &sealed)
            .unwrap()
            .as_slice(),
        legacy.as_bytes(),
        "the old key is no longer needed"
    );
}
