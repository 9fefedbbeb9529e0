//! `/metrics` of the API and the jobs (`SEALPOST_METRICS_ADDR`): requests
//! by route template and status with their latency, webhook deliveries by
//! outcome, the outbox backlog and the database pool; no label holds an id,
//! an address or a token. Other tests of this binary record too, so counts
//! are checked as at least this test's.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use sealpost_seal::ServerKeys;
use sealpost_testkit::TestApp;
use sealpost_testkit::metrics::{scrape, series_value};
use sealpost_testkit::receiver::Receiver;
use serde_json::json;

use crate::support::{Api, new_keys};

#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_requests_by_route_template_and_webhooks_by_outcome() {
    let receiver = Receiver::start(200).await;
    let ca_file =
        std::env::temp_dir().join(format!("sealpost-test-ca-{}.pem", receiver.addr.port()));
    std::fs::write(&ca_file, &receiver.ca_pem).unwrap();
    let port = receiver.addr.port();
    let app = TestApp::spawn_with(move |config| {
        config.webhook_resolve = Some(format!("hooks.test=127.0.0.1:{port}"));
        config.webhook_ca_file = Some(ca_file);
        config.server_keys = Some(ServerKeys::new([22; 32], []));
        config.operations.metrics_addr = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let metrics_addr = app.metrics_addr().expect("a metrics listener");
    let api = Api::with(app);
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    let created = api
        .post(
            "/webhook-endpoints",
            Some(&owner.token),
            json!({ "id": "whk_metric01", "url": format!("https://hooks.test:{port}/hook"),
                    "events": ["inbox.created"] }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let address = api.create_address(&owner.token, "ibx_metric01").await;
    let email = address["emailAddress"].as_str().unwrap().to_owned();
    let listed = api
        .get("/inboxes/ibx_metric01/messages", Some(&owner.token))
        .await;
    assert_eq!(listed.status, StatusCode::OK);

    // The jobs deliver the inbox.created event to the receiver.
    let jobs = api.app.spawn_jobs().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let metrics = loop {
        let metrics = scrape(metrics_addr).await;
        let delivered = series_value(
            &metrics,
            "sealpost_webhook_deliveries_total{outcome=\"succeeded\"}",
        );
        let backlog = series_value(&metrics, "sealpost_outbox_backlog{consumer=\"webhooks\"}");
        // The counter is the test binary's, shared with other tests: this
        // test's own delivery is the receiver's.
        if delivered.is_some_and(|n| n >= 1.0)
            && backlog.is_some()
            && !receiver.requests().is_empty()
        {
            break metrics;
        }
        assert!(
            Instant::now() < deadline,
            "no webhook delivery or backlog counted:\n{metrics}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(receiver.requests().len(), 1);

    let route = "method=\"GET\",route=\"/inboxes/{id}/messages\"";
    assert!(
        series_value(
            &metrics,
            &format!("sealpost_http_requests_total{{{route},status=\"200\"}}")
        )
        .is_some_and(|n| n >= 1.0),
        "{metrics}"
    );
    assert!(
        series_value(
            &metrics,
            &format!("sealpost_http_request_duration_seconds_count{{{route}}}")
        )
        .is_some_and(|n| n >= 1.0),
        "{metrics}"
    );
    assert!(
        series_value(
            &metrics,
            "sealpost_http_requests_total{method=\"POST\",route=\"/inboxes\",status=\"201\"}"
        )
        .is_some_and(|n| n >= 1.0),
        "{metrics}"
    );
    assert!(series_value(&metrics, "sealpost_db_pool_max_connections").is_some_and(|n| n >= 1.0));
    for secret in [
        "ibx_metric01",
        "whk_metric01",
        email.as_str(),
        owner.token.as_str(),
        owner.account_id.as_str(),
    ] {
        assert!(!metrics.contains(secret), "/metrics holds {secret:?}");
    }
    jobs.stop().await;
}
