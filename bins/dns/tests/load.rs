//! `sealpost-dns` under load, over real sockets on loopback and a real
//! PostgreSQL: a flood of random deep names from one source leaves a live
//! zone answering another and asks the database little; answers beyond
//! the rate of one client network are slipped (TC=1) or dropped while other
//! networks are answered; large answers are truncated over UDP and come
//! whole over TCP.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod support;

use std::time::{Duration, Instant};

use diesel_async::RunQueryDsl;
use sealpost_dns_server::proto::op::{Message, ResponseCode};
use sealpost_dns_server::proto::rr::RecordType;
use support::{
    DnsProcess, app_with_live, over_tcp, over_udp_from, question, question_with_edns, texts,
};
use tokio::net::UdpSocket;

/// Reads of the own domains' table so far (sequential and index scans), as
/// PostgreSQL's statistics show them: every zone lookup of the DNS server
/// is one, and nothing else runs while the test floods it.
async fn own_domain_reads(conn: &mut diesel_async::AsyncPgConnection) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        reads: i64,
    }
    diesel::sql_query(
        "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) AS reads \
         FROM pg_stat_user_tables WHERE relname = 'own_domains'",
    )
    .get_result::<Count>(conn)
    .await
    .unwrap()
    .reads
}

/// [`own_domain_reads`] once it has stopped moving: a backend reports its
/// counts when it ends, or within seconds when idle.
async fn own_domain_reads_settled(conn: &mut diesel_async::AsyncPgConnection) -> i64 {
    let mut last = own_domain_reads(conn).await;
    let mut still_since = Instant::now();
    let started = Instant::now();
    while still_since.elapsed() < Duration::from_secs(2)
        && started.elapsed() < Duration::from_secs(15)
    {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = own_domain_reads(conn).await;
        if now != last {
            last = now;
            still_since = Instant::now();
        }
    }
    last
}

