//! The webhook signature scheme (docs/webhooks.md "Verifying a delivery",
//! docs/protocol.md "Webhook signatures") and the header names of a webhook
//! request:
//!
//! ```text
//! Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>
//! ```
//!
//! The MAC is HMAC-SHA256, keyed with the UTF-8 bytes of the whole secret
//! string (`whsec_` included), over `<t>.<raw body>`; lower-case hex.
//! Receivers verify against the raw bytes and refuse a timestamp more than
//! [`TOLERANCE_SECONDS`] (five minutes) away from their clock, in either
//! direction.
//!
//! The header may carry several `v1=` entries (for example while a sender
//! signs with two secrets); one match is enough. Entries with other scheme
//! tags are ignored so a later scheme can be added beside `v1`.
//!
//! Stripe signs its notices the same way (`Stripe-Signature`); its verifier
//! passes its own tolerance to [`verify_with_tolerance`].

use data_encoding::HEXLOWER_PERMISSIVE;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The signature header's name.
pub const SIGNATURE_HEADER: &str = "Service-Signature";
/// The event's `evt_` id: the same on every attempt and redelivery of one
/// event.
pub const EVENT_ID_HEADER: &str = "Service-Event-Id";
/// The event's type.
pub const EVENT_TYPE_HEADER: &str = "Service-Event-Type";
/// The `whd_` id of this delivery.
pub const DELIVERY_ID_HEADER: &str = "Service-Delivery-Id";
/// The scheme tag of the current signature.
pub const SCHEME: &str = "v1";
/// Signature age tolerance (both ways), in seconds (docs/api.md "Limits").
pub const TOLERANCE_SECONDS: i64 = 300;

type HmacSha256 = Hmac<Sha256>;

/// Why a signature was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// Not a list of `key=value` entries, or a `t=` that is not one whole
    /// number of seconds.
    #[error("malformed Service-Signature header: {0}")]
    Malformed(&'static str),
    #[error("Service-Signature has no t= timestamp")]
    MissingTimestamp,
    #[error("Service-Signature has no v1= signature")]
    MissingSignature,
    /// No `v1=` entry matches the body and timestamp under this secret.
    #[error("signature does not match")]
    Mismatch,
    /// Genuine, but signed more than `tolerance_seconds` before `now`.
    #[error("signature timestamp is {age_seconds} seconds old (more than {tolerance_seconds})")]
    TooOld {
        age_seconds: i64,
        tolerance_seconds: i64,
    },
    /// Genuine, but signed more than `tolerance_seconds` after `now`.
    #[error(
        "signature timestamp is {ahead_seconds} seconds in the future (more than {tolerance_seconds})"
    )]
    TooNew {
        ahead_seconds: i64,
        tolerance_seconds: i64,
    },
}

fn mac(secret: &str, timestamp: &str, body: &[u8]) -> HmacSha256 {
    let mut mac = match HmacSha256::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        // HMAC hashes long keys and pads short ones: every length is valid.
        Err(_) => unreachable!("HMAC accepts keys of any length"),
    };
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The hex `v1` MAC of `body` signed at `timestamp`.
#[must_use]
pub fn signature_hex(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let tag = mac(secret, &timestamp.to_string(), body)
        .finalize()
        .into_bytes();
    HEXLOWER_PERMISSIVE.encode(&tag)
}

/// The `Service-Signature` header value: `t=<timestamp>,v1=<hex>`.
#[must_use]
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    format!(
        "t={timestamp},{SCHEME}={}",
        signature_hex(secret, timestamp, body)
    )
}

/// Checks a `Service-Signature` header against the raw `body` and the
/// receiver's clock (`now_unix`, seconds), with the five-minute
/// [`TOLERANCE_SECONDS`]. See [`verify_with_tolerance`].
pub fn verify(
    secret: &str,
    header: &str,
    body: &[u8],
    now_unix: i64,
) -> Result<(), SignatureError> {
    verify_with_tolerance(secret, header, body, now_unix, TOLERANCE_SECONDS)
}

/// Checks a `t=,v1=` header against the raw `body` and the receiver's
/// clock (`now_unix`, seconds). The signature is checked first (in constant
/// time), then the age: [`SignatureError::TooOld`] and
/// [`SignatureError::TooNew`] therefore mean "genuine but more than
/// `tolerance_seconds` away". Exactly `tolerance_seconds` either way is
/// accepted.
pub fn verify_with_tolerance(
    secret: &str,
    header: &str,
    body: &[u8],
    now_unix: i64,
    tolerance_seconds: i64,
) -> Result<(), SignatureError> {
    let parsed = parse_header(header)?;
    let expected = mac(secret, parsed.timestamp_text, body);
    let matched = parsed.signatures.iter().any(|candidate| {
        HEXLOWER_PERMISSIVE
            .decode(candidate.as_bytes())
            .is_ok_and(|tag| expected.clone().verify_slice(&tag).is_ok())
    });
    if !matched {
        return Err(SignatureError::Mismatch);
    }
    let age = now_unix.saturating_sub(parsed.timestamp);
    if age > tolerance_seconds {
        return Err(SignatureError::TooOld {
            age_seconds: age,
            tolerance_seconds,
        });
    }
    let ahead = parsed.timestamp.saturating_sub(now_unix);
    if ahead > tolerance_seconds {
        return Err(SignatureError::TooNew {
            ahead_seconds: ahead,
            tolerance_seconds,
        });
    }
    Ok(())
}

