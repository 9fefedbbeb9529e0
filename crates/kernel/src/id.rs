//! Typed, prefixed identifiers (docs/api.md "Ids").
//!
//! Each kind is its own type, so an address id can never be passed where a
//! device id is expected. `parse` checks the prefix and the shape once, at the
//! edge; values read back from our own store use `from_trusted`.
//!
//! Shapes:
//! - client-generated (`ibx_`, `wkr_`, `key_`, `whk_`, `tkm_`): prefix + 4 to 48 ASCII letters and digits;
//! - `tkt_`: prefix + exactly 20 lowercase letters or digits;
//! - `acct_`: prefix + 24 lowercase base32 characters (derived from the phrase);
//! - server-made (`msg_`, `evt_`, `whd_`, `act_`, `ses_`, `pay_`, `pst_`): prefix + 26
//!   lowercase base32hex characters (`0-9a-v`) of a UUIDv7, so as text they sort
//!   in creation order.

use std::fmt;

use data_encoding::BASE32HEX_NOPAD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed {kind} id")]
pub struct InvalidId {
    pub kind: &'static str,
}

fn client_shape(body: &str) -> bool {
    (4..=48).contains(&body.len()) && body.bytes().all(|b| b.is_ascii_alphanumeric())
}

fn lower_base32(body: &str, len: usize) -> bool {
    body.len() == len && body.bytes().all(|b| matches!(b, b'a'..=b'z' | b'2'..=b'7'))
}

fn account_shape(body: &str) -> bool {
    lower_base32(body, 24)
}

fn server_shape(body: &str) -> bool {
    body.len() == 26 && body.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'v'))
}

