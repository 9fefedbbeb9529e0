//! The storage traits the address service is given.

use async_trait::async_trait;
use sealpost_activity::Records;
use sealpost_kernel::{AccountId, AddressId, DeviceId, PlanId, StoreError, Timestamp};
use sealpost_seal::SealedBox;

use crate::model::{Address, OwnDomainState};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateOutcome {
    Created,
    IdTaken,
    /// The name is live or retired.
    AddressTaken,
    LimitReached,
    /// The account's plan is no longer the one the request was decided on:
    /// decide again on this one.
    PlanChanged(PlanId),
    /// The own domain was removed (or stopped being live) since it was checked.
    DomainGone,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssignOutcome {
    Assigned,
    NotFound,
    /// The device already holds `max_per_device` addresses.
    DeviceFull,
    /// The address moved since it was read; decide again.
    Stale,
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AddressRepository: Send + Sync {
    /// Inserts unless the account's plan (read under the account's lock) is
    /// not `plan`, the id was ever used, the name is live or retired, the
    /// account already holds `max_addresses`, or (`on_own_domain`) the
    /// account's own domain is no longer live: checked under the lock its
    /// removal takes, so a domain and an address on it never race.
    async fn create(
        &self,
        address: Address,
        plan: PlanId,
        on_own_domain: bool,
        max_addresses: u32,
        records: Records,
    ) -> Result<CreateOutcome, StoreError>;
    async fn addresses(
        &self,
        account: &AccountId,
        device: Option<DeviceId>,
    ) -> Result<Vec<Address>, StoreError>;
    async fn address(
        &self,
        account: &AccountId,
        id: &AddressId,
    ) -> Result<Option<Address>, StoreError>;
    /// Counts every address of the account, and those assigned.
    async fn count(&self, account: &AccountId) -> Result<(u64, u64), StoreError>;
    /// Changes label and retention; a shorter retention deletes mail already past it at `now`.
    async fn update(
        &self,
        account: &AccountId,
        id: &AddressId,
        meta: Option<SealedBox>,
        retention_days: Option<u8>,
        now: Timestamp,
    ) -> Result<bool, StoreError>;
    /// Deletes the address, its mail and blobs; retires its id and name.
    async fn delete(
        &self,
        account: &AccountId,
        id: &AddressId,
        records: Records,
    ) -> Result<bool, StoreError>;
    /// Assigns if the address is still on `expected_worker` and the device holds fewer than `max_per_device`.
    async fn assign(
        &self,
        account: &AccountId,
        id: &AddressId,
        device: &DeviceId,
        expected_device: Option<DeviceId>,
        max_per_device: Option<u32>,
        records: Records,
    ) -> Result<AssignOutcome, StoreError>;
    async fn unassign(
        &self,
        account: &AccountId,
        id: &AddressId,
        device: &DeviceId,
        records: Records,
    ) -> Result<bool, StoreError>;
}

/// The account's own domains (docs/domains.md).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait OwnDomainDirectory: Send + Sync {
    /// The account's proved own domain `name` (lower case ASCII), if any.
    async fn own_domain(
        &self,
        account: &AccountId,
        name: &str,
    ) -> Result<Option<OwnDomainState>, StoreError>;
}
