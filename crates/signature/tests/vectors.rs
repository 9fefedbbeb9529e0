//! Reproduces `webhookSignature` of `tests/data/vectors.json` (a copy of the
//! protocol's vectors, docs/protocol.md) through the public API.

use sealpost_signature::{SignatureError, sign, verify};
use serde_json::Value;

#[test]
fn webhook_signature_vector() {
    let file: Value = serde_json::from_str(include_str!("data/vectors.json")).unwrap();
    let v = &file["webhookSignature"];
    let secret = v["secret"].as_str().unwrap();
    let timestamp = v["timestamp"].as_i64().unwrap();
    let body = v["body"].as_str().unwrap().as_bytes();
    let header = v["header"].as_str().unwrap();

    assert_eq!(sign(secret, timestamp, body), header);
    assert_eq!(verify(secret, header, body, timestamp), Ok(()));
    assert_eq!(verify(secret, header, body, timestamp + 300), Ok(()));
    assert_eq!(
        verify(secret, header, body, timestamp + 301),
        Err(SignatureError::TooOld {
            age_seconds: 301,
            tolerance_seconds: 300
        })
    );
}
