//! Apple Push Notification service over HTTP/2 with provider tokens.

use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use sealpost_notifications::PushToken;
use sealpost_notifications::push::{PushMessage, PushOutcome};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::Mutex;

use crate::{PushConfigError, client_builder, retry_after, tls_config, unanswered, unix_now};

/// A provider token is reused this long (Apple: at most one hour, renewed
/// no more often than every 20 minutes).
const TOKEN_REUSE: Duration = Duration::from_secs(50 * 60);
/// How long Apple keeps trying to reach a phone that is off.
const EXPIRATION: u64 = 60 * 60;

pub struct ApnsConfig {
    /// `https://api.push.apple.com` (or the sandbox, or a test double).
    pub base_url: String,
    /// The `.p8` key: PKCS#8 PEM of a P-256 key.
    pub key_pem: Vec<u8>,
    pub key_id: String,
    pub team_id: String,
    /// The app's bundle id.
    pub topic: String,
    /// Extra trusted roots (tests).
    pub extra_roots: Option<Vec<u8>>,
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    iat: u64,
}

#[derive(Deserialize)]
struct ErrorBody {
    reason: Option<String>,
}

pub struct Apns {
    client: reqwest::Client,
    base_url: String,
    key: EncodingKey,
    key_id: String,
    team_id: String,
    topic: String,
    token: Mutex<Option<(String, Instant)>>,
}

impl Apns {
    pub fn new(config: ApnsConfig) -> Result<Apns, PushConfigError> {
        let key = EncodingKey::from_ec_pem(&config.key_pem)
            .map_err(|error| PushConfigError::ApnsKey(error.to_string()))?;
        // APNs speaks HTTP/2 only.
        let tls = tls_config(config.extra_roots.as_deref(), &[b"h2"])?;
        let client = client_builder(tls).http2_prior_knowledge().build()?;
        let apns = Apns {
            client,
            base_url: config.base_url.trim_end_matches('/').to_owned(),
            key,
            key_id: config.key_id,
            team_id: config.team_id,
            topic: config.topic,
            token: Mutex::new(None),
        };
        // A key that cannot sign fails at start-up, not at the first push.
        apns.sign()
            .map_err(|error| PushConfigError::ApnsKey(error.to_string()))?;
        Ok(apns)
    }

    fn sign(&self) -> Result<String, jsonwebtoken::errors::Error> {
        let header = Header {
            kid: Some(self.key_id.clone()),
            ..Header::new(Algorithm::ES256)
        };
        jsonwebtoken::encode(
            &header,
            &Claims {
                iss: &self.team_id,
                iat: unix_now(),
            },
            &self.key,
        )
    }

    /// The current provider token, signed anew when it is 50 minutes old.
    async fn provider_token(&self) -> Result<String, jsonwebtoken::errors::Error> {
        let mut cached = self.token.lock().await;
        if let Some((token, made)) = cached.as_ref()
            && made.elapsed() < TOKEN_REUSE
        {
            return Ok(token.clone());
        }
        let token = self.sign()?;
        *cached = Some((token.clone(), Instant::now()));
        Ok(token)
    }

    pub(crate) async fn send(&self, token: &PushToken, message: &PushMessage) -> PushOutcome {
        let provider_token = match self.provider_token().await {
            Ok(token) => token,
            Err(error) => {
                return PushOutcome::Dropped {
                    reason: format!("APNs: signing the provider token failed: {error}"),
                };
            }
        };
        let body = json!({
            "aps": {
                "alert": { "title": message.title, "body": message.body },
                "sound": "default",
                "thread-id": message.kind.key(),
            },
            "kind": message.kind.key(),
            "count": message.count,
        });
        let sent = self
            .client
            .post(format!("{}/3/device/{}", self.base_url, token.as_str()))
            .bearer_auth(provider_token)
            .header("apns-topic", &self.topic)
            .header("apns-push-type", "alert")
            .header("apns-priority", "10")
            .header("apns-expiration", (unix_now() + EXPIRATION).to_string())
            // A newer push of the same kind replaces the older one on the phone.
            .header("apns-collapse-id", message.kind.key())
            .json(&body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(error) => return unanswered("APNs", &error),
        };
        let status = response.status().as_u16();
        if response.status().is_success() {
            return PushOutcome::Delivered;
        }
        let after = retry_after(&response);
        let reason = response
            .json::<ErrorBody>()
            .await
            .ok()
            .and_then(|body| body.reason)
            .unwrap_or_default();
        match (status, reason.as_str()) {
            (410, _) | (400, "BadDeviceToken") => PushOutcome::Unregistered,
            (403, "ExpiredProviderToken") => {
                *self.token.lock().await = None;
                PushOutcome::Retry {
                    after: None,
                    reason: format!("APNs {status} {reason}"),
                }
            }
            (429, _) | (500..=599, _) => PushOutcome::Retry {
                after,
                reason: format!("APNs {status} {reason}"),
            },
            _ => PushOutcome::Dropped {
                reason: format!("APNs {status} {reason}"),
            },
        }
    }
}
