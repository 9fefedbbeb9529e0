//! One webhook HTTP attempt (docs/webhooks.md "What a delivery looks like";
//! the test variables of docs/configuration.md): the adapter that applies what
//! `sealpost-webhooks` decides.
//!
//! - HTTPS POST of the exact body with the given headers (`User-Agent`
//!   included: the client adds none of its own).
//! - Any 2xx within [`RESPONSE_TIMEOUT`] (10 s, everything included) is a
//!   success; anything else is a failure. Redirects are not followed, so a
//!   3xx is a failure and its target is never contacted.
//! - Every address is checked when the connection is opened (a custom
//!   resolver): pinned hosts ([`WebhookHttpConfig::pinned`]) resolve to
//!   exactly their pin; any other name is looked up and its loopback,
//!   private, CGNAT, link-local, multicast, unspecified, broadcast,
//!   documentation and reserved addresses are dropped ([`address`]). If
//!   none is left the attempt fails before anything is sent. A URL whose
//!   host is an IP address is refused outright.
//! - TLS and the client: the shared outbound set-up of
//!   `sealpost-outbound-http` (rustls with *ring*, the Mozilla roots plus
//!   [`WebhookHttpConfig::extra_root_pem`], no redirects, no proxy from the
//!   environment), with this crate's resolver and https only. No cookies.
//! - At most 1 KiB of a failure's response body is read, and at most a
//!   200-character excerpt of it is kept, in the error text. Success bodies
//!   are not read.

pub mod address;
mod config;
mod resolve;

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use sealpost_outbound_http::{TlsError, error_text, header_map, one_line, read_capped};
use sealpost_webhooks::AttemptOutcome;
use sealpost_webhooks::delivery::RESPONSE_TIMEOUT;
use tokio::time::Instant;
use url::{Host, Url};

pub use address::{AddressClass, classify};
pub use config::{CA_FILE_ENV, ConfigError, RESOLVE_ENV, WebhookHttpConfig};
pub use resolve::{ResolveError, allowed_addresses};

use crate::resolve::GuardedResolver;

/// Most of a response body ever read.
pub const MAX_BODY_READ: usize = 1024;
/// Most characters of a response body kept (in a failure's error text).
pub const MAX_EXCERPT_CHARS: usize = 200;
/// Longest transport error text kept (a TLS error can list many names).
pub const MAX_ERROR_CHARS: usize = 300;
/// Connect (TCP) limit; the whole attempt is bounded by the total timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// [`RESPONSE_TIMEOUT`] as a `Duration`.
#[must_use]
pub fn default_timeout() -> Duration {
    RESPONSE_TIMEOUT.to_std().unwrap_or(Duration::from_secs(10))
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("extra webhook root certificates: {0}")]
    ExtraRoots(String),
    #[error("webhook TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    #[error("webhook HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

impl From<TlsError> for BuildError {
    fn from(error: TlsError) -> Self {
        match error {
            TlsError::ExtraRoots(message) => BuildError::ExtraRoots(message),
            TlsError::Rustls(error) => BuildError::Tls(error),
        }
    }
}

/// Performs webhook attempts. Cheap to clone; share one per process.
#[derive(Clone, Debug)]
pub struct WebhookHttp {
    client: reqwest::Client,
    timeout: Duration,
}

impl WebhookHttp {
    /// A sender with the 10-second response limit (docs/api.md "Limits").
    pub fn new(config: WebhookHttpConfig) -> Result<Self, BuildError> {
        Self::with_timeout(config, default_timeout())
    }

    /// A sender with another total limit per attempt (tests).
    pub fn with_timeout(config: WebhookHttpConfig, timeout: Duration) -> Result<Self, BuildError> {
        let client = sealpost_outbound_http::client_builder(
            config.extra_root_pem.as_deref(),
            timeout,
            timeout.min(CONNECT_TIMEOUT),
        )?
        .dns_resolver(Arc::new(GuardedResolver::new(&config.pinned)))
        .https_only(true)
        .build()?;
        Ok(Self { client, timeout })
    }

    /// The total limit of one attempt.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// POSTs `body` with `headers` to `url`. Any 2xx within the limit is a
    /// success; a 3xx (not followed), 4xx or 5xx is a failure with its
    /// status; no answer (refused address, DNS, connect, TLS, timeout) is a
    /// failure without a status, its error saying which.
    pub async fn send(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: String,
    ) -> AttemptOutcome {
        let deadline = Instant::now() + self.timeout;
        let url = match check_url(url) {
            Ok(url) => url,
            Err(error) => return AttemptOutcome::unreachable(error),
        };
        let headers = match header_map(headers) {
            Ok(headers) => headers,
            Err(error) => return AttemptOutcome::unreachable(error),
        };
        let request = self.client.post(url).headers(headers).body(body);
        let response = match tokio::time::timeout_at(deadline, request.send()).await {
            Err(_elapsed) => return AttemptOutcome::timeout(),
            Ok(Err(error)) => return describe(&error),
            Ok(Ok(response)) => response,
        };
        match AttemptOutcome::from_status(response.status().as_u16()) {
            AttemptOutcome::Failure { status, error } => {
                let body = tokio::time::timeout_at(deadline, read_capped(response, MAX_BODY_READ))
                    .await
                    .map(|read| read.unwrap_or_else(|partial| partial.read))
                    .unwrap_or_default();
                let excerpt = excerpt(&body);
                let error = if excerpt.is_empty() {
                    error
                } else {
                    format!("{error}; response: {excerpt}")
                };
                AttemptOutcome::Failure { status, error }
            }
            success => success,
        }
    }
}

