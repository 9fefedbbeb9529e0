//! The built `sealpost-dns` over a database holding an own domain made live
//! through the API (the SDK against `TestApp`, the public DNS played by the
//! test kit's stand-in), asked over UDP and TCP with DNS messages encoded
//! and read by hickory's wire format.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use sealpost_dns_server::proto::op::{Message, Query, ResponseCode};
use sealpost_dns_server::proto::rr::{Name, RData, RecordType};
use sealpost_testkit::TestApp;
use sealpost_testkit::dns::PublicDns;
use support::{DnsProcess, MX, NS, live_domain, over_tcp, over_udp, question, scale_client, texts};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpStream, UdpSocket};

/// Asks over UDP and over TCP; both answers must agree.
async fn ask(addr: SocketAddr, name: &str, kind: RecordType) -> Message {
    let bytes = question(name, kind).to_vec().unwrap();
    let udp = over_udp(addr, &bytes).await.expect("an answer over UDP");
    let tcp = over_tcp(addr, &bytes).await;
    assert_eq!(
        udp.metadata.response_code, tcp.metadata.response_code,
        "{name} {kind}"
    );
    assert_eq!(udp.answers, tcp.answers, "{name} {kind}");
    assert!(!udp.metadata.recursion_available, "no recursion offered");
    udp
}

