//! The card and crypto payment providers (docs/api.md "Billing") behind
//! [`sealpost_billing::PaymentProvider`]: [`StripeProvider`] (Stripe Checkout)
//! and [`BtcpayProvider`] (BTCPay Server invoices).
//!
//! This crate owns the providers' wire formats and nothing else: the
//! checkout request each provider is sent, how its answer is read into a
//! [`CheckoutSession`](sealpost_billing::CheckoutSession) or a
//! [`ProviderError`](sealpost_billing::ProviderError), and how its signed
//! notices (webhooks) are verified and read into a
//! [`Notice`](sealpost_billing::Notice). Configuration is read elsewhere and
//! handed in as [`StripeConfig`] / [`BtcpayConfig`]; what a notice means for a
//! payment is decided by `sealpost-billing`.
//!
//! The pure parts are separate from the wire: [`stripe::checkout_request`]
//! and [`btcpay::checkout_request`] build a [`PreparedRequest`], the
//! `read_checkout_response` functions read a status and body, and the
//! `read_notice` functions verify and read a notice. One small executor sends
//! a [`PreparedRequest`] over HTTPS with the shared outbound client of
//! `sealpost-outbound-http` (rustls with *ring* and the compiled-in Mozilla
//! roots, no redirects, no proxy from the environment) and a 10 s limit.

use sealpost_outbound_http::one_line;

pub mod btcpay;
mod http;
pub mod stripe;

pub use btcpay::{BtcpayConfig, BtcpayProvider};
pub use stripe::{StripeConfig, StripeProvider};

/// Every request to a provider, and reading its answer, must finish within this.
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// One HTTP request to a provider, built without I/O.
#[derive(Clone, PartialEq, Eq)]
pub struct PreparedRequest {
    pub method: reqwest::Method,
    pub url: String,
    /// In order; names as the provider documents them.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl PreparedRequest {
    /// The value of the first header named `name` (ASCII case-insensitive).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// Credentials are never printed: `Authorization` shows as `<redacted>`.
impl std::fmt::Debug for PreparedRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, value)| {
                if name.eq_ignore_ascii_case("authorization") {
                    (name.as_str(), "<redacted>")
                } else {
                    (name.as_str(), value.as_str())
                }
            })
            .collect();
        f.debug_struct("PreparedRequest")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("headers", &headers)
            .field("body", &String::from_utf8_lossy(&self.body))
            .finish()
    }
}

/// Why a provider could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("payment provider configuration: {0}")]
    InvalidConfig(String),
    #[error("payment provider TLS configuration: {0}")]
    Tls(#[from] sealpost_outbound_http::TlsError),
    #[error("payment provider HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

/// Checks that `value` is a usable `http(s)` URL (`what` names it in the error).
fn check_url(what: &str, value: &str) -> Result<(), BuildError> {
    let url = url::Url::parse(value)
        .map_err(|error| BuildError::InvalidConfig(format!("{what} is not a URL: {error}")))?;
    if !matches!(url.scheme(), "https" | "http") || url.host().is_none() {
        return Err(BuildError::InvalidConfig(format!(
            "{what} must be an http(s) URL with a host"
        )));
    }
    Ok(())
}

/// Checks that a secret is present and can travel in a header.
fn check_secret(what: &str, value: &str) -> Result<(), BuildError> {
    if value.is_empty() {
        return Err(BuildError::InvalidConfig(format!("{what} is empty")));
    }
    if !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(BuildError::InvalidConfig(format!(
            "{what} must be printable ASCII without spaces"
        )));
    }
    Ok(())
}

/// A checkout for nothing (or less) is refused before it is sent.
fn check_amount(
    request: &sealpost_billing::CheckoutRequest,
) -> Result<(), sealpost_billing::ProviderError> {
    if request.amount <= 0 {
        return Err(sealpost_billing::ProviderError::Refused(format!(
            "the amount must be positive, not {}",
            request.amount
        )));
    }
    Ok(())
}

/// Most characters of a provider's error message kept.
const MAX_MESSAGE_CHARS: usize = 300;

/// The error for a non-2xx answer: 5xx and 429 (rate limited) are worth
/// trying again later, so [`ProviderError::Unreachable`]; any other status
/// (4xx, a redirect that is not followed, 1xx) is
/// [`ProviderError::Refused`]. `message` is what the provider said, if it
/// said something readable.
///
/// [`ProviderError::Unreachable`]: sealpost_billing::ProviderError::Unreachable
/// [`ProviderError::Refused`]: sealpost_billing::ProviderError::Refused
fn status_error(
    provider: &str,
    status: u16,
    message: Option<String>,
) -> sealpost_billing::ProviderError {
    let text = match message.map(|message| one_line(&message, MAX_MESSAGE_CHARS)) {
        Some(message) if !message.is_empty() => format!("{provider} answered {status}: {message}"),
        _ => format!("{provider} answered {status}"),
    };
    if status == 429 || (500..=599).contains(&status) {
        sealpost_billing::ProviderError::Unreachable(text)
    } else {
        sealpost_billing::ProviderError::Refused(text)
    }
}

/// A checkout url from a provider's answer: must be an absolute http(s) URL.
fn checkout_url(
    provider: &str,
    url: Option<String>,
) -> Result<String, sealpost_billing::ProviderError> {
    let url = url.filter(|url| !url.is_empty()).ok_or_else(|| {
        sealpost_billing::ProviderError::Refused(format!("{provider} answered no checkout url"))
    })?;
    match url::Url::parse(&url) {
        Ok(parsed) if matches!(parsed.scheme(), "https" | "http") => Ok(url),
        _ => Err(sealpost_billing::ProviderError::Refused(format!(
            "{provider} answered a checkout url that is not an http(s) URL"
        ))),
    }
}

/// The provider's checkout id from its answer: must be present.
fn checkout_reference(
    provider: &str,
    id: Option<String>,
) -> Result<String, sealpost_billing::ProviderError> {
    id.filter(|id| !id.is_empty()).ok_or_else(|| {
        sealpost_billing::ProviderError::Refused(format!("{provider} answered no checkout id"))
    })
}

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// HMAC-SHA256 keyed with the UTF-8 bytes of `secret`, over `parts` in order.
fn hmac_sha256(secret: &str, parts: &[&[u8]]) -> HmacSha256 {
    use hmac::{KeyInit, Mac};
    let mut mac = match HmacSha256::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        // HMAC hashes long keys and pads short ones: every length is valid.
        Err(_) => unreachable!("HMAC accepts keys of any length"),
    };
    for part in parts {
        mac.update(part);
    }
    mac
}

/// Whether the hex `candidate` is the tag of `mac` (compared in constant time).
fn hex_tag_matches(mac: &HmacSha256, candidate: &str) -> bool {
    use hmac::Mac;
    data_encoding::HEXLOWER_PERMISSIVE
        .decode(candidate.as_bytes())
        .is_ok_and(|tag| mac.clone().verify_slice(&tag).is_ok())
}
