//! What a team is made of.

use sealpost_kernel::{AccountId, AddressId, PlanId, Timestamp, string_enum};
use sealpost_seal::SealedBox;

string_enum! {
    /// What a member may do with a shared address.
    #[derive(PartialOrd, Ord)]
    pub enum Access: "access" {
        /// List and read its mail (and mark it read).
        Read => "read",
        /// Also send from it, move, star and delete its mail.
        Send => "send",
    }
}

/// One epoch's grant as the owner sees it (`GET /team`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberGrant {
    pub address: AddressId,
    pub epoch: u32,
    pub access: Access,
}

/// A member of the owner's team.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub member: AccountId,
    /// The key the member signs in with; grants are sealed to it.
    pub public_key: [u8; 32],
    /// That key sealed in the owner's vault (record team-member).
    pub pin: SealedBox,
    pub joined_at: Timestamp,
    /// Ordered by address, then epoch.
    pub grants: Vec<MemberGrant>,
}

/// `GET /team`: the members and the plan's limit.
#[derive(Clone, Debug, PartialEq)]
pub struct Team {
    pub members: Vec<Member>,
    pub limit: u32,
}

/// A member to add.
#[derive(Clone, Debug, PartialEq)]
pub struct NewMember {
    pub owner: AccountId,
    pub member: AccountId,
    pub public_key: [u8; 32],
    pub pin: SealedBox,
    pub joined_at: Timestamp,
}

/// What adding a member did (the store checks the count and the pair under
/// the owner's lock, so two concurrent adds cannot pass the limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddOutcome {
    Added,
    AlreadyMember,
    LimitReached,
    /// The owner (locked) is on this plan, not the one `limit` came from:
    /// decide again.
    PlanChanged(PlanId),
}

/// One grant as the owner's client sends it.
#[derive(Clone, Debug, PartialEq)]
pub struct GrantInput {
    pub address: AddressId,
    pub epoch: u32,
    pub access: Access,
    /// `{inboxKey, sealingKey}` sealed to the member's key with the grant's
    /// associated data.
    pub sealed: SealedBox,
}

/// A checked grant, ready to store.
#[derive(Clone, Debug, PartialEq)]
pub struct Grant {
    pub address: AddressId,
    pub epoch: u32,
    pub access: Access,
    pub sealed: SealedBox,
    pub granted_at: Timestamp,
}

/// An address of the owner, as grants need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnedAddress {
    pub key_epoch: u32,
}

/// One epoch's keys sealed to the member.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedKey {
    pub epoch: u32,
    pub sealed: SealedBox,
}

/// An address shared with the member.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedAddress {
    pub address: AddressId,
    pub email_address: String,
    pub key_epoch: u32,
    pub access: Access,
    /// Ordered by epoch.
    pub grants: Vec<SharedKey>,
}

/// A team the caller is in, as the store reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Membership {
    pub owner: AccountId,
    /// The owner's plan now.
    pub owner_plan: PlanId,
    pub joined_at: Timestamp,
    /// False while the owner's plan has no teams.
    pub active: bool,
    pub addresses: Vec<SharedAddress>,
}
