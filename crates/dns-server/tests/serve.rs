//! The server over real sockets, asked by the resolver the domain checks use.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use sealpost_dns_check::DnsResolver;
use sealpost_dns_server::proto::rr::rdata::{MX, NS};
use sealpost_dns_server::proto::rr::{RData, RecordType};
use sealpost_dns_server::{DnsServer, MemoryZones, fqdn, txt};
use sealpost_domains::DnsLookup;

#[tokio::test(flavor = "multi_thread")]
async fn answers_its_zones_over_udp_and_tcp_refuses_others_and_survives_junk() {
    let zones = MemoryZones::new();
    zones.add_zone("example.com").unwrap();
    zones
        .set(
            "example.com",
            RecordType::NS,
            vec![RData::NS(NS(fqdn("ns1.sealpost.net").unwrap()))],
        )
        .unwrap();
    zones
        .set(
            "example.com",
            RecordType::MX,
            vec![RData::MX(MX::new(10, fqdn("MX.sealpost.net").unwrap()))],
        )
        .unwrap();
    zones
        .set(
            "_service-verify.example.com",
            RecordType::TXT,
            vec![txt("service-verify=abc")],
        )
        .unwrap();
    // Too long for one UDP answer: the resolver has to come back over TCP.
    let long = "k".repeat(3000);
    zones
        .set("big.example.com", RecordType::TXT, vec![txt(&long)])
        .unwrap();
    let server = DnsServer::start("127.0.0.1:0".parse().unwrap(), zones.clone())
        .await
        .unwrap();
    assert_eq!(server.udp_addr, server.tcp_addr);

    // Junk and an oversized datagram first: the server keeps answering.
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    socket
        .send_to(b"\x00\x01junk", server.udp_addr)
        .await
        .unwrap();
    socket
        .send_to(&[0xff; 4000], server.udp_addr)
        .await
        .unwrap();

    let dns = DnsResolver::new(Some(server.udp_addr)).unwrap();
    assert_eq!(
        dns.txt("_service-verify.example.com").await.unwrap(),
        vec!["service-verify=abc".to_owned()]
    );
    assert_eq!(
        dns.ns("example.com").await.unwrap(),
        vec!["ns1.sealpost.net".to_owned()]
    );
    assert_eq!(
        dns.mx("EXAMPLE.com.").await.unwrap(),
        vec!["mx.sealpost.net".to_owned()]
    );
    assert_eq!(dns.txt("big.example.com").await.unwrap(), vec![long]);
    assert!(
        dns.txt("nothing.example.com").await.unwrap().is_empty(),
        "NXDOMAIN"
    );
    assert!(
        dns.mx("_service-verify.example.com")
            .await
            .unwrap()
            .is_empty(),
        "no data"
    );
    assert!(
        dns.txt("example.org").await.is_err(),
        "REFUSED outside its zones"
    );

    // Edited while running.
    zones.clear("example.com", RecordType::MX).unwrap();
    assert!(dns.mx("example.com").await.unwrap().is_empty());
    server.stop().await;
}
