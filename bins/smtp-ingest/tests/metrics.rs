#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

//! The built `sealpost-smtp` with `SEALPOST_SMTP_METRICS_ADDR` set: after a
//! delivery and a refused recipient, `/metrics` holds the sessions, the
//! refusal by its reason, the message and its bytes, the group commit and
//! the database pool, and no label holds the address, subject or token of
//! the test.

mod support;

use std::net::SocketAddr;

use sealpost_kernel::{Clock, SystemClock};
use sealpost_testkit::metrics::{label_values, scrape, series};
use sealpost_testkit::{TestApp, free_port};
use support::{IngestProcess, Smtp, mail, mailbox};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_shows_in_the_ingest_metrics_without_addresses_subjects_or_tokens() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let app = TestApp::spawn().await;
    app.clock.set(SystemClock.now());
    let (token, address) = mailbox(&app, "ibx_metrics").await;
    let metrics_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let ingest = IngestProcess::start(
        &app,
        &[("SEALPOST_SMTP_METRICS_ADDR", metrics_addr.to_string())],
    )
    .await;

    let subject_token = "zq7metricsubject";
    let message = mail(&address, subject_token);
    let mut smtp = Smtp::connect(ingest.addr).await.unwrap();
    assert_eq!(smtp.send(&address, &message).await, 250);
    let unknown = "nobody-here@mail.localhost";
    assert_eq!(
        smtp.command("MAIL FROM:<a@example.com>").await.unwrap(),
        250
    );
    assert_eq!(
        smtp.command(&format!("RCPT TO:<{unknown}>")).await.unwrap(),
        550
    );
    assert_eq!(smtp.command("QUIT").await.unwrap(), 221);

    let metrics = scrape(metrics_addr).await;
    // Sessions: the start-up probe's and this one.
    assert!(series(&metrics, "sealpost_smtp_sessions_total") >= 2.0);
    assert_eq!(
        series(&metrics, "sealpost_smtp_messages_accepted_total"),
        1.0
    );
    assert_eq!(
        series(&metrics, "sealpost_smtp_accepted_bytes_total"),
        message.len() as f64
    );
    assert_eq!(
        series(
            &metrics,
            "sealpost_smtp_refusals_total{reason=\"unknown_address\"}"
        ),
        1.0
    );
    assert_eq!(
        series(&metrics, "sealpost_ingest_commit_duration_seconds_count"),
        1.0
    );
    assert_eq!(
        series(&metrics, "sealpost_ingest_commit_batch_size_sum"),
        1.0
    );
    assert!(series(&metrics, "sealpost_db_pool_max_connections") >= 1.0);
    assert!(series(&metrics, "sealpost_db_pool_connections{state=\"idle\"}") >= 0.0);

    let secrets = [
        address.as_str(),
        "ibx_metrics",
        unknown,
        subject_token,
        token.as_str(),
        "sender@example.com",
    ];
    for label in label_values(&metrics) {
        for secret in secrets {
            assert!(!label.contains(secret), "label {label:?} holds {secret:?}");
        }
    }
    for secret in secrets {
        assert!(!metrics.contains(secret), "/metrics holds {secret:?}");
    }

    ingest.stop();
    let (blob_dir, spool_dir) = (
        app.config.blob_dir.clone(),
        app.config.smtp_spool_dir.clone(),
    );
    app.stop().await;
    let _ = std::fs::remove_dir_all(blob_dir);
    let _ = std::fs::remove_dir_all(spool_dir);
}
