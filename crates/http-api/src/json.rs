//! The JSON body extractor: CONTRACT.md section 1 errors instead of actix's.
//!
//! Not JSON -> 400 `invalid_json`; a field of the wrong type, or a missing
//! one -> 400 `invalid_field` naming the field (serde_path_to_error gives the
//! path); over the size limit -> 413 `too_large`. Unknown fields are ignored.

use std::future::Future;
use std::pin::Pin;

use actix_web::error::PayloadError;
use actix_web::web::Bytes;
use actix_web::{FromRequest, HttpRequest, dev::Payload};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// Request body limit, installed as the app's `PayloadConfig`. Boxes are small (labels, profiles); key bundles
/// and support messages are the largest bodies, well under this.
pub const DEFAULT_BODY_LIMIT: usize = 256 * 1024;

pub struct Json<T>(pub T);

impl<T: DeserializeOwned + 'static> FromRequest for Json<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = Bytes::from_request(req, payload);
        Box::pin(async move {
            let bytes = body
                .await
                .map_err(|error| match error.as_error::<PayloadError>() {
                    Some(PayloadError::Overflow) => ApiError::too_large(DEFAULT_BODY_LIMIT),
                    _ => ApiError::invalid_json(error),
                })?;
            parse(&bytes).map(Json)
        })
    }
}

pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize(&mut deserializer) {
        Ok(value) => {
            deserializer.end().map_err(ApiError::invalid_json)?;
            // Every request body is an object; serde would also read a
            // struct from an array of its fields (`[null, null]`).
            if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
                return Err(ApiError::invalid_field(".", "expected a JSON object"));
            }
            Ok(value)
        }
        Err(error) => {
            let path = error.path().to_string();
            let inner = error.into_inner();
            // A wrong type can be met before a syntax error further on
            // (`[1,2` for an object): only a body that is JSON throughout
            // has a field to blame. Checked on this error path only.
            let syntax = serde_json::from_slice::<serde::de::IgnoredAny>(bytes).err();
            Err(match syntax {
                None if inner.is_data() => ApiError::invalid_field(&path, data_reason(&inner)),
                Some(syntax) => ApiError::invalid_json(syntax),
                None => ApiError::invalid_json(inner),
            })
        }
    }
}

/// An optional body: nothing (or only whitespace) and `null` are `None`.
pub fn parse_optional<T: DeserializeOwned>(bytes: &[u8]) -> Result<Option<T>, ApiError> {
    let text = bytes.trim_ascii();
    if text.is_empty() || text == b"null" {
        return Ok(None);
    }
    parse(text).map(Some)
}

/// serde_json's message without its " at line 1 column 9" suffix.
fn data_reason(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[derive(serde::Deserialize, Debug)]
    #[serde(rename_all = "camelCase")]
    struct Input {
        #[expect(dead_code, reason = "only parsed")]
        account_id: String,
        #[expect(dead_code, reason = "only parsed")]
        retention_days: Option<u8>,
    }

    #[test]
    fn not_json_is_invalid_json() {
        let error = parse::<Input>(b"hello").unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidJson);
        let error = parse::<Input>(b"").unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidJson);
        // Truncated bodies whose first wrong thing is a type.
        for truncated in [
            &b"[1,2"[..],
            br#"{"accountId": 5"#,
            br#"{"retentionDays": "x", "#,
        ] {
            let error = parse::<Input>(truncated).unwrap_err();
            assert_eq!(
                error.code,
                ErrorCode::InvalidJson,
                "{}",
                String::from_utf8_lossy(truncated)
            );
        }
    }

    #[test]
    fn wrong_type_or_range_names_the_field() {
        let error = parse::<Input>(br#"{"accountId": "a", "retentionDays": 900}"#).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidField);
        assert!(
            error.message.starts_with("retentionDays:"),
            "{}",
            error.message
        );
        let error = parse::<Input>(br#"{"retentionDays": 1}"#).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidField);
        assert!(error.message.contains("accountId"), "{}", error.message);
    }

    #[test]
    fn unknown_fields_are_ignored() {
        assert!(parse::<Input>(br#"{"accountId": "a", "extra": true}"#).is_ok());
    }
}