/// A parsed header: the timestamp (as sent, and as a number) and the `v1`
/// candidates.
#[derive(Debug, PartialEq, Eq)]
struct ParsedHeader<'a> {
    timestamp_text: &'a str,
    timestamp: i64,
    signatures: Vec<&'a str>,
}

fn parse_header(header: &str) -> Result<ParsedHeader<'_>, SignatureError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for entry in header.split(',') {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        let (key, value) = entry
            .split_once('=')
            .ok_or(SignatureError::Malformed("each entry must be key=value"))?;
        match key.trim() {
            "t" => {
                if timestamp.is_some() {
                    return Err(SignatureError::Malformed("t= appears more than once"));
                }
                let value = value.trim();
                // Digits only: no sign, no spaces, no fraction, at most 18
                // digits so the number fits an i64.
                if value.is_empty()
                    || value.len() > 18
                    || !value.bytes().all(|b| b.is_ascii_digit())
                {
                    return Err(SignatureError::Malformed("t= must be unix seconds"));
                }
                let seconds = value
                    .parse::<i64>()
                    .map_err(|_| SignatureError::Malformed("t= must be unix seconds"))?;
                timestamp = Some((value, seconds));
            }
            SCHEME => signatures.push(value.trim()),
            _ => {}
        }
    }
    let (timestamp_text, timestamp) = timestamp.ok_or(SignatureError::MissingTimestamp)?;
    if signatures.is_empty() {
        return Err(SignatureError::MissingSignature);
    }
    Ok(ParsedHeader {
        timestamp_text,
        timestamp,
        signatures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // The `webhookSignature` vector of tests/data/vectors.json
    // (docs/webhooks.md), copied.
    const SECRET: &str = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
    const TIMESTAMP: i64 = 1_795_000_000;
    const BODY: &str = r#"{"id":"evt_vector","type":"webhook.test","createdAt":"2026-11-22T00:00:00.000Z","payload":{"webhookId":"whk_vector"}}"#;
    const HEADER: &str =
        "t=1795000000,v1=2b4d30ad711c5dbdad2c7cd283a8b3c2840e872eb69f10a4082c0b80ced25ae6";

    #[test]
    fn reproduces_the_contract_vector() {
        assert_eq!(sign(SECRET, TIMESTAMP, BODY.as_bytes()), HEADER);
        assert_eq!(verify(SECRET, HEADER, BODY.as_bytes(), TIMESTAMP), Ok(()));
    }

    #[test]
    fn reproduces_the_vector_file() {
        let file: serde_json::Value =
            serde_json::from_str(include_str!("../tests/data/vectors.json")).unwrap();
        let v = &file["webhookSignature"];
        let secret = v["secret"].as_str().unwrap();
        let timestamp = v["timestamp"].as_i64().unwrap();
        let body = v["body"].as_str().unwrap();
        let header = v["header"].as_str().unwrap();
        assert_eq!(
            (secret, timestamp, body, header),
            (SECRET, TIMESTAMP, BODY, HEADER)
        );
        assert_eq!(sign(secret, timestamp, body.as_bytes()), header);
    }

    #[test]
    fn the_key_is_the_whole_secret_string() {
        let without_prefix = SECRET.trim_start_matches("whsec_");
        assert_ne!(sign(without_prefix, TIMESTAMP, BODY.as_bytes()), HEADER);
        assert_eq!(
            verify(without_prefix, HEADER, BODY.as_bytes(), TIMESTAMP),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn tolerance_is_five_minutes_each_way() {
        let body = BODY.as_bytes();
        assert_eq!(verify(SECRET, HEADER, body, TIMESTAMP + 300), Ok(()));
        assert_eq!(
            verify(SECRET, HEADER, body, TIMESTAMP + 301),
            Err(SignatureError::TooOld {
                age_seconds: 301,
                tolerance_seconds: 300
            })
        );
        assert_eq!(verify(SECRET, HEADER, body, TIMESTAMP - 300), Ok(()));
        assert_eq!(
            verify(SECRET, HEADER, body, TIMESTAMP - 301),
            Err(SignatureError::TooNew {
                ahead_seconds: 301,
                tolerance_seconds: 300
            })
        );
        assert!(verify(SECRET, HEADER, body, i64::MAX).is_err());
        assert!(verify(SECRET, HEADER, body, i64::MIN).is_err());
        assert_eq!(
            verify(SECRET, HEADER, body, TIMESTAMP + 301)
                .unwrap_err()
                .to_string(),
            "signature timestamp is 301 seconds old (more than 300)"
        );
    }

    #[test]
    fn another_tolerance_moves_the_window() {
        let body = BODY.as_bytes();
        let within = |now| verify_with_tolerance(SECRET, HEADER, body, now, 60);
        assert_eq!(within(TIMESTAMP + 60), Ok(()));
        assert_eq!(within(TIMESTAMP - 60), Ok(()));
        assert_eq!(
            within(TIMESTAMP + 61),
            Err(SignatureError::TooOld {
                age_seconds: 61,
                tolerance_seconds: 60
            })
        );
        assert_eq!(
            within(TIMESTAMP - 61),
            Err(SignatureError::TooNew {
                ahead_seconds: 61,
                tolerance_seconds: 60
            })
        );
        // The signature is still checked first.
        assert_eq!(
            verify_with_tolerance("whsec_other", HEADER, body, TIMESTAMP + 61, 60),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn any_change_breaks_it() {
        let body = BODY.as_bytes();
        let mut tampered = body.to_vec();
        tampered[10] ^= 1;
        assert_eq!(
            verify(SECRET, HEADER, &tampered, TIMESTAMP),
            Err(SignatureError::Mismatch)
        );
        // Re-serialised JSON is not the raw body.
        let reparsed =
            serde_json::to_vec_pretty(&serde_json::from_str::<serde_json::Value>(BODY).unwrap())
                .unwrap();
        assert_eq!(
            verify(SECRET, HEADER, &reparsed, TIMESTAMP),
            Err(SignatureError::Mismatch)
        );
        // Another timestamp with the same MAC.
        let moved = HEADER.replace("t=1795000000", "t=1795000001");
        assert_eq!(
            verify(SECRET, &moved, body, TIMESTAMP),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify("whsec_other", HEADER, body, TIMESTAMP),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn several_v1_entries_and_other_schemes() {
        let body = BODY.as_bytes();
        let good = &HEADER["t=1795000000,".len()..];
        let bad = format!("v1={}", "0".repeat(64));
        let header = format!("t={TIMESTAMP},{bad},{good}");
        assert_eq!(verify(SECRET, &header, body, TIMESTAMP), Ok(()));
        let header = format!("t={TIMESTAMP}, v0=abc, {good}, v2=zzz");
        assert_eq!(verify(SECRET, &header, body, TIMESTAMP), Ok(()));
        // Order does not matter; upper-case hex is accepted.
        let header = format!(
            "{},t={TIMESTAMP}",
            good.to_uppercase().replace("V1=", "v1=")
        );
        assert_eq!(verify(SECRET, &header, body, TIMESTAMP), Ok(()));
        // Only wrong or non-hex candidates.
        let header = format!("t={TIMESTAMP},{bad},v1=not-hex,v1=");
        assert_eq!(
            verify(SECRET, &header, body, TIMESTAMP),
            Err(SignatureError::Mismatch)
        );
        // A truncated MAC does not match.
        let header = &HEADER[..HEADER.len() - 2];
        assert_eq!(
            verify(SECRET, header, body, TIMESTAMP),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn malformed_headers() {
        let body = BODY.as_bytes();
        let sig = "v1=2b4d30ad711c5dbdad2c7cd283a8b3c2840e872eb69f10a4082c0b80ced25ae6";
        let cases: [(&str, SignatureError); 10] = [
            ("", SignatureError::MissingTimestamp),
            (sig, SignatureError::MissingTimestamp),
            ("t=1795000000", SignatureError::MissingSignature),
            ("t=1795000000,v0=abc", SignatureError::MissingSignature),
            (
                "garbage",
                SignatureError::Malformed("each entry must be key=value"),
            ),
            (
                "t=1795000000,t=1795000000,v1=00",
                SignatureError::Malformed("t= appears more than once"),
            ),
            (
                "t=,v1=00",
                SignatureError::Malformed("t= must be unix seconds"),
            ),
            (
                "t=-5,v1=00",
                SignatureError::Malformed("t= must be unix seconds"),
            ),
            (
                "t=+1795000000,v1=00",
                SignatureError::Malformed("t= must be unix seconds"),
            ),
            (
                "t=1795000000.5,v1=00",
                SignatureError::Malformed("t= must be unix seconds"),
            ),
        ];
        for (header, expected) in cases {
            assert_eq!(
                verify(SECRET, header, body, TIMESTAMP),
                Err(expected),
                "{header:?}"
            );
        }
        let huge = format!("t={},{sig}", "9".repeat(30));
        assert!(matches!(
            verify(SECRET, &huge, body, TIMESTAMP),
            Err(SignatureError::Malformed(_))
        ));
    }

    #[test]
    fn spaces_around_entries_are_tolerated() {
        let header = HEADER.replace(',', " , ");
        assert_eq!(verify(SECRET, &header, BODY.as_bytes(), TIMESTAMP), Ok(()));
    }
}
