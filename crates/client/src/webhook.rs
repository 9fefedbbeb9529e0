//! Receiving Sealpost webhooks: check the `Service-Signature` header against
//! the raw request body and read the event.
//!
//! Works with any HTTP server: pass the request headers as a list of
//! `(name, value)` pairs (names are matched case-insensitively) or as a
//! closure that looks one up.
//!
//! ```
//! use sealpost_client::webhook::{Clock, SystemClock};
//! use sealpost_client::{WebhookVerifyError, verify_webhook};
//!
//! fn handle(secret: &str, headers: &[(String, String)], raw_body: &[u8]) -> u16 {
//!     match verify_webhook(secret, headers, raw_body, SystemClock.now()) {
//!         Ok(event) => {
//!             // Deduplicate on event.id, order by event.created_at, then
//!             // act on event.event_type and event.payload.
//!             let _ = event;
//!             204
//!         }
//!         Err(WebhookVerifyError::InvalidBody(_)) => 400,
//!         Err(_) => 401,
//!     }
//! }
//! # let _ = handle;
//! ```

use sealpost_signature::{EVENT_ID_HEADER, SIGNATURE_HEADER};
use serde::Deserialize;

pub use sealpost_kernel::{Clock, SystemClock, Timestamp};
pub use sealpost_signature::SignatureError;

/// A verified webhook event: the body `{id, type, createdAt, payload}`.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifiedEvent {
    /// `evt_...`; the same on every attempt and redelivery. Deduplicate on it.
    pub id: String,
    /// For example `message.received` or `webhook.test`.
    pub event_type: String,
    /// When the event happened; order by it (events can arrive out of order).
    pub created_at: Timestamp,
    /// Ids only, never message content.
    pub payload: serde_json::Value,
}

