//! Request and response bodies, exactly as they travel on the wire
//! (`docs/api.md`, `docs/protocol.md`, `docs/openapi.json`): the server's own
//! definitions, from `sealpost-wire`, plus what only a client needs.
//!
//! Field names are camelCase; binary values are base64url without padding;
//! timestamps are RFC 3339 UTC with milliseconds. Unknown fields in
//! responses are ignored, and names with a fixed set of values read one a
//! newer service adds as `Other`, so the service can grow without breaking
//! older clients.

use sealpost_kernel::AccountId;
use sealpost_seal::AccountKeys;
pub use sealpost_wire::*;

/// The registration values of an account: only public values derived from
/// the recovery phrase; the phrase and the secret keys never leave the
/// process.
#[must_use]
pub fn registration(keys: &AccountKeys) -> RegisterRequest {
    RegisterRequest::new(
        &AccountId::from_trusted(keys.account_id()),
        &keys.auth_verifier(),
        &keys.auth_public_key(),
    )
}

/// The answer to `challenge`: proves possession of the auth key without
/// sending anything secret.
#[must_use]
pub fn answer(keys: &AccountKeys, challenge: &Challenge) -> VerifyRequest {
    let account_id = AccountId::from_trusted(keys.account_id());
    let proof = keys.handshake_proof(
        &challenge.challenge_key,
        &challenge.nonce,
        account_id.as_str(),
    );
    VerifyRequest::new(&account_id, &challenge.nonce, &proof)
}

// ---- Pages ----------------------------------------------------------------

/// `limit` and `cursor` of a paginated list (`GET /workers`, `GET /activity`).
/// The default asks for the first page at the service's default size.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageParams {
    /// Page size; the default and maximum depend on the list (docs/api.md
    /// "Limits").
    pub limit: Option<u32>,
    /// The previous page's `nextCursor`.
    pub cursor: Option<String>,
}

impl PageParams {
    /// The first page, `limit` long.
    #[must_use]
    pub fn first(limit: u32) -> Self {
        Self {
            limit: Some(limit),
            cursor: None,
        }
    }

    /// The page after the one that answered `next_cursor`, the same size;
    /// `None` at the end of the list.
    #[must_use]
    pub fn next(&self, next_cursor: Option<&str>) -> Option<Self> {
        next_cursor.map(|cursor| Self {
            limit: self.limit,
            cursor: Some(cursor.to_owned()),
        })
    }

    /// The query string, with its leading `?`, or empty.
    pub(crate) fn query(&self) -> String {
        let mut pairs = Vec::new();
        if let Some(limit) = self.limit {
            pairs.push(format!("limit={limit}"));
        }
        if let Some(cursor) = &self.cursor {
            pairs.push(format!("cursor={}", percent_encode(cursor)));
        }
        if pairs.is_empty() {
            String::new()
        } else {
            format!("?{}", pairs.join("&"))
        }
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters. Cursors
/// are base64url today, which passes unchanged, but they are opaque.
pub(crate) fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use sealpost_seal::b64;
    use serde_json::json;

    use super::*;

    fn keys() -> AccountKeys {
        AccountKeys::from_seed([3u8; 64])
    }

    #[test]
    fn registration_is_camel_case_base64url() {
        let keys = keys();
        let body = serde_json::to_value(registration(&keys)).unwrap();
        assert_eq!(
            body,
            json!({
                "accountId": keys.account_id(),
                "authVerifier": b64::encode(&keys.auth_verifier()),
                "authPublicKey": b64::encode(&keys.auth_public_key()),
            })
        );
    }

    #[test]
    fn the_answer_proves_the_challenge() {
        let keys = keys();
        let challenge: Challenge = serde_json::from_value(json!({
            "nonce": b64::encode(&[1u8; 32]),
            "expiresAt": "2026-01-02T03:04:05.678Z",
            "challengeKey": b64::encode(&[9u8; 32]),
        }))
        .unwrap();
        let answer = answer(&keys, &challenge);
        let expected = keys.handshake_proof(&[9u8; 32], &challenge.nonce, &keys.account_id());
        assert_eq!(
            serde_json::to_value(&answer).unwrap(),
            json!({
                "accountId": keys.account_id(),
                "nonce": challenge.nonce,
                "proof": b64::encode(&expected),
            })
        );
    }

    #[test]
    fn page_params_build_the_query() {
        assert_eq!(PageParams::default().query(), "");
        assert_eq!(PageParams::first(20).query(), "?limit=20");
        let next = PageParams::first(20).next(Some("ab-_c+/=")).unwrap();
        assert_eq!(next.query(), "?limit=20&cursor=ab-_c%2B%2F%3D");
        assert_eq!(PageParams::first(20).next(None), None);
    }
}
