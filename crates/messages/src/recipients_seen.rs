//! RCPT's recent answers, reused for a moment: under load the same few
//! addresses get mail many times a second, and reading an address with its
//! account's counters was the costliest statement of a delivery
//! (docs/benchmarks.md, 2026-11-29). Nothing here can let mail through that
//! the commit would refuse: the commit re-checks that the address exists,
//! has the key the message was sealed to, is paused or not as the message
//! was written, and that its account is not suspended
//! ([`crate::store::Commit::RecipientChanged`] and
//! [`crate::store::Commit::RecipientGone`]); either answer forgets the
//! address here, and the delivery reads it again and applies every rule
//! to what it reads. What a remembered record can be behind on, for up to
//! [`REUSE_FOR`], is its account: its counters and its plan. So a record
//! is reused only while the account is far from its plan's limits, counting
//! what this process answered and delivered for the account meanwhile.
//! Each ingest process keeps its own readings.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use chrono::TimeDelta;
use sealpost_kernel::{AccountId, AddressId, Timestamp};
use sealpost_plans::{plan, received_window};

use crate::store::RecipientRecord;

/// How long a record read for RCPT answers the next RCPTs to its address.
pub const REUSE_FOR: TimeDelta = TimeDelta::seconds(1);
/// How many RCPTs one reading answers at most, within [`REUSE_FOR`].
pub const MAX_USES: u32 = 100;
/// Addresses remembered at once; past it, expired readings are dropped (at
/// most once per [`REUSE_FOR`]), and while that is not enough, new ones
/// are not remembered.
pub const MAX_REMEMBERED: usize = 10_000;

/// One address's reading.
struct Seen {
    record: RecipientRecord,
    /// When the read began.
    read_at: Timestamp,
    /// RCPTs answered from this reading, the first included.
    uses: u32,
}

impl Seen {
    fn fresh(&self, now: Timestamp) -> bool {
        let age = now - self.read_at;
        age >= TimeDelta::zero() && age < REUSE_FOR && self.uses < MAX_USES
    }
}

/// What this process accepted for one account while any reading of its
/// addresses is remembered: counted on top of every reading's counters
/// (some of it may be in a later reading's counters already: that only
/// reads afresh sooner).
#[derive(Default)]
struct Tally {
    /// Remembered readings of the account's addresses.
    readings: usize,
    /// RCPTs answered, from readings or by reading.
    rcpts: u64,
    /// Raw bytes of the messages delivered (what they store is close).
    delivered_bytes: u64,
}

/// Accepted recipients by email address (as RCPT looks them up: trimmed,
/// lower case). Unknown and refused addresses are never remembered: an
/// address created a moment ago takes mail at once.
#[derive(Default)]
pub struct RecipientsSeen {
    remembered: Mutex<Remembered>,
}

#[derive(Default)]
struct Remembered {
    by_email: HashMap<String, Seen>,
    /// The email each remembered address is under, for what the commit
    /// reports by address id.
    email_of: HashMap<AddressId, String>,
    by_account: HashMap<AccountId, Tally>,
    last_pruned: Option<Timestamp>,
}

impl Remembered {
    fn tally(&self, account: &AccountId) -> (u64, u64) {
        self.by_account
            .get(account)
            .map_or((0, 0), |tally| (tally.rcpts, tally.delivered_bytes))
    }

    fn insert(&mut self, email: &str, seen: Seen) {
        self.remove(email);
        self.email_of
            .insert(seen.record.address.clone(), email.to_owned());
        let tally = self
            .by_account
            .entry(seen.record.account.clone())
            .or_default();
        tally.readings += 1;
        tally.rcpts += 1;
        self.by_email.insert(email.to_owned(), seen);
    }

    fn remove(&mut self, email: &str) {
        let Some(seen) = self.by_email.remove(email) else {
            return;
        };
        self.email_of.remove(&seen.record.address);
        if let Some(tally) = self.by_account.get_mut(&seen.record.account) {
            tally.readings -= 1;
            if tally.readings == 0 {
                self.by_account.remove(&seen.record.account);
            }
        }
    }

