use sealpost_billing::{
    CheckoutSession, NoticeError, NoticeOutcome, PaymentProvider, ProviderError, ProviderId,
};
use sealpost_billing_providers::btcpay::{self, read_checkout_response};
use sealpost_billing_providers::{BtcpayConfig, BtcpayProvider, BuildError};
use serde_json::Value;

use crate::common::{
    at, btcpay_config, checkout_request, closed_address, fixture, json_fixture, serve_once, text,
    vectors,
};

const INVOICE_ID: &str = "LxkXk4sP9g2bVf7vR3nQeW";
const STORE_ID: &str = "7aK2pQ9vXz4mN8rT1sY6uW3eB5cD0fG2hJ4kL6nP8qR";

fn recorded_session() -> CheckoutSession {
    CheckoutSession {
        url: format!("https://pay.sealpost.example/i/{INVOICE_ID}"),
        reference: INVOICE_ID.to_owned(),
    }
}

// ---- the checkout request ----

#[test]
fn checkout_request_matches_the_recorded_request() {
    let config = btcpay_config();
    let prepared = btcpay::checkout_request(&config, &checkout_request());
    assert_eq!(prepared.method, reqwest::Method::POST);
    assert_eq!(
        prepared.url,
        format!("https://pay.sealpost.example/api/v1/stores/{STORE_ID}/invoices")
    );
    assert_eq!(
        prepared.header("Authorization"),
        Some(format!("token {}", config.api_key.as_str()).as_str())
    );
    assert_eq!(prepared.header("Content-Type"), Some("application/json"));
    let body: Value = serde_json::from_slice(&prepared.body).unwrap();
    assert_eq!(body, json_fixture("btcpay/checkout_request.json"));
    // A decimal string, not a number (BTCPay reads numbers as floats).
    assert_eq!(body["amount"], Value::String("49.00".to_owned()));
}

#[test]
fn server_url_may_have_a_path_and_a_trailing_slash() {
    let mut config = btcpay_config();
    config.server_url = "https://example.org/btcpay/".to_owned();
    let prepared = btcpay::checkout_request(&config, &checkout_request());
    assert_eq!(
        prepared.url,
        format!("https://example.org/btcpay/api/v1/stores/{STORE_ID}/invoices")
    );
}

#[test]
fn amounts_keep_two_decimals() {
    let mut request = checkout_request();
    for (cents, decimal) in [(5, "0.05"), (1_000, "10.00"), (123_456, "1234.56")] {
        request.amount = cents;
        let prepared = btcpay::checkout_request(&btcpay_config(), &request);
        let body: Value = serde_json::from_slice(&prepared.body).unwrap();
        assert_eq!(body["amount"], Value::String(decimal.to_owned()), "{cents}");
    }
}

#[test]
fn debug_output_hides_the_secrets() {
    let config = btcpay_config();
    let prepared = btcpay::checkout_request(&config, &checkout_request());
    let printed = format!("{config:?} {prepared:?}");
    assert!(!printed.contains(config.api_key.as_str()), "{printed}");
    assert!(
        !printed.contains(config.webhook_secret.as_str()),
        "{printed}"
    );
}

// ---- reading the answer ----

#[test]
fn a_created_invoice_is_read() {
    assert_eq!(
        read_checkout_response(200, &fixture("btcpay/response_200_invoice.json")),
        Ok(recorded_session())
    );
}

#[test]
fn an_invoice_without_a_checkout_link_is_refused() {
    assert_eq!(
        read_checkout_response(200, &fixture("btcpay/response_200_no_checkout_link.json")),
        Err(ProviderError::Refused(
            "BTCPay answered no checkout url".to_owned()
        ))
    );
    assert!(matches!(
        read_checkout_response(200, b"[]"),
        Err(ProviderError::Refused(_))
    ));
}

#[test]
fn client_errors_are_refused_with_btcpays_message() {
    assert_eq!(
        read_checkout_response(400, &fixture("btcpay/response_400_validation.json")),
        Err(ProviderError::Refused(
            "BTCPay answered 400: amount: The amount should be more than 0.; currency: Invalid currency"
                .to_owned()
        ))
    );
    assert_eq!(
        read_checkout_response(404, &fixture("btcpay/response_404_store.json")),
        Err(ProviderError::Refused(
            "BTCPay answered 404: The store was not found".to_owned()
        ))
    );
    let result = read_checkout_response(403, &fixture("btcpay/response_403_permission.json"));
    assert!(
        matches!(&result, Err(ProviderError::Refused(message)) if message.starts_with("BTCPay answered 403: Insufficient API Permissions.")),
        "{result:?}"
    );
}

