//! RCPT's recent answers, reused for a moment: under load the same few
//! addresses get mail many times a second, and reading an address with its
//! account's counters was the costliest statement of a delivery
//! (docs/benchmarks.md, 2026-11-29). Nothing here can let mail through that
//! the commit would refuse: the commit re-checks that the address exists,
//! has the key the message was sealed to, is paused or not as the message
//! was written, and that its account is not suspended
//! ([`crate::store::Commit::RecipientChanged`] and
//! [`crate::store::Commit::RecipientGone`]), and either answer forgets the
//! address here. What a remembered record can be behind on are the
//! account's counters, so it is reused only far from the plan's limits.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use chrono::TimeDelta;
use sealpost_kernel::{AddressId, Timestamp};
use sealpost_plans::{plan, received_window};

use crate::store::RecipientRecord;

/// How long a record read for RCPT answers the next RCPTs to its address.
pub const REUSE_FOR: TimeDelta = TimeDelta::seconds(1);
/// How many RCPTs one reading answers at most, within [`REUSE_FOR`].
pub const MAX_USES: u32 = 100;
/// Addresses remembered at once; past it, expired records are dropped, and
/// if that is not enough, new ones are not remembered until some expire.
pub const MAX_REMEMBERED: usize = 10_000;

struct Seen {
    record: RecipientRecord,
    read_at: Timestamp,
    /// RCPTs answered from this reading, the first included.
    uses: u32,
    /// Sealed bytes this process committed to the address since the read.
    delivered_bytes: u64,
}

impl Seen {
    fn fresh(&self, now: Timestamp) -> bool {
        let age = now - self.read_at;
        age >= TimeDelta::zero() && age < REUSE_FOR && self.uses < MAX_USES
    }
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
}

impl Remembered {
    fn remove(&mut self, email: &str) {
        if let Some(seen) = self.by_email.remove(email) {
            self.email_of.remove(&seen.record.address);
        }
    }

    fn seen_mut(&mut self, address: &AddressId) -> Option<&mut Seen> {
        let email = self.email_of.get(address)?;
        self.by_email.get_mut(email)
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
        let mut remembered = self.remembered();
        let seen = remembered.by_email.get_mut(address)?;
        let usable = seen.fresh(now)
            && far_from_limits(&seen.record, seen.uses + 1, seen.delivered_bytes, now);
        if !usable {
            remembered.remove(address);
            return None;
        }
        seen.uses += 1;
        Some(seen.record.clone())
    }

    /// Remembers `record`, just read for `address` and accepted, when its
    /// account is far from its limits.
    pub fn remember(&self, address: &str, record: &RecipientRecord, now: Timestamp) {
        if !far_from_limits(record, 1, 0, now) {
            return;
        }
        let mut remembered = self.remembered();
        if remembered.by_email.len() >= MAX_REMEMBERED {
            let Remembered { by_email, email_of } = &mut *remembered;
            by_email.retain(|_, seen| seen.fresh(now));
            email_of.retain(|_, email| by_email.contains_key(email));
            if by_email.len() >= MAX_REMEMBERED {
                return;
            }
        }
        remembered.remove(address);
        remembered
            .email_of
            .insert(record.address.clone(), address.to_owned());
        remembered.by_email.insert(
            address.to_owned(),
            Seen {
                record: record.clone(),
                read_at: now,
                uses: 1,
                delivered_bytes: 0,
            },
        );
    }

    /// Counts `bytes` committed to `address` against its remembered
    /// account's storage.
    pub fn delivered(&self, address: &AddressId, bytes: u64) {
        if let Some(seen) = self.remembered().seen_mut(address) {
            seen.delivered_bytes = seen.delivered_bytes.saturating_add(bytes);
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
/// allowance and of its storage quota once `uses` more messages (every RCPT
/// answered from the reading, this one included) and `delivered_bytes` more
/// are counted: only then may a reading up to a second old answer for it.
/// Near a limit every RCPT reads afresh.
fn far_from_limits(
    record: &RecipientRecord,
    uses: u32,
    delivered_bytes: u64,
    now: Timestamp,
) -> bool {
    let limits = plan(record.plan);
    let (window_start, _) = received_window(record.account_created_at, now);
    let received = record
        .received_in(window_start)
        .saturating_add(u64::from(uses));
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
        // That tenth would be crossed by the next RCPT: not answered.
        assert_eq!(seen.recall("edge@sealpost.test", now()), None);
        let near = record(PlanId::Free, allowance - allowance / 10, 0);
        seen.remember("near@sealpost.test", &near, now());
        assert_eq!(seen.recall("near@sealpost.test", now()), None);
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
        let numbered = |n: usize| RecipientRecord {
            address: AddressId::from_trusted(format!("adr_{n}")),
            ..record(PlanId::Free, 0, 0)
        };
        for n in 0..MAX_REMEMBERED {
            seen.remember(&format!("old{n}@sealpost.test"), &numbered(n), now());
        }
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
        let one_more = numbered(MAX_REMEMBERED + 1);
        seen.remember("one-more@sealpost.test", &one_more, later);
        assert_eq!(seen.recall("one-more@sealpost.test", later), None);
    }
}
