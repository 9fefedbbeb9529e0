//! Stripe Checkout: the card provider.
//!
//! - A checkout is a Checkout Session in `subscription` mode with one
//!   inline recurring price, every 30 days (`recurring[interval]=day`,
//!   `interval_count=30`: the service's period), posted to
//!   `POST /v1/checkout/sessions` form-encoded, with the payment id as
//!   `Idempotency-Key`, `client_reference_id` and `metadata[payment_id]`
//!   (also on the subscription, `subscription_data[metadata]`). Its
//!   completion pays the first period and names the subscription and
//!   customer; each renewal is an `invoice.paid` of the subscription.
//! - The customer portal is a `POST /v1/billing_portal/sessions` for the
//!   customer; turning renewal off (a move to Free scheduled, a
//!   subscription a later checkout replaced) is `POST /v1/subscriptions/:id`
//!   with `cancel_at_period_end=true`; renewing a cheaper plan from the next
//!   period (a move down scheduled between paid plans) reads the
//!   subscription's item and product (`GET /v1/subscriptions/:id`) and posts
//!   a new inline price for that item with `proration_behavior=none`.
//! - Notices are Stripe Events signed with `Stripe-Signature:
//!   t=<unix>,v1=<hex>[,v1=...]`: HMAC-SHA256 of `<t>.<raw body>` keyed with
//!   the endpoint's `whsec_...` secret; one matching `v1` is enough, and `t`
//!   must be within [`TOLERANCE_SECONDS`] of the receiver's clock.

use std::fmt;

use async_trait::async_trait;
use sealpost_billing::{
    CardSubscription, CheckoutRequest, CheckoutSession, Notice, NoticeError, NoticeOutcome,
    PaymentProvider, ProviderError, ProviderId,
};
use sealpost_kernel::Timestamp;
use serde::Deserialize;
use url::form_urlencoded;
use zeroize::Zeroizing;

use crate::http::Executor;
use crate::{BuildError, PreparedRequest};

/// Stripe's API, where [`StripeConfig::api_base`] points unless told otherwise.
pub const DEFAULT_API_BASE: &str = "https://api.stripe.com";
/// The header that carries a notice's signature.
pub const SIGNATURE_HEADER: &str = "Stripe-Signature";
/// Most seconds a notice's `t` may be from the receiver's clock, either way
/// (the default tolerance of Stripe's own libraries).
pub const TOLERANCE_SECONDS: i64 = 300;
const NAME: &str = "Stripe";

/// What the Stripe provider needs.
#[derive(Clone, PartialEq, Eq)]
pub struct StripeConfig {
    /// `sk_live_...` / `sk_test_...` (or a restricted `rk_...` key that may
    /// write Checkout Sessions).
    pub secret_key: Zeroizing<String>,
    /// The webhook endpoint's signing secret, `whsec_...`.
    pub webhook_secret: Zeroizing<String>,
    /// [`DEFAULT_API_BASE`] in production.
    pub api_base: String,
    /// Where Stripe sends the payer after paying (may hold
    /// `{CHECKOUT_SESSION_ID}`, which Stripe fills in).
    pub success_url: String,
    /// Where Stripe sends the payer who gives up.
    pub cancel_url: String,
}

impl StripeConfig {
    /// A configuration against [`DEFAULT_API_BASE`].
    #[must_use]
    pub fn new(
        secret_key: impl Into<String>,
        webhook_secret: impl Into<String>,
        success_url: impl Into<String>,
        cancel_url: impl Into<String>,
    ) -> Self {
        Self {
            secret_key: Zeroizing::new(secret_key.into()),
            webhook_secret: Zeroizing::new(webhook_secret.into()),
            api_base: DEFAULT_API_BASE.to_owned(),
            success_url: success_url.into(),
            cancel_url: cancel_url.into(),
        }
    }

    fn check(&self) -> Result<(), BuildError> {
        crate::check_secret("the Stripe secret key", &self.secret_key)?;
        crate::check_secret("the Stripe webhook secret", &self.webhook_secret)?;
        crate::check_url("the Stripe API base", &self.api_base)?;
        crate::check_url("the Stripe success url", &self.success_url)?;
        crate::check_url("the Stripe cancel url", &self.cancel_url)
    }
}

