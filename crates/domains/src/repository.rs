//! The traits the domain service is given: the store, the public DNS and
//! the DKIM key maker.

use async_trait::async_trait;
use sealpost_activity::Records;
use sealpost_kernel::{AccountId, PlanId, StoreError, Timestamp};

use crate::model::{DkimKeyPair, OwnDomain, StoredDkim};
use crate::name::DomainName;
use crate::steps::Step;

/// Makes DKIM key pairs (an adapter; key generation is slow and needs a
/// cryptography library the domain does not carry).
pub trait DkimKeyMaker: Send + Sync {
    fn generate(&self) -> Result<DkimKeyPair, String>;
}

/// A failed DNS lookup: timeout, server failure, refused. Not evidence that
/// a record is absent (an empty answer or NXDOMAIN is `Ok(vec![])`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("DNS lookup failed: {0}")]
pub struct LookupError(pub String);

/// The public DNS, as the checks see it.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait DnsLookup: Send + Sync {
    /// The TXT strings at `name` (each record's strings joined).
    async fn txt(&self, name: &str) -> Result<Vec<String>, LookupError>;
    /// The NS host names delegated for `name` (lower case, no trailing dot).
    async fn ns(&self, name: &str) -> Result<Vec<String>, LookupError>;
    /// The MX exchange host names of `name` (lower case, no trailing dot).
    async fn mx(&self, name: &str) -> Result<Vec<String>, LookupError>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddOutcome {
    Added,
    /// The account holds `max` domains already.
    LimitReached,
    /// Another account has proved this name.
    TakenByOther,
    /// The account already claimed it.
    AlreadyYours,
    /// The account (locked) is on this plan, not the one `max` came from:
    /// decide again.
    PlanChanged(PlanId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProveOutcome {
    Proved,
    /// Another account proved it first.
    TakenByOther,
    /// The claim changed or went since it was read.
    Stale,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoveOutcome {
    Removed,
    NotFound,
    /// Addresses exist on it.
    InUse,
}

/// A step change guarded by the step it was decided from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepChange {
    pub account: AccountId,
    pub name: DomainName,
    pub from: Step,
    pub to: Step,
    pub checked_at: Timestamp,
    pub next_check_at: Timestamp,
    pub checks_in_step: u32,
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait DomainRepository: Send + Sync {
    /// Adds a claim unless the account holds `max` domains (what `plan`
    /// allows; [`AddOutcome::PlanChanged`] when the account, locked, is on
    /// another), already claimed it, or another account proved it.
    async fn add(
        &self,
        domain: &OwnDomain,
        plan: PlanId,
        max: u32,
        records: Records,
    ) -> Result<AddOutcome, StoreError>;
    async fn domains(&self, account: &AccountId) -> Result<Vec<OwnDomain>, StoreError>;
    async fn domain(
        &self,
        account: &AccountId,
        name: &DomainName,
    ) -> Result<Option<OwnDomain>, StoreError>;
    /// Records the proof, the DKIM key and the step, unless another account
    /// proved the name first; every other account's claim on the name moves
    /// to `attention` (with a `domain.attention` entry each).
    async fn prove(
        &self,
        change: &StepChange,
        dkim: Option<StoredDkim>,
        records: Records,
    ) -> Result<ProveOutcome, StoreError>;
    /// Applies `change` if the domain is still at `change.from`.
    async fn update(&self, change: &StepChange, records: Records) -> Result<bool, StoreError>;
    /// Removes the claim unless addresses exist on the name for the account.
    async fn remove(
        &self,
        account: &AccountId,
        name: &DomainName,
        records: Records,
    ) -> Result<RemoveOutcome, StoreError>;
    /// Up to `limit` domains whose next check is due at `now`, oldest first.
    async fn due(&self, now: Timestamp, limit: i64) -> Result<Vec<OwnDomain>, StoreError>;
    /// Marks the domains of accounts on `without` (plans lacking own
    /// domains) as having lost them at `now` where not yet marked, and
    /// clears the mark of the others. Returns how many rows changed.
    async fn track_plan_loss(&self, without: &[PlanId], now: Timestamp) -> Result<u64, StoreError>;
    /// Removes the domains (and their DKIM keys) of accounts whose missed
    /// payment's pause reached its `deletesAt` by `now` unpaid: the pause
    /// holds every proved own domain (`pause.domains`). Runs before the
    /// pause's addresses are deleted, which ends the pause this reads; an
    /// address the pause did not hold stays and, its domain gone, takes no
    /// more mail.
    async fn remove_unpaid(&self, now: Timestamp) -> Result<u64, StoreError>;
}