    /// Drops the expired readings, at most once per [`REUSE_FOR`].
    fn prune(&mut self, now: Timestamp) {
        if self
            .last_pruned
            .is_some_and(|at| now - at < REUSE_FOR && now >= at)
        {
            return;
        }
        self.last_pruned = Some(now);
        let expired: Vec<String> = self
            .by_email
            .iter()
            .filter(|(_, seen)| !seen.fresh(now))
            .map(|(email, _)| email.clone())
            .collect();
        for email in expired {
            self.remove(&email);
        }
    }
}

impl RecipientsSeen {
    fn remembered(&self) -> std::sync::MutexGuard<'_, Remembered> {
        self.remembered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The record read for `address` less than [`REUSE_FOR`] ago, if it
    /// may answer this RCPT: used fewer than [`MAX_USES`] times and its
    /// account still far from its limits ([`far_from_limits`]).
    pub fn recall(&self, address: &str, now: Timestamp) -> Option<RecipientRecord> {
        let mut guard = self.remembered();
        let Remembered {
            by_email,
            by_account,
            ..
        } = &mut *guard;
        let seen = by_email.get_mut(address)?;
        // Every remembered reading has its account's tally.
        let tally = by_account.get_mut(&seen.record.account)?;
        let usable = seen.fresh(now)
            && far_from_limits(&seen.record, tally.rcpts + 1, tally.delivered_bytes, now);
        if !usable {
            guard.remove(address);
            return None;
        }
        seen.uses += 1;
        tally.rcpts += 1;
        Some(seen.record.clone())
    }

    /// Remembers `record`, read for `address` from `read_at` on and
    /// accepted, when its account is far from its limits. A reading begun
    /// later than this one is kept instead.
    pub fn remember(&self, address: &str, record: &RecipientRecord, read_at: Timestamp) {
        let mut remembered = self.remembered();
        let (rcpts, bytes) = remembered.tally(&record.account);
        if !far_from_limits(record, rcpts + 1, bytes, read_at) {
            return;
        }
        if let Some(seen) = remembered.by_email.get(address)
            && seen.read_at > read_at
        {
            return;
        }
        if remembered.by_email.len() >= MAX_REMEMBERED {
            remembered.prune(read_at);
            if remembered.by_email.len() >= MAX_REMEMBERED {
                return;
            }
        }
        remembered.insert(
            address,
            Seen {
                record: record.clone(),
                read_at,
                uses: 1,
            },
        );
    }

    /// Counts `raw_bytes` delivered to `address` against its account's
    /// storage, while any reading of the account is remembered.
    pub fn delivered(&self, address: &AddressId, raw_bytes: u64) {
        let mut remembered = self.remembered();
        let Some(account) = remembered
            .email_of
            .get(address)
            .and_then(|email| remembered.by_email.get(email))
            .map(|seen| seen.record.account.clone())
        else {
            return;
        };
        if let Some(tally) = remembered.by_account.get_mut(&account) {
            tally.delivered_bytes = tally.delivered_bytes.saturating_add(raw_bytes);
        }
    }

    /// Forgets the address: the commit found it changed or gone.
    pub fn forget(&self, address: &AddressId) {
        let mut remembered = self.remembered();
        if let Some(email) = remembered.email_of.get(address).cloned() {
            remembered.remove(&email);
        }
    }
}

/// Whether the account keeps at least a tenth of its plan's received-mail
/// allowance and of its storage quota once `rcpts` more messages (what
/// this process answered for it meanwhile, this RCPT included) and
/// `delivered_bytes` more are counted: only then may a reading up to a
/// second old answer for it. Near a limit every RCPT reads afresh.
fn far_from_limits(
    record: &RecipientRecord,
    rcpts: u64,
    delivered_bytes: u64,
    now: Timestamp,
) -> bool {
    let limits = plan(record.plan);
    let (window_start, _) = received_window(record.account_created_at, now);
    let received = record.received_in(window_start).saturating_add(rcpts);
    let stored = record.stored_bytes.saturating_add(delivered_bytes);
    let allowance_left = limits.received_per_30_days.saturating_sub(received);
    let storage_left = limits.stored_bytes.saturating_sub(stored);
    allowance_left >= limits.received_per_30_days / 10 && storage_left >= limits.stored_bytes / 10
}