fn ticket_shape(body: &str) -> bool {
    body.len() == 20
        && body
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// A fresh time-ordered body for server-made ids. base32hex keeps the
/// alphabet in ASCII order, so ids compare as text in creation order.
fn server_body() -> String {
    BASE32HEX_NOPAD
        .encode(uuid::Uuid::now_v7().as_bytes())
        .to_ascii_lowercase()
}

/// The shapes above as regular expressions of the body, for the OpenAPI
/// `pattern` of each id kind (a test checks them against `parse`).
macro_rules! shape_pattern {
    (client_shape) => {
        "[A-Za-z0-9]{4,48}"
    };
    (account_shape) => {
        "[a-z2-7]{24}"
    };
    (server_shape) => {
        "[0-9a-v]{26}"
    };
    (ticket_shape) => {
        "[a-z0-9]{20}"
    };
}

macro_rules! prefixed_id {
    ($(#[$meta:meta])* $name:ident, $prefix:literal, $kind:literal, $shape:ident) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            pub const PREFIX: &'static str = $prefix;
            /// The id's whole shape as a regular expression (anchored).
            pub const PATTERN: &'static str = concat!("^", $prefix, shape_pattern!($shape), "$");

            /// Checks prefix and shape: the only way an outside value becomes an id.
            pub fn parse(text: &str) -> Result<Self, InvalidId> {
                match text.strip_prefix($prefix) {
                    Some(body) if $shape(body) => Ok(Self(text.to_owned())),
                    _ => Err(InvalidId { kind: $kind }),
                }
            }

            /// For values this service wrote itself (database rows).
            pub fn from_trusted(text: String) -> Self {
                Self(text)
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = InvalidId;

            fn from_str(text: &str) -> Result<Self, InvalidId> {
                Self::parse(text)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                Self::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

macro_rules! server_id {
    ($(#[$meta:meta])* $name:ident, $prefix:literal, $kind:literal) => {
        prefixed_id!($(#[$meta])* $name, $prefix, $kind, server_shape);

        impl $name {
            /// A new, time-ordered id.
            pub fn generate() -> Self {
                Self(format!("{}{}", $prefix, server_body()))
            }
        }
    };
}

prefixed_id!(
    /// `acct_`: derived on the client from the recovery phrase.
    AccountId, "acct_", "account", account_shape
);
prefixed_id!(
    /// `ibx_`: an address (inbox), chosen by the client.
    AddressId, "ibx_", "inbox", client_shape
);
prefixed_id!(
    /// `wkr_`: a device (worker), chosen by the client at pairing.
    DeviceId, "wkr_", "worker", client_shape
);
prefixed_id!(
    /// `key_`: an API key, chosen by the client.
    ApiKeyId, "key_", "API key", client_shape
);
prefixed_id!(
    /// `whk_`: a webhook endpoint, chosen by the client.
    WebhookId, "whk_", "webhook", client_shape
);
prefixed_id!(
    /// `tkt_`: a support ticket, chosen by the client.
    TicketId, "tkt_", "ticket", ticket_shape
);
prefixed_id!(
    /// `tkm_`: a support message, chosen by the client.
    TicketMessageId, "tkm_", "ticket message", client_shape
);
server_id!(
    /// `msg_`: a stored message.
    MessageId, "msg_", "message"
);
server_id!(
    /// `evt_`: an event (outbox row, webhook payload).
    EventId, "evt_", "event"
);
server_id!(
    /// `whd_`: one webhook delivery.
    DeliveryId, "whd_", "delivery"
);
server_id!(
    /// `act_`: an activity entry.
    ActivityId, "act_", "activity"
);
server_id!(
    /// `ses_`: an operator session.
    SessionId, "ses_", "session"
);
server_id!(
    /// `pay_`: a payment.
    PaymentId, "pay_", "payment"
);
server_id!(
    /// `pst_`: a pairing session (the lookup result's `id`).
    PairingSessionId, "pst_", "pairing session"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_ids_check_prefix_and_shape() {
        assert!(AddressId::parse("ibx_abcd").is_ok());
        assert!(AddressId::parse(&format!("ibx_{}", "a".repeat(48))).is_ok());
        assert!(AddressId::parse("ibx_abc").is_err(), "too short");
        assert!(
            AddressId::parse(&format!("ibx_{}", "a".repeat(49))).is_err(),
            "too long"
        );
        assert!(AddressId::parse("ibx_ab-cd").is_err(), "punctuation");
        assert!(AddressId::parse("wkr_abcd").is_err(), "wrong prefix");
        assert_eq!(
            DeviceId::parse("ibx_abcd").unwrap_err(),
            InvalidId { kind: "worker" }
        );
    }

    #[test]
    fn ticket_and_account_shapes() {
        assert!(TicketId::parse("tkt_abcdefghij0123456789").is_ok());
        assert!(TicketId::parse("tkt_ABCDEFGHIJ0123456789").is_err());
        assert!(AccountId::parse("acct_tul7dckxx25gyxvml33luw2o").is_ok());
        assert!(AccountId::parse("acct_tul7dckxx25gyxvml33luw2").is_err());
        assert!(
            AccountId::parse("acct_tul7dckxx25gyxvml33luw21").is_err(),
            "1 is not base32"
        );
    }

    #[test]
    fn server_ids_parse_back_and_sort_by_time() {
        let ids: Vec<MessageId> = (0..1000).map(|_| MessageId::generate()).collect();
        assert_eq!(MessageId::parse(ids[0].as_str()).unwrap(), ids[0]);
        assert!(
            ids.windows(2).all(|pair| pair[0] < pair[1]),
            "text order is creation order"
        );
    }

    #[test]
    fn patterns_accept_exactly_what_parse_accepts() {
        fn agree<T>(pattern: &str, parse: fn(&str) -> Result<T, InvalidId>, texts: &[String]) {
            let regex = regex::Regex::new(pattern).unwrap();
            for text in texts {
                assert_eq!(
                    regex.is_match(text),
                    parse(text).is_ok(),
                    "{pattern} and parse disagree on {text:?}"
                );
            }
        }
        let bodies: Vec<String> = [
            "",
            "abc",
            "abcd",
            "ABCD09",
            "ab-cd",
            "ab cd",
            "abcdefghij0123456789",
            "ABCDEFGHIJ0123456789",
            "tul7dckxx25gyxvml33luw2o",
            "tul7dckxx25gyxvml33luw21",
            "0123456789abcdefghijklmnop",
            "0123456789abcdefghijklmnow",
            "é1234",
        ]
        .iter()
        .map(|body| (*body).to_owned())
        .chain([
            "a".repeat(48),
            "a".repeat(49),
            MessageId::generate().as_str()[4..].to_owned(),
        ])
        .collect();
        let with = |prefix: &str| -> Vec<String> {
            bodies
                .iter()
                .map(|body| format!("{prefix}{body}"))
                .chain(bodies.iter().map(|body| format!("x{prefix}{body}")))
                .chain(bodies.iter().map(|body| format!("{prefix}{body}\n")))
                .collect()
        };
        agree(
            AccountId::PATTERN,
            AccountId::parse,
            &with(AccountId::PREFIX),
        );
        agree(
            AddressId::PATTERN,
            AddressId::parse,
            &with(AddressId::PREFIX),
        );
        agree(DeviceId::PATTERN, DeviceId::parse, &with(DeviceId::PREFIX));
        agree(ApiKeyId::PATTERN, ApiKeyId::parse, &with(ApiKeyId::PREFIX));
        agree(
            WebhookId::PATTERN,
            WebhookId::parse,
            &with(WebhookId::PREFIX),
        );
        agree(TicketId::PATTERN, TicketId::parse, &with(TicketId::PREFIX));
        agree(
            TicketMessageId::PATTERN,
            TicketMessageId::parse,
            &with(TicketMessageId::PREFIX),
        );
        agree(
            MessageId::PATTERN,
            MessageId::parse,
            &with(MessageId::PREFIX),
        );
        agree(EventId::PATTERN, EventId::parse, &with(EventId::PREFIX));
        agree(
            DeliveryId::PATTERN,
            DeliveryId::parse,
            &with(DeliveryId::PREFIX),
        );
        agree(
            ActivityId::PATTERN,
            ActivityId::parse,
            &with(ActivityId::PREFIX),
        );
        agree(
            SessionId::PATTERN,
            SessionId::parse,
            &with(SessionId::PREFIX),
        );
        agree(
            PaymentId::PATTERN,
            PaymentId::parse,
            &with(PaymentId::PREFIX),
        );
        agree(
            PairingSessionId::PATTERN,
            PairingSessionId::parse,
            &with(PairingSessionId::PREFIX),
        );
    }

    #[test]
    fn deserialising_checks_the_shape() {
        let ok: AddressId = serde_json::from_str("\"ibx_vector01\"").unwrap();
        assert_eq!(ok.as_str(), "ibx_vector01");
        assert!(serde_json::from_str::<AddressId>("\"ibx_!\"").is_err());
    }
}
