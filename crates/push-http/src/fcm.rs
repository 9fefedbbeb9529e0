//! Firebase Cloud Messaging HTTP v1 with a service-account assertion.

use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use sealpost_notifications::PushToken;
use sealpost_notifications::push::{PushMessage, PushOutcome};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::{PushConfigError, client_builder, retry_after, tls_config, unanswered, unix_now};

const SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";
const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// How long the assertion is valid (Google's maximum).
const ASSERTION_LIFETIME: u64 = 60 * 60;
/// An access token is renewed this long before it expires.
const RENEW_BEFORE: Duration = Duration::from_secs(60);

/// The fields of a service-account key file this needs.
#[derive(Deserialize)]
struct ServiceAccount {
    project_id: String,
    client_email: String,
    private_key: String,
    private_key_id: Option<String>,
    token_uri: String,
}

pub struct FcmConfig {
    /// `https://fcm.googleapis.com` (or a test double).
    pub base_url: String,
    pub project_id: String,
    pub client_email: String,
    /// PEM of the RSA key (PKCS#8 as Google issues it, or PKCS#1).
    pub private_key_pem: String,
    pub private_key_id: Option<String>,
    /// Where the assertion is exchanged for an access token.
    pub token_url: String,
    /// Extra trusted roots (tests).
    pub extra_roots: Option<Vec<u8>>,
}

impl FcmConfig {
    /// From a service-account JSON key file's contents; `project_id` and
    /// `token_url` override the file's.
    pub fn from_service_account(
        json: &[u8],
        base_url: &str,
        project_id: Option<&str>,
        token_url: Option<&str>,
        extra_roots: Option<Vec<u8>>,
    ) -> Result<FcmConfig, PushConfigError> {
        let account: ServiceAccount = serde_json::from_slice(json)
            .map_err(|error| PushConfigError::ServiceAccount(error.to_string()))?;
        Ok(FcmConfig {
            base_url: base_url.to_owned(),
            project_id: project_id.map_or(account.project_id, str::to_owned),
            client_email: account.client_email,
            private_key_pem: account.private_key,
            private_key_id: account.private_key_id,
            token_url: token_url.map_or(account.token_uri, str::to_owned),
            extra_roots,
        })
    }
}

#[derive(Serialize)]
struct Assertion<'a> {
    iss: &'a str,
    scope: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
}

#[derive(Deserialize)]
struct AccessToken {
    access_token: String,
    expires_in: u64,
}

pub struct Fcm {
    client: reqwest::Client,
    send_url: String,
    token_url: String,
    client_email: String,
    key: EncodingKey,
    key_id: Option<String>,
    access: Mutex<Option<(String, Instant)>>,
}

/// Why no access token could be had.
enum TokenFailure {
    /// Worth trying again (5xx, 429, no answer).
    Retry(PushOutcome),
    /// The endpoint refused the assertion: the key or its account is wrong.
    Refused(String),
}

impl Fcm {
    pub fn new(config: FcmConfig) -> Result<Fcm, PushConfigError> {
        let key = EncodingKey::from_rsa_pem(config.private_key_pem.as_bytes())
            .map_err(|error| PushConfigError::ServiceAccount(format!("private_key: {error}")))?;
        let tls = tls_config(config.extra_roots.as_deref(), &[b"h2", b"http/1.1"])?;
        let client = client_builder(tls).build()?;
        let fcm = Fcm {
            client,
            send_url: format!(
                "{}/v1/projects/{}/messages:send",
                config.base_url.trim_end_matches('/'),
                config.project_id
            ),
            token_url: config.token_url,
            client_email: config.client_email,
            key,
            key_id: config.private_key_id,
            access: Mutex::new(None),
        };
        fcm.assertion()
            .map_err(|error| PushConfigError::ServiceAccount(format!("signing: {error}")))?;
        Ok(fcm)
    }

