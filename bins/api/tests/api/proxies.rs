//! The client behind a reverse proxy: forwarding headers are believed only
//! from `SEALPOST_TRUSTED_PROXIES`, and the per-IP limits count per client.

use reqwest::StatusCode;
use sealpost_testkit::TestApp;
use serde_json::json;

use crate::support::{Api, new_keys};

/// A bad pairing-code lookup by `token` from a client the proxy names as `client`.
async fn bad_lookup(api: &Api, token: &str, client: &str) -> StatusCode {
    reqwest::Client::new()
        .post(api.app.url("/workers/pair/lookup"))
        .bearer_auth(token)
        .header("x-forwarded-for", format!("203.0.113.50, {client}"))
        .json(&json!({ "code": "00000000" }))
        .send()
        .await
        .unwrap()
        .status()
}

async fn accounts<const N: usize>(api: &Api) -> [String; N] {
    let mut tokens = Vec::new();
    for _ in 0..N {
        let (_, keys) = new_keys();
        tokens.push(api.register(&keys).await.token);
    }
    tokens.try_into().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn behind_a_trusted_proxy_each_client_has_its_own_lookup_allowance() {
    let api = Api::with(
        TestApp::spawn_with(|config| {
            config.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
        })
        .await,
    );
    let [first, second, third, fourth] = accounts(&api).await;
    for _ in 0..10 {
        assert_eq!(
            bad_lookup(&api, &first, "198.51.100.1").await,
            StatusCode::NOT_FOUND
        );
    }
    assert_eq!(
        bad_lookup(&api, &first, "198.51.100.1").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // Another client behind the same proxy is not held back...
    assert_eq!(
        bad_lookup(&api, &second, "198.51.100.2").await,
        StatusCode::NOT_FOUND
    );
    // ...while the first client is, whichever account it uses.
    assert_eq!(
        bad_lookup(&api, &third, "198.51.100.1").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // An IPv6 client is counted per /64.
    for _ in 0..10 {
        assert_eq!(
            bad_lookup(&api, &fourth, "2001:db8:7:7::1").await,
            StatusCode::NOT_FOUND
        );
    }
    assert_eq!(
        bad_lookup(&api, &third, "2001:db8:7:7:ffff::2").await,
        StatusCode::TOO_MANY_REQUESTS
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_trusted_proxies_forwarding_headers_are_ignored() {
    let api = Api::spawn().await;
    let [first, second] = accounts(&api).await;
    for _ in 0..10 {
        bad_lookup(&api, &first, "198.51.100.1").await;
    }
    // The header is the client's own claim: the peer's allowance is spent.
    assert_eq!(
        bad_lookup(&api, &second, "198.51.100.2").await,
        StatusCode::TOO_MANY_REQUESTS
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn webhooks_may_not_point_at_the_api_itself() {
    let api = Api::with(
        TestApp::spawn_with(|config| {
            config.public_url = "https://api.sealpost.example".into();
        })
        .await,
    );
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    for url in [
        "https://api.sealpost.example/hook",
        "https://hooks.api.sealpost.example/hook",
    ] {
        let reply = api
            .post(
                "/webhook-endpoints",
                Some(&owner.token),
                json!({ "id": "whk_self01", "url": url, "events": ["*"] }),
            )
            .await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::BAD_REQUEST, "invalid_url"),
            "{url}"
        );
    }
}

/// `GET /plans` from the proxy's client `client`.
async fn plans_for(api: &Api, client: &str) -> StatusCode {
    reqwest::Client::new()
        .get(api.app.url("/plans"))
        .header("x-forwarded-for", client)
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_edge_limit_counts_each_client_behind_a_trusted_proxy() {
    let api = Api::with(
        TestApp::spawn_with(|config| {
            config.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
            config.edge_rate_per_minute = 3;
        })
        .await,
    );
    for _ in 0..3 {
        assert_eq!(plans_for(&api, "198.51.100.1").await, StatusCode::OK);
    }
    assert_eq!(
        plans_for(&api, "198.51.100.1").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // Another client behind the same proxy has its own allowance.
    assert_eq!(plans_for(&api, "198.51.100.2").await, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_edge_limit_ignores_an_untrusted_peers_forwarding_header() {
    let api = Api::with(
        TestApp::spawn_with(|config| {
            config.edge_rate_per_minute = 3;
        })
        .await,
    );
    for client in ["198.51.100.1", "198.51.100.2", "198.51.100.3"] {
        assert_eq!(plans_for(&api, client).await, StatusCode::OK);
    }
    assert_eq!(
        plans_for(&api, "198.51.100.4").await,
        StatusCode::TOO_MANY_REQUESTS,
        "one allowance for the peer, whatever it claims"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_is_held_back_without_holding_up_other_clients() {
    let api = Api::with(
        TestApp::spawn_with(|config| {
            config.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
            config.edge_rate_per_minute = 1;
        })
        .await,
    );
    assert_eq!(plans_for(&api, "198.51.100.1").await, StatusCode::OK);
    let started = std::time::Instant::now();
    let timed = |client: &'static str| {
        let api = &api;
        async move {
            let status = plans_for(api, client).await;
            (status, started.elapsed())
        }
    };
    // Two refusals at once, as many as the app has workers: a hold that
    // blocked its worker instead of waiting on a timer would hold up the
    // other client too.
    let (refused, refused_again, other) = tokio::join!(
        timed("198.51.100.1"),
        timed("198.51.100.1"),
        timed("198.51.100.2"),
    );
    for refused in [refused, refused_again] {
        assert_eq!(refused.0, StatusCode::TOO_MANY_REQUESTS);
        assert!(
            refused.1 >= sealpost_http_api::rate_limit::REFUSAL_HOLD,
            "the 429 came after {:?}",
            refused.1
        );
    }
    assert_eq!(other.0, StatusCode::OK);
    assert!(
        other.1 < sealpost_http_api::rate_limit::REFUSAL_HOLD,
        "the other client waited for the refusals: {:?}",
        other.1
    );
}

/// `GET /plans` through a proxy that appends `X-Forwarded-For` (nginx's
/// `$proxy_add_x_forwarded_for`) and passes the client's own `Forwarded`
/// through untouched.
async fn plans_with_forged_forwarded(api: &Api, client: &str, forged: &str) -> StatusCode {
    reqwest::Client::new()
        .get(api.app.url("/plans"))
        .header("forwarded", format!("for={forged}"))
        .header("x-forwarded-for", client)
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clients_own_forwarded_header_is_not_believed_behind_an_x_forwarded_for_proxy() {
    let api = Api::with(
        TestApp::spawn_with(|config| {
            config.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
            config.edge_rate_per_minute = 3;
        })
        .await,
    );
    for forged in ["192.0.2.1", "192.0.2.2", "192.0.2.3"] {
        assert_eq!(
            plans_with_forged_forwarded(&api, "198.51.100.1", forged).await,
            StatusCode::OK
        );
    }
    assert_eq!(
        plans_with_forged_forwarded(&api, "198.51.100.1", "192.0.2.4").await,
        StatusCode::TOO_MANY_REQUESTS,
        "a new forged Forwarded each time must not buy a new allowance"
    );
}