impl fmt::Debug for StripeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StripeConfig")
            .field("secret_key", &"<redacted>")
            .field("webhook_secret", &"<redacted>")
            .field("api_base", &self.api_base)
            .field("success_url", &self.success_url)
            .field("cancel_url", &self.cancel_url)
            .finish()
    }
}

/// The request that creates the Checkout Session for `request`.
#[must_use]
pub fn checkout_request(config: &StripeConfig, request: &CheckoutRequest) -> PreparedRequest {
    let payment = request.payment.as_str();
    let amount = request.amount.to_string();
    let currency = request.currency.to_ascii_lowercase();
    let body = form_urlencoded::Serializer::new(String::new())
        .append_pair("mode", "subscription")
        .append_pair("client_reference_id", payment)
        .append_pair("metadata[payment_id]", payment)
        .append_pair("metadata[account_id]", request.account.as_str())
        .append_pair("metadata[plan_id]", request.plan.as_str())
        .append_pair("subscription_data[metadata][payment_id]", payment)
        .append_pair(
            "subscription_data[metadata][account_id]",
            request.account.as_str(),
        )
        .append_pair(
            "subscription_data[metadata][plan_id]",
            request.plan.as_str(),
        )
        .append_pair("line_items[0][quantity]", "1")
        .append_pair("line_items[0][price_data][currency]", &currency)
        .append_pair("line_items[0][price_data][unit_amount]", &amount)
        .append_pair("line_items[0][price_data][recurring][interval]", "day")
        .append_pair("line_items[0][price_data][recurring][interval_count]", "30")
        .append_pair(
            "line_items[0][price_data][product_data][name]",
            &request.description,
        )
        .append_pair("success_url", &config.success_url)
        .append_pair("cancel_url", &config.cancel_url)
        .finish();
    form_request(config, "/v1/checkout/sessions", Some(payment), body)
}

/// A form-encoded `POST` to Stripe's API at `path`.
fn form_request(
    config: &StripeConfig,
    path: &str,
    idempotency_key: Option<&str>,
    body: String,
) -> PreparedRequest {
    let mut headers = vec![(
        "Authorization".to_owned(),
        format!("Bearer {}", config.secret_key.as_str()),
    )];
    if let Some(key) = idempotency_key {
        headers.push(("Idempotency-Key".to_owned(), key.to_owned()));
    }
    headers.extend([
        (
            "Content-Type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        ),
        ("Accept".to_owned(), "application/json".to_owned()),
    ]);
    PreparedRequest {
        method: reqwest::Method::POST,
        url: format!("{}{path}", config.api_base.trim_end_matches('/')),
        headers,
        body: body.into_bytes(),
    }
}

/// The request for a customer portal session of `customer`; the portal
/// sends the payer back to the return page ([`StripeConfig::cancel_url`]).
#[must_use]
pub fn portal_request(config: &StripeConfig, customer: &str) -> PreparedRequest {
    let body = form_urlencoded::Serializer::new(String::new())
        .append_pair("customer", customer)
        .append_pair("return_url", &config.cancel_url)
        .finish();
    form_request(config, "/v1/billing_portal/sessions", None, body)
}

/// `/v1/subscriptions/<id>`, the id escaped.
fn subscription_path(subscription: &str) -> String {
    format!(
        "/v1/subscriptions/{}",
        form_urlencoded::byte_serialize(subscription.as_bytes()).collect::<String>()
    )
}

/// The request that turns the renewal of `subscription` off (it ends at
/// the end of the period paid for) or back on.
#[must_use]
pub fn renewal_request(
    config: &StripeConfig,
    subscription: &str,
    renewing: bool,
) -> PreparedRequest {
    let body = form_urlencoded::Serializer::new(String::new())
        .append_pair(
            "cancel_at_period_end",
            if renewing { "false" } else { "true" },
        )
        .finish();
    form_request(config, &subscription_path(subscription), None, body)
}

/// The request that reads `subscription` (`GET /v1/subscriptions/:id`):
/// its item and the item's product, which [`price_request`] names.
#[must_use]
pub fn subscription_request(config: &StripeConfig, subscription: &str) -> PreparedRequest {
    PreparedRequest {
        method: reqwest::Method::GET,
        url: format!(
            "{}{}",
            config.api_base.trim_end_matches('/'),
            subscription_path(subscription)
        ),
        headers: vec![
            (
                "Authorization".to_owned(),
                format!("Bearer {}", config.secret_key.as_str()),
            ),
            ("Accept".to_owned(), "application/json".to_owned()),
        ],
        body: Vec::new(),
    }
}

/// A subscription's (only) item, as [`price_request`] changes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriptionItem {
    /// `si_...`.
    pub id: String,
    /// The product of its price (`prod_...`): the checkout's inline
    /// `product_data` made it.
    pub product: String,
}

