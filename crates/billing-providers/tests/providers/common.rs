//! Fixture loading and a one-request loopback HTTP server.

use std::net::SocketAddr;

use sealpost_billing::CheckoutRequest;
use sealpost_billing_providers::{BtcpayConfig, StripeConfig};
use sealpost_kernel::{AccountId, PaymentId, PlanId, Timestamp};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub fn fixture(path: &str) -> Vec<u8> {
    let full = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|error| panic!("{full}: {error}"))
}

pub fn json_fixture(path: &str) -> Value {
    serde_json::from_slice(&fixture(path)).unwrap()
}

/// `signatures.json`, computed by `regenerate.py` with Python's hmac.
pub fn vectors() -> Value {
    json_fixture("signatures.json")
}

pub fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string in {value}"))
}

pub fn at(unix_seconds: i64) -> Timestamp {
    Timestamp::from_unix_millis(unix_seconds * 1000).unwrap()
}

/// The request every recorded request was made for (`checkout_input.json`).
pub fn checkout_request() -> CheckoutRequest {
    let input = json_fixture("checkout_input.json");
    let request = &input["request"];
    assert_eq!(text(request, "currency"), "USD");
    CheckoutRequest {
        payment: PaymentId::parse(text(request, "payment")).unwrap(),
        account: AccountId::parse(text(request, "account")).unwrap(),
        plan: text(request, "plan").parse::<PlanId>().unwrap(),
        amount: request["amount"].as_i64().unwrap(),
        currency: "USD",
        description: text(request, "description").to_owned(),
    }
}

pub fn stripe_config() -> StripeConfig {
    let input = json_fixture("checkout_input.json");
    let stripe = &input["stripe"];
    StripeConfig::new(
        text(stripe, "secret_key"),
        text(stripe, "webhook_secret"),
        text(stripe, "success_url"),
        text(stripe, "cancel_url"),
    )
}

pub fn btcpay_config() -> BtcpayConfig {
    let input = json_fixture("checkout_input.json");
    let btcpay = &input["btcpay"];
    BtcpayConfig {
        server_url: text(btcpay, "server_url").to_owned(),
        api_key: text(btcpay, "api_key").to_owned().into(),
        store_id: text(btcpay, "store_id").to_owned(),
        webhook_secret: text(btcpay, "webhook_secret").to_owned().into(),
        redirect_url: text(btcpay, "redirect_url").to_owned(),
    }
}

/// One HTTP/1.1 request as the loopback server received it.
#[derive(Debug)]
pub struct Received {
    pub method: String,
    pub target: String,
    /// Names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        let mut values = self.headers.iter().filter(|(key, _)| *key == name);
        let first = values.next().map(|(_, value)| value.as_str());
        assert!(values.next().is_none(), "{name} sent more than once");
        first
    }
}

/// Serves exactly one request on `127.0.0.1:<free port>`: reads it (headers,
/// then the body by Content-Length), answers `status` with `answer`, closes.
/// Returns the base URL (`http://127.0.0.1:<port>`) and what was received.
pub async fn serve_once(
    status: u16,
    content_type: &'static str,
    answer: Vec<u8>,
) -> (String, JoinHandle<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let handle = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut buffer = Vec::new();
        let head_end = loop {
            if let Some(position) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break position;
            }
            let mut chunk = [0_u8; 4096];
            let read = stream.read(&mut chunk).await.unwrap();
            assert!(read > 0, "the client closed before sending a request");
            buffer.extend_from_slice(&chunk[..read]);
        };
        let head = String::from_utf8(buffer[..head_end].to_vec()).unwrap();
        let mut lines = head.split("\r\n");
        let mut request_line = lines.next().unwrap().split(' ');
        let method = request_line.next().unwrap().to_owned();
        let target = request_line.next().unwrap().to_owned();
        assert_eq!(request_line.next(), Some("HTTP/1.1"));
        let headers: Vec<(String, String)> = lines
            .map(|line| {
                let (name, value) = line.split_once(':').unwrap();
                (name.trim().to_ascii_lowercase(), value.trim().to_owned())
            })
            .collect();
        let length: usize = headers
            .iter()
            .find(|(name, _)| name == "content-length")
            .map_or(0, |(_, value)| value.parse().unwrap());
        let mut body = buffer[head_end + 4..].to_vec();
        while body.len() < length {
            let mut chunk = [0_u8; 4096];
            let read = stream.read(&mut chunk).await.unwrap();
            assert!(read > 0, "the client closed mid-body");
            body.extend_from_slice(&chunk[..read]);
        }
        assert_eq!(body.len(), length, "more body than Content-Length");
        let answer_head = format!(
            "HTTP/1.1 {status} Fixture\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            answer.len()
        );
        stream.write_all(answer_head.as_bytes()).await.unwrap();
        stream.write_all(&answer).await.unwrap();
        stream.shutdown().await.unwrap();
        Received {
            method,
            target,
            headers,
            body,
        }
    });
    (format!("http://{address}"), handle)
}

/// A loopback address nothing listens on.
pub async fn closed_address() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    address
}
