//! SIGTERM stops the built `sealpost-dns` cleanly: it answers up to the
//! signal, closes its sockets and exits 0 (it was killed by the signal
//! before, as if it had crashed).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod support;

use std::time::Duration;

use sealpost_dns_server::proto::op::ResponseCode;
use sealpost_dns_server::proto::rr::RecordType;
use sealpost_testkit::TestDb;
use support::{DnsProcess, over_tcp, over_udp, question};
use tokio::net::TcpStream;

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_closes_the_sockets_and_exits_0() {
    let db = TestDb::create().await;
    let dns = DnsProcess::start(&db.url).await;
    let addr = dns.addr;
    let bytes = question("nowhere.example.", RecordType::SOA)
        .to_vec()
        .unwrap();
    // Answered before: no own domain, so REFUSED, over both transports.
    let udp = over_udp(addr, &bytes).await.expect("an answer over UDP");
    assert_eq!(udp.metadata.response_code, ResponseCode::Refused);
    let tcp = over_tcp(addr, &bytes).await;
    assert_eq!(tcp.metadata.response_code, ResponseCode::Refused);

    dns.terminate();
    let status = dns.exited(Duration::from_secs(30)).await;
    assert_eq!(status.code(), Some(0), "{status}");
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "the TCP listener is closed"
    );
}