/// Reads Stripe's answer to [`subscription_request`]: the first item of
/// `items.data` and its `price.product` (an id, or the expanded object's).
pub fn read_subscription_item(status: u16, body: &[u8]) -> Result<SubscriptionItem, ProviderError> {
    if !(200..=299).contains(&status) {
        return Err(answer_error(status, body));
    }
    let answer: serde_json::Value = serde_json::from_slice(body).map_err(|error| {
        ProviderError::Refused(format!(
            "{NAME} answered a body that is not a subscription: {error}"
        ))
    })?;
    let item = answer.pointer("/items/data/0");
    let id = item.and_then(|item| string(item, "id"));
    let product = item
        .and_then(|item| item.pointer("/price/product"))
        .and_then(|product| {
            product
                .as_str()
                .or_else(|| product.get("id").and_then(serde_json::Value::as_str))
        })
        .filter(|product| !product.is_empty());
    match (id, product) {
        (Some(id), Some(product)) => Ok(SubscriptionItem {
            id: id.to_owned(),
            product: product.to_owned(),
        }),
        _ => Err(ProviderError::Refused(format!(
            "{NAME} answered a subscription without an item and its product"
        ))),
    }
}

/// The request that charges `subscription` `amount` (minor units of
/// `currency`) every 30 days from its next period on: its `item` gets an
/// inline price of the same product, nothing prorated
/// (`proration_behavior=none`), renewal as it was.
#[must_use]
pub fn price_request(
    config: &StripeConfig,
    subscription: &str,
    item: &SubscriptionItem,
    amount: i64,
    currency: &str,
) -> PreparedRequest {
    let body = form_urlencoded::Serializer::new(String::new())
        .append_pair("items[0][id]", &item.id)
        .append_pair("items[0][price_data][product]", &item.product)
        .append_pair(
            "items[0][price_data][currency]",
            &currency.to_ascii_lowercase(),
        )
        .append_pair("items[0][price_data][unit_amount]", &amount.to_string())
        .append_pair("items[0][price_data][recurring][interval]", "day")
        .append_pair("items[0][price_data][recurring][interval_count]", "30")
        .append_pair("proration_behavior", "none")
        .finish();
    form_request(config, &subscription_path(subscription), None, body)
}

/// Reads Stripe's answer to [`portal_request`]: the session's `url`.
pub fn read_portal_response(status: u16, body: &[u8]) -> Result<String, ProviderError> {
    if !(200..=299).contains(&status) {
        return Err(answer_error(status, body));
    }
    let answer: SessionAnswer = serde_json::from_slice(body).map_err(|error| {
        ProviderError::Refused(format!(
            "{NAME} answered a body that is not a portal session: {error}"
        ))
    })?;
    crate::checkout_url(NAME, answer.url)
}

/// Stripe's `error.message` for a non-2xx answer.
fn answer_error(status: u16, body: &[u8]) -> ProviderError {
    let message = serde_json::from_slice::<ErrorAnswer>(body)
        .ok()
        .and_then(|answer| answer.error.message);
    crate::status_error(NAME, status, message)
}

#[derive(Deserialize)]
struct SessionAnswer {
    id: Option<String>,
    url: Option<String>,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    message: Option<String>,
}

