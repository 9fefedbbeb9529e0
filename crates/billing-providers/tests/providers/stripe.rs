use sealpost_billing::{
    CheckoutSession, NoticeError, NoticeOutcome, PaymentProvider, ProviderError, ProviderId,
};
use sealpost_billing_providers::stripe::{self, read_checkout_response};
use sealpost_billing_providers::{BuildError, StripeConfig, StripeProvider};

use crate::common::{
    at, checkout_request, closed_address, fixture, json_fixture, serve_once, stripe_config, text,
    vectors,
};

const SESSION_ID: &str = "cs_test_a1Qm2kR7vT9xY3zB5nC8dF0gH4jL6pS1uW3eE5rT7yU9iO2pA4sD6fG8h";

fn recorded_session() -> CheckoutSession {
    let session = json_fixture("stripe/response_200_session.json");
    let url = text(&session, "url").to_owned();
    assert!(url.starts_with("https://checkout.stripe.com/c/pay/cs_test_"));
    CheckoutSession {
        url,
        reference: SESSION_ID.to_owned(),
    }
}

// ---- the checkout request ----

#[test]
fn checkout_request_matches_the_recorded_request() {
    let config = stripe_config();
    let prepared = stripe::checkout_request(&config, &checkout_request());
    assert_eq!(prepared.method, reqwest::Method::POST);
    assert_eq!(prepared.url, "https://api.stripe.com/v1/checkout/sessions");
    assert_eq!(
        prepared.header("Authorization"),
        Some(format!("Bearer {}", config.secret_key.as_str()).as_str())
    );
    assert_eq!(
        prepared.header("Idempotency-Key"),
        Some("pay_06c4k2m9q0r8s7t6u5v4a3b2c1")
    );
    assert_eq!(
        prepared.header("Content-Type"),
        Some("application/x-www-form-urlencoded")
    );
    // Byte for byte what Python's urlencode makes of the same fields.
    assert_eq!(
        String::from_utf8(prepared.body).unwrap(),
        String::from_utf8(fixture("stripe/checkout_request.form")).unwrap()
    );
}

