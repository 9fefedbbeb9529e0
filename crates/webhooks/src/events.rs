//! Event types a webhook carries (docs/api.md "Events") and an endpoint's
//! filter.
//!
//! `webhook.test` is a type like the others on the wire, but it is sent only
//! by `POST /webhook-endpoints/:id/test`, and always, whatever the filter:
//! [`EventFilter::matches`] is true for it. Naming it in a filter is allowed
//! (it is listed in `eventTypes`) and changes nothing.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The wildcard entry: `["*"]` subscribes to every event type.
pub const WILDCARD: &str = "*";

/// The event types are the outbox's own (`sealpost-activity`): one list for
/// activity, webhooks and push.
pub use sealpost_activity::EventType;

/// Why an `events` list was refused: 400 `invalid_field` naming `events`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EventFilterError {
    #[error("events must list at least one event type, or be [\"*\"]")]
    Empty,
    #[error("events: \"*\" must be the only entry")]
    WildcardNotAlone,
    #[error("events: unknown event type {0:?}")]
    Unknown(String),
    #[error("events: {0} is listed twice")]
    Duplicate(EventType),
}

impl EventFilterError {
    /// The API error code (400).
    #[must_use]
    pub fn code(&self) -> &'static str {
        "invalid_field"
    }

    /// The request field the message names.
    #[must_use]
    pub fn field(&self) -> &'static str {
        "events"
    }
}

/// Which events an endpoint receives: `["*"]` for all, or a non-empty list
/// of distinct known types (kept in the order given, shown back as given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventFilter {
    All,
    Only(Vec<EventType>),
}

impl EventFilter {
    /// Parses the `events` field.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, EventFilterError> {
        if entries.is_empty() {
            return Err(EventFilterError::Empty);
        }
        if entries.iter().any(|e| e.as_ref() == WILDCARD) {
            return if entries.len() == 1 {
                Ok(EventFilter::All)
            } else {
                Err(EventFilterError::WildcardNotAlone)
            };
        }
        let mut types = Vec::with_capacity(entries.len());
        for entry in entries {
            let entry = entry.as_ref();
            let event_type: EventType = entry
                .parse()
                .map_err(|_| EventFilterError::Unknown(entry.to_owned()))?;
            if types.contains(&event_type) {
                return Err(EventFilterError::Duplicate(event_type));
            }
            types.push(event_type);
        }
        Ok(EventFilter::Only(types))
    }

    /// Whether an event of this type goes to the endpoint. Always true for
    /// `webhook.test` (see the module documentation).
    #[must_use]
    pub fn matches(&self, event_type: EventType) -> bool {
        event_type.is_test()
            || match self {
                EventFilter::All => true,
                EventFilter::Only(types) => types.contains(&event_type),
            }
    }

    /// The `events` field as the API shows it.
    #[must_use]
    pub fn to_strings(&self) -> Vec<String> {
        match self {
            EventFilter::All => vec![WILDCARD.to_owned()],
            EventFilter::Only(types) => types.iter().map(|t| t.as_str().to_owned()).collect(),
        }
    }
}

impl Serialize for EventFilter {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_strings().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for EventFilter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let entries = Vec::<String>::deserialize(deserializer)?;
        EventFilter::parse(&entries).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(EventType::ALL.len(), 12);
        for t in EventType::ALL {
            assert_eq!(t.as_str().parse::<EventType>(), Ok(t));
            assert_eq!(t.to_string(), t.as_str());
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(serde_json::from_str::<EventType>(&json).unwrap(), t);
        }
        assert_eq!(
            "message.deleted".parse::<EventType>(),
            Err(sealpost_kernel::UnknownValue::new(
                "event type",
                "message.deleted"
            ))
        );
        assert!("Message.Received".parse::<EventType>().is_err());
        assert!(serde_json::from_str::<EventType>("\"nope\"").is_err());
    }

    #[test]
    fn spec_names() {
        let names: Vec<&str> = EventType::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(
            names,
            [
                "worker.paired",
                "worker.connected",
                "worker.disconnected",
                "worker.removed",
                "inbox.created",
                "inbox.deleted",
                "inbox.assigned",
                "inbox.removed",
                "message.received",
                "message.sent",
                "subscription.updated",
                "webhook.test",
            ]
        );
    }

    #[test]
    fn wildcard_alone_means_all() {
        let filter = EventFilter::parse(&["*"]).unwrap();
        assert_eq!(filter, EventFilter::All);
        assert!(EventType::ALL.iter().all(|t| filter.matches(*t)));
        assert_eq!(filter.to_strings(), ["*"]);
    }

    #[test]
    fn wildcard_with_anything_else_is_refused() {
        assert_eq!(
            EventFilter::parse(&["*", "inbox.created"]),
            Err(EventFilterError::WildcardNotAlone)
        );
        assert_eq!(
            EventFilter::parse(&["inbox.created", "*"]),
            Err(EventFilterError::WildcardNotAlone)
        );
        assert_eq!(
            EventFilter::parse(&["*", "*"]),
            Err(EventFilterError::WildcardNotAlone)
        );
    }

    #[test]
    fn a_list_matches_only_its_types() {
        let filter = EventFilter::parse(&["message.received", "inbox.created"]).unwrap();
        assert!(filter.matches(EventType::MessageReceived));
        assert!(filter.matches(EventType::AddressCreated));
        assert!(!filter.matches(EventType::MessageSent));
        assert!(!filter.matches(EventType::DevicePaired));
        assert_eq!(filter.to_strings(), ["message.received", "inbox.created"]);
    }

    #[test]
    fn tests_are_delivered_whatever_the_filter() {
        let filter = EventFilter::parse(&["worker.paired"]).unwrap();
        assert!(filter.matches(EventType::WebhookTest));
        let only_tests = EventFilter::parse(&["webhook.test"]).unwrap();
        assert!(only_tests.matches(EventType::WebhookTest));
        assert!(!only_tests.matches(EventType::MessageReceived));
    }

    #[test]
    fn empty_unknown_and_duplicate_lists_are_refused() {
        let none: [&str; 0] = [];
        assert_eq!(EventFilter::parse(&none), Err(EventFilterError::Empty));
        let err = EventFilter::parse(&["inbox.created", "mail.received"]).unwrap_err();
        assert_eq!(err, EventFilterError::Unknown("mail.received".into()));
        assert!(err.to_string().contains("mail.received"), "{err}");
        assert_eq!(err.code(), "invalid_field");
        assert_eq!(err.field(), "events");
        assert!(EventFilter::parse(&[""]).is_err());
        assert!(EventFilter::parse(&["all"]).is_err());
        let err = EventFilter::parse(&["inbox.created", "inbox.created"]).unwrap_err();
        assert_eq!(err, EventFilterError::Duplicate(EventType::AddressCreated));
        assert!(err.to_string().contains("inbox.created"), "{err}");
    }

    #[test]
    fn serde_uses_the_list_form() {
        let filter: EventFilter = serde_json::from_str(r#"["inbox.deleted"]"#).unwrap();
        assert_eq!(filter, EventFilter::Only(vec![EventType::AddressDeleted]));
        assert_eq!(
            serde_json::to_string(&filter).unwrap(),
            r#"["inbox.deleted"]"#
        );
        assert_eq!(
            serde_json::to_string(&EventFilter::All).unwrap(),
            r#"["*"]"#
        );
        assert!(serde_json::from_str::<EventFilter>("[]").is_err());
        assert!(serde_json::from_str::<EventFilter>(r#"["x.y"]"#).is_err());
    }
}