/// Asks over UDP until the answer's code is `code`, for at most `within`;
/// how long it took. Only UDP while waiting: a UDP and a TCP question may
/// straddle the cache's reading again and rightly answer differently.
async fn until_code(
    addr: SocketAddr,
    name: &str,
    kind: RecordType,
    code: ResponseCode,
    within: Duration,
) -> Duration {
    let started = Instant::now();
    let bytes = question(name, kind).to_vec().unwrap();
    loop {
        let answer = over_udp(addr, &bytes).await.expect("an answer over UDP");
        if answer.metadata.response_code == code {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < within,
            "{name} {kind} still {} after {within:?}",
            answer.metadata.response_code
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serves_a_live_domain_from_postgresql_over_udp_and_tcp_and_follows_changes() {
    let public = PublicDns::start(&["example.com", "example.net"]).await;
    let resolver = public.addr();
    let app = TestApp::spawn_with(move |config| {
        config.dns.resolver = Some(resolver);
        config.dns.nameservers = NS.iter().map(|ns| ns.to_string()).collect();
        config.dns.mx_host = MX.into();
    })
    .await;
    let client = scale_client(&app).await;
    live_domain(&public, &client, "example.com").await;
    // Zones are cached for a second: a change shows within that.
    let dns = DnsProcess::start_with(&app.db.url, &[("SEALPOST_DNS_ZONE_CACHE_SECS", "1")]).await;

    let soa = ask(dns.addr, "example.com.", RecordType::SOA).await;
    assert_eq!(soa.metadata.response_code, ResponseCode::NoError);
    assert!(soa.metadata.authoritative);
    let RData::SOA(record) = &soa.answers[0].data else {
        panic!("{soa:?}")
    };
    assert_eq!(record.mname.to_ascii(), "ns1.sealpost.test.");

    let ns = ask(dns.addr, "EXAMPLE.com.", RecordType::NS).await;
    let mut names: Vec<String> = ns
        .answers
        .iter()
        .map(|record| match &record.data {
            RData::NS(name) => name.0.to_ascii(),
            other => panic!("{other:?}"),
        })
        .collect();
    names.sort();
    assert_eq!(names, ["ns1.sealpost.test.", "ns2.sealpost.test."]);

    let mx = ask(dns.addr, "example.com.", RecordType::MX).await;
    let RData::MX(record) = &mx.answers[0].data else {
        panic!("{mx:?}")
    };
    assert_eq!(record.exchange.to_ascii(), "mx.sealpost.test.");

    let spf = ask(dns.addr, "example.com.", RecordType::TXT).await;
    assert_eq!(texts(&spf), ["v=spf1 mx ~all"]);
    let dmarc = ask(dns.addr, "_dmarc.example.com.", RecordType::TXT).await;
    assert!(
        texts(&dmarc)[0].starts_with("v=DMARC1; p=quarantine"),
        "{dmarc:?}"
    );
    let dkim = ask(
        dns.addr,
        "sealpost._domainkey.example.com.",
        RecordType::TXT,
    )
    .await;
    let dkim = texts(&dkim).concat();
    let key = dkim
        .strip_prefix("v=DKIM1; k=rsa; p=")
        .expect("a DKIM record");
    let der = data_encoding::BASE64.decode(key.as_bytes()).unwrap();
    assert!(
        der.len() > 256,
        "an RSA 2048 public key, {} bytes",
        der.len()
    );

    // Inside the zone, a name that does not exist; outside, REFUSED.
    let missing = ask(dns.addr, "www.example.com.", RecordType::A).await;
    assert_eq!(missing.metadata.response_code, ResponseCode::NXDomain);
    for name in ["example.org.", "com.", "sealpost.test."] {
        let refused = ask(dns.addr, name, RecordType::SOA).await;
        assert_eq!(
            refused.metadata.response_code,
            ResponseCode::Refused,
            "{name}"
        );
        assert!(refused.answers.is_empty());
    }
    // No zone transfers.
    let axfr = over_tcp(
        dns.addr,
        &question("example.com.", RecordType::AXFR).to_vec().unwrap(),
    )
    .await;
    assert_eq!(axfr.metadata.response_code, ResponseCode::Refused);

    // Hostile input: garbage, an oversized datagram, two questions, a TCP
    // length prefix promising more than comes, a huge TCP message of junk.
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    socket.send_to(b"\x00\x01junk", dns.addr).await.unwrap();
    socket.send_to(&[0xff; 9000], dns.addr).await.unwrap();
    let mut two = question("example.com.", RecordType::SOA);
    two.add_query(Query::query(
        Name::from_ascii("example.com.").unwrap(),
        RecordType::MX,
    ));
    let formerr = over_udp(dns.addr, &two.to_vec().unwrap()).await;
    if let Some(answer) = formerr {
        assert_eq!(answer.metadata.response_code, ResponseCode::FormErr);
        assert!(answer.answers.is_empty());
    }
    let mut cut = TcpStream::connect(dns.addr).await.unwrap();
    cut.write_all(&[0xff, 0xff, 1, 2, 3]).await.unwrap();
    drop(cut);
    let mut junk = TcpStream::connect(dns.addr).await.unwrap();
    let _ = junk.write_all(&[0xff; 70_000]).await;
    drop(junk);
    let still = ask(dns.addr, "example.com.", RecordType::SOA).await;
    assert_eq!(
        still.metadata.response_code,
        ResponseCode::NoError,
        "still answering"
    );

    // Zones follow the database without a restart: a second domain goes
    // live and is served, the first is removed and refused.
    // Within the cache's life (1 s here), with a little room for the asking.
    let life = Duration::from_millis(1_500);
    live_domain(&public, &client, "example.net").await;
    until_code(
        dns.addr,
        "example.net.",
        RecordType::MX,
        ResponseCode::NoError,
        life,
    )
    .await;
    let added = ask(dns.addr, "example.net.", RecordType::MX).await;
    assert_eq!(added.answers.len(), 1);
    client.remove_domain("example.com").await.unwrap();
    until_code(
        dns.addr,
        "example.com.",
        RecordType::SOA,
        ResponseCode::Refused,
        life,
    )
    .await;
    let removed = ask(dns.addr, "example.com.", RecordType::SOA).await;
    assert_eq!(removed.metadata.response_code, ResponseCode::Refused);

    app.stop().await;
    public.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mail_sent_from_an_own_domain_is_signed_with_the_key_sealpost_dns_serves() {
    use sealpost_client::sealing::new_address_id;
    use sealpost_client::sending::SendMailRequest;
    use sealpost_client::types::CreateAddressRequest;
    use sealpost_testkit::relay::{
        Behaviour, DKIM_TEST_RECORD, TestRelay, dkim_test_key_path, dkim_verifies,
        dkim_verifies_with,
    };

    let relay = TestRelay::start(Behaviour::Accept).await;
    let url = relay.url();
    let public = PublicDns::start(&["example.com"]).await;
    let resolver = public.addr();
    let app = TestApp::spawn_with(move |config| {
        config.dns.resolver = Some(resolver);
        config.dns.nameservers = NS.iter().map(|ns| ns.to_string()).collect();
        config.dns.mx_host = MX.into();
        config.smtp_relay = Some(sealpost_config::RelayUrl::new(url));
        config.dkim_key_file = Some(dkim_test_key_path());
    })
    .await;
    let client = scale_client(&app).await;
    live_domain(&public, &client, "example.com").await;
    let dns = DnsProcess::start(&app.db.url).await;
    let mut own = CreateAddressRequest::new(&new_address_id(), "example.com");
    own.local_part = Some("hello".into());
    client.create_address(&own).await.unwrap();
    let shared = client
        .create_address(&CreateAddressRequest::new(
            &new_address_id(),
            "mail.localhost",
        ))
        .await
        .unwrap();
    let send = |from: &str| SendMailRequest {
        from: from.to_owned(),
        to: vec!["bob@example.org".into()],
        subject: "Signed".into(),
        text: "hello from my own domain".into(),
        ..SendMailRequest::default()
    };
    client.send_mail(&send("hello@example.com")).await.unwrap();
    client
        .send_mail(&send(&shared.email_address))
        .await
        .unwrap();
    let received = relay.received();
    assert_eq!(received.len(), 2);

    // Signed for the own domain, with the key its nameservers publish.
    let raw = &received[0].data;
    let text = String::from_utf8_lossy(raw);
    let signature = text
        .lines()
        .find(|line| line.starts_with("DKIM-Signature:"))
        .unwrap_or_else(|| panic!("no DKIM-Signature in:\n{text}"));
    assert!(signature.contains("d=example.com;"), "{signature}");
    assert!(signature.contains("s=sealpost;"), "{signature}");
    let name = "sealpost._domainkey.example.com";
    let record = texts(&ask(dns.addr, &format!("{name}."), RecordType::TXT).await).concat();
    assert!(dkim_verifies_with(raw, name, &record).await, "{text}");
    assert!(
        !dkim_verifies_with(raw, name, DKIM_TEST_RECORD).await,
        "not the shared domains' key"
    );
    // The shared domain keeps the shared key.
    assert!(dkim_verifies(&received[1].data).await);

    app.stop().await;
    public.stop().await;
}
