//! Where "now" comes from. Domain code never reads the system time itself.

use std::sync::Mutex;

use chrono::{TimeDelta, Utc};

use crate::Timestamp;

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

/// The wall clock, for the binaries.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_datetime(Utc::now())
    }
}

/// A clock tests set and move by hand.
#[derive(Debug)]
pub struct TestClock(Mutex<Timestamp>);

impl TestClock {
    pub fn at(start: Timestamp) -> Self {
        Self(Mutex::new(start))
    }

    /// Starts at the current wall-clock time.
    pub fn starting_now() -> Self {
        Self::at(SystemClock.now())
    }

    pub fn set(&self, to: Timestamp) {
        *self.lock() = to;
    }

    pub fn advance(&self, by: TimeDelta) {
        let mut now = self.lock();
        *now = *now + by;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Timestamp> {
        // A poisoned lock only means another test thread panicked; the time is still valid.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        *self.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_clock_moves_only_when_told() {
        let start = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
        let clock = TestClock::at(start);
        assert_eq!(clock.now(), start);
        clock.advance(TimeDelta::minutes(3));
        assert_eq!(clock.now().to_string(), "2026-01-01T00:03:00.000Z");
    }
}
