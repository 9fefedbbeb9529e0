use async_trait::async_trait;
use sealpost_activity::Records;
use sealpost_kernel::{
    AccountId, AddressId, DeviceId, PageRequest, PairingSessionId, PlanId, StoreError, Timestamp,
};
use sealpost_seal::SealedBox;

use crate::{Device, KeyBundle, PairingSession};

/// Everything a claim writes, in one transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct Claim {
    pub session: PairingSessionId,
    pub device: Device,
    pub credential_hash: [u8; 32],
    pub handoff: SealedBox,
    /// The plan the claim was decided on; the store answers
    /// [`ClaimOutcome::PlanChanged`] when the account (locked) holds another.
    pub plan: PlanId,
    /// The plan's device limit; `None` is unlimited.
    pub max_devices: Option<u32>,
    pub records: Records,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimOutcome {
    Claimed,
    /// Claimed before, by anyone.
    AlreadyUsed,
    /// Gone, or not looked up by this account.
    NotFound,
    /// The account already holds its plan's devices.
    LimitReached,
    /// The device id was used before.
    IdTaken,
    /// The account's plan is no longer the one the claim was decided on:
    /// decide again on this one.
    PlanChanged(PlanId),
}

/// Guarded writes answer `Changed` only when the record was the caller's and
/// still in the state the decision was made on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    Changed,
    NotFound,
    /// The record changed since it was read; decide again.
    Stale,
}

/// What [`DeviceRepository::insert_pairing`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairingInsert {
    Inserted,
    /// The code collides with a live session's: draw another.
    CodeTaken,
    /// The client address already holds its live sessions.
    TooMany,
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait DeviceRepository: Send + Sync {
    /// Inserts the session opened from `source` (a hash of the client
    /// address) unless that source holds `max` unclaimed sessions polled
    /// after `live_since`, or its code collides with a live session's.
    /// Counted and inserted under one lock per source.
    async fn insert_pairing(
        &self,
        session: PairingSession,
        source: String,
        max: u32,
        live_since: Timestamp,
    ) -> Result<PairingInsert, StoreError>;
    /// The session of the token, its last poll set to `now`, unless it is
    /// unclaimed and was last polled at or before `live_since` (gone).
    async fn poll_pairing(
        &self,
        token_hash: [u8; 32],
        now: Timestamp,
        live_since: Timestamp,
    ) -> Result<Option<PairingSession>, StoreError>;
    async fn pairing_by_token(
        &self,
        token_hash: [u8; 32],
    ) -> Result<Option<PairingSession>, StoreError>;
    async fn pairing_by_id(
        &self,
        id: &PairingSessionId,
    ) -> Result<Option<PairingSession>, StoreError>;
    /// Only sessions nobody claimed yet, polled after `live_since`.
    async fn live_pairing_by_code(
        &self,
        code: &str,
        live_since: Timestamp,
    ) -> Result<Option<PairingSession>, StoreError>;
    /// Marks the session detected by `by` while it is unclaimed and no other
    /// account detected it; `false` otherwise.
    async fn mark_detected(
        &self,
        id: &PairingSessionId,
        by: &AccountId,
    ) -> Result<bool, StoreError>;
    /// Deletes the session if it is still unclaimed; `false` otherwise.
    async fn delete_unclaimed_pairing(&self, id: &PairingSessionId) -> Result<bool, StoreError>;
    /// Removes and returns the waiting credential (first poll after the claim).
    async fn take_handoff(&self, id: &PairingSessionId) -> Result<Option<SealedBox>, StoreError>;
    /// Atomically (one lock per key): when every key has fewer than `limit`
    /// failures after `since`, records one failure at `at` for each and
    /// answers `None` (the lookup may go ahead; [`release_lookup`] takes the
    /// failure back when it succeeds); otherwise records nothing and answers
    /// the failures of the first key at its limit.
    ///
    /// [`release_lookup`]: DeviceRepository::release_lookup
    async fn reserve_lookup(
        &self,
        keys: Vec<String>,
        at: Timestamp,
        since: Timestamp,
        limit: u32,
    ) -> Result<Option<Vec<Timestamp>>, StoreError>;
    /// Removes one failure at `at` for each key (a lookup that succeeded).
    async fn release_lookup(&self, keys: Vec<String>, at: Timestamp) -> Result<(), StoreError>;
    async fn claim(&self, claim: Claim) -> Result<ClaimOutcome, StoreError>;

    async fn devices(
        &self,
        account: &AccountId,
        page: &PageRequest,
    ) -> Result<Vec<Device>, StoreError>;
    async fn device(
        &self,
        account: &AccountId,
        id: &DeviceId,
    ) -> Result<Option<Device>, StoreError>;
    async fn assigned_addresses(
        &self,
        account: &AccountId,
        id: &DeviceId,
    ) -> Result<Vec<AddressId>, StoreError>;
    async fn update_profile(
        &self,
        account: &AccountId,
        id: &DeviceId,
        profile: SealedBox,
    ) -> Result<bool, StoreError>;
    /// Marks the device disabled and deletes its credential.
    async fn disable(&self, account: &AccountId, id: &DeviceId) -> Result<bool, StoreError>;
    /// Deletes the device and its credential and retires its id, provided its
    /// assigned addresses are still `assigned` (they become unassigned).
    async fn remove(
        &self,
        account: &AccountId,
        id: &DeviceId,
        assigned: Vec<AddressId>,
        records: Records,
    ) -> Result<WriteOutcome, StoreError>;
    /// Sets `lastActiveAt` and `connected`; writes `records` with it.
    async fn record_activity(
        &self,
        account: &AccountId,
        id: &DeviceId,
        at: Timestamp,
        records: Records,
    ) -> Result<(), StoreError>;
    async fn set_keys(
        &self,
        account: &AccountId,
        id: &DeviceId,
        bundle: KeyBundle,
    ) -> Result<bool, StoreError>;
    async fn keys(
        &self,
        account: &AccountId,
        id: &DeviceId,
    ) -> Result<Option<KeyBundle>, StoreError>;
    /// Connected, enabled devices last active at or before `before`.
    async fn stale_devices(&self, before: Timestamp) -> Result<Vec<Device>, StoreError>;
    /// Marks the device disconnected, with its records, if it is still stale.
    async fn mark_disconnected(
        &self,
        id: &DeviceId,
        before: Timestamp,
        records: Records,
    ) -> Result<bool, StoreError>;
    /// Removes unclaimed sessions (never claimed ones) created before
    /// `created_before` or last polled before `polled_before`, and lookup
    /// failures before `failures_before`.
    async fn sweep_pairing(
        &self,
        created_before: Timestamp,
        polled_before: Timestamp,
        failures_before: Timestamp,
    ) -> Result<u64, StoreError>;
}
