//! `serve` on a real socket: a full message to a recording `Delivery`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::sync::Arc;

use common::{Client, Recorder, config};
use sealpost_smtp_session::{Delivery, serve};
use tokio::net::{TcpListener, TcpStream};

#[tokio::test]
async fn full_message_over_tcp() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let delivery = Recorder::new();
    let server = tokio::spawn(serve(
        listener,
        Arc::new(config()),
        delivery.clone() as Arc<dyn Delivery>,
    ));

    // A client that connects and leaves without a word does not disturb
    // the server.
    drop(TcpStream::connect(addr).await.unwrap());

    let message = concat!(
        "From: Sender <sender@example.org>\r\n",
        "To: inbox@mail.localhost\r\n",
        "Subject: over tcp\r\n",
        "\r\n",
        "line one\r\n",
        ".leading dot\r\n",
    );
    let stuffed = message.replace("\r\n.", "\r\n..");

    for round in 0..2 {
        let mut client = Client::new(TcpStream::connect(addr).await.unwrap());
        assert_eq!(client.reply().await.code, 220);
        client.command("EHLO client.example", 250, "").await;
        client
            .command("MAIL FROM:<sender@example.org>", 250, "2.1.0")
            .await;
        client
            .command("RCPT TO:<inbox@mail.localhost>", 250, "2.1.5")
            .await;
        client.command("DATA", 354, "").await;
        client.send(&format!("{stuffed}.\r\n")).await;
        client.reply().await.assert(250, "2.0.0");
        client.command("QUIT", 221, "2.0.0").await;
        assert!(client.closed().await);

        let delivered = delivery.delivered();
        assert_eq!(delivered.len(), round + 1);
        let (envelope, data) = &delivered[round];
        assert_eq!(envelope.client_ip.to_string(), "127.0.0.1");
        assert_eq!(envelope.helo, "client.example");
        assert_eq!(envelope.recipients, ["inbox@mail.localhost"]);
        assert_eq!(data.as_slice(), message.as_bytes());
    }
    assert!(!server.is_finished());
    server.abort();
}