#[cfg(test)]
mod tests {
    use sealpost_kernel::{AccountId, PlanId};

    use super::*;

    fn now() -> Timestamp {
        Timestamp::parse("2026-11-29T12:00:00.000Z").unwrap()
    }

    fn record(plan_id: PlanId, received: u64, stored_bytes: u64) -> RecipientRecord {
        let created = Timestamp::parse("2026-01-01T00:00:00.000Z").unwrap();
        let (window_start, _) = received_window(created, now());
        RecipientRecord {
            address: AddressId::from_trusted("adr_1".into()),
            account: AccountId::from_trusted("acc_1".into()),
            plan: plan_id,
            account_created_at: created,
            domain: "sealpost.test".into(),
            public_key: Some([9; 32]),
            key_epoch: 0,
            paused: false,
            suspended: false,
            stored_bytes,
            latest_received: Some((window_start, received)),
        }
    }

    #[test]
    fn a_reading_answers_for_a_second_and_no_longer() {
        let seen = RecipientsSeen::default();
        let free = record(PlanId::Free, 0, 0);
        seen.remember("a@sealpost.test", &free, now());
        let almost = now() + REUSE_FOR - TimeDelta::milliseconds(1);
        assert_eq!(seen.recall("a@sealpost.test", almost), Some(free));
        assert_eq!(seen.recall("a@sealpost.test", now() + REUSE_FOR), None);
        // Expired is forgotten: even a clock set back finds nothing.
        assert_eq!(seen.recall("a@sealpost.test", now()), None);
    }

    #[test]
    fn a_clock_that_went_back_reads_afresh() {
        let seen = RecipientsSeen::default();
        seen.remember("a@sealpost.test", &record(PlanId::Free, 0, 0), now());
        let earlier = now() - TimeDelta::milliseconds(1);
        assert_eq!(seen.recall("a@sealpost.test", earlier), None);
    }

    #[test]
    fn a_reading_answers_max_uses_rcpts_in_all() {
        let seen = RecipientsSeen::default();
        seen.remember("a@sealpost.test", &record(PlanId::Operator, 0, 0), now());
        let recalled = (0..MAX_USES * 2)
            .take_while(|_| seen.recall("a@sealpost.test", now()).is_some())
            .count();
        // The reading itself was the first use.
        assert_eq!(recalled, MAX_USES as usize - 1);
    }

    #[test]
    fn an_account_near_its_allowance_is_read_afresh_every_time() {
        let allowance = plan(PlanId::Free).received_per_30_days;
        let seen = RecipientsSeen::default();
        // A tenth left after this message: remembered.
        let at_edge = record(PlanId::Free, allowance - allowance / 10 - 1, 0);
        seen.remember("edge@sealpost.test", &at_edge, now());
        assert!(
            seen.remembered()
                .by_email
                .contains_key("edge@sealpost.test")
        );
        // That tenth would be crossed by the next RCPT: not answered.
        assert_eq!(seen.recall("edge@sealpost.test", now()), None);
        let near = record(PlanId::Free, allowance - allowance / 10, 0);
        seen.remember("near@sealpost.test", &near, now());
        assert!(seen.remembered().by_email.is_empty(), "not remembered");
    }