/// Why a webhook request was refused. Answer 4xx; Sealpost retries.
#[derive(Debug, thiserror::Error)]
pub enum WebhookVerifyError {
    /// The request has no `Service-Signature` header.
    #[error("missing Service-Signature header")]
    MissingSignature,
    /// The signature is malformed, does not match, or is outside the
    /// five-minute window.
    #[error(transparent)]
    Signature(#[from] SignatureError),
    /// Correctly signed, but not an event body.
    #[error("webhook body is not an event: {0}")]
    InvalidBody(String),
    /// `Service-Event-Id` names another event than the signed body.
    #[error("Service-Event-Id does not match the signed body")]
    EventIdMismatch,
}

/// The request headers of a webhook, whatever the HTTP server.
///
/// Implemented for lists of `(name, value)` pairs (slices, arrays, vectors
/// of `&str` or `String`) and for closures `Fn(&str) -> Option<String>`.
pub trait WebhookHeaders {
    /// The value of the header called `name` (ASCII case-insensitive), if
    /// present. With repeated headers, the first.
    fn header(&self, name: &str) -> Option<String>;
}

impl<K: AsRef<str>, V: AsRef<str>> WebhookHeaders for [(K, V)] {
    fn header(&self, name: &str) -> Option<String> {
        self.iter()
            .find(|(key, _)| key.as_ref().eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_ref().to_owned())
    }
}

impl<K: AsRef<str>, V: AsRef<str>, const N: usize> WebhookHeaders for [(K, V); N] {
    fn header(&self, name: &str) -> Option<String> {
        self.as_slice().header(name)
    }
}

impl<K: AsRef<str>, V: AsRef<str>> WebhookHeaders for Vec<(K, V)> {
    fn header(&self, name: &str) -> Option<String> {
        self.as_slice().header(name)
    }
}

impl<F: Fn(&str) -> Option<String>> WebhookHeaders for F {
    fn header(&self, name: &str) -> Option<String> {
        self(name)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventBody {
    id: String,
    #[serde(rename = "type")]
    event_type: String,
    created_at: Timestamp,
    #[serde(default)]
    payload: serde_json::Value,
}

/// Verifies a webhook request and returns its event.
///
/// `raw_body` must be the bytes exactly as received (before any JSON
/// parsing); `now` is the receiver's clock ([`SystemClock`]`.now()`). The
/// signature must match `secret` (the whole `whsec_...` string) and be at
/// most five minutes old or ahead. When `Service-Event-Id` is present it
/// must name the signed body's event.
pub fn verify_webhook<H: WebhookHeaders + ?Sized>(
    secret: &str,
    headers: &H,
    raw_body: &[u8],
    now: Timestamp,
) -> Result<VerifiedEvent, WebhookVerifyError> {
    let signature_header = headers
        .header(SIGNATURE_HEADER)
        .ok_or(WebhookVerifyError::MissingSignature)?;
    let event = verify_webhook_signature(secret, &signature_header, raw_body, now)?;
    match headers.header(EVENT_ID_HEADER) {
        Some(id) if id.trim() != event.id => Err(WebhookVerifyError::EventIdMismatch),
        _ => Ok(event),
    }
}

/// [`verify_webhook`] given only the `Service-Signature` header's value.
pub fn verify_webhook_signature(
    secret: &str,
    signature_header: &str,
    raw_body: &[u8],
    now: Timestamp,
) -> Result<VerifiedEvent, WebhookVerifyError> {
    sealpost_signature::verify(secret, signature_header, raw_body, now.unix_seconds())?;
    let body: EventBody = serde_json::from_slice(raw_body)
        .map_err(|e| WebhookVerifyError::InvalidBody(e.to_string()))?;
    Ok(VerifiedEvent {
        id: body.id,
        event_type: body.event_type,
        created_at: body.created_at,
        payload: body.payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // The `webhookSignature` vector of docs/webhooks.md
    // (`crates/seal/tests/data/vectors.json`).
    const SECRET: &str = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
    const TIMESTAMP: i64 = 1_795_000_000;
    const BODY: &str = r#"{"id":"evt_vector","type":"webhook.test","createdAt":"2026-11-22T00:00:00.000Z","payload":{"webhookId":"whk_vector"}}"#;
    const HEADER: &str =
        "t=1795000000,v1=2b4d30ad711c5dbdad2c7cd283a8b3c2840e872eb69f10a4082c0b80ced25ae6";

    fn at_unix(seconds: i64) -> Timestamp {
        Timestamp::from_unix_millis(seconds * 1000).unwrap()
    }

    fn expected() -> VerifiedEvent {
        VerifiedEvent {
            id: "evt_vector".into(),
            event_type: "webhook.test".into(),
            created_at: Timestamp::parse("2026-11-22T00:00:00.000Z").unwrap(),
            payload: serde_json::json!({"webhookId": "whk_vector"}),
        }
    }

    #[test]
    fn verifies_the_contract_vector_from_a_header_list() {
        let headers = [
            ("content-type", "application/json"),
            ("service-signature", HEADER),
            ("Service-Event-Id", "evt_vector"),
            ("Service-Event-Type", "webhook.test"),
            ("User-Agent", "Service-Webhooks/1"),
        ];
        let event = verify_webhook(SECRET, &headers, BODY.as_bytes(), at_unix(TIMESTAMP)).unwrap();
        assert_eq!(event, expected());
        // Slices and vectors of owned strings work the same.
        let owned: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        assert!(verify_webhook(SECRET, &owned, BODY.as_bytes(), at_unix(TIMESTAMP)).is_ok());
        assert!(
            verify_webhook(
                SECRET,
                owned.as_slice(),
                BODY.as_bytes(),
                at_unix(TIMESTAMP)
            )
            .is_ok()
        );
    }

    #[test]
    fn verifies_with_a_lookup_closure() {
        let lookup = |name: &str| {
            name.eq_ignore_ascii_case("SERVICE-SIGNATURE")
                .then(|| HEADER.to_owned())
        };
        let event = verify_webhook(SECRET, &lookup, BODY.as_bytes(), at_unix(TIMESTAMP + 300));
        assert_eq!(event.unwrap(), expected());
        let event = verify_webhook_signature(SECRET, HEADER, BODY.as_bytes(), at_unix(TIMESTAMP));
        assert_eq!(event.unwrap(), expected());
    }

    #[test]
    fn refuses_a_missing_or_wrong_signature() {
        let none: [(&str, &str); 0] = [];
        assert!(matches!(
            verify_webhook(SECRET, &none, BODY.as_bytes(), at_unix(TIMESTAMP)),
            Err(WebhookVerifyError::MissingSignature)
        ));
        let headers = [("Service-Signature", HEADER)];
        assert!(matches!(
            verify_webhook("whsec_wrong", &headers, BODY.as_bytes(), at_unix(TIMESTAMP)),
            Err(WebhookVerifyError::Signature(SignatureError::Mismatch))
        ));
        let tampered = BODY.replace("whk_vector", "whk_vectos");
        assert!(matches!(
            verify_webhook(SECRET, &headers, tampered.as_bytes(), at_unix(TIMESTAMP)),
            Err(WebhookVerifyError::Signature(SignatureError::Mismatch))
        ));
    }

    #[test]
    fn refuses_outside_five_minutes() {
        let headers = [("Service-Signature", HEADER)];
        assert!(matches!(
            verify_webhook(SECRET, &headers, BODY.as_bytes(), at_unix(TIMESTAMP + 301)),
            Err(WebhookVerifyError::Signature(SignatureError::TooOld { .. }))
        ));
        assert!(matches!(
            verify_webhook(SECRET, &headers, BODY.as_bytes(), at_unix(TIMESTAMP - 301)),
            Err(WebhookVerifyError::Signature(SignatureError::TooNew { .. }))
        ));
        assert!(
            verify_webhook(SECRET, &headers, BODY.as_bytes(), at_unix(TIMESTAMP - 300)).is_ok()
        );
    }

    #[test]
    fn refuses_a_mismatched_event_id_header() {
        let headers = [
            ("Service-Signature", HEADER),
            ("Service-Event-Id", "evt_other"),
        ];
        assert!(matches!(
            verify_webhook(SECRET, &headers, BODY.as_bytes(), at_unix(TIMESTAMP)),
            Err(WebhookVerifyError::EventIdMismatch)
        ));
    }

    #[test]
    fn refuses_a_signed_body_that_is_not_an_event() {
        let body = br#"{"hello":"world"}"#;
        let header = sealpost_signature::sign(SECRET, TIMESTAMP, body);
        let headers = [("Service-Signature", header.as_str())];
        assert!(matches!(
            verify_webhook(SECRET, &headers, body, at_unix(TIMESTAMP)),
            Err(WebhookVerifyError::InvalidBody(_))
        ));
    }
}
