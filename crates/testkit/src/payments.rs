//! Loopback stand-ins for the payment providers' APIs, plain HTTP (the
//! configuration allows it to this machine only): Stripe's Checkout Session
//! creation (card payments) and BTCPay's invoice creation (crypto), answered
//! as the providers answer, so checkout runs the real adapters over HTTP.
//! Each records the requests it got.
//!
//! The Stripe stand-in also keeps subscriptions as Stripe does: once told
//! where the API is ([`PaymentStandIn::notify`], which also hands it the
//! API's test clock), it pays a checkout ([`PaymentStandIn::pay_checkout`]),
//! bills each subscription whose period ended when the test moves its clock
//! ([`PaymentStandIn::bill_due`]: `invoice.paid`, or `invoice.payment_failed`
//! after [`PaymentStandIn::fail_renewals`]), serves billing-portal sessions,
//! turns renewal off or on as its portal would
//! ([`PaymentStandIn::portal_set_renewal`]) or as `POST /v1/subscriptions/:id`
//! asks, answers `GET /v1/subscriptions/:id` (its item and product) and
//! changes the price a subscription renews at as `POST
//! /v1/subscriptions/:id` with `items[0][price_data]` asks (from the next
//! bill on), and sends each of these as a Stripe event signed with
//! [`STRIPE_WEBHOOK_SECRET`] to the API's notice endpoint, before the call
//! returns. Other notices (BTCPay's, Stripe's in older tests) a test signs
//! with the secrets below and posts itself. While
//! [`PaymentStandIn::set_unavailable`] its API answers every request 503, as
//! Stripe does in an outage (its notices still go out).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use chrono::TimeDelta;
use sealpost_kernel::{Clock, TestClock};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

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

/// A subscription as the Stripe stand-in keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StandInSubscription {
    /// `sub_test_N`.
    pub id: String,
    /// `cus_test_N`.
    pub customer: String,
    /// Its one item, `si_test_N`, and the item's product, `prod_test_N`.
    pub item: String,
    pub product: String,
    /// Cents charged each period (the checkout's `unit_amount`, or the
    /// price a `POST /v1/subscriptions/:id` set since).
    pub amount: i64,
    /// The end of the current period, unix seconds.
    pub period_end: i64,
    pub cancel_at_period_end: bool,
    /// `active`, `past_due` or `canceled`.
    pub status: String,
}

/// A notice the stand-in sent: the event body and the API's answer status.
#[derive(Clone, Debug)]
pub struct SentNotice {
    pub body: String,
    pub status: u16,
}

/// What the Stripe stand-in keeps besides the request log.
#[derive(Default)]
struct Ledger {
    subscriptions: Vec<StandInSubscription>,
    /// Customers a portal session was asked for, in order.
    portal_sessions: Vec<String>,
    invoices: usize,
    events: usize,
    fail_renewals: bool,
    /// The API answers 503 to everything.
    unavailable: bool,
    /// Each `POST /v1/subscriptions/:id` answered: the id and the form.
    subscription_updates: Vec<(String, Vec<u8>)>,
    /// Where notices go (the API's `/billing/notices/stripe`) and its clock.
    notify: Option<(SocketAddr, Arc<TestClock>)>,
    sent: Vec<SentNotice>,
}

/// A provider's API on loopback; stops with the runtime that started it.
pub struct PaymentStandIn {
    pub addr: SocketAddr,
    checkouts: Arc<Mutex<Vec<Checkout>>>,
    ledger: Arc<Mutex<Ledger>>,
}

