//! The shared client against loopback peers over plain HTTP/1.1: redirects
//! are not followed, bodies are read up to the cap, a body cut short comes
//! back with what was read.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::time::Duration;

use sealpost_outbound_http::{client_builder, read_capped};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

const LIMIT: Duration = Duration::from_secs(10);

/// Accepts one connection, reads the request head and writes `answer`.
async fn answer_once(answer: Vec<u8>) -> (String, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut byte = [0_u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
        stream.write_all(&answer).await.unwrap();
        stream.shutdown().await.unwrap();
    });
    (url, task)
}

fn client() -> reqwest::Client {
    client_builder(None, LIMIT, LIMIT).unwrap().build().unwrap()
}

#[tokio::test]
async fn reads_no_more_than_the_cap() {
    let body = "x".repeat(5000);
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (url, server) = answer_once(answer.into_bytes()).await;
    let response = client().get(&url).send().await.unwrap();
    let read = read_capped(response, 1024).await.unwrap();
    assert_eq!(read, vec![b'x'; 1024]);
    server.await.unwrap();

    let (url, server) =
        answer_once(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec()).await;
    let response = client().get(&url).send().await.unwrap();
    assert_eq!(read_capped(response, 1024).await.unwrap(), b"ok");
    server.await.unwrap();
}

#[tokio::test]
async fn a_body_cut_short_returns_what_was_read() {
    let (url, server) = answer_once(
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\nten bytes!".to_vec(),
    )
    .await;
    let response = client().get(&url).send().await.unwrap();
    let partial = read_capped(response, 1024).await.unwrap_err();
    assert!(b"ten bytes!".starts_with(&partial.read), "{partial:?}");
    assert!(
        partial.error.is_body() || partial.error.is_decode(),
        "{partial:?}"
    );
    server.await.unwrap();
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let target = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let location = format!("http://{}/elsewhere", target.local_addr().unwrap());
    let answer = format!(
        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    let (url, server) = answer_once(answer.into_bytes()).await;
    let response = client().get(&url).send().await.unwrap();
    assert_eq!(response.status(), 302);
    server.await.unwrap();
    let contacted = tokio::time::timeout(Duration::from_millis(200), target.accept()).await;
    assert!(contacted.is_err(), "the redirect target was contacted");
}
