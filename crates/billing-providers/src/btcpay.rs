//! BTCPay Server invoices: the crypto provider.
//!
//! - A checkout is an invoice (`POST /api/v1/stores/{store id}/invoices`,
//!   JSON, `Authorization: token <api key>`), the payment id as
//!   `metadata.orderId`. The amount is a decimal string in the currency's
//!   major unit with two decimals (`4900` cents is `"49.00"`).
//! - Notices are webhooks signed with `BTCPay-Sig: sha256=<hex>`: the
//!   HMAC-SHA256 of the raw body keyed with the webhook's secret. The scheme
//!   signs no timestamp, so there is no age check (a replayed notice only
//!   repeats a settlement, which billing applies once).

use std::fmt;

use async_trait::async_trait;
use sealpost_billing::{
    CheckoutRequest, CheckoutSession, Notice, NoticeError, NoticeOutcome, PaymentProvider,
    ProviderError, ProviderId,
};
use sealpost_kernel::Timestamp;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::http::Executor;
use crate::{BuildError, PreparedRequest};

/// The header that carries a notice's signature.
pub const SIGNATURE_HEADER: &str = "BTCPay-Sig";
/// What the header's value starts with.
const SIGNATURE_PREFIX: &str = "sha256=";
const NAME: &str = "BTCPay";

/// What the BTCPay provider needs.
#[derive(Clone, PartialEq, Eq)]
pub struct BtcpayConfig {
    /// The server's base URL, e.g. `https://pay.example.com` (a path prefix
    /// is kept).
    pub server_url: String,
    /// A Greenfield API key with `btcpay.store.cancreateinvoice`.
    pub api_key: Zeroizing<String>,
    pub store_id: String,
    /// The store webhook's secret.
    pub webhook_secret: Zeroizing<String>,
    /// Where the payer goes after paying.
    pub redirect_url: String,
}

impl BtcpayConfig {
    fn check(&self) -> Result<(), BuildError> {
        crate::check_url("the BTCPay server url", &self.server_url)?;
        crate::check_secret("the BTCPay API key", &self.api_key)?;
        crate::check_secret("the BTCPay webhook secret", &self.webhook_secret)?;
        crate::check_url("the BTCPay redirect url", &self.redirect_url)?;
        if self.store_id.is_empty()
            || !self
                .store_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(BuildError::InvalidConfig(
                "the BTCPay store id must be letters, digits, '-' and '_'".to_owned(),
            ));
        }
        Ok(())
    }
}

impl fmt::Debug for BtcpayConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BtcpayConfig")
            .field("server_url", &self.server_url)
            .field("api_key", &"<redacted>")
            .field("store_id", &self.store_id)
            .field("webhook_secret", &"<redacted>")
            .field("redirect_url", &self.redirect_url)
            .finish()
    }
}

/// Minor units (cents) as a decimal string with two decimals: `4900` is
/// `"49.00"`, `5` is `"0.05"`, `-150` is `"-1.50"`.
#[must_use]
pub fn decimal_amount(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let magnitude = cents.unsigned_abs();
    format!("{sign}{}.{:02}", magnitude / 100, magnitude % 100)
}

#[derive(Serialize)]
struct InvoiceBody<'a> {
    amount: String,
    currency: &'a str,
    metadata: InvoiceMetadata<'a>,
    checkout: InvoiceCheckout<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InvoiceMetadata<'a> {
    order_id: &'a str,
    item_desc: &'a str,
    account_id: &'a str,
    plan_id: &'a str,
}

#[derive(Serialize)]
struct InvoiceCheckout<'a> {
    #[serde(rename = "redirectURL")]
    redirect_url: &'a str,
}