/// Reads Stripe's answer to [`checkout_request`]: a Checkout Session
/// (`id`, `url`) on 2xx; otherwise Stripe's `error.message`, as
/// [`ProviderError::Unreachable`] for 5xx and 429 and
/// [`ProviderError::Refused`] for the rest.
pub fn read_checkout_response(status: u16, body: &[u8]) -> Result<CheckoutSession, ProviderError> {
    if !(200..=299).contains(&status) {
        return Err(answer_error(status, body));
    }
    let answer: SessionAnswer = serde_json::from_slice(body).map_err(|error| {
        ProviderError::Refused(format!(
            "{NAME} answered a body that is not a session: {error}"
        ))
    })?;
    Ok(CheckoutSession {
        url: crate::checkout_url(NAME, answer.url)?,
        reference: crate::checkout_reference(NAME, answer.id)?,
    })
}

/// Checks a `Stripe-Signature` header against the raw `body`: the signature
/// first (constant-time, any `v1` may match), then the age, so
/// [`NoticeError::Expired`] means "genuine but more than
/// [`TOLERANCE_SECONDS`] from `now`" (either way; exactly 300 s is accepted).
///
/// Stripe signs exactly as our own webhooks do (`t=<unix>,v1=<hex
/// HMAC-SHA256 of "t.body">`, keyed by the whole `whsec_` string), so this
/// is [`sealpost_signature::verify_with_tolerance`] with Stripe's tolerance.
pub fn verify_signature(
    webhook_secret: &str,
    header: &str,
    body: &[u8],
    now: Timestamp,
) -> Result<(), NoticeError> {
    use sealpost_signature::{SignatureError, verify_with_tolerance};
    verify_with_tolerance(
        webhook_secret,
        header,
        body,
        now.unix_seconds(),
        TOLERANCE_SECONDS,
    )
    .map_err(|error| match error {
        SignatureError::Mismatch => NoticeError::BadSignature,
        SignatureError::TooOld { .. } | SignatureError::TooNew { .. } => NoticeError::Expired,
        SignatureError::Malformed(reason) => {
            NoticeError::MalformedSignature(format!("{SIGNATURE_HEADER}: {reason}"))
        }
        SignatureError::MissingTimestamp => {
            NoticeError::MalformedSignature(format!("{SIGNATURE_HEADER}: no t= timestamp"))
        }
        SignatureError::MissingSignature => {
            NoticeError::MalformedSignature(format!("{SIGNATURE_HEADER}: no v1= signature"))
        }
    })
}

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    data: Option<EventData>,
}

#[derive(Deserialize)]
struct EventData {
    object: serde_json::Value,
}

