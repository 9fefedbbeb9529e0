//! Loopback stand-ins for the payment providers' APIs, plain HTTP (the
//! configuration allows it to this machine only): Stripe's Checkout Session
//! creation (card payments) and BTCPay's invoice creation (crypto), answered
//! as the providers answer, so checkout runs the real adapters over HTTP.
//! Each records the requests it got. Payment notices do not come from
//! here: a test signs them with the webhook secrets below and posts them to
//! the API itself.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use crate::receiver::read_http_request;

/// The Stripe secret key the stand-in's users configure.
pub const STRIPE_SECRET_KEY: &str = "sk_test_standin";
/// The secret Stripe notices are signed with (`Stripe-Signature`).
pub const STRIPE_WEBHOOK_SECRET: &str = "whsec_test_standin";
/// The BTCPay API key, store and notice secret (`BTCPay-Sig`).
pub const BTCPAY_API_KEY: &str = "btcpay_test_standin";
pub const BTCPAY_STORE_ID: &str = "standin-store";
pub const BTCPAY_WEBHOOK_SECRET: &str = "btcpay_whsec_test_standin";

/// A request a stand-in got, and the provider reference it answered.
#[derive(Clone, Debug)]
pub struct Checkout {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The session or invoice id it answered (`cs_test_1`, `inv_test_1`, ...).
    pub reference: String,
}

impl Checkout {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// Which provider a stand-in plays.
#[derive(Clone, Copy)]
enum Provider {
    Stripe,
    Btcpay,
}

impl Provider {
    /// The path of checkout creation, and the answer for the `n`th one:
    /// its reference and body.
    fn answer(self, path: &str, n: usize) -> Option<(String, serde_json::Value)> {
        match self {
            Provider::Stripe => (path == "/v1/checkout/sessions").then(|| {
                let id = format!("cs_test_{n}");
                let body = json!({
                    "id": id,
                    "object": "checkout.session",
                    "payment_status": "unpaid",
                    "url": format!("https://checkout.stripe.com/c/pay/{id}"),
                });
                (id, body)
            }),
            Provider::Btcpay => (path == format!("/api/v1/stores/{BTCPAY_STORE_ID}/invoices"))
                .then(|| {
                    let id = format!("inv_test_{n}");
                    let body = json!({
                        "id": id,
                        "status": "New",
                        "checkoutLink": format!("https://btcpay.test/i/{id}"),
                    });
                    (id, body)
                }),
        }
    }
}

/// A provider's API on loopback; stops with the runtime that started it.
pub struct PaymentStandIn {
    pub addr: SocketAddr,
    checkouts: Arc<Mutex<Vec<Checkout>>>,
}

impl PaymentStandIn {
    /// Stripe's API: `POST /v1/checkout/sessions` answers a Checkout Session.
    pub async fn stripe() -> PaymentStandIn {
        PaymentStandIn::start(Provider::Stripe).await
    }

    /// BTCPay's API: `POST /api/v1/stores/{BTCPAY_STORE_ID}/invoices`
    /// answers an invoice.
    pub async fn btcpay() -> PaymentStandIn {
        PaymentStandIn::start(Provider::Btcpay).await
    }

    async fn start(provider: Provider) -> PaymentStandIn {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let checkouts = Arc::new(Mutex::new(Vec::new()));
        let log = checkouts.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut reader = BufReader::new(stream);
                    while let Some(request) = read_http_request(&mut reader).await {
                        let answer = if request.method == "POST" {
                            let mut log = log.lock().unwrap();
                            let answer = provider.answer(&request.path, log.len() + 1);
                            if let Some((reference, _)) = &answer {
                                log.push(Checkout {
                                    path: request.path.clone(),
                                    headers: request.headers,
                                    body: request.body,
                                    reference: reference.clone(),
                                });
                            }
                            answer
                        } else {
                            None
                        };
                        let (status, body) = match answer {
                            Some((_, body)) => ("200 OK", body.to_string()),
                            None => (
                                "404 Not Found",
                                json!({ "error": { "message": "not found" } }).to_string(),
                            ),
                        };
                        let reply = format!(
                            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n\
                             content-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if reader.get_mut().write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        PaymentStandIn { addr, checkouts }
    }

    /// `http://127.0.0.1:port`, the API base to configure.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Card payments through this stand-in (made by [`PaymentStandIn::stripe`]).
    pub fn stripe_keys(&self) -> sealpost_config::StripeKeys {
        sealpost_config::StripeKeys {
            secret_key: STRIPE_SECRET_KEY.to_owned().into(),
            webhook_secret: STRIPE_WEBHOOK_SECRET.to_owned().into(),
            api_url: self.url(),
        }
    }

    /// Crypto payments through this stand-in (made by [`PaymentStandIn::btcpay`]).
    pub fn btcpay_keys(&self) -> sealpost_config::BtcpayKeys {
        sealpost_config::BtcpayKeys {
            server_url: self.url(),
            api_key: BTCPAY_API_KEY.to_owned().into(),
            store_id: BTCPAY_STORE_ID.to_owned(),
            webhook_secret: BTCPAY_WEBHOOK_SECRET.to_owned().into(),
        }
    }

    /// The checkouts created so far, in order.
    pub fn checkouts(&self) -> Vec<Checkout> {
        self.checkouts.lock().unwrap().clone()
    }
}
