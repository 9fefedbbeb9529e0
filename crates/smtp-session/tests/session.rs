//! The session state machine over an in-memory pipe, reply by reply.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::time::Duration;

use common::{CLIENT_IP, Recorder, config, start};
use sealpost_smtp_session::DeliveryOutcome;

#[tokio::test]
async fn greeting_and_ehlo_capabilities() {
    let (client, server) = tokio::io::duplex(4096);
    let delivery = Recorder::new();
    let task = tokio::spawn({
        let delivery = delivery.clone();
        async move {
            sealpost_smtp_session::serve_session(server, CLIENT_IP, &config(), delivery.as_ref())
                .await
        }
    });
    let mut client = common::Client::new(client);
    let greeting = client.reply().await;
    assert_eq!(greeting.code, 220);
    assert!(
        greeting.text().starts_with("mx.sealpost.test "),
        "{greeting:?}"
    );

    let ehlo = client.command("EHLO client.example", 250, "").await;
    assert_eq!(ehlo.lines[0], "mx.sealpost.test");
    let capabilities = &ehlo.lines[1..];
    assert_eq!(
        capabilities,
        [
            "PIPELINING",
            "SIZE 65536",
            "8BITMIME",
            "SMTPUTF8",
            "ENHANCEDSTATUSCODES"
        ]
    );
    assert!(!ehlo.lines.iter().any(|l| l == "STARTTLS"));

    let helo = client.command("HELO client.example", 250, "").await;
    assert_eq!(helo.lines, ["mx.sealpost.test"]);
    client.command("QUIT", 221, "2.0.0").await;
    assert!(client.closed().await);
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn pipelined_transaction_in_one_write() {
    let delivery = Recorder::new();
    let (mut client, task) = start(config(), delivery.clone()).await;
    client
        .send(concat!(
            "EHLO client.example\r\n",
            "MAIL FROM:<sender@example.org> BODY=8BITMIME SMTPUTF8 SIZE=100\r\n",
            "RCPT TO:<one@mail.localhost>\r\n",
            "RCPT TO:<unknown@mail.localhost>\r\n",
            "RCPT TO:<two@mail.localhost>\r\n",
            "DATA\r\n",
        ))
        .await;
    assert_eq!(client.reply().await.code, 250);
    client.reply().await.assert(250, "2.1.0");
    client.reply().await.assert(250, "2.1.5");
    client.reply().await.assert(550, "5.1.1");
    client.reply().await.assert(250, "2.1.5");
    assert_eq!(client.reply().await.code, 354);
    client
        .send("Subject: hi\r\n\r\nHello\r\n.\r\nQUIT\r\n")
        .await;
    client.reply().await.assert(250, "2.0.0");
    client.reply().await.assert(221, "2.0.0");
    task.await.unwrap().unwrap();

    let delivered = delivery.delivered();
    assert_eq!(delivered.len(), 1);
    let (envelope, data) = &delivered[0];
    assert_eq!(envelope.mail_from, "sender@example.org");
    assert_eq!(
        envelope.recipients,
        ["one@mail.localhost", "two@mail.localhost"]
    );
    assert_eq!(envelope.client_ip, CLIENT_IP);
    assert_eq!(envelope.helo, "client.example");
    assert_eq!(data, b"Subject: hi\r\n\r\nHello\r\n");
}

#[tokio::test]
async fn recipient_decisions_map_to_replies() {
    let delivery = Recorder::new();
    let (mut client, _task) = start(config(), delivery.clone()).await;
    client.command("EHLO c", 250, "").await;
    client
        .command("MAIL FROM:<s@example.org>", 250, "2.1.0")
        .await;
    client
        .command("RCPT TO:<unknown@mail.localhost>", 550, "5.1.1")
        .await;
    let refused = client
        .command("RCPT TO:<refused@mail.localhost>", 550, "5.7.1")
        .await;
    assert_eq!(refused.text(), "5.7.1 Address takes no mail");
    let later = client
        .command("RCPT TO:<later@mail.localhost>", 452, "4.2.2")
        .await;
    assert_eq!(later.text(), "4.2.2 Mailbox over quota, try later");
    // Every RCPT failed: DATA has no one to deliver to.
    client.command("DATA", 554, "5.5.1").await;
    assert_eq!(
        delivery.checked(),
        [
            "unknown@mail.localhost",
            "refused@mail.localhost",
            "later@mail.localhost"
        ]
    );
}

#[tokio::test]
async fn out_of_sequence_commands_get_503() {
    let (mut client, _task) = start(config(), Recorder::new()).await;
    client
        .command("MAIL FROM:<s@example.org>", 503, "5.5.1")
        .await;
    client.command("EHLO c", 250, "").await;
    client
        .command("RCPT TO:<a@mail.localhost>", 503, "5.5.1")
        .await;
    client.command("DATA", 503, "5.5.1").await;
    client
        .command("MAIL FROM:<s@example.org>", 250, "2.1.0")
        .await;
    client.command("DATA", 503, "5.5.1").await;
    client
        .command("MAIL FROM:<s@example.org>", 503, "5.5.1")
        .await;
}

#[tokio::test]
async fn dot_unstuffing_delivers_exact_bytes() {
    let delivery = Recorder::new();
    let (mut client, _task) = start(config(), delivery.clone()).await;
    client.command("EHLO c", 250, "").await;

    // Written in awkward pieces: the server must not depend on where the
    // TCP segments fall.
    let cases: &[(&[&[u8]], &[u8])] = &[
        (
            &[
                b"..starts with a dot\r\n",
                b"middle\r\n..\r\n",
                b"...\r\n",
                b".\r\n",
            ],
            b".starts with a dot\r\nmiddle\r\n.\r\n..\r\n",
        ),
        (&[b".\r\n"], b""),
        (
            &[b"a\r", b"\n.", b".b\r\n", b"c\r\n.", b"\r", b"\n"],
            b"a\r\n.b\r\nc\r\n",
        ),
        // Bare LF and bare CR dots are content, not the end (SMTP smuggling).
        (
            &[b"x\n.\nMAIL FROM:<evil@x>\r\n", b"y\r.\r\n", b"z\r\n.\r\n"],
            b"x\n.\nMAIL FROM:<evil@x>\r\ny\r.\r\nz\r\n",
        ),
        (&[b"no final newline.\r\n.\r\n"], b"no final newline.\r\n"),
    ];
    for (pieces, expected) in cases {
        client.command("MAIL FROM:<>", 250, "2.1.0").await;
        client
            .command("RCPT TO:<box@mail.localhost>", 250, "2.1.5")
            .await;
        client.command("DATA", 354, "").await;
        for piece in *pieces {
            client.send_bytes(piece).await;
            tokio::task::yield_now().await;
        }
        client.reply().await.assert(250, "2.0.0");
        let delivered = delivery.delivered();
        let (envelope, data) = delivered.last().unwrap();
        assert_eq!(envelope.mail_from, "");
        assert_eq!(
            data.as_slice(),
            *expected,
            "got {:?}",
            String::from_utf8_lossy(data)
        );
    }
    assert_eq!(delivery.delivered().len(), cases.len());
    client.command("NOOP", 250, "2.0.0").await;
}

#[tokio::test]
async fn oversized_message_is_refused_and_the_session_goes_on() {
    let delivery = Recorder::new();
    let mut config = config();
    config.max_message_size = 1000;
    let (mut client, _task) = start(config, delivery.clone()).await;
    client.command("EHLO c", 250, "").await;
    client
        .command("MAIL FROM:<s@example.org>", 250, "2.1.0")
        .await;
    client
        .command("RCPT TO:<a@mail.localhost>", 250, "2.1.5")
        .await;
    client.command("DATA", 354, "").await;
    let line = format!("{}\r\n", "x".repeat(70));
    for _ in 0..200 {
        client.send(&line).await;
    }
    // A line that looks like a command inside the dropped part stays data.
    client.send("QUIT\r\n.\r\n").await;
    client.reply().await.assert(552, "5.3.4");
    assert!(delivery.delivered().is_empty());

    // Exactly at the limit is fine, and the session is in step.
    client
        .command("MAIL FROM:<s@example.org>", 250, "2.1.0")
        .await;
    client
        .command("RCPT TO:<a@mail.localhost>", 250, "2.1.5")
        .await;
    client.command("DATA", 354, "").await;
    let body = format!("{}\r\n", "y".repeat(998));
    client.send(&format!("{body}.\r\n")).await;
    client.reply().await.assert(250, "2.0.0");
    assert_eq!(delivery.delivered()[0].1, body.as_bytes());
}

#[tokio::test]
async fn size_parameter_over_the_limit_is_refused_at_mail() {
    let (mut client, _task) = start(config(), Recorder::new()).await;
    client.command("EHLO c", 250, "").await;
    client
        .command("MAIL FROM:<s@example.org> SIZE=65537", 552, "5.3.4")
        .await;
    // No transaction was opened.
    client
        .command("RCPT TO:<a@mail.localhost>", 503, "5.5.1")
        .await;
    client
        .command("MAIL FROM:<s@example.org> SIZE=65536", 250, "2.1.0")
        .await;
}

#[tokio::test]
async fn hundred_and_first_recipient_is_refused() {
    let delivery = Recorder::new();
    let (mut client, _task) = start(config(), delivery.clone()).await;
    client.command("EHLO c", 250, "").await;
    client
        .command("MAIL FROM:<s@example.org>", 250, "2.1.0")
        .await;
    let mut batch = String::new();
    for i in 0..101 {
        batch.push_str(&format!("RCPT TO:<user{i}@mail.localhost>\r\n"));
    }
    client.send(&batch).await;
    for _ in 0..100 {
        client.reply().await.assert(250, "2.1.5");
    }
    client.reply().await.assert(452, "4.5.3");
    client.command("DATA", 354, "").await;
    client.send("x\r\n.\r\n").await;
    client.reply().await.assert(250, "2.0.0");
    assert_eq!(delivery.delivered()[0].0.recipients.len(), 100);
    assert_eq!(delivery.checked().len(), 100);
}

#[tokio::test]
async fn repeated_recipient_differing_in_domain_case_counts_once() {
    let delivery = Recorder::new();
    let (mut client, _task) = start(config(), delivery.clone()).await;
    client.command("EHLO c", 250, "").await;
    client
        .command("MAIL FROM:<s@example.org>", 250, "2.1.0")
        .await;
    client
        .command("RCPT TO:<Box@Mail.Localhost>", 250, "2.1.5")
        .await;
    client
        .command("RCPT TO:<Box@mail.localhost>", 250, "2.1.5")
        .await;
    client
        .command("RCPT TO:<box@mail.localhost>", 250, "2.1.5")
        .await;
    client.command("DATA", 354, "").await;
    client.send("x\r\n.\r\n").await;
    client.reply().await.assert(250, "2.0.0");
    assert_eq!(
        delivery.checked(),
        ["Box@Mail.Localhost", "box@mail.localhost"]
    );
    assert_eq!(
        delivery.delivered()[0].0.recipients,
        ["Box@Mail.Localhost", "box@mail.localhost"]
    );
}

#[tokio::test]
async fn command_line_too_long_is_refused_and_the_session_goes_on() {
    let (mut client, _task) = start(config(), Recorder::new()).await;
    client.command("EHLO c", 250, "").await;
    // 512 octets with CRLF is the longest allowed.
    let longest = format!("NOOP {}", "a".repeat(512 - 7));
    assert_eq!(longest.len() + 2, 512);
    client.command(&longest, 250, "2.0.0").await;
    let too_long = format!("NOOP {}", "a".repeat(512 - 6));
    client.command(&too_long, 500, "5.5.2").await;
    // Far too long, arriving in several writes.
    for _ in 0..10 {
        client.send(&"b".repeat(1000)).await;
    }
    client.send("\r\n").await;
    client.reply().await.assert(500, "5.5.2");
    client.command("NOOP", 250, "2.0.0").await;
    client
        .command("MAIL FROM:<s@example.org>", 250, "2.1.0")
        .await;
}

#[tokio::test]
async fn text_line_too_long_fails_the_message_only() {
    let delivery = Recorder::new();
    let (mut client, _task) = start(config(), delivery.clone()).await;
    client.command("EHLO c", 250, "").await;
    client
        .command("MAIL FROM:<s@example.org>", 250, "2.1.0")
        .await;
    client
        .command("RCPT TO:<a@mail.localhost>", 250, "2.1.5")
        .await;
    client.command("DATA", 354, "").await;
    client
        .send(&format!("ok\r\n{}\r\nmore\r\n.\r\n", "z".repeat(1001)))
        .await;
    client.reply().await.assert(554, "5.6.0");
    assert!(delivery.delivered().is_empty());
    client.command("NOOP", 250, "2.0.0").await;
}

#[tokio::test]
async fn rset_clears_the_transaction() {
    let delivery = Recorder::new();
    let (mut client, _task) = start(config(), delivery.clone()).await;
    client.command("EHLO c", 250, "").await;
    client
        .command("MAIL FROM:<s@example.org>", 250, "2.1.0")
        .await;
    client
        .command("RCPT TO:<a@mail.localhost>", 250, "2.1.5")
        .await;
    client.command("RSET", 250, "2.0.0").await;
    client.command("DATA", 503, "5.5.1").await;
    client
        .command("RCPT TO:<a@mail.localhost>", 503, "5.5.1")
        .await;
    client
        .command("MAIL FROM:<other@example.org>", 250, "2.1.0")
        .await;
    client
        .command("RCPT TO:<b@mail.localhost>", 250, "2.1.5")
        .await;
    client.command("DATA", 354, "").await;
    client.send("x\r\n.\r\n").await;
    client.reply().await.assert(250, "2.0.0");
    let delivered = delivery.delivered();
    assert_eq!(delivered[0].0.mail_from, "other@example.org");
    assert_eq!(delivered[0].0.recipients, ["b@mail.localhost"]);
}

#[tokio::test]
async fn quit_says_221_and_closes() {
    let (mut client, task) = start(config(), Recorder::new()).await;
    client.command("QUIT", 221, "2.0.0").await;
    assert!(client.closed().await);
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn idle_client_gets_421_and_is_closed() {
    let (mut client, task) = start(config(), Recorder::new()).await;
    client.command("EHLO c", 250, "").await;
    let started = tokio::time::Instant::now();
    client.reply().await.assert(421, "4.4.2");
    assert!(started.elapsed() >= Duration::from_secs(60));
    assert!(client.closed().await);
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn idle_timeout_applies_inside_data_too() {
    let (mut client, task) = start(config(), Recorder::new()).await;
    client.command("EHLO c", 250, "").await;
    client
        .command("MAIL FROM:<s@example.org>", 250, "2.1.0")
        .await;
    client
        .command("RCPT TO:<a@mail.localhost>", 250, "2.1.5")
        .await;
    client.command("DATA", 354, "").await;
    client.send("half a message\r\n").await;
    client.reply().await.assert(421, "4.4.2");
    assert!(client.closed().await);
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn session_time_limit_closes_a_busy_session() {
    let mut config = config();
    config.session_timeout = Duration::from_secs(300);
    let (mut client, task) = start(config, Recorder::new()).await;
    let started = tokio::time::Instant::now();
    // In a transaction, so the deadline for the first MAIL is met.
    client.command("EHLO c", 250, "").await;
    client
        .command("MAIL FROM:<s@example.org>", 250, "2.1.0")
        .await;
    loop {
        tokio::time::sleep(Duration::from_secs(40)).await;
        client.try_send("NOOP\r\n").await;
        let reply = client.reply().await;
        if reply.code == 421 {
            reply.assert(421, "4.4.2");
            break;
        }
        reply.assert(250, "2.0.0");
        assert!(
            started.elapsed() < Duration::from_secs(400),
            "no session limit"
        );
    }
    assert!(started.elapsed() >= Duration::from_secs(300));
    assert!(client.closed().await);
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn delivery_try_later_is_451_and_rejected_is_554() {
    for (outcome, code, status, text) in [
        (
            DeliveryOutcome::TryLater("Storage busy".into()),
            451,
            "4.3.0",
            "4.3.0 Storage busy",
        ),
        (
            DeliveryOutcome::Rejected("Message refused".into()),
            554,
            "5.6.0",
            "5.6.0 Message refused",
        ),
    ] {
        let (mut client, _task) = start(config(), Recorder::answering(outcome)).await;
        client.command("EHLO c", 250, "").await;
        client
            .command("MAIL FROM:<s@example.org>", 250, "2.1.0")
            .await;
        client
            .command("RCPT TO:<a@mail.localhost>", 250, "2.1.5")
            .await;
        client.command("DATA", 354, "").await;
        client.send("x\r\n.\r\n").await;
        let reply = client.reply().await;
        reply.assert(code, status);
        assert_eq!(reply.text(), text);
        // The transaction is over either way.
        client.command("DATA", 503, "5.5.1").await;
    }
}

#[tokio::test]
async fn other_commands() {
    let (mut client, _task) = start(config(), Recorder::new()).await;
    client.command("EHLO c", 250, "").await;
    client.command("NOOP", 250, "2.0.0").await;
    client.command("VRFY someone", 252, "2.5.0").await;
    client.command("XYZZY", 500, "5.5.1").await;
    client.command("AUTH PLAIN AGVhAGI=", 502, "5.5.1").await;
    client.command("EXPN list", 502, "5.5.1").await;
    client.command("HELP", 502, "5.5.1").await;
    client.command("STARTTLS", 502, "5.5.1").await;
    client
        .command("MAIL FROM:not-bracketed", 501, "5.5.2")
        .await;
    client
        .command("MAIL FROM:<a@b> FOO=BAR", 555, "5.5.4")
        .await;
    client
        .command("MAIL FROM:<a@b> BODY=BINARYMIME", 555, "5.5.4")
        .await;
    client
        .command("MAIL FROM:<a@b> BODY=7BIT", 250, "2.1.0")
        .await;
    client.command("RCPT TO:<>", 501, "5.1.3").await;
    client.command("RCPT TO:<Postmaster>", 250, "2.1.5").await;
    client.command("RCPT TO:<a@b@c>", 501, "5.1.3").await;
    client.command("QUIT", 221, "2.0.0").await;
}

#[tokio::test]
async fn too_many_errors_close_the_session() {
    let (mut client, task) = start(config(), Recorder::new()).await;
    let mut junk = String::new();
    for _ in 0..60 {
        junk.push_str("JUNK\r\n");
    }
    client.send(&junk).await;
    for _ in 0..50 {
        client.reply().await.assert(500, "5.5.1");
    }
    client.reply().await.assert(421, "4.7.0");
    assert!(client.closed().await);
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn client_hanging_up_mid_data_delivers_nothing() {
    let delivery = Recorder::new();
    let (mut client, task) = start(config(), delivery.clone()).await;
    client.command("EHLO c", 250, "").await;
    client
        .command("MAIL FROM:<s@example.org>", 250, "2.1.0")
        .await;
    client
        .command("RCPT TO:<a@mail.localhost>", 250, "2.1.5")
        .await;
    client.command("DATA", 354, "").await;
    client.send("partial\r\n").await;
    drop(client);
    task.await.unwrap().unwrap();
    assert!(delivery.delivered().is_empty());
}