/// Verifies a notice (see [`verify_signature`]) and reads the Stripe Event:
///
/// | `type` | outcome |
/// |---|---|
/// | `checkout.session.completed`, `payment_status` `paid` or `no_payment_required` | Paid |
/// | `checkout.session.completed`, `payment_status` `unpaid` (an async method still processing) | Ignored |
/// | `checkout.session.async_payment_succeeded` | Paid |
/// | `checkout.session.async_payment_failed`, `checkout.session.expired` | Failed |
/// | `invoice.*`, `customer.subscription.*` | see `subscription_notice` (renewals, renewal off or on) |
/// | anything else | Ignored |
///
/// A paid session in subscription mode also names its `subscription` and
/// `customer` ([`Notice::subscription`]), which the account keeps.
///
/// The reference is the Checkout Session's id (`data.object.id`, `cs_...`)
/// for `checkout.session.*` events and empty for the others, which name no
/// checkout. A `checkout.session.*` event without a session id, or a
/// completed one with a missing or unknown `payment_status`, is
/// [`NoticeError::MalformedBody`].
pub fn read_notice(
    webhook_secret: &str,
    signature: &str,
    body: &[u8],
    now: Timestamp,
) -> Result<Notice, NoticeError> {
    verify_signature(webhook_secret, signature, body, now)?;
    let event: Event = serde_json::from_slice(body)
        .map_err(|error| NoticeError::MalformedBody(format!("not a Stripe event: {error}")))?;
    let acted_on = event.kind.starts_with("checkout.session.")
        || matches!(
            event.kind.as_str(),
            "invoice.paid"
                | "invoice.payment_failed"
                | "customer.subscription.updated"
                | "customer.subscription.deleted"
        );
    if !acted_on {
        return Ok(Notice::checkout("", NoticeOutcome::Ignored));
    }
    let object = event
        .data
        .map(|data| data.object)
        .ok_or_else(|| NoticeError::MalformedBody(format!("{} has no data.object", event.kind)))?;
    let reference = object
        .get("id")
        .and_then(serde_json::Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| NoticeError::MalformedBody(format!("{} has no data.object.id", event.kind)))?
        .to_owned();
    if !event.kind.starts_with("checkout.session.") {
        return subscription_notice(&event.kind, reference, &object);
    }
    let outcome = match event.kind.as_str() {
        "checkout.session.completed" => {
            match object
                .get("payment_status")
                .and_then(serde_json::Value::as_str)
            {
                Some("paid" | "no_payment_required") => NoticeOutcome::Paid,
                Some("unpaid") => NoticeOutcome::Ignored,
                Some(other) => {
                    return Err(NoticeError::MalformedBody(format!(
                        "unknown payment_status {:?}",
                        sealpost_outbound_http::one_line(other, 40)
                    )));
                }
                None => {
                    return Err(NoticeError::MalformedBody(
                        "checkout.session.completed has no payment_status".to_owned(),
                    ));
                }
            }
        }
        "checkout.session.async_payment_succeeded" => NoticeOutcome::Paid,
        "checkout.session.async_payment_failed" | "checkout.session.expired" => {
            NoticeOutcome::Failed
        }
        _ => NoticeOutcome::Ignored,
    };
    // A session in subscription mode names what it started once paid.
    let subscription = match (string(&object, "subscription"), string(&object, "customer")) {
        (Some(id), Some(customer)) if outcome == NoticeOutcome::Paid => Some(CardSubscription {
            id: id.to_owned(),
            customer: customer.to_owned(),
        }),
        _ => None,
    };
    Ok(Notice {
        reference,
        outcome,
        subscription,
    })
}

/// A non-empty string field of `object`.
fn string<'a>(object: &'a serde_json::Value, field: &str) -> Option<&'a str> {
    object
        .get(field)
        .and_then(serde_json::Value::as_str)
        .filter(|value| !value.is_empty())
}

/// Reads an invoice or subscription event (`reference` is its object's id).
///
/// | `type` | outcome |
/// |---|---|
/// | `invoice.paid`, `billing_reason` `subscription_cycle` | Renewed (`amount_paid`) |
/// | `invoice.payment_failed`, `billing_reason` `subscription_cycle` | Renewing(false) |
/// | `invoice.*` of another reason (the first invoice: its checkout's completion pays it) | Ignored |
/// | `customer.subscription.updated` | Renewing(`status` active or trialing and not `cancel_at_period_end`) |
/// | `customer.subscription.deleted` | Renewing(false) |
///
/// An invoice names its subscription in `parent.subscription_details.subscription`
/// (API versions from 2025-03-31) or `subscription` (earlier ones).
fn subscription_notice(
    kind: &str,
    reference: String,
    object: &serde_json::Value,
) -> Result<Notice, NoticeError> {
    let malformed = |what: &str| NoticeError::MalformedBody(format!("{kind} has no {what}"));
    let customer = string(object, "customer")
        .ok_or_else(|| malformed("customer"))?
        .to_owned();
    if let Some(kind) = kind.strip_prefix("invoice.") {
        if string(object, "billing_reason") != Some("subscription_cycle") {
            return Ok(Notice::checkout("", NoticeOutcome::Ignored));
        }
        let subscription = object
            .pointer("/parent/subscription_details/subscription")
            .and_then(serde_json::Value::as_str)
            .or_else(|| string(object, "subscription"))
            .filter(|id| !id.is_empty())
            .ok_or_else(|| malformed("subscription"))?
            .to_owned();
        let outcome = if kind == "paid" {
            let amount = object
                .get("amount_paid")
                .and_then(serde_json::Value::as_i64)
                .ok_or_else(|| malformed("amount_paid"))?;
            NoticeOutcome::Renewed { amount }
        } else {
            NoticeOutcome::Renewing(false)
        };
        return Ok(Notice {
            reference,
            outcome,
            subscription: Some(CardSubscription {
                id: subscription,
                customer,
            }),
        });
    }
    let renewing = kind == "customer.subscription.updated"
        && matches!(string(object, "status"), Some("active" | "trialing"))
        && !object
            .get("cancel_at_period_end")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
    Ok(Notice {
        subscription: Some(CardSubscription {
            id: reference.clone(),
            customer,
        }),
        reference,
        outcome: NoticeOutcome::Renewing(renewing),
    })
}