/// The value of form field `name` in an `application/x-www-form-urlencoded` body.
pub fn form_value(body: &[u8], name: &str) -> Option<String> {
    let decode = |text: &str| -> String {
        let bytes = text.replace('+', " ").into_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%'
                && i + 2 < bytes.len()
                && let Ok(byte) =
                    u8::from_str_radix(&String::from_utf8_lossy(&bytes[i + 1..i + 3]), 16)
            {
                out.push(byte);
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    String::from_utf8_lossy(body)
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| decode(key) == name)
        .map(|(_, value)| decode(value))
}

/// Posts `body` to the API's Stripe notice endpoint at `addr`, signed at
/// `now`; the answer's status.
async fn post_notice(addr: SocketAddr, now: i64, body: &str) -> u16 {
    let signature = sealpost_signature::sign(STRIPE_WEBHOOK_SECRET, now, body.as_bytes());
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST /billing/notices/stripe HTTP/1.1\r\nhost: {addr}\r\n\
         content-type: application/json\r\nstripe-signature: {signature}\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).await.unwrap();
    let mut rest = Vec::new();
    let _ = reader.read_to_end(&mut rest).await;
    status
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

impl Ledger {
    fn event(&mut self, kind: &str, object: Value, created: i64) -> String {
        self.events += 1;
        json!({
            "id": format!("evt_test_{}", self.events),
            "object": "event",
            "api_version": "2025-09-30.clover",
            "created": created,
            "type": kind,
            "data": { "object": object },
        })
        .to_string()
    }

    fn subscription_object(subscription: &StandInSubscription) -> Value {
        json!({
            "id": subscription.id,
            "object": "subscription",
            "customer": subscription.customer,
            "status": subscription.status,
            "cancel_at_period_end": subscription.cancel_at_period_end,
            "items": { "object": "list", "data": [{
                "id": subscription.item,
                "object": "subscription_item",
                "current_period_end": subscription.period_end,
                "price": {
                    "id": format!("price_{}_{}", subscription.item, subscription.amount),
                    "object": "price",
                    "product": subscription.product,
                    "unit_amount": subscription.amount,
                    "currency": "usd",
                    "recurring": { "interval": "day", "interval_count": 30 },
                },
            }] },
        })
    }

    fn invoice(&mut self, subscription: &StandInSubscription, reason: &str, paid: bool) -> Value {
        self.invoices += 1;
        json!({
            "id": format!("in_test_{}", self.invoices),
            "object": "invoice",
            "billing_reason": reason,
            "customer": subscription.customer,
            "amount_due": subscription.amount,
            "amount_paid": if paid { subscription.amount } else { 0 },
            "currency": "usd",
            "status": if paid { "paid" } else { "open" },
            "parent": {
                "type": "subscription_details",
                "subscription_details": { "subscription": subscription.id, "metadata": {} },
            },
        })
    }

    /// A subscription's `customer.subscription.updated` (or `.deleted`).
    fn subscription_event(&mut self, index: usize, kind: &str, now: i64) -> String {
        let object = Ledger::subscription_object(&self.subscriptions[index]);
        self.event(kind, object, now)
    }
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
        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let log = checkouts.clone();
        let kept = ledger.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = log.clone();
                let kept = kept.clone();
                tokio::spawn(async move {
                    let mut reader = BufReader::new(stream);
                    while let Some(request) = read_http_request(&mut reader).await {
                        let down = kept.lock().unwrap().unavailable;
                        let subscriptions = match provider {
                            Provider::Stripe if !down => {
                                stripe_subscription_call(
                                    &kept,
                                    &request.method,
                                    &request.path,
                                    &request.body,
                                )
                                .await
                            }
                            _ => None,
                        };
                        let answer = if down {
                            None
                        } else if subscriptions.is_some() {
                            subscriptions
                        } else if request.method == "POST" {
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
                            None if down => (
                                "503 Service Unavailable",
                                json!({ "error": { "type": "api_error",
                                    "message": "the stand-in is down" } })
                                .to_string(),
                            ),
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
        PaymentStandIn {
            addr,
            checkouts,
            ledger,
        }
    }

    /// Sends this stand-in's notices to `app` (`/billing/notices/stripe`),
    /// signed at `app`'s test clock.
    pub fn notify(&self, app: &crate::TestApp) {
        let url = app.base_url.trim_start_matches("http://");
        let addr: SocketAddr = url.trim_end_matches('/').parse().unwrap();
        self.ledger.lock().unwrap().notify = Some((addr, app.clock.clone()));
    }

    fn notify_target(&self) -> (SocketAddr, Arc<TestClock>) {
        self.ledger
            .lock()
            .unwrap()
            .notify
            .clone()
            .expect("PaymentStandIn::notify first")
    }

    /// Sends `bodies` to the API in order; each answer's status is kept.
    async fn send(&self, bodies: Vec<String>) {
        send_notices(&self.ledger, bodies).await;
    }

    /// The payer completes the Checkout Session `reference` (made by the
    /// checkout before) at the API's clock: a subscription and customer are
    /// created, its first period paid (ending 30 days on), and Stripe's two
    /// events are sent: `checkout.session.completed` (paid, naming the
    /// subscription) and the first `invoice.paid` (`subscription_create`).
    pub async fn pay_checkout(&self, reference: &str) -> StandInSubscription {
        let (_, clock) = self.notify_target();
        let now = clock.now().unix_seconds();
        let checkout = self
            .checkouts()
            .into_iter()
            .find(|checkout| checkout.reference == reference)
            .expect("a checkout this stand-in created");
        let amount: i64 = form_value(&checkout.body, "line_items[0][price_data][unit_amount]")
            .and_then(|amount| amount.parse().ok())
            .unwrap();
        let bodies;
        let subscription;
        {
            let mut ledger = self.ledger.lock().unwrap();
            let n = ledger.subscriptions.len() + 1;
            subscription = StandInSubscription {
                id: format!("sub_test_{n}"),
                customer: format!("cus_test_{n}"),
                item: format!("si_test_{n}"),
                product: format!("prod_test_{n}"),
                amount,
                period_end: now + PERIOD.num_seconds(),
                cancel_at_period_end: false,
                status: "active".into(),
            };
            ledger.subscriptions.push(subscription.clone());
            let session = json!({
                "id": reference,
                "object": "checkout.session",
                "mode": "subscription",
                "client_reference_id": form_value(&checkout.body, "client_reference_id"),
                "payment_status": "paid",
                "status": "complete",
                "amount_total": amount,
                "subscription": subscription.id,
                "customer": subscription.customer,
            });
            let completed = ledger.event("checkout.session.completed", session, now);
            let invoice = ledger.invoice(&subscription, "subscription_create", true);
            let first = ledger.event("invoice.paid", invoice, now);
            bodies = vec![completed, first];
        }
        self.send(bodies).await;
        subscription
    }

    /// Bills every subscription whose period ended by the API's clock, as
    /// Stripe does at a period end: one renewal with renewal on
    /// (`invoice.paid`, the period moves 30 days on; or, after
    /// [`PaymentStandIn::fail_renewals`], `invoice.payment_failed` and the
    /// subscription `past_due`), or, with renewal off, the subscription ends
    /// (`customer.subscription.deleted`). Returns how many notices went out.
    pub async fn bill_due(&self) -> usize {
        let (_, clock) = self.notify_target();
        let now = clock.now().unix_seconds();
        let mut bodies = Vec::new();
        {
            let mut ledger = self.ledger.lock().unwrap();
            let fail = ledger.fail_renewals;
            for index in 0..ledger.subscriptions.len() {
                loop {
                    let subscription = ledger.subscriptions[index].clone();
                    if subscription.status != "active" || subscription.period_end > now {
                        break;
                    }
                    if subscription.cancel_at_period_end {
                        ledger.subscriptions[index].status = "canceled".into();
                        bodies.push(ledger.subscription_event(
                            index,
                            "customer.subscription.deleted",
                            now,
                        ));
                        break;
                    }
                    if fail {
                        ledger.subscriptions[index].status = "past_due".into();
                        let invoice = ledger.invoice(&subscription, "subscription_cycle", false);
                        bodies.push(ledger.event("invoice.payment_failed", invoice, now));
                        break;
                    }
                    let invoice = ledger.invoice(&subscription, "subscription_cycle", true);
                    bodies.push(ledger.event("invoice.paid", invoice, now));
                    ledger.subscriptions[index].period_end += PERIOD.num_seconds();
                }
            }
        }
        let count = bodies.len();
        self.send(bodies).await;
        count
    }

    /// Renewal charges fail from now on (`invoice.payment_failed`).
    pub fn fail_renewals(&self, fail: bool) {
        self.ledger.lock().unwrap().fail_renewals = fail;
    }

    /// The payer turns renewal of `subscription` off (`false`) or on in the
    /// customer portal: `customer.subscription.updated` with
    /// `cancel_at_period_end`.
    pub async fn portal_set_renewal(&self, subscription: &str, renewing: bool) {
        let body = set_cancel_at_period_end(&self.ledger, subscription, !renewing)
            .expect("a subscription of this stand-in");
        self.send(vec![body]).await;
    }

    /// Stripe's API is down (`true`: every request answers 503) or back.
    pub fn set_unavailable(&self, unavailable: bool) {
        self.ledger.lock().unwrap().unavailable = unavailable;
    }

    /// Each `POST /v1/subscriptions/:id` answered so far, in order: the
    /// subscription and the form it posted.
    pub fn subscription_updates(&self) -> Vec<(String, String)> {
        self.ledger
            .lock()
            .unwrap()
            .subscription_updates
            .iter()
            .map(|(id, body)| (id.clone(), String::from_utf8_lossy(body).into_owned()))
            .collect()
    }

    /// The subscriptions, as kept now.
    pub fn subscriptions(&self) -> Vec<StandInSubscription> {
        self.ledger.lock().unwrap().subscriptions.clone()
    }

    /// The customers portal sessions were created for, in order.
    pub fn portal_sessions(&self) -> Vec<String> {
        self.ledger.lock().unwrap().portal_sessions.clone()
    }

    /// Every notice sent so far, in order, with the API's answer.
    pub fn sent(&self) -> Vec<SentNotice> {
        self.ledger.lock().unwrap().sent.clone()
    }

    /// Sends the `index`th notice again (Stripe redelivers), signed anew.
    pub async fn redeliver(&self, index: usize) {
        let body = self.sent()[index].body.clone();
        self.send(vec![body]).await;
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

/// A Stripe subscription period in the stand-in: 30 days, as the checkout's
/// recurring price asks (`interval=day`, `interval_count=30`).
const PERIOD: TimeDelta = TimeDelta::days(30);

/// Sends `bodies` to the API in order, signed at its clock now.
async fn send_notices(ledger: &Mutex<Ledger>, bodies: Vec<String>) {
    let Some((addr, clock)) = ledger.lock().unwrap().notify.clone() else {
        return;
    };
    for body in bodies {
        let status = post_notice(addr, clock.now().unix_seconds(), &body).await;
        ledger
            .lock()
            .unwrap()
            .sent
            .push(SentNotice { body, status });
    }
}

/// Sets `cancel_at_period_end` of `subscription`; the event to send, or
/// `None` for an unknown subscription.
fn set_cancel_at_period_end(
    ledger: &Mutex<Ledger>,
    subscription: &str,
    cancel: bool,
) -> Option<String> {
    let mut ledger = ledger.lock().unwrap();
    let index = ledger
        .subscriptions
        .iter()
        .position(|kept| kept.id == subscription)?;
    let now = ledger
        .notify
        .as_ref()
        .map_or(0, |(_, clock)| clock.now().unix_seconds());
    ledger.subscriptions[index].cancel_at_period_end = cancel;
    Some(ledger.subscription_event(index, "customer.subscription.updated", now))
}

/// Stripe's subscription endpoints: `POST /v1/billing_portal/sessions`,
/// `GET /v1/subscriptions/:id`, and `POST /v1/subscriptions/:id`
/// (`cancel_at_period_end`, or a new price for its item with
/// `items[0][price_data]`; its event is sent before the answer). `None` for
/// other paths.
async fn stripe_subscription_call(
    ledger: &Mutex<Ledger>,
    method: &str,
    path: &str,
    body: &[u8],
) -> Option<(String, Value)> {
    if method == "POST" && path == "/v1/billing_portal/sessions" {
        let customer = form_value(body, "customer")?;
        let mut kept = ledger.lock().unwrap();
        kept.portal_sessions.push(customer.clone());
        let id = format!("bps_test_{}", kept.portal_sessions.len());
        return Some((
            id.clone(),
            json!({
                "id": id,
                "object": "billing_portal.session",
                "customer": customer,
                "return_url": form_value(body, "return_url"),
                "url": format!("https://billing.stripe.com/p/session/{id}"),
            }),
        ));
    }
    let id = path.strip_prefix("/v1/subscriptions/")?;
    if method == "GET" {
        let kept = ledger.lock().unwrap();
        let subscription = kept.subscriptions.iter().find(|kept| kept.id == id)?;
        return Some((id.to_owned(), Ledger::subscription_object(subscription)));
    }
    if method != "POST" {
        return None;
    }
    let event = if let Some(cancel) = form_value(body, "cancel_at_period_end") {
        set_cancel_at_period_end(ledger, id, cancel == "true")?
    } else {
        set_price(ledger, id, body)?
    };
    ledger
        .lock()
        .unwrap()
        .subscription_updates
        .push((id.to_owned(), body.to_vec()));
    let object = serde_json::from_str::<Value>(&event).ok()?["data"]["object"].clone();
    send_notices(ledger, vec![event]).await;
    Some((id.to_owned(), object))
}

/// A new price for `subscription`'s item, as Stripe takes it with
/// `proration_behavior=none`: charged from the next bill on. The item and
/// product must be the subscription's, the price every 30 days. The event
/// to send, or `None` when the form is not such a change.
fn set_price(ledger: &Mutex<Ledger>, subscription: &str, body: &[u8]) -> Option<String> {
    let field = |name: &str| form_value(body, name);
    let mut ledger = ledger.lock().unwrap();
    let index = ledger
        .subscriptions
        .iter()
        .position(|kept| kept.id == subscription)?;
    let kept = &ledger.subscriptions[index];
    let well_formed = field("items[0][id]")? == kept.item
        && field("items[0][price_data][product]")? == kept.product
        && field("items[0][price_data][recurring][interval]")? == "day"
        && field("items[0][price_data][recurring][interval_count]")? == "30"
        && field("proration_behavior")? == "none";
    if !well_formed {
        return None;
    }
    let amount = field("items[0][price_data][unit_amount]")?.parse().ok()?;
    ledger.subscriptions[index].amount = amount;
    let now = ledger
        .notify
        .as_ref()
        .map_or(0, |(_, clock)| clock.now().unix_seconds());
    Some(ledger.subscription_event(index, "customer.subscription.updated", now))
}
