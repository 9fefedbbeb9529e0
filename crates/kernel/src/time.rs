//! Timestamps: UTC, millisecond precision, serialised as RFC 3339 with `Z`.

use std::fmt;
use std::ops::{Add, Sub};

use chrono::{DateTime, DurationRound, SecondsFormat, TimeDelta, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in time as the API shows it (docs/protocol.md: RFC 3339 UTC, `Z`,
/// milliseconds). Values are truncated to the millisecond on construction so
/// what is stored, compared and shown is always the same instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(DateTime<Utc>);

impl Timestamp {
    pub fn from_datetime(at: DateTime<Utc>) -> Self {
        Self(at.duration_trunc(TimeDelta::milliseconds(1)).unwrap_or(at))
    }

    pub fn from_unix_millis(millis: i64) -> Option<Self> {
        DateTime::from_timestamp_millis(millis).map(Self)
    }

    pub fn parse(text: &str) -> Option<Self> {
        DateTime::parse_from_rfc3339(text)
            .ok()
            .map(|at| Self::from_datetime(at.with_timezone(&Utc)))
    }

    pub fn as_datetime(&self) -> DateTime<Utc> {
        self.0
    }

    pub fn unix_millis(&self) -> i64 {
        self.0.timestamp_millis()
    }

    pub fn unix_seconds(&self) -> i64 {
        self.0.timestamp()
    }

    /// Truncated to the start of its clock hour (device `lastActiveAt`, hourly windows).
    pub fn start_of_hour(&self) -> Self {
        Self(self.0.duration_trunc(TimeDelta::hours(1)).unwrap_or(self.0))
    }

    /// Truncated to 00:00 UTC of its day.
    pub fn start_of_day(&self) -> Self {
        Self(self.0.duration_trunc(TimeDelta::days(1)).unwrap_or(self.0))
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(at: DateTime<Utc>) -> Self {
        Self::from_datetime(at)
    }
}

impl Add<TimeDelta> for Timestamp {
    type Output = Timestamp;
    fn add(self, rhs: TimeDelta) -> Timestamp {
        Self::from_datetime(self.0 + rhs)
    }
}

impl Sub<TimeDelta> for Timestamp {
    type Output = Timestamp;
    fn sub(self, rhs: TimeDelta) -> Timestamp {
        Self::from_datetime(self.0 - rhs)
    }
}

impl Sub<Timestamp> for Timestamp {
    type Output = TimeDelta;
    fn sub(self, rhs: Timestamp) -> TimeDelta {
        self.0 - rhs.0
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Millis, true))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).ok_or_else(|| serde::de::Error::custom("expected an RFC 3339 timestamp"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_with_millis_and_z() {
        let at = Timestamp::parse("2026-11-22T10:11:12.345678+02:00").unwrap();
        assert_eq!(at.to_string(), "2026-11-22T08:11:12.345Z");
        assert_eq!(
            serde_json::to_string(&at).unwrap(),
            "\"2026-11-22T08:11:12.345Z\""
        );
        let back: Timestamp = serde_json::from_str("\"2026-11-22T08:11:12.345Z\"").unwrap();
        assert_eq!(back, at);
    }

    #[test]
    fn truncates_to_hour_and_day() {
        let at = Timestamp::parse("2026-11-22T10:11:12.345Z").unwrap();
        assert_eq!(at.start_of_hour().to_string(), "2026-11-22T10:00:00.000Z");
        assert_eq!(at.start_of_day().to_string(), "2026-11-22T00:00:00.000Z");
    }
}
