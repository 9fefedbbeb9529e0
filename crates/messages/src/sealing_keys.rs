//! The recipient keys this process seals to most, with their multiples
//! precomputed ([`SealingKey::precomputed`]): the few addresses that get
//! most of the mail (a test suite's, a busy sender's) are sealed to in a
//! third of the time. A table costs about twenty seals' worth of time to
//! build and 30 KB to keep, so a key gets one only after
//! [`PRECOMPUTE_AFTER`] seals, and only [`MAX_TABLES`] are kept, the least
//! recently used going first. Keys are public: nothing here is secret, and
//! the box is the same whichever way it is sealed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use sealpost_seal::SealingKey;

/// Seals to a key, counted while it has no table, before it gets one.
pub const PRECOMPUTE_AFTER: u32 = 32;
/// Tables kept at once (30 KB each).
pub const MAX_TABLES: usize = 64;
/// Keys counted at once; past it, the counts start again.
pub const MAX_COUNTED: usize = 4096;

#[derive(Default)]
struct Keys {
    /// Seals to each key without a table.
    counted: HashMap<[u8; 32], u32>,
    /// Keys with tables, and when each was last used ([`Keys::tick`]).
    tables: HashMap<[u8; 32], (Arc<SealingKey>, u64)>,
    /// Counts uses, to find the least recently used table.
    tick: u64,
}

/// Shared by the clones of an ingest.
#[derive(Default)]
pub struct SealingKeys {
    keys: Mutex<Keys>,
}

impl SealingKeys {
    /// The key to seal one box to `public` with: its table when it has
    /// one; built now, once it has been sealed to often enough.
    pub fn get(&self, public: &[u8; 32]) -> Arc<SealingKey> {
        {
            let mut keys = self.keys();
            keys.tick = keys.tick.wrapping_add(1);
            let tick = keys.tick;
            if let Some((key, used)) = keys.tables.get_mut(public) {
                *used = tick;
                return Arc::clone(key);
            }
            if keys.counted.len() >= MAX_COUNTED && !keys.counted.contains_key(public) {
                keys.counted.clear();
            }
            let seals = keys.counted.entry(*public).or_default();
            *seals = seals.saturating_add(1);
            if *seals < PRECOMPUTE_AFTER {
                return Arc::new(SealingKey::plain(*public));
            }
            // This caller builds it: seals meanwhile count afresh (and run
            // the ladder) rather than build it again.
            keys.counted.remove(public);
        }
        // About a millisecond: built outside the lock.
        let key = Arc::new(SealingKey::precomputed(*public));
        let mut keys = self.keys();
        keys.counted.remove(public);
        if keys.tables.len() >= MAX_TABLES
            && !keys.tables.contains_key(public)
            && let Some(oldest) = keys
                .tables
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(public, _)| *public)
        {
            keys.tables.remove(&oldest);
        }
        let tick = keys.tick;
        keys.tables.insert(*public, (Arc::clone(&key), tick));
        key
    }

    /// Keys that have tables now.
    #[cfg(test)]
    pub(crate) fn tables(&self) -> usize {
        self.keys().tables.len()
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, Keys> {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sealpost_seal::{PublicKey, StaticSecret, random_bytes};

    fn a_key() -> [u8; 32] {
        PublicKey::from(&StaticSecret::from(random_bytes::<32>())).to_bytes()
    }

    #[test]
    fn a_key_gets_its_table_at_its_thirty_second_seal_and_keeps_it() {
        let keys = SealingKeys::default();
        let public = a_key();
        for _ in 1..PRECOMPUTE_AFTER {
            let key = keys.get(&public);
            assert!(!key.is_precomputed());
            assert_eq!(key.public(), &public);
        }
        let key = keys.get(&public);
        assert!(key.is_precomputed());
        assert_eq!(key.public(), &public);
        assert!(keys.get(&public).is_precomputed());
        assert_eq!(keys.tables(), 1);
    }

    #[test]
    fn the_least_recently_used_table_goes_first() {
        let keys = SealingKeys::default();
        let publics: Vec<[u8; 32]> = (0..=MAX_TABLES).map(|_| a_key()).collect();
        let precompute = |public: &[u8; 32]| {
            for _ in 0..PRECOMPUTE_AFTER {
                keys.get(public);
            }
        };
        for public in &publics[..MAX_TABLES] {
            precompute(public);
        }
        assert_eq!(keys.tables(), MAX_TABLES);
        // The first is used again: the second is now the oldest.
        assert!(keys.get(&publics[0]).is_precomputed());
        precompute(&publics[MAX_TABLES]);
        assert_eq!(keys.tables(), MAX_TABLES);
        assert!(keys.get(&publics[0]).is_precomputed());
        assert!(keys.get(&publics[MAX_TABLES]).is_precomputed());
        assert!(
            !keys.get(&publics[1]).is_precomputed(),
            "the oldest kept its table"
        );
    }

    #[test]
    fn counts_stay_bounded() {
        let keys = SealingKeys::default();
        let hot = a_key();
        for _ in 1..PRECOMPUTE_AFTER {
            keys.get(&hot);
        }
        for _ in 0..MAX_COUNTED {
            keys.get(&a_key());
        }
        assert!(keys.keys().counted.len() <= MAX_COUNTED);
        // The hot key's count started again with the others.
        assert!(!keys.get(&hot).is_precomputed());
    }

    #[test]
    fn a_box_sealed_through_a_table_opens_with_the_recipient_s_secret() {
        let keys = SealingKeys::default();
        let secret = StaticSecret::from(random_bytes::<32>());
        let public = PublicKey::from(&secret).to_bytes();
        for seal in 1..=PRECOMPUTE_AFTER + 1 {
            let key = keys.get(&public);
            assert_eq!(key.is_precomputed(), seal >= PRECOMPUTE_AFTER);
            let sealed = sealpost_seal::SealedBox::try_seal_to(&key, "ctx", b"hello").unwrap();
            assert_eq!(sealed.open(&secret, "ctx").unwrap(), b"hello");
        }
    }
}
