//! The built `sealpost-dns` with `SEALPOST_DNS_METRICS_ADDR` set counts the
//! questions it answered by transport and response code, reports its
//! database pool, and names no asked name in a label.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod support;

use std::net::SocketAddr;

use sealpost_dns_server::proto::op::ResponseCode;
use sealpost_dns_server::proto::rr::RecordType;
use sealpost_testkit::metrics::{scrape, series};
use sealpost_testkit::{TestDb, free_port};
use support::{DnsProcess, over_tcp, over_udp, question};

#[tokio::test(flavor = "multi_thread")]
async fn questions_are_counted_by_transport_and_rcode() {
    let db = TestDb::create().await;
    let metrics_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let dns = DnsProcess::start_with(
        &db.url,
        &[("SEALPOST_DNS_METRICS_ADDR", &metrics_addr.to_string())],
    )
    .await;
    let name = "secret-name-zq7.example.";
    let bytes = question(name, RecordType::TXT).to_vec().unwrap();
    for _ in 0..2 {
        let answer = over_udp(dns.addr, &bytes).await.expect("an answer");
        assert_eq!(answer.metadata.response_code, ResponseCode::Refused);
    }
    let answer = over_tcp(dns.addr, &bytes).await;
    assert_eq!(answer.metadata.response_code, ResponseCode::Refused);

    let metrics = scrape(metrics_addr).await;
    assert_eq!(
        series(
            &metrics,
            "sealpost_dns_queries_total{transport=\"udp\",rcode=\"REFUSED\"}"
        ),
        2.0
    );
    assert_eq!(
        series(
            &metrics,
            "sealpost_dns_queries_total{transport=\"tcp\",rcode=\"REFUSED\"}"
        ),
        1.0
    );
    assert_eq!(series(&metrics, "sealpost_db_pool_max_connections"), 2.0);
    assert!(!metrics.contains("secret-name-zq7"), "{metrics}");
    dns.kill().await;
}
