#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

//! SIGTERM drains the built `sealpost-smtp`: with 20 sessions in the middle
//! of DATA and one idle, the listener closes at once, the idle session is
//! answered 421 4.3.2, every message in DATA is finished, committed and
//! answered 250, the next command gets 421, and the process exits 0.

mod support;

use std::time::{Duration, Instant};

use sealpost_kernel::{Clock, SystemClock};
use sealpost_testkit::TestApp;
use support::{IngestProcess, Smtp, count, mail, mailbox};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const IN_DATA: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_messages_in_data_refuses_new_connections_and_exits_0() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let app = TestApp::spawn().await;
    // The binary runs on the system clock: the account must not be younger.
    app.clock.set(SystemClock.now());
    let (_token, address) = mailbox(&app, "ibx_drain").await;
    let mut ingest = IngestProcess::start(&app, &[("SEALPOST_SMTP_DRAIN_SECS", "60".into())]).await;

    // Twenty sessions each with half a message sent, and one idle session.
    let mut sending = Vec::new();
    for n in 0..IN_DATA {
        let mut smtp = Smtp::connect(ingest.addr).await.unwrap();
        smtp.start_data(&address).await;
        let message = mail(&address, &format!("t{n}"));
        let (first, rest) = message.split_at(message.len() / 2);
        smtp.writer.write_all(first.as_bytes()).await.unwrap();
        sending.push((smtp, rest.to_owned()));
    }
    let mut idle = Smtp::connect(ingest.addr).await.unwrap();
    assert_eq!(idle.command("EHLO idle.example").await.unwrap(), 250);

    ingest.terminate();
    // The listener closes first: wait for that, then finish the messages.
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(ingest.addr).await.is_ok() {
        assert!(Instant::now() < deadline, "still accepting after SIGTERM");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for (n, (smtp, rest)) in sending.iter_mut().enumerate() {
        smtp.writer.write_all(rest.as_bytes()).await.unwrap();
        smtp.writer.write_all(b".\r\n").await.unwrap();
        let reply = smtp.reply().await;
        assert_eq!(
            reply.as_ref().map(|(code, _)| *code).ok(),
            Some(250),
            "message {n} in DATA at SIGTERM: {reply:?}"
        );
    }
    // Draining: the next command of any session is answered 421 4.3.2.
    let (code, line) = idle.reply().await.unwrap();
    assert_eq!(code, 421, "{line}");
    assert!(line.starts_with("421 4.3.2 "), "{line}");
    for (smtp, _) in &mut sending {
        let quit = smtp.writer.write_all(b"QUIT\r\n").await;
        let (code, line) = smtp.reply().await.unwrap();
        assert!(quit.is_ok());
        assert_eq!(code, 421, "{line}");
    }
    assert!(
        TcpStream::connect(ingest.addr).await.is_err(),
        "new connections stay refused"
    );

    let status = ingest.exited(Duration::from_secs(60)).await;
    assert_eq!(status.code(), Some(0), "{status}");
    assert_eq!(
        count(&app, "messages").await,
        IN_DATA as i64,
        "every message answered 250 is in PostgreSQL"
    );

    let (blob_dir, spool_dir) = (
        app.config.blob_dir.clone(),
        app.config.smtp_spool_dir.clone(),
    );
    app.stop().await;
    let _ = std::fs::remove_dir_all(blob_dir);
    let _ = std::fs::remove_dir_all(spool_dir);
}

/// A sender that stalls in DATA past `SEALPOST_SMTP_DRAIN_SECS` is cut: it
/// never got a 250, nothing of its message is stored, and the process
/// still exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_still_in_data_at_the_drain_deadline_is_cut_and_stores_nothing() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let app = TestApp::spawn().await;
    app.clock.set(SystemClock.now());
    let (_token, address) = mailbox(&app, "ibx_stall").await;
    let mut ingest = IngestProcess::start(&app, &[("SEALPOST_SMTP_DRAIN_SECS", "1".into())]).await;

    let mut smtp = Smtp::connect(ingest.addr).await.unwrap();
    smtp.start_data(&address).await;
    let message = mail(&address, "stalled");
    let (first, _) = message.split_at(message.len() / 2);
    smtp.writer.write_all(first.as_bytes()).await.unwrap();

    ingest.terminate();
    let status = ingest.exited(Duration::from_secs(30)).await;
    assert_eq!(status.code(), Some(0), "{status}");
    assert!(
        smtp.reply().await.is_err(),
        "the stalled session is closed without an answer"
    );
    assert_eq!(count(&app, "messages").await, 0);

    let (blob_dir, spool_dir) = (
        app.config.blob_dir.clone(),
        app.config.smtp_spool_dir.clone(),
    );
    app.stop().await;
    let _ = std::fs::remove_dir_all(blob_dir);
    let _ = std::fs::remove_dir_all(spool_dir);
}