/// The Stripe Checkout provider.
#[derive(Clone, Debug)]
pub struct StripeProvider {
    config: StripeConfig,
    executor: Executor,
}

impl StripeProvider {
    /// Checks `config` (secrets present, URLs valid) and builds the HTTPS client.
    pub fn new(config: StripeConfig) -> Result<Self, BuildError> {
        config.check()?;
        Ok(Self {
            config,
            executor: Executor::new()?,
        })
    }

    #[must_use]
    pub fn config(&self) -> &StripeConfig {
        &self.config
    }

    /// [`subscription_request`], then [`price_request`] for its item.
    async fn change_price(
        &self,
        subscription: &str,
        amount: i64,
        currency: &str,
    ) -> Result<(), ProviderError> {
        let answer = self
            .executor
            .send(&subscription_request(&self.config, subscription))
            .await?;
        let item = read_subscription_item(answer.status, &answer.body)?;
        let prepared = price_request(&self.config, subscription, &item, amount, currency);
        let answer = self.executor.send(&prepared).await?;
        if (200..=299).contains(&answer.status) {
            Ok(())
        } else {
            Err(answer_error(answer.status, &answer.body))
        }
    }
}

#[async_trait]
impl PaymentProvider for StripeProvider {
    fn id(&self) -> ProviderId {
        ProviderId::Stripe
    }

    async fn start_checkout(
        &self,
        request: &CheckoutRequest,
    ) -> Result<CheckoutSession, ProviderError> {
        let prepared = checkout_request(&self.config, request);
        self.executor
            .checkout(
                ProviderId::Stripe,
                request,
                &prepared,
                read_checkout_response,
            )
            .await
    }

    fn signature_header(&self) -> &'static str {
        SIGNATURE_HEADER
    }

    fn read_notice(
        &self,
        signature: &str,
        body: &[u8],
        now: Timestamp,
    ) -> Result<Notice, NoticeError> {
        read_notice(&self.config.webhook_secret, signature, body, now)
    }

    async fn portal(&self, customer: &str) -> Result<String, ProviderError> {
        let prepared = portal_request(&self.config, customer);
        let result = match self.executor.send(&prepared).await {
            Ok(answer) => read_portal_response(answer.status, &answer.body),
            Err(error) => Err(error),
        };
        if let Err(error) = &result {
            tracing::warn!(provider = %ProviderId::Stripe, %error, "portal session not created");
        }
        result
    }

    async fn set_price(
        &self,
        subscription: &str,
        amount: i64,
        currency: &str,
    ) -> Result<(), ProviderError> {
        let result = self.change_price(subscription, amount, currency).await;
        if let Err(error) = &result {
            tracing::warn!(provider = %ProviderId::Stripe, %error, amount, "renewal price not changed");
        }
        result
    }

    async fn set_renewal(&self, subscription: &str, renewing: bool) -> Result<(), ProviderError> {
        let prepared = renewal_request(&self.config, subscription, renewing);
        let result = match self.executor.send(&prepared).await {
            Ok(answer) if (200..=299).contains(&answer.status) => Ok(()),
            Ok(answer) => Err(answer_error(answer.status, &answer.body)),
            Err(error) => Err(error),
        };
        if let Err(error) = &result {
            tracing::warn!(provider = %ProviderId::Stripe, %error, renewing, "renewal not changed");
        }
        result
    }
}