/// A name nobody asked before, `depth` labels above `under`.
fn random_name(seed: &mut u64, depth: usize, under: &str) -> String {
    let mut labels = Vec::with_capacity(depth + 1);
    for _ in 0..depth {
        // xorshift: distinct names, enough to defeat any cache by name.
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        labels.push(format!("r{:x}", *seed & 0xffff_ffff));
    }
    labels.push(under.to_owned());
    labels.join(".")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_live_zone_keeps_answering_under_a_flood_of_random_names_and_the_database_is_asked_little()
 {
    let (app, public, _client) = app_with_live(&["example.com"]).await;
    // No rate limit here: the zone cache alone has to carry the flood.
    let dns = DnsProcess::start_with(
        &app.db.url,
        &[
            ("SEALPOST_DNS_RATE", "0"),
            ("SEALPOST_DNS_ZONE_CACHE_SECS", "1"),
        ],
    )
    .await;
    let addr = dns.addr;
    let soa = question("example.com.", RecordType::SOA).to_vec().unwrap();
    let (warm, _) = over_udp_from("127.0.0.1:0", addr, &soa, Duration::from_secs(3))
        .await
        .expect("the zone answers");
    assert_eq!(warm.metadata.response_code, ResponseCode::NoError);
    let mut stats = app.db.connect().await;
    let before = own_domain_reads_settled(&mut stats).await;

    // 20,000 questions from 127.0.0.2 over about eight seconds: random deep
    // names under no zone served here, and under the live zone.
    let socket = std::sync::Arc::new(UdpSocket::bind("127.0.0.2:0").await.unwrap());
    let receiving = socket.clone();
    let answered = tokio::spawn(async move {
        let mut buffer = vec![0u8; 65_535];
        let mut answered = 0u32;
        while let Ok(Ok(_)) =
            tokio::time::timeout(Duration::from_secs(3), receiving.recv(&mut buffer)).await
        {
            answered += 1;
        }
        answered
    });
    let flood = tokio::spawn(async move {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..80 {
            for n in 0..250 {
                let under = if n % 2 == 0 {
                    "flood.example.org."
                } else {
                    "example.com."
                };
                let name = random_name(&mut seed, 4 + n % 4, under);
                let mut message = question(&name, RecordType::TXT);
                message.metadata.id = u16::try_from(n).unwrap();
                socket
                    .send_to(&message.to_vec().unwrap(), addr)
                    .await
                    .unwrap();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });

    // Meanwhile, from 127.0.0.1, the live zone is asked every 50 ms, as a
    // resolver would: up to three tries of a second each.
    let mut asked = 0;
    let mut first_try = 0;
    while !flood.is_finished() {
        asked += 1;
        let mut tries = 0;
        let answer = loop {
            tries += 1;
            let answer = over_udp_from("127.0.0.1:0", addr, &soa, Duration::from_secs(1)).await;
            if answer.is_some() || tries == 3 {
                break answer;
            }
        };
        let (answer, _) = answer.unwrap_or_else(|| {
            panic!("question {asked} to the live zone went unanswered three times under the flood")
        });
        assert_eq!(answer.metadata.response_code, ResponseCode::NoError);
        assert_eq!(answer.answers.len(), 1, "{answer:?}");
        first_try += usize::from(tries == 1);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    flood.await.unwrap();
    let answered = answered.await.unwrap();
    eprintln!(
        "{first_try} of {asked} questions to the live zone answered at the first try; \
         {answered} of the 20,000 flooding ones answered"
    );
    assert!(asked >= 20, "the flood lasted {asked} questions");
    assert!(
        first_try * 10 >= asked * 9,
        "{first_try} of {asked} answered at the first try"
    );

    // Its connections closed, the server's queries are all counted.
    dns.kill().await;
    let reads = own_domain_reads_settled(&mut stats).await - before;
    eprintln!("reads of the own domains during the flood of 20,000 questions: {reads}");
    // About one a second (the cache's life here) while the flood lasts.
    assert!(
        reads < 40,
        "{reads} reads of the own domains for 20,000 questions"
    );

    app.stop().await;
    public.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_beyond_a_networks_rate_are_slipped_or_dropped_and_other_networks_still_answered() {
    let (app, public, _client) = app_with_live(&["example.com"]).await;
    // Each loopback address its own network, 10 answers a second, every
    // second refusal slipped.
    let dns = DnsProcess::start_with(
        &app.db.url,
        &[
            ("SEALPOST_DNS_RATE", "10"),
            ("SEALPOST_DNS_RATE_SLIP", "2"),
            ("SEALPOST_DNS_RATE_IPV4_PREFIX", "32"),
        ],
    )
    .await;
    let addr = dns.addr;

    // 100 questions at once from 127.0.0.2, each with its own id.
    let socket = UdpSocket::bind("127.0.0.2:0").await.unwrap();
    for id in 0..100u16 {
        let mut message = question("example.com.", RecordType::SOA);
        message.metadata.id = id;
        socket
            .send_to(&message.to_vec().unwrap(), addr)
            .await
            .unwrap();
    }
    let (mut whole, mut slipped) = (0, 0);
    let mut buffer = vec![0u8; 65_535];
    while let Ok(read) =
        tokio::time::timeout(Duration::from_millis(1_500), socket.recv(&mut buffer)).await
    {
        let answer = Message::from_vec(&buffer[..read.unwrap()]).unwrap();
        if answer.metadata.truncation && answer.answers.is_empty() {
            slipped += 1;
        } else {
            assert_eq!(answer.answers.len(), 1, "{answer:?}");
            whole += 1;
        }
    }
    eprintln!("of 100 questions at once: {whole} answered, {slipped} slipped");
    assert!((10..=15).contains(&whole), "{whole} answered in full");
    assert!((35..=50).contains(&slipped), "{slipped} slipped");

    // Another network is answered in full, and so is the limited one over
    // TCP, where the slipped questions come back.
    for _ in 0..5 {
        let (answer, _) = over_udp_from(
            "127.0.0.3:0",
            addr,
            &question("example.com.", RecordType::SOA).to_vec().unwrap(),
            Duration::from_secs(3),
        )
        .await
        .expect("another network is answered");
        assert_eq!(answer.answers.len(), 1, "{answer:?}");
    }
    let over_tcp = over_tcp(
        addr,
        &question("example.com.", RecordType::SOA).to_vec().unwrap(),
    )
    .await;
    assert_eq!(over_tcp.answers.len(), 1, "{over_tcp:?}");

    dns.kill().await;
    app.stop().await;
    public.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_dkim_record_is_truncated_over_udp_and_comes_whole_over_tcp() {
    let (app, public, _client) = app_with_live(&["example.com"]).await;
    // The size of an RSA 4096 public key (SubjectPublicKeyInfo DER): 736
    // characters of base64, more than a 512-byte answer holds.
    let key: Vec<u8> = (0..550u32).map(|n| (n * 7 % 251) as u8).collect();
    let mut conn = app.db.connect().await;
    diesel::sql_query("UPDATE own_domains SET dkim_public_key = $1 WHERE name = 'example.com'")
        .bind::<diesel::sql_types::Binary, _>(&key)
        .execute(&mut conn)
        .await
        .unwrap();
    let dns = DnsProcess::start(&app.db.url).await;
    let name = "sealpost._domainkey.example.com.";
    let record = format!("v=DKIM1; k=rsa; p={}", data_encoding::BASE64.encode(&key));

    // No EDNS: 512 bytes at most, so TC=1 and no answer.
    let plain = question(name, RecordType::TXT).to_vec().unwrap();
    let (cut, size) = over_udp_from("127.0.0.1:0", dns.addr, &plain, Duration::from_secs(3))
        .await
        .expect("an answer over UDP");
    assert!(size <= 512, "{size} bytes");
    assert!(cut.metadata.truncation, "{cut:?}");
    assert!(cut.answers.is_empty(), "{cut:?}");
    // Over TCP, whole.
    let whole = over_tcp(dns.addr, &plain).await;
    assert!(!whole.metadata.truncation);
    assert_eq!(texts(&whole).concat(), record);

    // A client's EDNS buffer of 1232 bytes holds it over UDP.
    let edns = question_with_edns(name, RecordType::TXT, 1232)
        .to_vec()
        .unwrap();
    let (fits, size) = over_udp_from("127.0.0.1:0", dns.addr, &edns, Duration::from_secs(3))
        .await
        .expect("an answer over UDP");
    assert!(size <= 1232, "{size} bytes");
    assert!(!fits.metadata.truncation, "{fits:?}");
    assert_eq!(texts(&fits).concat(), record);
    assert!(fits.edns.is_some(), "the answer carries EDNS too");

    // A larger key than 1232 bytes hold: truncated over UDP whatever buffer
    // the client offers, whole over TCP.
    let huge: Vec<u8> = (0..1_100u32).map(|n| (n * 13 % 251) as u8).collect();
    diesel::sql_query("UPDATE own_domains SET dkim_public_key = $1 WHERE name = 'example.com'")
        .bind::<diesel::sql_types::Binary, _>(&huge)
        .execute(&mut conn)
        .await
        .unwrap();
    dns.kill().await;
    let dns = DnsProcess::start(&app.db.url).await;
    let edns = question_with_edns(name, RecordType::TXT, 4096)
        .to_vec()
        .unwrap();
    let (cut, size) = over_udp_from("127.0.0.1:0", dns.addr, &edns, Duration::from_secs(3))
        .await
        .expect("an answer over UDP");
    assert!(size <= 1232, "{size} bytes");
    assert!(cut.metadata.truncation, "{cut:?}");
    assert!(cut.answers.is_empty());
    let whole = over_tcp(dns.addr, &edns).await;
    assert_eq!(
        texts(&whole).concat(),
        format!("v=DKIM1; k=rsa; p={}", data_encoding::BASE64.encode(&huge))
    );

    dns.kill().await;
    app.stop().await;
    public.stop().await;
}
