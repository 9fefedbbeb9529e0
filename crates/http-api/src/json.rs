//! The JSON body extractor: the errors of docs/protocol.md "Errors" instead of
//! actix's.
//!
//! Not JSON -> 400 `invalid_json`; a field of the wrong type, or a missing
//! one -> 400 `invalid_field` naming the field (serde_path_to_error gives the
//! path); over the size limit -> 413 `too_large`. Unknown fields are ignored.
//!
//! A number is an integer when its value is one, whatever its form: `47.0`
//! and `4.7e1` are the integer 47, as in JSON Schema (and so in the OpenAPI
//! document's `"type": "integer"`), although serde reads them as floats.

use std::borrow::Cow;
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
    let bytes = &*integral_numbers(bytes);
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

/// `bytes` with every number whose value is an integer written as one
/// (`47.0`, `4.7e1`, `470e-1` -> `47`), so that serde's integer fields take
/// what JSON Schema calls an integer. Exact (done on the digits, not through
/// a float); numbers outside the 64-bit range, and anything that is not
/// JSON, are left as they are for the parser to judge. Borrows when there is
/// nothing to rewrite, the usual case.
fn integral_numbers(bytes: &[u8]) -> Cow<'_, [u8]> {
    let mut rewritten: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut at = 0;
    let mut in_string = false;
    while at < bytes.len() {
        let byte = bytes[at];
        if in_string {
            match byte {
                b'\\' => at += 1,
                b'"' => in_string = false,
                _ => {}
            }
            at += 1;
            continue;
        }
        if byte == b'"' {
            in_string = true;
            at += 1;
            continue;
        }
        if byte != b'-' && !byte.is_ascii_digit() {
            at += 1;
            continue;
        }
        let end = at
            + bytes[at..]
                .iter()
                .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                .unwrap_or(bytes.len() - at);
        if let Some(integer) = std::str::from_utf8(&bytes[at..end])
            .ok()
            .and_then(integer_form)
        {
            let out = rewritten.get_or_insert_with(|| Vec::with_capacity(bytes.len()));
            out.extend_from_slice(&bytes[copied..at]);
            out.extend_from_slice(integer.as_bytes());
            copied = end;
        }
        at = end;
    }
    match rewritten {
        None => Cow::Borrowed(bytes),
        Some(mut out) => {
            out.extend_from_slice(&bytes[copied..]);
            Cow::Owned(out)
        }
    }
}

/// The integer a JSON number with a fraction or an exponent stands for,
/// when it stands for one in the 64-bit range; `None` for plain integers
/// (nothing to do), fractions, and anything that is not a JSON number.
fn integer_form(number: &str) -> Option<String> {
    let (negative, unsigned) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(cut) => (&unsigned[..cut], Some(&unsigned[cut + 1..])),
        None => (unsigned, None),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (mantissa, None),
    };
    let digits_only = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let json_whole = whole == "0" || (digits_only(whole) && !whole.starts_with('0'));
    if !json_whole
        || !fraction.is_none_or(digits_only)
        || (fraction.is_none() && exponent.is_none())
    {
        return None;
    }
    let exponent: i64 = match exponent {
        None => 0,
        Some(text) => {
            let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
            // Longer exponents are far outside the 64-bit range either way.
            if !digits_only(digits) || digits.len() > 4 {
                return None;
            }
            text.parse().ok()?
        }
    };
    let digits = format!("{whole}{}", fraction.unwrap_or(""));
    // Where the decimal point falls in `digits` once the exponent is applied.
    let shift = i64::try_from(whole.len()).ok()? + exponent;
    let point = usize::try_from(shift.max(0)).ok()?;
    let (integer, rest) = digits.split_at(point.min(digits.len()));
    if rest.bytes().any(|b| b != b'0') {
        return None;
    }
    let zeros = point.saturating_sub(digits.len());
    if zeros > 20 {
        return None;
    }
    let magnitude = format!("{integer}{}", "0".repeat(zeros));
    let magnitude = magnitude.trim_start_matches('0');
    let text = match (magnitude.is_empty(), negative) {
        (true, _) => "0".to_owned(),
        (false, true) => format!("-{magnitude}"),
        (false, false) => magnitude.to_owned(),
    };
    let in_range = text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok();
    in_range.then_some(text)
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
        account_id: String,
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
    fn an_integral_number_is_an_integer_in_any_form() {
        for (body, days) in [
            (&br#"{"accountId": "a", "retentionDays": 47.0}"#[..], 47),
            (br#"{"accountId": "a", "retentionDays": 4.7e1}"#, 47),
            (br#"{"accountId": "a", "retentionDays": 470E-1}"#, 47),
            (br#"{"accountId": "a", "retentionDays": 0.47e+2}"#, 47),
            (br#"{"accountId": "a", "retentionDays": 1e0}"#, 1),
            (br#"{"accountId": "a", "retentionDays": 0.0}"#, 0),
        ] {
            let input = parse::<Input>(body).unwrap_or_else(|error| {
                panic!("{}: {}", String::from_utf8_lossy(body), error.message)
            });
            assert_eq!(input.retention_days, Some(days));
        }
        // Not integers, or not u8: refused as before, naming the field.
        for body in [
            &br#"{"accountId": "a", "retentionDays": 47.5}"#[..],
            br#"{"accountId": "a", "retentionDays": 4.75e1}"#,
            br#"{"accountId": "a", "retentionDays": -1.0}"#,
            br#"{"accountId": "a", "retentionDays": 1e300}"#,
            br#"{"accountId": "a", "retentionDays": 256.0}"#,
        ] {
            let error = parse::<Input>(body).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidField);
            assert!(
                error.message.starts_with("retentionDays:"),
                "{}",
                error.message
            );
        }
        // Strings are not numbers, even when they look like one; what is
        // not JSON stays not JSON.
        let input = parse::<Input>(br#"{"accountId": "1.0 \" 2.0", "retentionDays": 3}"#).unwrap();
        assert_eq!(input.account_id, "1.0 \" 2.0");
        for broken in [
            &br#"{"accountId": "a", "retentionDays": 01.0}"#[..],
            br#"{"retentionDays": 1.}"#,
        ] {
            assert_eq!(
                parse::<Input>(broken).unwrap_err().code,
                ErrorCode::InvalidJson
            );
        }
    }

    #[test]
    fn integer_forms() {
        assert_eq!(integer_form("47.0").as_deref(), Some("47"));
        assert_eq!(integer_form("-47.00").as_deref(), Some("-47"));
        assert_eq!(integer_form("-0.0").as_deref(), Some("0"));
        assert_eq!(integer_form("1.5e3").as_deref(), Some("1500"));
        assert_eq!(
            integer_form("18446744073709551615.0").as_deref(),
            Some("18446744073709551615")
        );
        assert_eq!(integer_form("18446744073709551616.0"), None);
        assert_eq!(integer_form("47"), None, "already an integer");
        assert_eq!(integer_form("47.1"), None);
        assert_eq!(integer_form("1e-1"), None);
        assert_eq!(integer_form("1e99999"), None);
        assert_eq!(integer_form("--1.0"), None);
        assert_eq!(integer_form("1.0.0"), None);
    }

    #[test]
    fn unknown_fields_are_ignored() {
        assert!(parse::<Input>(br#"{"accountId": "a", "extra": true}"#).is_ok());
    }
}
