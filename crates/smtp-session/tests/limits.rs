//! Connection caps, the per-client connection rate and the DATA memory
//! budget, against `serve` on a real socket.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use common::{Recorder, body, config, connect_from, envelope, listen};
use sealpost_smtp_session::{
    DataMemory, Delivery, DeliveryOutcome, Envelope, RecipientDecision, SmtpConfig, Spool, serve,
};
use tokio::net::TcpListener;

#[tokio::test]
async fn sessions_are_capped_per_client_and_in_total_and_a_slow_client_holds_only_its_own() {
    let delivery = Recorder::new();
    let (addr, server) = listen(
        SmtpConfig {
            max_sessions: 3,
            max_sessions_per_ip: 2,
            connections_per_ip_per_minute: 0,
            ..config()
        },
        delivery.clone(),
    )
    .await;

    let mut first = connect_from("127.0.0.1", addr).await;
    assert_eq!(first.reply().await.code, 220);
    let mut slow = connect_from("127.0.0.1", addr).await;
    assert_eq!(slow.reply().await.code, 220);
    // A third from the same client: 421 and closed.
    let mut third = connect_from("127.0.0.1", addr).await;
    third.reply().await.assert(421, "4.7.0");
    assert!(third.closed().await);

    // Another client takes the last slot; the next one finds the server full.
    let mut other = connect_from("127.0.0.2", addr).await;
    assert_eq!(other.reply().await.code, 220);
    let mut full = connect_from("127.0.0.3", addr).await;
    full.reply().await.assert(421, "4.3.2");
    assert!(full.closed().await);

    // A client trickling its DATA holds its own session only: the others
    // deliver meanwhile, at their usual pace.
    envelope(&mut slow, "MAIL FROM:<slow@example.org>").await;
    slow.command("DATA", 354, "").await;
    let trickle = tokio::spawn(async move {
        for byte in "Subject: slow\r\n\r\nbit by bit\r\n".bytes() {
            slow.send_bytes(&[byte]).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        slow
    });
    let started = Instant::now();
    envelope(&mut other, "MAIL FROM:<quick@example.org>").await;
    other.command("DATA", 354, "").await;
    other.send(&format!("{}.\r\n", body(2000, "quick"))).await;
    other.reply().await.assert(250, "2.0.0");
    assert!(started.elapsed() < Duration::from_millis(500));
    let mut slow = trickle.await.unwrap();
    slow.send(".\r\n").await;
    slow.reply().await.assert(250, "2.0.0");
    assert_eq!(delivery.delivered().len(), 2);

    // A session that ends frees its slot.
    first.command("QUIT", 221, "2.0.0").await;
    assert!(first.closed().await);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut again = connect_from("127.0.0.1", addr).await;
        let reply = again.reply().await;
        if reply.code == 220 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the slot was never freed: {reply:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.abort();
}

#[tokio::test]
async fn new_connections_per_client_are_rate_limited() {
    let (addr, server) = listen(
        SmtpConfig {
            connections_per_ip_per_minute: 3,
            ..config()
        },
        Recorder::new(),
    )
    .await;
    for _ in 0..3 {
        let mut client = connect_from("127.0.0.1", addr).await;
        assert_eq!(client.reply().await.code, 220);
        client.command("QUIT", 221, "2.0.0").await;
    }
    let mut refused = connect_from("127.0.0.1", addr).await;
    let reply = refused.reply().await;
    reply.assert(421, "4.7.0");
    assert!(reply.text().contains("slow down"), "{reply:?}");
    assert!(refused.closed().await);
    // Another client is not affected.
    let mut other = connect_from("127.0.0.4", addr).await;
    assert_eq!(other.reply().await.code, 220);
    server.abort();
}

#[tokio::test]
async fn data_in_memory_is_bounded_across_sessions() {
    let memory = DataMemory::new(256 * 1024);
    let delivery = Recorder::new();
    let (addr, server) = listen(
        SmtpConfig {
            max_message_size: 1024 * 1024,
            data_memory: memory.clone(),
            ..config()
        },
        delivery.clone(),
    )
    .await;

    // A declared size the budget cannot cover: 452 at DATA, nothing read.
    let mut declared = connect_from("127.0.0.1", addr).await;
    assert_eq!(declared.reply().await.code, 220);
    envelope(&mut declared, "MAIL FROM:<big@example.org> SIZE=300000").await;
    declared.command("DATA", 452, "4.3.1").await;
    declared.command("RSET", 250, "2.0.0").await;

    // One large message in flight...
    let mut large = connect_from("127.0.0.1", addr).await;
    assert_eq!(large.reply().await.code, 220);
    envelope(&mut large, "MAIL FROM:<large@example.org>").await;
    large.command("DATA", 354, "").await;
    let large_body = body(110 * 1024, "large");
    large.send(&large_body).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while memory.in_use() < 110 * 1024 {
        assert!(
            Instant::now() < deadline,
            "the large message was never held"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // ...leaves too little for a second: 452 4.3.1, at DATA or at its end.
    let mut second = connect_from("127.0.0.2", addr).await;
    assert_eq!(second.reply().await.code, 220);
    envelope(&mut second, "MAIL FROM:<second@example.org>").await;
    second.send("DATA\r\n").await;
    let reply = second.reply().await;
    if reply.code == 354 {
        second
            .send(&format!("{}.\r\n", body(150 * 1024, "second")))
            .await;
        second.reply().await.assert(452, "4.3.1");
    } else {
        reply.assert(452, "4.3.1");
    }
    assert!(memory.in_use() <= memory.limit());

    // The first finishes and is delivered whole; then all is given back
    // and the second goes through on its retry.
    large.send(".\r\n").await;
    large.reply().await.assert(250, "2.0.0");
    assert_eq!(memory.in_use(), 0);
    assert_eq!(delivery.delivered()[0].1, large_body.as_bytes());
    second.command("RSET", 250, "2.0.0").await;
    envelope(&mut second, "MAIL FROM:<second@example.org>").await;
    second.command("DATA", 354, "").await;
    second
        .send(&format!("{}.\r\n", body(150 * 1024, "second")))
        .await;
    second.reply().await.assert(250, "2.0.0");
    assert_eq!(delivery.delivered().len(), 2);
    assert_eq!(memory.in_use(), 0);
    server.abort();
}

#[tokio::test]
async fn a_message_over_the_services_limits_is_refused_with_552() {
    let delivery = Recorder::answering(DeliveryOutcome::ExceedsLimits(
        "Message has more than 500 MIME parts".into(),
    ));
    let (addr, server) = listen(config(), delivery).await;
    let mut client = connect_from("127.0.0.1", addr).await;
    assert_eq!(client.reply().await.code, 220);
    envelope(&mut client, "MAIL FROM:<parts@example.org>").await;
    client.command("DATA", 354, "").await;
    client.send("Subject: parts\r\n\r\nhi\r\n.\r\n").await;
    let reply = client.reply().await;
    reply.assert(552, "5.3.4");
    assert!(reply.text().contains("500 MIME parts"), "{reply:?}");
    server.abort();
}

/// One delivery: the message, and the spool files' bytes at that time.
type Seen = (Vec<u8>, Vec<Vec<u8>>);

/// A delivery that looks at the spool directory while the message it is
/// handed is being delivered: the spool file still exists then.
struct SpoolWatcher {
    dir: PathBuf,
    seen: Mutex<Vec<Seen>>,
}

#[async_trait]
impl Delivery for SpoolWatcher {
    async fn check_recipient(&self, _: &str) -> RecipientDecision {
        RecipientDecision::Accept
    }

    async fn deliver(&self, _: &Envelope, data: &[u8]) -> DeliveryOutcome {
        let files = spool_files(&self.dir)
            .iter()
            .map(|path| std::fs::read(path).unwrap())
            .collect();
        self.seen.lock().unwrap().push((data.to_vec(), files));
        DeliveryOutcome::Accepted
    }
}

fn spool_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| entries.map(|entry| entry.unwrap().path()).collect())
        .unwrap_or_default()
}

fn spool_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("sealpost-spool-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

const MARKER: &str = "SPOOL-MARKER-PLAINTEXT";

/// Issue 15, item 6: a message past the threshold arrives into an
/// encrypted spool file, so what it holds of the DATA budget while it
/// arrives stays near the threshold; it is delivered whole, the file holds
/// no plaintext, and the file is gone once the client has its answer.
#[tokio::test]
async fn a_large_message_is_spooled_encrypted_delivered_whole_and_its_file_deleted() {
    let dir = spool_dir("large");
    let memory = DataMemory::new(8 * 1024 * 1024);
    let delivery = Arc::new(SpoolWatcher {
        dir: dir.clone(),
        seen: Mutex::new(Vec::new()),
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(serve(
        listener,
        Arc::new(SmtpConfig {
            max_message_size: 8 * 1024 * 1024,
            data_memory: memory.clone(),
            spool: Some(Spool::new(&dir, 64 * 1024, 1 << 30)),
            ..config()
        }),
        delivery.clone() as Arc<dyn Delivery>,
    ));
    let mut client = connect_from("127.0.0.1", addr).await;
    assert_eq!(client.reply().await.code, 220);
    envelope(&mut client, "MAIL FROM:<large@example.org>").await;
    client.command("DATA", 354, "").await;
    let message = body(3 * 1024 * 1024, MARKER);
    let (first, rest) = message.split_at(2 * 1024 * 1024);
    client.send(first).await;

    // Two MiB in, the session holds a small part of it.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let on_disk: u64 = spool_files(&dir)
            .iter()
            .map(|path| path.metadata().map_or(0, |meta| meta.len()))
            .sum();
        if on_disk >= 1900 * 1024 {
            break;
        }
        assert!(Instant::now() < deadline, "never spooled: {on_disk} octets");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        memory.in_use() <= 256 * 1024,
        "{} octets held in memory while arriving",
        memory.in_use()
    );

    client.send(&format!("{rest}.\r\n")).await;
    client.reply().await.assert(250, "2.0.0");
    let seen = delivery.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let (delivered, files) = &seen[0];
    assert!(delivered == message.as_bytes(), "delivered whole");
    assert_eq!(files.len(), 1, "one spool file while delivering");
    assert!(files[0].len() > message.len(), "the whole message, sealed");
    assert!(
        !files[0]
            .windows(MARKER.len())
            .any(|window| window == MARKER.as_bytes()),
        "plaintext on disk"
    );
    assert_eq!(spool_files(&dir), Vec::<PathBuf>::new(), "deleted after");
    assert_eq!(memory.in_use(), 0);

    // Too large for the whole budget at delivery: 452, and no file left.
    let small = DataMemory::new(1024 * 1024);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let second = tokio::spawn(serve(
        listener,
        Arc::new(SmtpConfig {
            max_message_size: 8 * 1024 * 1024,
            data_memory: small.clone(),
            spool: Some(Spool::new(&dir, 64 * 1024, 1 << 30)),
            ..config()
        }),
        delivery.clone() as Arc<dyn Delivery>,
    ));
    let mut client = connect_from("127.0.0.1", addr).await;
    assert_eq!(client.reply().await.code, 220);
    envelope(&mut client, "MAIL FROM:<large@example.org>").await;
    client.command("DATA", 354, "").await;
    client.send(&format!("{message}.\r\n")).await;
    client.reply().await.assert(452, "4.3.1");
    assert_eq!(spool_files(&dir), Vec::<PathBuf>::new());
    assert_eq!(small.in_use(), 0);
    assert_eq!(delivery.seen.lock().unwrap().len(), 1);
    client.command("QUIT", 221, "2.0.0").await;

    server.abort();
    second.abort();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The spool's total is bounded: while one message fills most of it, a
/// second that does not fit is answered 452 4.3.1 (at `MAIL ... SIZE=`, or
/// at its end when it gave no size) and its session goes on; the first
/// loses nothing, and once it is delivered the second goes through.
#[tokio::test]
async fn the_spool_budget_answers_452_and_takes_mail_again_once_given_back() {
    let dir = spool_dir("budget");
    let spool = Spool::new(&dir, 64 * 1024, 400 * 1024);
    let delivery = Recorder::new();
    let (addr, server) = listen(
        SmtpConfig {
            max_message_size: 8 * 1024 * 1024,
            data_memory: DataMemory::new(8 * 1024 * 1024),
            spool: Some(spool.clone()),
            ..config()
        },
        delivery.clone(),
    )
    .await;

    // 300 KiB arriving, its DATA still open: spooled, most of the budget.
    let mut first = connect_from("127.0.0.1", addr).await;
    assert_eq!(first.reply().await.code, 220);
    envelope(&mut first, "MAIL FROM:<first@example.org>").await;
    first.command("DATA", 354, "").await;
    let first_body = body(300 * 1024, "first");
    first.send(&first_body).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let on_disk: u64 = spool_files(&dir)
            .iter()
            .map(|path| path.metadata().map_or(0, |meta| meta.len()))
            .sum();
        if on_disk >= 256 * 1024 {
            break;
        }
        assert!(Instant::now() < deadline, "the first message never spooled");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // 200 KB declared does not fit in what is left: 452 at MAIL.
    let mut second = connect_from("127.0.0.2", addr).await;
    assert_eq!(second.reply().await.code, 220);
    second.command("EHLO client.example", 250, "").await;
    second
        .command("MAIL FROM:<second@example.org> SIZE=200000", 452, "4.3.1")
        .await;
    // Undeclared, it is refused at its end, and the session goes on.
    second
        .command("MAIL FROM:<second@example.org>", 250, "2.1.0")
        .await;
    second
        .command("RCPT TO:<inbox@mail.localhost>", 250, "2.1.5")
        .await;
    second.command("DATA", 354, "").await;
    let second_body = body(200 * 1024, "second");
    second.send(&format!("{second_body}.\r\n")).await;
    second.reply().await.assert(452, "4.3.1");
    second.command("RSET", 250, "2.0.0").await;
    assert!(spool.budget.in_use() <= spool.budget.limit());

    // The first ends: delivered whole, and the whole budget is back.
    first.send(".\r\n").await;
    first.reply().await.assert(250, "2.0.0");
    assert_eq!(delivery.delivered().len(), 1);
    assert!(delivery.delivered()[0].1 == first_body.as_bytes());
    assert_eq!(spool.budget.in_use(), 0);
    assert_eq!(spool_files(&dir), Vec::<PathBuf>::new());

    // The second, sent again on the same session, is taken now.
    second
        .command("MAIL FROM:<second@example.org> SIZE=200000", 250, "2.1.0")
        .await;
    second
        .command("RCPT TO:<inbox@mail.localhost>", 250, "2.1.5")
        .await;
    second.command("DATA", 354, "").await;
    second.send(&format!("{second_body}.\r\n")).await;
    second.reply().await.assert(250, "2.0.0");
    assert_eq!(delivery.delivered().len(), 2);
    assert!(delivery.delivered()[1].1 == second_body.as_bytes());
    assert_eq!(spool.budget.in_use(), 0);
    second.command("QUIT", 221, "2.0.0").await;

    server.abort();
    let _ = std::fs::remove_dir_all(&dir);
}