    #[test]
    fn an_account_s_addresses_count_together_against_its_limits() {
        let allowance = plan(PlanId::Free).received_per_30_days;
        let seen = RecipientsSeen::default();
        let first = record(PlanId::Free, allowance - allowance / 10 - 2, 0);
        let second = RecipientRecord {
            address: AddressId::from_trusted("adr_2".into()),
            ..first.clone()
        };
        seen.remember("a@sealpost.test", &first, now());
        seen.remember("b@sealpost.test", &second, now());
        assert_eq!(seen.remembered().by_email.len(), 2);
        // Each alone would have room for one more; together they used it.
        assert_eq!(seen.recall("a@sealpost.test", now()), None);
        assert_eq!(seen.recall("b@sealpost.test", now()), None);
    }

    #[test]
    fn a_reading_begun_later_is_kept() {
        let seen = RecipientsSeen::default();
        let older = record(PlanId::Free, 0, 0);
        let newer = RecipientRecord {
            key_epoch: 1,
            ..older.clone()
        };
        let later = now() + TimeDelta::milliseconds(10);
        seen.remember("a@sealpost.test", &newer, later);
        seen.remember("a@sealpost.test", &older, now());
        assert_eq!(seen.recall("a@sealpost.test", later), Some(newer));
    }

    #[test]
    fn an_account_near_its_storage_quota_is_read_afresh_once_deliveries_bring_it_there() {
        let quota = plan(PlanId::Free).stored_bytes;
        let seen = RecipientsSeen::default();
        let half_full = record(PlanId::Free, 0, quota / 2);
        seen.remember("a@sealpost.test", &half_full, now());
        assert!(seen.recall("a@sealpost.test", now()).is_some());
        seen.delivered(&half_full.address, quota / 2 - quota / 10 + 1);
        assert_eq!(seen.recall("a@sealpost.test", now()), None);
        let near_full = record(PlanId::Free, 0, quota - quota / 10 + 1);
        seen.remember("b@sealpost.test", &near_full, now());
        assert_eq!(seen.recall("b@sealpost.test", now()), None);
    }

    #[test]
    fn a_forgotten_address_is_read_afresh() {
        let seen = RecipientsSeen::default();
        let free = record(PlanId::Free, 0, 0);
        seen.remember("a@sealpost.test", &free, now());
        let other = RecipientRecord {
            address: AddressId::from_trusted("adr_2".into()),
            ..free.clone()
        };
        seen.remember("b@sealpost.test", &other, now());
        seen.forget(&free.address);
        assert_eq!(seen.recall("a@sealpost.test", now()), None);
        assert_eq!(seen.recall("b@sealpost.test", now()), Some(other));
    }

    #[test]
    fn past_max_remembered_only_fresh_readings_are_kept() {
        let seen = RecipientsSeen::default();
        // A plan whose tenth is far above what this remembers.
        let numbered = |n: usize| RecipientRecord {
            address: AddressId::from_trusted(format!("adr_{n}")),
            ..record(PlanId::Enterprise, 0, 0)
        };
        for n in 0..MAX_REMEMBERED {
            seen.remember(&format!("old{n}@sealpost.test"), &numbered(n), now());
        }
        assert_eq!(seen.remembered().by_email.len(), MAX_REMEMBERED);
        let later = now() + REUSE_FOR;
        let new = numbered(MAX_REMEMBERED);
        seen.remember("new@sealpost.test", &new, later);
        assert_eq!(seen.recall("new@sealpost.test", later), Some(new));
        let remembered = seen.remembered();
        assert_eq!(
            remembered.by_email.len(),
            1,
            "the expired readings were dropped"
        );
        assert_eq!(remembered.email_of.len(), 1);
        drop(remembered);
        // Full of fresh readings: a new one is not remembered.
        for n in 1..MAX_REMEMBERED {
            seen.remember(&format!("fresh{n}@sealpost.test"), &numbered(n), later);
        }
        assert_eq!(seen.remembered().by_email.len(), MAX_REMEMBERED);
        let one_more = numbered(MAX_REMEMBERED + 1);
        seen.remember("one-more@sealpost.test", &one_more, later);
        assert_eq!(seen.recall("one-more@sealpost.test", later), None);
    }
}
