//! The storage trait the team service is given.

use async_trait::async_trait;
use sealpost_kernel::{AccountId, AddressId, PlanId, StoreError};

use crate::model::{AddOutcome, Grant, Member, Membership, NewMember, OwnedAddress};

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait TeamRepository: Send + Sync {
    /// The account's plan; `None` when there is no such account.
    async fn plan(&self, account: &AccountId) -> Result<Option<PlanId>, StoreError>;
    /// The X25519 key the account signs in with.
    async fn sign_in_key(&self, account: &AccountId) -> Result<Option<[u8; 32]>, StoreError>;
    /// The owner's members with their grants, oldest member first.
    async fn members(&self, owner: &AccountId) -> Result<Vec<Member>, StoreError>;
    /// Adds the member unless the owner is no longer on `plan`, it is a
    /// member already or the team holds `limit` members, checked under a
    /// lock on the owner (the lock a plan change takes too).
    async fn add_member(
        &self,
        member: NewMember,
        plan: PlanId,
        limit: u32,
    ) -> Result<AddOutcome, StoreError>;
    /// Removes the member and every grant; `false` when it was none.
    async fn remove_member(
        &self,
        owner: &AccountId,
        member: &AccountId,
    ) -> Result<bool, StoreError>;
    /// Which of `inboxes` are live addresses of the owner, with their key epoch.
    async fn owned_addresses(
        &self,
        owner: &AccountId,
        addresses: Vec<AddressId>,
    ) -> Result<Vec<(AddressId, OwnedAddress)>, StoreError>;
    /// Stores every grant (replacing one at the same address and epoch) and
    /// sets each address's access on every epoch the member holds for it, in
    /// one transaction; `false` (nothing stored) when the member is not in
    /// the team.
    async fn put_grants(
        &self,
        owner: &AccountId,
        member: &AccountId,
        grants: Vec<Grant>,
    ) -> Result<bool, StoreError>;
    /// Removes the member's grants for one address; `false` when there were none.
    async fn remove_grants(
        &self,
        owner: &AccountId,
        member: &AccountId,
        address: &AddressId,
    ) -> Result<bool, StoreError>;
    /// The teams `member` is in, oldest first, with the owners' plans and
    /// the shared addresses (`active` is decided by the service).
    async fn memberships(&self, member: &AccountId) -> Result<Vec<Membership>, StoreError>;
}