#[test]
fn the_form_decodes_to_the_checkout() {
    let prepared = stripe::checkout_request(&stripe_config(), &checkout_request());
    let fields: Vec<(String, String)> = url::form_urlencoded::parse(&prepared.body)
        .into_owned()
        .collect();
    let field = |name: &str| {
        fields
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    assert_eq!(
        field("line_items[0][price_data][unit_amount]"),
        Some("4900")
    );
    assert_eq!(field("line_items[0][price_data][currency]"), Some("usd"));
    assert_eq!(
        field("line_items[0][price_data][product_data][name]"),
        Some("Sealpost Scale, 30 days")
    );
    assert_eq!(
        field("success_url"),
        Some("https://sealpost.example/billing/return?session={CHECKOUT_SESSION_ID}")
    );
    assert_eq!(field("metadata[plan_id]"), Some("scale"));
}

#[test]
fn api_base_may_end_with_a_slash() {
    let mut config = stripe_config();
    config.api_base = "http://127.0.0.1:4010/".to_owned();
    let prepared = stripe::checkout_request(&config, &checkout_request());
    assert_eq!(prepared.url, "http://127.0.0.1:4010/v1/checkout/sessions");
}

#[test]
fn debug_output_hides_the_secrets() {
    let config = stripe_config();
    let prepared = stripe::checkout_request(&config, &checkout_request());
    let printed = format!("{config:?} {prepared:?}");
    assert!(!printed.contains(config.secret_key.as_str()), "{printed}");
    assert!(
        !printed.contains(config.webhook_secret.as_str()),
        "{printed}"
    );
    assert!(printed.contains("<redacted>"));
}

// ---- reading the answer ----

#[test]
fn a_created_session_is_read() {
    assert_eq!(
        read_checkout_response(200, &fixture("stripe/response_200_session.json")),
        Ok(recorded_session())
    );
}

#[test]
fn a_session_without_a_url_is_refused() {
    // An embedded-mode session has `url: null`: nowhere to send the payer.
    assert_eq!(
        read_checkout_response(200, &fixture("stripe/response_200_no_url.json")),
        Err(ProviderError::Refused(
            "Stripe answered no checkout url".to_owned()
        ))
    );
    let mut session = json_fixture("stripe/response_200_session.json");
    session.as_object_mut().unwrap().remove("id");
    assert_eq!(
        read_checkout_response(200, &serde_json::to_vec(&session).unwrap()),
        Err(ProviderError::Refused(
            "Stripe answered no checkout id".to_owned()
        ))
    );
}

#[test]
fn an_unreadable_success_is_refused() {
    let result = read_checkout_response(200, b"<html>hello</html>");
    assert!(
        matches!(&result, Err(ProviderError::Refused(message)) if message.starts_with("Stripe answered a body that is not a session")),
        "{result:?}"
    );
}

#[test]
fn client_errors_are_refused_with_stripes_message() {
    assert_eq!(
        read_checkout_response(400, &fixture("stripe/response_400_invalid_request.json")),
        Err(ProviderError::Refused(
            "Stripe answered 400: Invalid integer: 49.00".to_owned()
        ))
    );
    assert_eq!(
        read_checkout_response(401, &fixture("stripe/response_401_invalid_key.json")),
        Err(ProviderError::Refused(
            "Stripe answered 401: Invalid API Key provided: sk_test_********************************************0000"
                .to_owned()
        ))
    );
    // A redirect is not followed: refused.
    assert_eq!(
        read_checkout_response(302, b""),
        Err(ProviderError::Refused("Stripe answered 302".to_owned()))
    );
}

#[test]
fn server_errors_and_rate_limits_are_unreachable() {
    assert_eq!(
        read_checkout_response(500, &fixture("stripe/response_500_api_error.json")),
        Err(ProviderError::Unreachable(
            "Stripe answered 500: An unknown error occurred".to_owned()
        ))
    );
    assert_eq!(
        read_checkout_response(502, b"<html>Bad Gateway</html>"),
        Err(ProviderError::Unreachable("Stripe answered 502".to_owned()))
    );
    let result = read_checkout_response(429, &fixture("stripe/response_429_rate_limit.json"));
    assert!(
        matches!(&result, Err(ProviderError::Unreachable(message)) if message.starts_with("Stripe answered 429: Request rate limit exceeded.")),
        "{result:?}"
    );
}

// ---- notices ----

fn secret() -> String {
    text(&vectors()["stripe"], "secret").to_owned()
}

/// Reads the recorded notice `body` with its Python-made signature.
fn read_vector(vector: &serde_json::Value) -> Result<sealpost_billing::Notice, NoticeError> {
    let body = fixture(text(vector, "body"));
    let now = at(vector["timestamp"].as_i64().unwrap());
    stripe::read_notice(&secret(), text(vector, "header"), &body, now)
}

fn vector_for(body: &str) -> serde_json::Value {
    vectors()["stripe"]["notices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|vector| text(vector, "body") == body)
        .unwrap_or_else(|| panic!("no vector for {body}"))
        .clone()
}

#[test]
fn every_recorded_event_is_read() {
    let expected = [
        (
            "stripe/event_completed_paid.json",
            NoticeOutcome::Paid,
            SESSION_ID,
        ),
        (
            "stripe/event_completed_no_payment_required.json",
            NoticeOutcome::Paid,
            SESSION_ID,
        ),
        (
            "stripe/event_completed_unpaid.json",
            NoticeOutcome::Ignored,
            SESSION_ID,
        ),
        (
            "stripe/event_async_payment_succeeded.json",
            NoticeOutcome::Paid,
            SESSION_ID,
        ),
        (
            "stripe/event_async_payment_failed.json",
            NoticeOutcome::Failed,
            SESSION_ID,
        ),
        (
            "stripe/event_expired.json",
            NoticeOutcome::Failed,
            SESSION_ID,
        ),
        (
            "stripe/event_payment_intent_succeeded.json",
            NoticeOutcome::Ignored,
            "",
        ),
        (
            "stripe/event_completed_subscription.json",
            NoticeOutcome::Paid,
            SESSION_ID,
        ),
        // The first invoice: the checkout's completion pays it.
        (
            "stripe/event_invoice_paid_first.json",
            NoticeOutcome::Ignored,
            "",
        ),
        (
            "stripe/event_invoice_paid_renewal.json",
            NoticeOutcome::Renewed { amount: 4_900 },
            "in_1SealpostFixtureRenew",
        ),
        (
            "stripe/event_invoice_paid_renewal_legacy.json",
            NoticeOutcome::Renewed { amount: 4_900 },
            "in_1SealpostFixtureLegacy",
        ),
        (
            "stripe/event_invoice_payment_failed_renewal.json",
            NoticeOutcome::Renewing(false),
            "in_1SealpostFixtureFailed",
        ),
        (
            "stripe/event_subscription_updated_cancel.json",
            NoticeOutcome::Renewing(false),
            SUBSCRIPTION_ID,
        ),
        (
            "stripe/event_subscription_updated_active.json",
            NoticeOutcome::Renewing(true),
            SUBSCRIPTION_ID,
        ),
        (
            "stripe/event_subscription_deleted.json",
            NoticeOutcome::Renewing(false),
            SUBSCRIPTION_ID,
        ),
    ];
    let vectors = vectors();
    let all = vectors["stripe"]["notices"].as_array().unwrap();
    assert_eq!(all.len(), expected.len(), "every vector has an expectation");
    for (body, outcome, reference) in expected {
        let notice =
            read_vector(&vector_for(body)).unwrap_or_else(|error| panic!("{body}: {error}"));
        assert_eq!(notice.outcome, outcome, "{body}");
        assert_eq!(notice.reference, reference, "{body}");
        // What a subscription's notices name: it and its customer.
        let names_subscription = !matches!(outcome, NoticeOutcome::Ignored | NoticeOutcome::Failed)
            && (body.contains("invoice") || body.contains("subscription"));
        if names_subscription {
            assert_eq!(
                notice.subscription,
                Some(sealpost_billing::CardSubscription {
                    id: SUBSCRIPTION_ID.into(),
                    customer: "cus_TestSealpost0001".into(),
                }),
                "{body}"
            );
        } else {
            assert_eq!(notice.subscription, None, "{body}");
        }
    }
}

const SUBSCRIPTION_ID: &str = "sub_1SealpostFixture0001";

#[test]
fn the_portal_and_renewal_requests_are_stripes_forms() {
    let config = stripe_config();
    let portal = stripe::portal_request(&config, "cus_TestSealpost0001");
    assert_eq!(portal.method, reqwest::Method::POST);
    assert!(
        portal.url.ends_with("/v1/billing_portal/sessions"),
        "{}",
        portal.url
    );
    assert_eq!(
        String::from_utf8(portal.body).unwrap(),
        format!(
            "customer=cus_TestSealpost0001&return_url={}",
            url::form_urlencoded::byte_serialize(config.cancel_url.as_bytes()).collect::<String>()
        )
    );
    let off = stripe::renewal_request(&config, SUBSCRIPTION_ID, false);
    assert!(
        off.url
            .ends_with("/v1/subscriptions/sub_1SealpostFixture0001"),
        "{}",
        off.url
    );
    assert_eq!(off.body, b"cancel_at_period_end=true");
    let on = stripe::renewal_request(&config, SUBSCRIPTION_ID, true);
    assert_eq!(on.body, b"cancel_at_period_end=false");
    assert_eq!(
        stripe::read_portal_response(
            200,
            br#"{"id":"bps_1","object":"billing_portal.session","url":"https://billing.stripe.com/p/session/test_1"}"#
        ),
        Ok("https://billing.stripe.com/p/session/test_1".to_owned())
    );
    assert!(matches!(
        stripe::read_portal_response(400, br#"{"error":{"message":"No such customer"}}"#),
        Err(sealpost_billing::ProviderError::Refused(message)) if message.contains("No such customer")
    ));
}

#[test]
fn the_renewal_price_change_reads_the_item_and_posts_a_price_from_the_next_period() {
    let config = stripe_config();
    let read = stripe::subscription_request(&config, SUBSCRIPTION_ID);
    assert_eq!(read.method, reqwest::Method::GET);
    assert!(
        read.url
            .ends_with("/v1/subscriptions/sub_1SealpostFixture0001"),
        "{}",
        read.url
    );
    assert!(read.body.is_empty());
    assert!(read.header("Authorization").is_some());
    let item = stripe::read_subscription_item(
        200,
        br#"{"id":"sub_1SealpostFixture0001","object":"subscription",
             "items":{"object":"list","data":[{"id":"si_1","object":"subscription_item",
               "price":{"id":"price_1","product":"prod_1","unit_amount":4900}}]}}"#,
    )
    .unwrap();
    assert_eq!(
        item,
        stripe::SubscriptionItem {
            id: "si_1".into(),
            product: "prod_1".into(),
        }
    );
    // An expanded product names its id.
    assert_eq!(
        stripe::read_subscription_item(
            200,
            br#"{"items":{"data":[{"id":"si_1","price":{"product":{"id":"prod_1"}}}]}}"#
        )
        .unwrap(),
        item
    );
    assert!(matches!(
        stripe::read_subscription_item(200, br#"{"items":{"data":[]}}"#),
        Err(sealpost_billing::ProviderError::Refused(_))
    ));
    assert!(matches!(
        stripe::read_subscription_item(404, br#"{"error":{"message":"No such subscription"}}"#),
        Err(sealpost_billing::ProviderError::Refused(message)) if message.contains("No such subscription")
    ));
    let change = stripe::price_request(&config, SUBSCRIPTION_ID, &item, 900, "USD");
    assert_eq!(change.method, reqwest::Method::POST);
    assert_eq!(change.url, read.url);
    assert_eq!(
        String::from_utf8(change.body).unwrap(),
        "items%5B0%5D%5Bid%5D=si_1\
         &items%5B0%5D%5Bprice_data%5D%5Bproduct%5D=prod_1\
         &items%5B0%5D%5Bprice_data%5D%5Bcurrency%5D=usd\
         &items%5B0%5D%5Bprice_data%5D%5Bunit_amount%5D=900\
         &items%5B0%5D%5Bprice_data%5D%5Brecurring%5D%5Binterval%5D=day\
         &items%5B0%5D%5Bprice_data%5D%5Brecurring%5D%5Binterval_count%5D=30\
         &proration_behavior=none"
    );
}

#[test]
fn a_tampered_body_is_refused() {
    let vector = vector_for("stripe/event_completed_paid.json");
    let body = String::from_utf8(fixture(text(&vector, "body"))).unwrap();
    let tampered = body.replacen("\"amount_total\": 4900", "\"amount_total\": 1", 1);
    assert_ne!(tampered, body);
    let now = at(vector["timestamp"].as_i64().unwrap());
    assert_eq!(
        stripe::read_notice(&secret(), text(&vector, "header"), tampered.as_bytes(), now),
        Err(NoticeError::BadSignature)
    );
    // The same signature moved to another second no longer matches either.
    let moved = text(&vector, "header").replacen("t=1795000125", "t=1795000126", 1);
    assert_ne!(moved, text(&vector, "header"));
    assert_eq!(
        stripe::read_notice(&secret(), &moved, body.as_bytes(), now),
        Err(NoticeError::BadSignature)
    );
}

#[test]
fn another_secret_is_refused() {
    let stripe = &vectors()["stripe"];
    let signed_elsewhere = &stripe["signed_with_wrong_secret"];
    let body = fixture(text(signed_elsewhere, "body"));
    let now = at(signed_elsewhere["timestamp"].as_i64().unwrap());
    assert_eq!(
        stripe::read_notice(&secret(), text(signed_elsewhere, "header"), &body, now),
        Err(NoticeError::BadSignature)
    );
    let genuine = vector_for("stripe/event_completed_paid.json");
    assert_eq!(
        stripe::read_notice(
            text(stripe, "wrong_secret"),
            text(&genuine, "header"),
            &body,
            now
        ),
        Err(NoticeError::BadSignature)
    );
}

#[test]
fn one_matching_v1_among_several_is_enough() {
    let vector = &vectors()["stripe"]["several_v1"];
    let header = text(vector, "header");
    assert_eq!(header.matches("v1=").count(), 2);
    assert!(header.contains(",v0="));
    let notice = read_vector(vector).unwrap();
    assert_eq!(notice.outcome, NoticeOutcome::Paid);
    assert_eq!(notice.reference, SESSION_ID);
    // Only the v1 entries count: the wrong-secret v1 alone fails.
    let first_only: Vec<&str> = header.split(',').take(2).collect();
    let body = fixture(text(vector, "body"));
    let now = at(vector["timestamp"].as_i64().unwrap());
    assert_eq!(
        stripe::read_notice(&secret(), &first_only.join(","), &body, now),
        Err(NoticeError::BadSignature)
    );
}

#[test]
fn a_signature_more_than_five_minutes_away_is_expired() {
    let vector = vector_for("stripe/event_completed_paid.json");
    let body = fixture(text(&vector, "body"));
    let header = text(&vector, "header");
    let signed_at = vector["timestamp"].as_i64().unwrap();
    let read = |now: i64| stripe::read_notice(&secret(), header, &body, at(now));
    assert!(read(signed_at + 300).is_ok());
    assert!(read(signed_at - 300).is_ok());
    assert_eq!(read(signed_at + 301), Err(NoticeError::Expired));
    assert_eq!(read(signed_at + 86_400), Err(NoticeError::Expired));
    assert_eq!(read(signed_at - 301), Err(NoticeError::Expired));
    // An old forgery is a bad signature, not "expired".
    let forged = format!("t={signed_at},v1={}", "0".repeat(64));
    assert_eq!(
        stripe::read_notice(&secret(), &forged, &body, at(signed_at + 1000)),
        Err(NoticeError::BadSignature)
    );
}

#[test]
fn malformed_headers_are_refused() {
    let vector = vector_for("stripe/event_completed_paid.json");
    let body = fixture(text(&vector, "body"));
    let now = at(vector["timestamp"].as_i64().unwrap());
    let v1 = text(&vector, "header")
        .split_once(",v1=")
        .unwrap()
        .1
        .to_owned();
    for header in [
        String::new(),
        "garbage".to_owned(),
        format!("v1={v1}"),
        "t=1795000125".to_owned(),
        "t=1795000125,v0=abc".to_owned(),
        format!("t=abc,v1={v1}"),
        format!("t=-1795000125,v1={v1}"),
        format!("t=1795000125.5,v1={v1}"),
        format!("t=1795000125;v1={v1}"),
        format!("t=1795000125,t=1795000125,v1={v1}"),
        format!("sha256={v1}"),
    ] {
        let result = stripe::read_notice(&secret(), &header, &body, now);
        assert!(
            matches!(&result, Err(NoticeError::MalformedSignature(_))),
            "{header:?}: {result:?}"
        );
    }
    // Spaces around entries are tolerated.
    let spaced = text(&vector, "header").replace(',', ", ");
    assert!(stripe::read_notice(&secret(), &spaced, &body, now).is_ok());
}

#[test]
fn genuine_bodies_of_the_wrong_shape_are_malformed() {
    let stripe_vectors = &vectors()["stripe"];
    for name in [
        "not_json",
        "completed_without_payment_status",
        "expired_without_id",
    ] {
        let vector = &stripe_vectors[name];
        let now = at(vector["timestamp"].as_i64().unwrap());
        let result = stripe::read_notice(
            &secret(),
            text(vector, "header"),
            text(vector, "body_text").as_bytes(),
            now,
        );
        assert!(
            matches!(&result, Err(NoticeError::MalformedBody(_))),
            "{name}: {result:?}"
        );
    }
}

// ---- the provider ----

fn provider_at(api_base: &str) -> StripeProvider {
    let mut config = stripe_config();
    config.api_base = api_base.to_owned();
    StripeProvider::new(config).unwrap()
}

#[test]
fn the_provider_names_itself_and_reads_notices() {
    let provider = provider_at(stripe::DEFAULT_API_BASE);
    assert_eq!(provider.id(), ProviderId::Stripe);
    assert_eq!(provider.signature_header(), "Stripe-Signature");
    let vector = vector_for("stripe/event_expired.json");
    let notice = provider
        .read_notice(
            text(&vector, "header"),
            &fixture(text(&vector, "body")),
            at(vector["timestamp"].as_i64().unwrap()),
        )
        .unwrap();
    assert_eq!(notice.outcome, NoticeOutcome::Failed);
    assert_eq!(notice.reference, SESSION_ID);
}

#[test]
fn bad_configuration_is_refused() {
    type Spoil = fn(&mut StripeConfig);
    let cases: [(&str, Spoil); 5] = [
        ("empty webhook secret", |c| c.webhook_secret.clear()),
        ("empty secret key", |c| c.secret_key.clear()),
        ("key with a newline", |c| c.secret_key.push('\n')),
        ("api base not a URL", |c| {
            c.api_base = "api.stripe.com".into()
        }),
        ("cancel url not http", |c| {
            c.cancel_url = "ftp://x.example/".into()
        }),
    ];
    for (name, spoil) in cases {
        let mut config = stripe_config();
        spoil(&mut config);
        assert!(
            matches!(
                StripeProvider::new(config),
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
        fixture("stripe/response_200_session.json"),
    )
    .await;
    let provider = provider_at(&base);
    let session = provider.start_checkout(&checkout_request()).await;
    let received = server.await.unwrap();

    assert_eq!(session, Ok(recorded_session()));
    assert_eq!(received.method, "POST");
    assert_eq!(received.target, "/v1/checkout/sessions");
    assert_eq!(
        received.header("authorization"),
        Some(format!("Bearer {}", stripe_config().secret_key.as_str()).as_str())
    );
    assert_eq!(
        received.header("idempotency-key"),
        Some("pay_06c4k2m9q0r8s7t6u5v4a3b2c1")
    );
    assert_eq!(
        received.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(received.body, fixture("stripe/checkout_request.form"));
}

#[tokio::test]
async fn a_server_error_over_the_wire_is_unreachable() {
    let (base, server) = serve_once(
        500,
        "application/json",
        fixture("stripe/response_500_api_error.json"),
    )
    .await;
    let result = provider_at(&base).start_checkout(&checkout_request()).await;
    server.await.unwrap();
    assert_eq!(
        result,
        Err(ProviderError::Unreachable(
            "Stripe answered 500: An unknown error occurred".to_owned()
        ))
    );
}

#[tokio::test]
async fn a_client_error_over_the_wire_is_refused() {
    let (base, server) = serve_once(
        400,
        "application/json",
        fixture("stripe/response_400_invalid_request.json"),
    )
    .await;
    let result = provider_at(&base).start_checkout(&checkout_request()).await;
    server.await.unwrap();
    assert_eq!(
        result,
        Err(ProviderError::Refused(
            "Stripe answered 400: Invalid integer: 49.00".to_owned()
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

#[tokio::test]
async fn a_checkout_for_nothing_is_refused_before_sending() {
    // Nothing listens there: had it been sent, this would be Unreachable.
    let address = closed_address().await;
    let mut request = checkout_request();
    request.amount = 0;
    let result = provider_at(&format!("http://{address}"))
        .start_checkout(&request)
        .await;
    assert_eq!(
        result,
        Err(ProviderError::Refused(
            "the amount must be positive, not 0".to_owned()
        ))
    );
}
