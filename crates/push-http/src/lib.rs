//! Push delivery to Apple's APNs and Firebase Cloud Messaging: the
//! [`PushTransport`] the push sender (`sealpost-notifications`) calls.
//!
//! - APNs: HTTP/2 to `<base>/3/device/<token>`, token-based auth with an
//!   ES256 JWT (`kid` = key id, `iss` = team id), renewed every 50 minutes
//!   (Apple accepts one for an hour and refuses renewals more often than
//!   every 20 minutes); headers `apns-topic`, `apns-push-type: alert`,
//!   `apns-priority: 10`.
//! - FCM HTTP v1: `<base>/v1/projects/<project>/messages:send` with an OAuth
//!   2.0 access token, got by exchanging an RS256 service-account assertion
//!   at the token endpoint and cached until a minute before it expires.
//!
//! Outcomes: 2xx delivered; APNs 410 or `BadDeviceToken`, FCM
//! `UNREGISTERED` (or 404): the token is dead; 429, 5xx, no answer and
//! expired credentials: try again; any other 4xx: dropped. With no provider
//! for a platform the push is logged at debug level and dropped.
//!
//! Not the `a2` crate: its endpoint is Apple's production or sandbox host
//! only, so it cannot be pointed at a local stand-in, and the tests here
//! run against real HTTP/2 on loopback. APNs is one POST with a JWT:
//! reqwest (HTTP/2) and jsonwebtoken do it, as they do FCM.
//!
//! TLS: rustls with ring, the Mozilla roots compiled in, plus the PEM file
//! `SEALPOST_PUSH_CA_FILE` names (tests). No redirects; 10 seconds per request.

mod apns;
mod fcm;

use std::time::Duration;

use async_trait::async_trait;
use chrono::TimeDelta;
use sealpost_notifications::push::{PushMessage, PushOutcome, PushTransport};
use sealpost_notifications::{Platform, PushToken};

pub use apns::{Apns, ApnsConfig};
pub use fcm::{Fcm, FcmConfig};

/// One request's limit, connection included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum PushConfigError {
    #[error("extra push root certificates: {0}")]
    ExtraRoots(String),
    #[error("APNs signing key: {0}")]
    ApnsKey(String),
    #[error("FCM service account: {0}")]
    ServiceAccount(String),
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    #[error("HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    #[error("reading {variable} ({path}): {error}")]
    Read {
        variable: &'static str,
        path: String,
        error: std::io::Error,
    },
}

fn read_file(variable: &'static str, path: &std::path::Path) -> Result<Vec<u8>, PushConfigError> {
    std::fs::read(path).map_err(|error| PushConfigError::Read {
        variable,
        path: path.display().to_string(),
        error,
    })
}

/// The push providers this process is configured for.
pub struct PushHttp {
    apns: Option<Apns>,
    fcm: Option<Fcm>,
}

impl PushHttp {
    pub fn new(apns: Option<Apns>, fcm: Option<Fcm>) -> Self {
        Self { apns, fcm }
    }

    /// The providers `SEALPOST_APNS_*` and `SEALPOST_FCM_*` configure (key
    /// files read now, so a bad one stops start-up), trusting the extra
    /// roots of `SEALPOST_PUSH_CA_FILE` too.
    pub fn from_config(config: &sealpost_config::Config) -> Result<PushHttp, PushConfigError> {
        let extra_roots = config
            .push_ca_file
            .as_deref()
            .map(|path| read_file("SEALPOST_PUSH_CA_FILE", path))
            .transpose()?;
        let apns = match &config.apns {
            Some(keys) => Some(Apns::new(ApnsConfig {
                base_url: keys.url.clone(),
                key_pem: read_file("SEALPOST_APNS_KEY_FILE", &keys.key_file)?,
                key_id: keys.key_id.clone(),
                team_id: keys.team_id.clone(),
                topic: keys.topic.clone(),
                extra_roots: extra_roots.clone(),
            })?),
            None => None,
        };
        let fcm = match &config.fcm {
            Some(keys) => Some(Fcm::new(FcmConfig::from_service_account(
                &read_file("SEALPOST_FCM_CREDENTIALS_FILE", &keys.credentials_file)?,
                &keys.url,
                keys.project_id.as_deref(),
                keys.token_url.as_deref(),
                extra_roots,
            )?)?),
            None => None,
        };
        if apns.is_none() && fcm.is_none() {
            tracing::info!(
                "no push provider configured: pushes are logged at debug level and dropped"
            );
        }
        Ok(PushHttp { apns, fcm })
    }
}

#[async_trait]
impl PushTransport for PushHttp {
    async fn send(
        &self,
        platform: Platform,
        token: &PushToken,
        message: &PushMessage,
    ) -> PushOutcome {
        let outcome = self.send_by_platform(platform, token, message).await;
        let label = match &outcome {
            PushOutcome::Delivered => "delivered",
            PushOutcome::Dropped { .. } => "dropped",
            PushOutcome::Unregistered => "unregistered",
            PushOutcome::Retry { .. } => "retry",
        };
        metrics::counter!(
            sealpost_metrics::names::PUSH_DELIVERIES,
            "platform" => platform.as_str(),
            "outcome" => label,
        )
        .increment(1);
        outcome
    }
}

impl PushHttp {
    async fn send_by_platform(
        &self,
        platform: Platform,
        token: &PushToken,
        message: &PushMessage,
    ) -> PushOutcome {
        match (platform, &self.apns, &self.fcm) {
            (Platform::Ios, Some(apns), _) => apns.send(token, message).await,
            (Platform::Android, _, Some(fcm)) => fcm.send(token, message).await,
            _ => {
                tracing::debug!(
                    platform = platform.as_str(),
                    kind = message.kind.key(),
                    count = message.count,
                    title = message.title,
                    body = %message.body,
                    "no push provider configured for this platform; dropped"
                );
                PushOutcome::Dropped {
                    reason: format!("no {platform} push provider configured"),
                }
            }
        }
    }
}

/// The shared outbound TLS set-up (the Mozilla roots and `extra_roots`),
/// offering `alpn`: APNs speaks only HTTP/2.
fn tls_config(
    extra_roots: Option<&[u8]>,
    alpn: &[&[u8]],
) -> Result<rustls::ClientConfig, PushConfigError> {
    let mut tls = sealpost_outbound_http::tls_config(extra_roots).map_err(|error| match error {
        sealpost_outbound_http::TlsError::ExtraRoots(reason) => PushConfigError::ExtraRoots(reason),
        sealpost_outbound_http::TlsError::Rustls(error) => PushConfigError::Tls(error),
    })?;
    tls.alpn_protocols = alpn.iter().map(|proto| proto.to_vec()).collect();
    Ok(tls)
}

fn client_builder(tls: rustls::ClientConfig) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(REQUEST_TIMEOUT)
        .connect_timeout(REQUEST_TIMEOUT)
        .user_agent(concat!("sealpost-push/", env!("CARGO_PKG_VERSION")))
}

/// `Retry-After` in seconds, when the provider sent one.
fn retry_after(response: &reqwest::Response) -> Option<TimeDelta> {
    response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<i64>()
        .ok()
        .map(TimeDelta::seconds)
}

/// No answer: connection refused, TLS, timeout. Tried again later.
fn unanswered(provider: &str, error: &reqwest::Error) -> PushOutcome {
    let what = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    PushOutcome::Retry {
        after: None,
        reason: format!("{provider}: {what}"),
    }
}

/// Seconds since the Unix epoch, for JWT `iat`/`exp`.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}