    fn assertion(&self) -> Result<String, jsonwebtoken::errors::Error> {
        let iat = unix_now();
        let header = Header {
            kid: self.key_id.clone(),
            ..Header::new(Algorithm::RS256)
        };
        jsonwebtoken::encode(
            &header,
            &Assertion {
                iss: &self.client_email,
                scope: SCOPE,
                aud: &self.token_url,
                iat,
                exp: iat + ASSERTION_LIFETIME,
            },
            &self.key,
        )
    }

    /// The cached access token, or a new one from the token endpoint.
    async fn access_token(&self) -> Result<String, TokenFailure> {
        let mut cached = self.access.lock().await;
        if let Some((token, expires)) = cached.as_ref()
            && Instant::now() + RENEW_BEFORE < *expires
        {
            return Ok(token.clone());
        }
        let assertion = self
            .assertion()
            .map_err(|error| TokenFailure::Refused(format!("signing the assertion: {error}")))?;
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", GRANT_TYPE)
            .append_pair("assertion", &assertion)
            .finish();
        let response = self
            .client
            .post(&self.token_url)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(form)
            .send()
            .await
            .map_err(|error| TokenFailure::Retry(unanswered("FCM token endpoint", &error)))?;
        let status = response.status();
        if status.as_u16() == 429 || status.is_server_error() {
            return Err(TokenFailure::Retry(PushOutcome::Retry {
                after: retry_after(&response),
                reason: format!("FCM token endpoint {}", status.as_u16()),
            }));
        }
        if !status.is_success() {
            return Err(TokenFailure::Refused(format!(
                "FCM token endpoint {}",
                status.as_u16()
            )));
        }
        let token: AccessToken = response
            .json()
            .await
            .map_err(|error| TokenFailure::Refused(format!("FCM token answer: {error}")))?;
        let expires = Instant::now() + Duration::from_secs(token.expires_in);
        *cached = Some((token.access_token.clone(), expires));
        Ok(token.access_token)
    }

    pub(crate) async fn send(&self, token: &PushToken, message: &PushMessage) -> PushOutcome {
        let access = match self.access_token().await {
            Ok(access) => access,
            Err(TokenFailure::Retry(outcome)) => return outcome,
            Err(TokenFailure::Refused(reason)) => {
                tracing::warn!(%reason, "FCM refused the service-account credentials");
                return PushOutcome::Dropped { reason };
            }
        };
        let body = json!({
            "message": {
                "token": token.as_str(),
                "notification": { "title": message.title, "body": message.body },
                "data": { "kind": message.kind.key(), "count": message.count.to_string() },
                "android": {
                    "priority": "HIGH",
                    // A newer push of the same kind replaces the older one.
                    "collapse_key": message.kind.key(),
                    "notification": { "tag": message.kind.key() },
                },
            }
        });
        let sent = self
            .client
            .post(&self.send_url)
            .bearer_auth(access)
            .json(&body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(error) => return unanswered("FCM", &error),
        };
        let status = response.status().as_u16();
        if response.status().is_success() {
            return PushOutcome::Delivered;
        }
        let after = retry_after(&response);
        let error = response.json::<Value>().await.unwrap_or(Value::Null);
        let code = error_code(&error);
        let reason = format!("FCM {status} {code}");
        match (status, code.as_str()) {
            (_, "UNREGISTERED") | (404, _) => PushOutcome::Unregistered,
            (401, _) => {
                // The access token was revoked or expired early: get another.
                *self.access.lock().await = None;
                PushOutcome::Retry {
                    after: None,
                    reason,
                }
            }
            (429, _) | (500..=599, _) => PushOutcome::Retry { after, reason },
            _ => PushOutcome::Dropped { reason },
        }
    }
}

/// FCM's `errorCode` from the error details, else the error's `status`.
fn error_code(body: &Value) -> String {
    let error = &body["error"];
    error["details"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|detail| detail["errorCode"].as_str())
        .or_else(|| error["status"].as_str())
        .unwrap_or_default()
        .to_owned()
}
