//! Teams (docs/api.md "Teams"): an owner's members and the address keys sealed
//! to them, and the teams an account is in.
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `GET /team` | | [`Team`] |
//! | `POST /team/members` | [`AddMemberRequest`] | [`TeamMemberReply`] (201) |
//! | `DELETE /team/members/{memberId}` | | 204 |
//! | `POST /team/members/{memberId}/grants` | [`GrantsRequest`] | [`TeamMemberReply`] |
//! | `DELETE /team/members/{memberId}/grants/{inboxId}` | | 204 |
//! | `POST /inboxes/{id}/rotate` | [`RotateRequest`] | 409 or 503 today |
//! | `GET /memberships` | | [`MembershipList`] |
//! | `DELETE /memberships/{ownerId}` | | 204 |
//!
//! A grant's box holds [`GrantKeys`] sealed to the member's sign-in key with
//! the associated data `service/v1/team-grant:<owner>:<member>:<inbox>:<epoch>`.

use sealpost_kernel::{AccountId, AddressId, Timestamp};
use sealpost_seal::SealedBox;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::encoding::wire_enum;

wire_enum!(
    /// What a member may do with a shared address.
    GrantAccess {
        /// List and read its mail.
        Read = "read",
        /// Also send from it, move, star and delete its mail.
        Send = "send",
    }
);

/// One epoch of one address held by a member, as the owner sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TeamGrant {
    #[serde(rename = "inboxId")]
    pub address_id: AddressId,
    pub epoch: u32,
    /// `read` or `send`.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub access: GrantAccess,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TeamMember {
    pub member_id: AccountId,
    /// The member's sign-in key (X25519, base64url): grants are sealed to it.
    pub public_key: String,
    /// That key sealed in the owner's vault.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub pin: SealedBox,
    pub joined_at: Timestamp,
    pub grants: Vec<TeamGrant>,
}

/// `GET /team`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Team {
    pub members: Vec<TeamMember>,
    /// The plan's team-member limit.
    pub limit: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TeamMemberReply {
    pub member: TeamMember,
}

/// `POST /team/members`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AddMemberRequest {
    /// `acct_...` of the account joining.
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::AccountId))]
    pub member_id: String,
    /// The key that account signs in with (from its join code), base64url.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Key32))]
    pub public_key: String,
    /// `publicKey` sealed to the owner's vault key.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::SealedBoxJson))]
    pub pin: Value,
}

impl AddMemberRequest {
    pub fn new(member_id: &AccountId, public_key: &[u8; 32], pin: &SealedBox) -> Self {
        Self {
            member_id: member_id.to_string(),
            public_key: sealpost_seal::b64::encode(public_key),
            pin: crate::sealed_json(pin),
        }
    }
}

/// One grant of `POST /team/members/{memberId}/grants`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GrantRequest {
    #[serde(rename = "inboxId")]
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::AddressId))]
    pub address_id: String,
    /// 0 up to the address's `keyEpoch`.
    pub epoch: u32,
    /// `read` or `send`; the same for every epoch of the address.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::GrantAccessName))]
    pub access: GrantAccess,
    /// [`GrantKeys`] sealed to the member's key.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::SealedBoxJson))]
    pub sealed: Value,
}

impl GrantRequest {
    pub fn new(address: &AddressId, epoch: u32, access: GrantAccess, sealed: &SealedBox) -> Self {
        Self {
            address_id: address.to_string(),
            epoch,
            access,
            sealed: crate::sealed_json(sealed),
        }
    }
}

/// `POST /team/members/{memberId}/grants`: up to 500, all or nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GrantsRequest {
    pub grants: Vec<GrantRequest>,
}

/// What a grant's box holds: one address's two keys at one epoch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantKeys {
    /// The X25519 secret mail is sealed to, base64url.
    #[serde(rename = "inboxKey")]
    pub address_key: String,
    /// The address's sealing key, base64url.
    pub sealing_key: String,
}

/// A member's grant in `POST /inboxes/{id}/rotate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RotateGrant {
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::AccountId))]
    pub member_id: String,
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::GrantAccessName))]
    pub access: GrantAccess,
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::SealedBoxJson))]
    pub sealed: Value,
}

/// `POST /inboxes/{id}/rotate` (not available yet: 503 `feature_disabled`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RotateRequest {
    /// The address's `keyEpoch` plus one.
    pub epoch: u32,
    /// The new epoch's public key, base64url.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Key32))]
    pub public_key: String,
    #[serde(default)]
    pub grants: Vec<RotateGrant>,
}

/// One epoch's keys sealed to the member.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SharedKey {
    pub epoch: u32,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub sealed: SealedBox,
}

/// An address shared with the caller.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SharedAddress {
    #[serde(rename = "inboxId")]
    pub address_id: AddressId,
    pub email_address: String,
    pub key_epoch: u32,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub access: GrantAccess,
    /// The grants sealed to the caller, by epoch.
    pub grants: Vec<SharedKey>,
}

/// A team the caller is in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Membership {
    pub owner_id: AccountId,
    pub joined_at: Timestamp,
    /// False while the owner's plan has no teams: nothing shared is reachable then.
    pub active: bool,
    pub addresses: Vec<SharedAddress>,
}

/// `GET /memberships`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MembershipList {
    pub memberships: Vec<Membership>,
}