/// An https URL naming a host (not an IP address).
fn check_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|error| format!("invalid URL: {error}"))?;
    if url.scheme() != "https" {
        return Err("only https URLs are delivered to".to_owned());
    }
    match url.host() {
        Some(Host::Domain(_)) => Ok(url),
        Some(Host::Ipv4(_) | Host::Ipv6(_)) => Err(ResolveError::IpLiteral {
            host: url.host_str().unwrap_or_default().to_owned(),
        }
        .to_string()),
        None => Err("the URL names no host".to_owned()),
    }
}

/// At most [`MAX_EXCERPT_CHARS`] characters of `body`, as one line.
fn excerpt(body: &[u8]) -> String {
    one_line(&String::from_utf8_lossy(body), MAX_EXCERPT_CHARS)
}

/// A transport failure as a short error text.
fn describe(error: &reqwest::Error) -> AttemptOutcome {
    if error.is_timeout() {
        return AttemptOutcome::timeout();
    }
    let mut current: Option<&(dyn StdError + 'static)> = Some(error);
    while let Some(cause) = current {
        if let Some(outcome) = inspect(cause, 0) {
            return outcome;
        }
        current = cause.source();
    }
    AttemptOutcome::unreachable(chain_text(error))
}

/// The outcome `cause` stands for, if it is one we name. An io::Error's
/// `source()` skips the error it wraps (and connectors nest io::Errors), so
/// wrapped errors are looked into here.
fn inspect(cause: &(dyn StdError + 'static), depth: u8) -> Option<AttemptOutcome> {
    if let Some(text) = known_cause(cause) {
        return Some(AttemptOutcome::unreachable(text));
    }
    let io = cause.downcast_ref::<std::io::Error>()?;
    if depth < 8
        && let Some(outcome) = io.get_ref().and_then(|inner| inspect(inner, depth + 1))
    {
        return Some(outcome);
    }
    if io.kind() == std::io::ErrorKind::TimedOut {
        return Some(AttemptOutcome::timeout());
    }
    io_kind_text(io.kind()).map(AttemptOutcome::unreachable)
}

fn known_cause(cause: &(dyn StdError + 'static)) -> Option<String> {
    let text = if let Some(refused) = cause.downcast_ref::<ResolveError>() {
        refused.to_string()
    } else if let Some(tls) = cause.downcast_ref::<rustls::Error>() {
        format!("TLS error: {tls}")
    } else {
        return None;
    };
    Some(text.chars().take(MAX_ERROR_CHARS).collect())
}

fn io_kind_text(kind: std::io::ErrorKind) -> Option<&'static str> {
    use std::io::ErrorKind;
    Some(match kind {
        ErrorKind::ConnectionRefused => "connection refused",
        ErrorKind::ConnectionReset => "connection reset",
        ErrorKind::ConnectionAborted => "connection aborted",
        ErrorKind::NotConnected => "not connected",
        ErrorKind::HostUnreachable => "host unreachable",
        ErrorKind::NetworkUnreachable => "network unreachable",
        ErrorKind::AddrNotAvailable => "address not available",
        ErrorKind::UnexpectedEof => "connection closed before a response",
        _ => return None,
    })
}

/// The error and its causes, joined, cut to [`MAX_ERROR_CHARS`].
fn chain_text(error: &reqwest::Error) -> String {
    error_text(&error.to_string(), error.source(), MAX_ERROR_CHARS)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    #[test]
    fn urls_must_be_https_with_a_host_name() {
        assert!(check_url("https://hooks.test/x?y=1").is_ok());
        assert_eq!(
            check_url("http://hooks.test/").unwrap_err(),
            "only https URLs are delivered to"
        );
        for literal in [
            "https://127.0.0.1/",
            "https://[::1]:8443/",
            "https://2130706433/",
            "https://0x7f.1/",
            "https://8.8.8.8/",
        ] {
            let error = check_url(literal).unwrap_err();
            assert!(
                error.starts_with("address not allowed:"),
                "{literal}: {error}"
            );
        }
        assert!(
            check_url("not a url")
                .unwrap_err()
                .starts_with("invalid URL")
        );
    }

    #[test]
    fn excerpts_are_short_single_lines() {
        assert_eq!(excerpt(b""), "");
        assert_eq!(excerpt(b"  oops\r\n\tnot\x00 found  "), "oops not found");
        let long = "é".repeat(600);
        let cut = excerpt(long.as_bytes());
        assert_eq!(cut.chars().count(), MAX_EXCERPT_CHARS);
        // A cut inside a UTF-8 sequence does not panic.
        assert_eq!(excerpt(&"é".as_bytes()[..1]), "\u{fffd}");
    }

    #[test]
    fn bad_extra_roots_are_refused() {
        let config = WebhookHttpConfig {
            pinned: vec![],
            extra_root_pem: Some(b"nothing here".to_vec()),
        };
        assert!(matches!(
            WebhookHttp::new(config),
            Err(BuildError::ExtraRoots(_))
        ));
        let http = WebhookHttp::new(WebhookHttpConfig::default()).unwrap();
        assert_eq!(http.timeout(), Duration::from_secs(10));
    }
}
