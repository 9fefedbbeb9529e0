//! Slots by network, against `serve` on a real socket: the cap per IPv4
//! /24 (loopback is a /8, so several /24s connect from this host; the IPv6
//! /48 cap is tested through the gate's own unit tests), the share of the
//! slots kept for networks that delivered, and the deadline for the first
//! MAIL.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::time::{Duration, Instant};

use common::{Client, Recorder, body, config, connect_from, envelope, listen};
use sealpost_smtp_session::SmtpConfig;
use tokio::net::TcpStream;

/// The greeting's code, within a few seconds.
async fn greeting(client: &mut Client<TcpStream>) -> u16 {
    tokio::time::timeout(Duration::from_secs(5), client.reply())
        .await
        .expect("no greeting")
        .code
}

#[tokio::test]
async fn sessions_are_capped_per_ipv4_24_across_its_addresses() {
    let (addr, server) = listen(
        SmtpConfig {
            max_sessions_per_ip: 10,
            max_sessions_per_ipv4_24: 2,
            connections_per_ip_per_minute: 0,
            ..config()
        },
        Recorder::new(),
    )
    .await;
    let mut first = connect_from("127.0.5.1", addr).await;
    assert_eq!(greeting(&mut first).await, 220);
    let mut second = connect_from("127.0.5.2", addr).await;
    assert_eq!(greeting(&mut second).await, 220);
    // A third address of the same /24, under its own per-address cap.
    let mut third = connect_from("127.0.5.3", addr).await;
    let reply = third.reply().await;
    reply.assert(421, "4.7.0");
    assert!(reply.text().contains("your network"), "{reply:?}");
    assert!(third.closed().await);
    // Another /24 is not affected.
    let mut elsewhere = connect_from("127.0.6.1", addr).await;
    assert_eq!(greeting(&mut elsewhere).await, 220);

    // A session that ends gives its network's slot back.
    first.command("QUIT", 221, "2.0.0").await;
    assert!(first.closed().await);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut again = connect_from("127.0.5.3", addr).await;
        if greeting(&mut again).await == 220 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the network's slot never came back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.abort();
}

/// Half of four slots kept: a network that delivered gets in when the
/// other half is taken, a new one does not.
#[tokio::test]
async fn a_share_of_the_slots_is_kept_for_networks_that_delivered() {
    let delivery = Recorder::new();
    let (addr, server) = listen(
        SmtpConfig {
            max_sessions: 4,
            reserved_percent: 50,
            connections_per_ip_per_minute: 0,
            ..config()
        },
        delivery.clone(),
    )
    .await;
    // A sender delivers and stays connected: one slot of the two open to all.
    let mut known = connect_from("127.0.7.1", addr).await;
    assert_eq!(greeting(&mut known).await, 220);
    envelope(&mut known, "MAIL FROM:<known@example.org>").await;
    known.command("DATA", 354, "").await;
    known.send(&format!("{}.\r\n", body(1000, "known"))).await;
    known.reply().await.assert(250, "2.0.0");
    assert_eq!(delivery.delivered().len(), 1);

    // A new sender takes the other open slot; the next new one is refused.
    let mut stranger = connect_from("127.0.8.1", addr).await;
    assert_eq!(greeting(&mut stranger).await, 220);
    let mut refused = connect_from("127.0.9.1", addr).await;
    refused.reply().await.assert(421, "4.3.2");
    assert!(refused.closed().await);

    // Another host of the known sender's network takes a kept slot, and
    // so does a third, until the total is reached.
    let mut kept = connect_from("127.0.7.2", addr).await;
    assert_eq!(greeting(&mut kept).await, 220);
    let mut last = connect_from("127.0.7.3", addr).await;
    assert_eq!(greeting(&mut last).await, 220);
    let mut full = connect_from("127.0.7.4", addr).await;
    full.reply().await.assert(421, "4.3.2");

    // The kept slot is a full session.
    envelope(&mut kept, "MAIL FROM:<known@example.org>").await;
    kept.command("DATA", 354, "").await;
    kept.send(&format!("{}.\r\n", body(1000, "kept"))).await;
    kept.reply().await.assert(250, "2.0.0");
    assert_eq!(delivery.delivered().len(), 2);
    drop((known, stranger, last));
    server.abort();
}

#[tokio::test]
async fn a_session_that_starts_no_transaction_in_time_is_closed_with_421() {
    let (addr, server) = listen(
        SmtpConfig {
            mail_deadline: Duration::from_secs(1),
            ..config()
        },
        Recorder::new(),
    )
    .await;
    // Greets, says EHLO and NOOP, well within the idle timeout (60 s):
    // closed at the deadline all the same.
    let mut idle = connect_from("127.0.0.1", addr).await;
    let connected = Instant::now();
    assert_eq!(greeting(&mut idle).await, 220);
    idle.command("EHLO client.example", 250, "").await;
    idle.command("NOOP", 250, "2.0.0").await;
    let reply = tokio::time::timeout(Duration::from_secs(5), idle.reply())
        .await
        .expect("still open 5 s after the deadline for MAIL");
    reply.assert(421, "4.4.2");
    assert!(connected.elapsed() >= Duration::from_secs(1));
    assert!(idle.closed().await);

    // A transaction started in time: the session goes on past the deadline.
    let mut busy = connect_from("127.0.0.1", addr).await;
    assert_eq!(greeting(&mut busy).await, 220);
    busy.command("EHLO client.example", 250, "").await;
    busy.command("MAIL FROM:<s@example.org>", 250, "2.1.0")
        .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    busy.command("RCPT TO:<inbox@mail.localhost>", 250, "2.1.5")
        .await;
    busy.command("DATA", 354, "").await;
    busy.send(&format!("{}.\r\n", body(500, "in time"))).await;
    busy.reply().await.assert(250, "2.0.0");
    busy.command("RSET", 250, "2.0.0").await;
    busy.command("QUIT", 221, "2.0.0").await;
    server.abort();
}
