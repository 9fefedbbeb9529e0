//! Push tokens as the phone's operating system hands them out.

use std::fmt;

/// Longest token accepted. APNs tokens are 64 hex characters and FCM
/// registration tokens a few hundred; this leaves room for both to grow.
pub const MAX_TOKEN_LEN: usize = 4096;

sealpost_kernel::string_enum! {
    /// Which push provider a token belongs to.
    pub enum Platform: "platform" {
        /// Apple Push Notification service.
        Ios => "ios",
        /// Firebase Cloud Messaging.
        Android => "android",
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("must not be empty")]
    Empty,
    #[error("longer than {MAX_TOKEN_LEN} characters")]
    TooLong,
    #[error("only letters, digits and - _ : . are allowed")]
    Characters,
}

/// A push token: 1 to [`MAX_TOKEN_LEN`] characters of letters, digits and
/// `- _ : .` (what APNs and FCM hand out), so it can stand in a URL path.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PushToken(String);

impl PushToken {
    pub fn parse(text: &str) -> Result<PushToken, TokenError> {
        if text.is_empty() {
            return Err(TokenError::Empty);
        }
        if text.len() > MAX_TOKEN_LEN {
            return Err(TokenError::TooLong);
        }
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.');
        if !text.chars().all(allowed) {
            return Err(TokenError::Characters);
        }
        Ok(PushToken(text.to_owned()))
    }

    /// A token read back from storage, which only ever holds parsed ones.
    pub fn from_trusted(text: String) -> PushToken {
        PushToken(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Only the first characters: a token is not a secret, but logs need no more.
impl fmt::Debug for PushToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: String = self.0.chars().take(8).collect();
        write!(f, "PushToken({shown}...)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_from_both_providers_parse() {
        let apns = "a".repeat(64);
        let fcm = "cXn3:APA91bH-x_y.z";
        assert_eq!(PushToken::parse(&apns).unwrap().as_str(), apns);
        assert_eq!(PushToken::parse(fcm).unwrap().as_str(), fcm);
        assert!(PushToken::parse(&"b".repeat(MAX_TOKEN_LEN)).is_ok());
    }

    #[test]
    fn bad_tokens_and_platforms_are_refused() {
        assert_eq!(PushToken::parse(""), Err(TokenError::Empty));
        assert_eq!(
            PushToken::parse(&"b".repeat(MAX_TOKEN_LEN + 1)),
            Err(TokenError::TooLong)
        );
        for bad in ["a b", "a/b", "a%2F", "é"] {
            assert_eq!(PushToken::parse(bad), Err(TokenError::Characters), "{bad}");
        }
        assert_eq!("ios".parse(), Ok(Platform::Ios));
        assert_eq!("android".parse(), Ok(Platform::Android));
        assert!("windows".parse::<Platform>().is_err());
        assert!(!format!("{:?}", PushToken::parse(&apns_like()).unwrap()).contains(&apns_like()));
    }

    fn apns_like() -> String {
        "0123456789abcdef".repeat(4)
    }
}
