//! A stopping server over real sockets: a question whose answer is still
//! being looked up when the drain starts is answered before the sockets
//! close, and the drain reports it finished.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sealpost_dns_server::proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use sealpost_dns_server::proto::rr::{Name, RecordType};
use sealpost_dns_server::{Answer, DnsServer, ZoneSource};
use tokio::sync::{Notify, Semaphore};

/// Answers NXDOMAIN once the test lets it, saying when a question came.
struct Held {
    asked: Notify,
    release: Semaphore,
}

#[async_trait]
impl ZoneSource for Held {
    async fn answer(&self, _name: &Name, _kind: RecordType) -> Answer {
        self.asked.notify_one();
        let _ = self.release.acquire().await.unwrap();
        Answer::NoName { soa: None }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_in_flight_goes_out_before_the_sockets_close() {
    let source = Arc::new(Held {
        asked: Notify::new(),
        release: Semaphore::new(0),
    });
    let server = DnsServer::start("127.0.0.1:0".parse().unwrap(), source.clone())
        .await
        .unwrap();
    let addr = server.udp_addr;
    let mut question = Message::new(7, MessageType::Query, OpCode::Query);
    question.add_query(Query::query(
        Name::from_ascii("held.example.").unwrap(),
        RecordType::A,
    ));
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    socket
        .send_to(&question.to_vec().unwrap(), addr)
        .await
        .unwrap();
    source.asked.notified().await;

    let draining = tokio::spawn(server.drain(Duration::from_secs(60)));
    // Lets the drain begin (the test holds either way; this makes it the
    // case that shows the wait).
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!draining.is_finished(), "the drain waits for the answer");
    source.release.add_permits(1);
    let mut buffer = vec![0u8; 4096];
    let read = tokio::time::timeout(Duration::from_secs(30), socket.recv(&mut buffer))
        .await
        .expect("the answer in flight goes out")
        .unwrap();
    let answer = Message::from_vec(&buffer[..read]).unwrap();
    assert_eq!(answer.metadata.response_code, ResponseCode::NXDomain);
    assert!(draining.await.unwrap(), "every answer in flight went out");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "the TCP listener is closed"
    );
}