/// The request that creates the invoice for `request`.
#[must_use]
pub fn checkout_request(config: &BtcpayConfig, request: &CheckoutRequest) -> PreparedRequest {
    let body = InvoiceBody {
        amount: decimal_amount(request.amount),
        currency: request.currency,
        metadata: InvoiceMetadata {
            order_id: request.payment.as_str(),
            item_desc: &request.description,
            account_id: request.account.as_str(),
            plan_id: request.plan.as_str(),
        },
        checkout: InvoiceCheckout {
            redirect_url: &config.redirect_url,
        },
    };
    // Strings and a struct of strings: serialising cannot fail.
    let body = serde_json::to_vec(&body).unwrap_or_default();
    PreparedRequest {
        method: reqwest::Method::POST,
        url: format!(
            "{}/api/v1/stores/{}/invoices",
            config.server_url.trim_end_matches('/'),
            config.store_id
        ),
        headers: vec![
            (
                "Authorization".to_owned(),
                format!("token {}", config.api_key.as_str()),
            ),
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("Accept".to_owned(), "application/json".to_owned()),
        ],
        body,
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InvoiceAnswer {
    id: Option<String>,
    checkout_link: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ErrorAnswer {
    /// `{"code": "...", "message": "..."}`
    General { message: String },
    /// `[{"path": "amount", "message": "..."}]` (validation)
    Validation(Vec<FieldError>),
}

#[derive(Deserialize)]
struct FieldError {
    path: Option<String>,
    message: String,
}

fn error_message(body: &[u8]) -> Option<String> {
    match serde_json::from_slice::<ErrorAnswer>(body).ok()? {
        ErrorAnswer::General { message } => Some(message),
        ErrorAnswer::Validation(fields) => Some(
            fields
                .into_iter()
                .map(|field| match field.path {
                    Some(path) if !path.is_empty() => format!("{path}: {}", field.message),
                    _ => field.message,
                })
                .collect::<Vec<_>>()
                .join("; "),
        ),
    }
}

/// Reads BTCPay's answer to [`checkout_request`]: an invoice (`id`,
/// `checkoutLink`) on 2xx; otherwise its error message(s), as
/// [`ProviderError::Unreachable`] for 5xx and 429 and
/// [`ProviderError::Refused`] for the rest.
pub fn read_checkout_response(status: u16, body: &[u8]) -> Result<CheckoutSession, ProviderError> {
    if !(200..=299).contains(&status) {
        return Err(crate::status_error(NAME, status, error_message(body)));
    }
    let answer: InvoiceAnswer = serde_json::from_slice(body).map_err(|error| {
        ProviderError::Refused(format!(
            "{NAME} answered a body that is not an invoice: {error}"
        ))
    })?;
    Ok(CheckoutSession {
        url: crate::checkout_url(NAME, answer.checkout_link)?,
        reference: crate::checkout_reference(NAME, answer.id)?,
    })
}

/// Checks a `BTCPay-Sig` header (`sha256=<hex>`) against the raw `body`, in
/// constant time.
pub fn verify_signature(
    webhook_secret: &str,
    header: &str,
    body: &[u8],
) -> Result<(), NoticeError> {
    let hex = header
        .trim()
        .strip_prefix(SIGNATURE_PREFIX)
        .ok_or_else(|| {
            NoticeError::MalformedSignature("BTCPay-Sig must start with sha256=".to_owned())
        })?;
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(NoticeError::MalformedSignature(
            "BTCPay-Sig must be sha256=<hex>".to_owned(),
        ));
    }
    let expected = crate::hmac_sha256(webhook_secret, &[body]);
    if crate::hex_tag_matches(&expected, hex) {
        Ok(())
    } else {
        Err(NoticeError::BadSignature)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    invoice_id: Option<String>,
}

/// Verifies a notice (see [`verify_signature`]) and reads the webhook:
/// `InvoiceSettled` is Paid; `InvoiceExpired` and `InvoiceInvalid` are
/// Failed; any other type (`InvoiceCreated`, `InvoiceReceivedPayment`,
/// `InvoiceProcessing`, `InvoicePaymentSettled`, ...) is Ignored. The
/// reference is `invoiceId` (empty if an ignored event has none); a settled,
/// expired or invalid event without one is [`NoticeError::MalformedBody`].
pub fn read_notice(
    webhook_secret: &str,
    signature: &str,
    body: &[u8],
) -> Result<Notice, NoticeError> {
    verify_signature(webhook_secret, signature, body)?;
    let event: Event = serde_json::from_slice(body)
        .map_err(|error| NoticeError::MalformedBody(format!("not a BTCPay webhook: {error}")))?;
    let outcome = match event.kind.as_str() {
        "InvoiceSettled" => NoticeOutcome::Paid,
        "InvoiceExpired" | "InvoiceInvalid" => NoticeOutcome::Failed,
        _ => NoticeOutcome::Ignored,
    };
    let reference = event.invoice_id.unwrap_or_default();
    if outcome != NoticeOutcome::Ignored && reference.is_empty() {
        return Err(NoticeError::MalformedBody(format!(
            "{} has no invoiceId",
            event.kind
        )));
    }
    Ok(Notice::checkout(reference, outcome))
}

/// The BTCPay Server provider.
#[derive(Clone, Debug)]
pub struct BtcpayProvider {
    config: BtcpayConfig,
    executor: Executor,
}

impl BtcpayProvider {
    /// Checks `config` (secrets present, URLs and store id valid) and builds
    /// the HTTPS client.
    pub fn new(config: BtcpayConfig) -> Result<Self, BuildError> {
        config.check()?;
        Ok(Self {
            config,
            executor: Executor::new()?,
        })
    }

    #[must_use]
    pub fn config(&self) -> &BtcpayConfig {
        &self.config
    }
}

#[async_trait]
impl PaymentProvider for BtcpayProvider {
    fn id(&self) -> ProviderId {
        ProviderId::Btcpay
    }

    async fn start_checkout(
        &self,
        request: &CheckoutRequest,
    ) -> Result<CheckoutSession, ProviderError> {
        let prepared = checkout_request(&self.config, request);
        self.executor
            .checkout(
                ProviderId::Btcpay,
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
        _now: Timestamp,
    ) -> Result<Notice, NoticeError> {
        read_notice(&self.config.webhook_secret, signature, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_two_decimal_strings() {
        assert_eq!(decimal_amount(4900), "49.00");
        assert_eq!(decimal_amount(5), "0.05");
        assert_eq!(decimal_amount(10), "0.10");
        assert_eq!(decimal_amount(123_456), "1234.56");
        assert_eq!(decimal_amount(0), "0.00");
        assert_eq!(decimal_amount(-150), "-1.50");
        assert_eq!(decimal_amount(i64::MIN), "-92233720368547758.08");
    }
}
