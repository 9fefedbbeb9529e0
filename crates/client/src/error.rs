//! The SDK's one error type.

use crate::types::ErrorBody;

/// Everything a call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The service answered with a non-2xx status. `code` is the stable
    /// machine-readable code of docs/api.md "Errors" (match on it, never on the
    /// message). When the body was not the API's error JSON (a proxy's
    /// page, for example) the code is `http_<status>`.
    #[error("{message}")]
    Api {
        status: u16,
        code: String,
        message: String,
        /// `Retry-After` in seconds, sent with 429.
        retry_after: Option<u64>,
    },
    /// The request did not complete: connection refused, timeout, TLS, an
    /// invalid base URL.
    #[error("could not reach the service")]
    Transport(#[from] reqwest::Error),
    /// A 2xx answer whose body was not what the API documents.
    #[error("unexpected response from the service")]
    Decode(#[from] serde_json::Error),
}

impl ClientError {
    /// The error code: the service's code for [`ClientError::Api`],
    /// `transport` or `decode` for failures on this side (neither is a code
    /// the service sends).
    #[must_use]
    pub fn code(&self) -> &str {
        match self {
            Self::Api { code, .. } => code,
            Self::Transport(_) => "transport",
            Self::Decode(_) => "decode",
        }
    }

    /// The HTTP status of an API error.
    #[must_use]
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Api { status, .. } => Some(*status),
            Self::Transport(_) | Self::Decode(_) => None,
        }
    }

    /// `Retry-After` of a rate-limited answer, in seconds.
    #[must_use]
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Self::Api { retry_after, .. } => *retry_after,
            Self::Transport(_) | Self::Decode(_) => None,
        }
    }

    /// The error of a non-2xx answer, from its status, `Retry-After` header
    /// value and body.
    pub(crate) fn from_response(status: u16, retry_after: Option<&str>, body: &[u8]) -> Self {
        let retry_after = retry_after.and_then(|v| v.trim().parse::<u64>().ok());
        match serde_json::from_slice::<ErrorBody>(body) {
            Ok(ErrorBody { error }) => Self::Api {
                status,
                code: error.code,
                message: error.message,
                retry_after,
            },
            Err(_) => Self::Api {
                status,
                code: format!("http_{status}"),
                message: reqwest::StatusCode::from_u16(status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .map_or_else(
                        || format!("the service answered HTTP {status}"),
                        |reason| format!("the service answered HTTP {status} {reason}"),
                    ),
                retry_after,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_error_body_is_decoded() {
        let err = ClientError::from_response(
            429,
            Some("17"),
            br#"{"error":{"code":"rate_limited","message":"slow down"}}"#,
        );
        assert_eq!(err.code(), "rate_limited");
        assert_eq!(err.status(), Some(429));
        assert_eq!(err.retry_after(), Some(17));
        assert_eq!(err.to_string(), "slow down");
    }

    #[test]
    fn other_bodies_get_a_status_code() {
        let err = ClientError::from_response(502, Some("soon"), b"<html>Bad Gateway</html>");
        assert_eq!(err.code(), "http_502");
        assert_eq!(err.retry_after(), None);
        assert_eq!(err.to_string(), "the service answered HTTP 502 Bad Gateway");
    }
}
