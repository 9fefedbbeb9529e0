//! The built `sealpost-dns` over a database holding an own domain made live
//! through the API (the SDK against `TestApp`, the public DNS played by the
//! test kit's stand-in), asked over UDP and TCP with DNS messages encoded
//! and read by hickory's wire format.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use sealpost_client::Client;
use sealpost_client::domains::DomainStep;
use sealpost_dns_server::proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use sealpost_dns_server::proto::rr::{Name, RData, RecordType};
use sealpost_seal::RecoveryPhrase;
use sealpost_testkit::TestApp;
use sealpost_testkit::dns::PublicDns;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, UdpSocket};
use tokio::process::{Child, Command};

const NS: [&str; 2] = ["ns1.sealpost.test", "ns2.sealpost.test"];
const MX: &str = "mx.sealpost.test";

/// The `sealpost-dns` process and where it answers.
struct DnsProcess {
    addr: SocketAddr,
    _child: Child,
}

impl DnsProcess {
    /// Starts the binary on a port of its choosing; its log line says which.
    async fn start(database_url: &str) -> DnsProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sealpost-dns"))
            .env("DATABASE_URL", database_url)
            .env("SEALPOST_DNS_ADDR", "127.0.0.1:0")
            .env("SEALPOST_DNS_NAMESERVERS", NS.join(","))
            .env("SEALPOST_MX_HOST", MX)
            .env("SEALPOST_LOG", "info")
            .env_remove("SEALPOST_LOG_JSON")
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(rest) = line.split("udp=").nth(1) {
                    let addr = rest.split_whitespace().next().unwrap();
                    return addr.parse::<SocketAddr>().unwrap();
                }
            }
            panic!("sealpost-dns ended without saying where it listens");
        })
        .await
        .expect("sealpost-dns starts within 30 s");
        // Keep reading its log so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        DnsProcess {
            addr,
            _child: child,
        }
    }
}

fn question(name: &str, kind: RecordType) -> Message {
    let mut message = Message::new(0x5150, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.add_query(Query::query(Name::from_ascii(name).unwrap(), kind));
    message
}

async fn over_udp(addr: SocketAddr, bytes: &[u8]) -> Option<Message> {
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    socket.send_to(bytes, addr).await.unwrap();
    let mut buffer = vec![0u8; 65_535];
    let read = tokio::time::timeout(Duration::from_secs(3), socket.recv(&mut buffer)).await;
    let read = read.ok()?.unwrap();
    Some(Message::from_vec(&buffer[..read]).unwrap())
}

async fn over_tcp(addr: SocketAddr, bytes: &[u8]) -> Message {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let length = u16::try_from(bytes.len()).unwrap().to_be_bytes();
    stream.write_all(&length).await.unwrap();
    stream.write_all(bytes).await.unwrap();
    let mut length = [0u8; 2];
    stream.read_exact(&mut length).await.unwrap();
    let mut answer = vec![0u8; usize::from(u16::from_be_bytes(length))];
    stream.read_exact(&mut answer).await.unwrap();
    Message::from_vec(&answer).unwrap()
}

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

fn texts(message: &Message) -> Vec<String> {
    message
        .answers
        .iter()
        .filter_map(|record| match &record.data {
            RData::TXT(txt) => Some(
                txt.txt_data
                    .iter()
                    .map(|part| String::from_utf8_lossy(part).into_owned())
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

/// `domain` made live through the API, as a person would.
async fn live_domain(public: &PublicDns, client: &Client, domain: &str) {
    let added = client.add_domain(domain).await.unwrap();
    public.publish_txt(&added.record.name, &added.record.value);
    public.delegate(domain, &NS);
    public.set_mx(domain, &[MX]);
    let checked = client.check_domain(domain).await.unwrap();
    assert_eq!(checked.step, DomainStep::Live, "{checked:?}");
}

async fn scale_client(app: &TestApp) -> Client {
    use diesel_async::RunQueryDsl;
    let keys = RecoveryPhrase::generate().keys();
    let client = Client::new(&app.base_url).unwrap();
    let signed_in = client.register(&keys).await.unwrap();
    let mut conn = app.db.connect().await;
    diesel::sql_query("UPDATE accounts SET plan_id = 'scale' WHERE id = $1")
        .bind::<diesel::sql_types::Text, _>(keys.account_id())
        .execute(&mut conn)
        .await
        .unwrap();
    client.with_token(signed_in.token)
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
    let dns = DnsProcess::start(&app.db.url).await;

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
    live_domain(&public, &client, "example.net").await;
    let added = ask(dns.addr, "example.net.", RecordType::MX).await;
    assert_eq!(added.metadata.response_code, ResponseCode::NoError);
    assert_eq!(added.answers.len(), 1);
    client.remove_domain("example.com").await.unwrap();
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