#[test]
fn server_errors_are_unreachable() {
    assert_eq!(
        read_checkout_response(502, &fixture("btcpay/response_502_gateway.html")),
        Err(ProviderError::Unreachable("BTCPay answered 502".to_owned()))
    );
    assert_eq!(
        read_checkout_response(500, br#"{"code":"generic-error","message":"Boom"}"#),
        Err(ProviderError::Unreachable(
            "BTCPay answered 500: Boom".to_owned()
        ))
    );
}

// ---- notices ----

fn secret() -> String {
    text(&vectors()["btcpay"], "secret").to_owned()
}

fn vector_for(body: &str) -> Value {
    vectors()["btcpay"]["notices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|vector| text(vector, "body") == body)
        .unwrap_or_else(|| panic!("no vector for {body}"))
        .clone()
}

#[test]
fn every_recorded_notice_is_read() {
    let expected = [
        ("notice_invoice_created.json", NoticeOutcome::Ignored),
        (
            "notice_invoice_received_payment.json",
            NoticeOutcome::Ignored,
        ),
        ("notice_invoice_processing.json", NoticeOutcome::Ignored),
        (
            "notice_invoice_payment_settled.json",
            NoticeOutcome::Ignored,
        ),
        ("notice_invoice_settled.json", NoticeOutcome::Paid),
        ("notice_invoice_expired.json", NoticeOutcome::Failed),
        ("notice_invoice_invalid.json", NoticeOutcome::Failed),
    ];
    let vectors = vectors();
    assert_eq!(
        vectors["btcpay"]["notices"].as_array().unwrap().len(),
        expected.len()
    );
    for (name, outcome) in expected {
        let vector = vector_for(&format!("btcpay/{name}"));
        let notice = btcpay::read_notice(
            &secret(),
            text(&vector, "header"),
            &fixture(text(&vector, "body")),
        )
        .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(notice.outcome, outcome, "{name}");
        assert_eq!(notice.reference, INVOICE_ID, "{name}");
    }
}

#[test]
fn a_tampered_body_is_refused() {
    let vector = vector_for("btcpay/notice_invoice_expired.json");
    let body = String::from_utf8(fixture(text(&vector, "body"))).unwrap();
    let tampered = body.replacen("InvoiceExpired", "InvoiceSettled", 1);
    assert_ne!(tampered, body);
    assert_eq!(
        btcpay::read_notice(&secret(), text(&vector, "header"), tampered.as_bytes()),
        Err(NoticeError::BadSignature)
    );
}

#[test]
fn another_secret_is_refused() {
    let btcpay_vectors = &vectors()["btcpay"];
    let signed_elsewhere = &btcpay_vectors["signed_with_wrong_secret"];
    let body = fixture(text(signed_elsewhere, "body"));
    assert_eq!(
        btcpay::read_notice(&secret(), text(signed_elsewhere, "header"), &body),
        Err(NoticeError::BadSignature)
    );
    let genuine = vector_for("btcpay/notice_invoice_settled.json");
    assert_eq!(
        btcpay::read_notice(
            text(btcpay_vectors, "wrong_secret"),
            text(&genuine, "header"),
            &body
        ),
        Err(NoticeError::BadSignature)
    );
    // A truncated signature does not match either.
    let short = &text(&genuine, "header")[..text(&genuine, "header").len() - 2];
    assert_eq!(
        btcpay::read_notice(&secret(), short, &body),
        Err(NoticeError::BadSignature)
    );
}

#[test]
fn headers_without_the_sha256_prefix_are_malformed() {
    let vector = vector_for("btcpay/notice_invoice_settled.json");
    let body = fixture(text(&vector, "body"));
    let hex = text(&vector, "header").strip_prefix("sha256=").unwrap();
    for header in [
        String::new(),
        hex.to_owned(),
        format!("sha1={hex}"),
        format!("sha256:{hex}"),
        "sha256=".to_owned(),
        "sha256=not-hex".to_owned(),
        format!("t=1,v1={hex}"),
    ] {
        let result = btcpay::read_notice(&secret(), &header, &body);
        assert!(
            matches!(&result, Err(NoticeError::MalformedSignature(_))),
            "{header:?}: {result:?}"
        );
    }
}

#[test]
fn genuine_bodies_of_the_wrong_shape_are_malformed() {
    let btcpay_vectors = &vectors()["btcpay"];
    for name in ["not_json", "settled_without_invoice"] {
        let vector = &btcpay_vectors[name];
        let result = btcpay::read_notice(
            &secret(),
            text(vector, "header"),
            text(vector, "body_text").as_bytes(),
        );
        assert!(
            matches!(&result, Err(NoticeError::MalformedBody(_))),
            "{name}: {result:?}"
        );
    }
}

// ---- the provider ----

fn provider_at(server_url: &str) -> BtcpayProvider {
    let mut config = btcpay_config();
    config.server_url = server_url.to_owned();
    BtcpayProvider::new(config).unwrap()
}

#[test]
fn the_provider_names_itself_and_reads_notices_at_any_time() {
    let provider = provider_at("https://pay.sealpost.example");
    assert_eq!(provider.id(), ProviderId::Btcpay);
    assert_eq!(provider.signature_header(), "BTCPay-Sig");
    let vector = vector_for("btcpay/notice_invoice_settled.json");
    // The scheme signs no timestamp: a notice read a year later still reads.
    let notice = provider
        .read_notice(
            text(&vector, "header"),
            &fixture(text(&vector, "body")),
            at(1_826_000_000),
        )
        .unwrap();
    assert_eq!(notice.outcome, NoticeOutcome::Paid);
    assert_eq!(notice.reference, INVOICE_ID);
}

#[test]
fn bad_configuration_is_refused() {
    type Spoil = fn(&mut BtcpayConfig);
    let cases: [(&str, Spoil); 5] = [
        ("empty webhook secret", |c| c.webhook_secret.clear()),
        ("empty api key", |c| c.api_key.clear()),
        ("store id with a slash", |c| c.store_id = "a/../b".into()),
        ("empty store id", |c| c.store_id.clear()),
        ("server url not a URL", |c| {
            c.server_url = "pay.example".into()
        }),
    ];
    for (name, spoil) in cases {
        let mut config = btcpay_config();
        spoil(&mut config);
        assert!(
            matches!(
                BtcpayProvider::new(config),
                Err(BuildError::InvalidConfig(_))
            ),
            "{name}"
        );
    }
}

// ---- over the wire ----

#[tokio::test]
async fn checkout_over_the_wire() {
    let (base, server) = serve_once(
        200,
        "application/json",
        fixture("btcpay/response_200_invoice.json"),
    )
    .await;
    let session = provider_at(&base).start_checkout(&checkout_request()).await;
    let received = server.await.unwrap();

    assert_eq!(session, Ok(recorded_session()));
    assert_eq!(received.method, "POST");
    assert_eq!(
        received.target,
        format!("/api/v1/stores/{STORE_ID}/invoices")
    );
    assert_eq!(
        received.header("authorization"),
        Some(format!("token {}", btcpay_config().api_key.as_str()).as_str())
    );
    assert_eq!(received.header("content-type"), Some("application/json"));
    let body: Value = serde_json::from_slice(&received.body).unwrap();
    assert_eq!(body, json_fixture("btcpay/checkout_request.json"));
}

#[tokio::test]
async fn a_server_error_over_the_wire_is_unreachable() {
    let (base, server) = serve_once(
        502,
        "text/html",
        fixture("btcpay/response_502_gateway.html"),
    )
    .await;
    let result = provider_at(&base).start_checkout(&checkout_request()).await;
    server.await.unwrap();
    assert_eq!(
        result,
        Err(ProviderError::Unreachable("BTCPay answered 502".to_owned()))
    );
}

#[tokio::test]
async fn a_client_error_over_the_wire_is_refused() {
    let (base, server) = serve_once(
        400,
        "application/json",
        fixture("btcpay/response_400_validation.json"),
    )
    .await;
    let result = provider_at(&base).start_checkout(&checkout_request()).await;
    server.await.unwrap();
    assert_eq!(
        result,
        Err(ProviderError::Refused(
            "BTCPay answered 400: amount: The amount should be more than 0.; currency: Invalid currency"
                .to_owned()
        ))
    );
}

#[tokio::test]
async fn a_closed_port_is_unreachable() {
    let address = closed_address().await;
    let result = provider_at(&format!("http://{address}"))
        .start_checkout(&checkout_request())
        .await;
    assert!(
        matches!(&result, Err(ProviderError::Unreachable(message)) if message.starts_with("could not connect")),
        "{result:?}"
    );
}
