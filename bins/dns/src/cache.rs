//! The proved own domains' zones, held in memory for a short life: read
//! whole from PostgreSQL in one query, again once the life is over, by one
//! question while the others keep answering from the zones they have. So a
//! flood of names (random, deep, under no zone) never reaches the database,
//! and a domain proved, changed or removed shows within the life.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use sealpost_dns_server::fqdn;
use sealpost_dns_server::proto::rr::Name;
use sealpost_store_pg::{DomainZone, PgStore};

/// The zones as read at one moment.
pub struct Zones {
    by_apex: HashMap<Name, DomainZone>,
    read_at: Instant,
}

impl Zones {
    /// The zones in `rows`, read by a query begun at `read_at`.
    fn new(rows: Vec<DomainZone>, read_at: Instant) -> Self {
        let by_apex = rows
            .into_iter()
            .filter_map(|zone| Some((fqdn(&zone.name).ok()?, zone)))
            .collect();
        Self { by_apex, read_at }
    }

    /// The zone `name` (lower case, fully qualified) falls in, with its
    /// apex: the longest of its suffixes that is a proved domain.
    pub fn zone_of(&self, name: &Name) -> Option<(&Name, &DomainZone)> {
        let mut candidate = name.clone();
        while candidate.num_labels() >= 2 {
            if let Some(found) = self.by_apex.get_key_value(&candidate) {
                return Some(found);
            }
            candidate = candidate.base_name();
        }
        None
    }
}

pub struct ZoneCache {
    store: PgStore,
    life: Duration,
    current: RwLock<Option<Arc<Zones>>>,
    /// Held by the one question reading the zones again.
    reading: tokio::sync::Mutex<()>,
}

impl ZoneCache {
    pub fn new(store: PgStore, life: Duration) -> Self {
        Self {
            store,
            life,
            current: RwLock::new(None),
            reading: tokio::sync::Mutex::new(()),
        }
    }

    fn held(&self) -> Option<Arc<Zones>> {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn fresh(&self, zones: &Option<Arc<Zones>>) -> bool {
        zones
            .as_ref()
            .is_some_and(|zones| zones.read_at.elapsed() < self.life)
    }

    /// The zones, read again when older than the life. `None` only while
    /// none could be read yet (the database unreachable since the start).
    pub async fn current(&self) -> Option<Arc<Zones>> {
        let held = self.held();
        if self.fresh(&held) {
            return held;
        }
        let _reading = match self.reading.try_lock() {
            Ok(guard) => guard,
            // Another question is reading them: answer from the old ones.
            Err(_) if held.is_some() => return held,
            Err(_) => self.reading.lock().await,
        };
        let held = self.held();
        if self.fresh(&held) {
            return held;
        }
        // A reading is as old as the moment its query began.
        let read_at = Instant::now();
        let zones = match self.store.proved_zones().await {
            Ok(rows) => Arc::new(Zones::new(rows, read_at)),
            Err(error) => {
                tracing::warn!(%error, "reading the zones failed; serving the last ones read");
                // Keep the last zones for another life rather than ask a
                // failing database on every question.
                let last = held?;
                Arc::new(Zones {
                    by_apex: last.by_apex.clone(),
                    read_at: Instant::now(),
                })
            }
        };
        *self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(zones.clone());
        Some(zones)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    fn zone(name: &str) -> DomainZone {
        DomainZone {
            name: name.into(),
            step: "live".into(),
            dkim: None,
        }
    }

    #[test]
    fn a_name_falls_in_its_longest_proved_suffix_and_no_other() {
        let zones = Zones::new(
            vec![zone("example.com"), zone("mail.example.net")],
            Instant::now(),
        );
        let apex = |name: &str| {
            zones
                .zone_of(&fqdn(name).unwrap())
                .map(|(apex, _)| apex.to_ascii())
        };
        assert_eq!(apex("example.com").as_deref(), Some("example.com."));
        assert_eq!(
            apex("a.b.c.d.e.f.example.com").as_deref(),
            Some("example.com.")
        );
        assert_eq!(
            apex("x.mail.example.net").as_deref(),
            Some("mail.example.net.")
        );
        assert_eq!(apex("example.net"), None);
        assert_eq!(apex("notexample.com"), None);
        assert_eq!(apex("com"), None);
    }
}
