//! Addresses and domains (docs/api.md "Addresses", "Own domains"). An address
//! is an *inbox* on the wire.
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `GET /domains` | | [`DomainList`] |
//! | `GET /inboxes` | | [`AddressList`] |
//! | `POST /inboxes` | [`CreateAddressRequest`] | [`AddressReply`] |
//! | `GET /inboxes/allocation` | | [`Allocation`] |
//! | `PATCH /inboxes/{id}` | [`UpdateAddressRequest`] | [`AddressReply`] |
//! | `POST /workers/{id}/inboxes` | [`AssignRequest`] | [`AddressReply`] |
//!
//! An address without a public key refuses mail. Its label (`meta`) is
//! sealed with context `service/v1/inbox-meta:<inboxId>`.

use sealpost_kernel::{AccountId, AddressId, DeviceId, PlanId, Timestamp};
use sealpost_seal::{SealedBox, b64};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::encoding::{opt_b64_32, sealed_json, wire_enum};

wire_enum!(
    /// An address's status.
    AddressStatus {
        /// Assigned to a device.
        Active = "active",
        Unassigned = "unassigned",
    }
);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Domain {
    pub domain: String,
    /// True for a domain belonging to this account alone.
    pub reserved: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DomainList {
    pub domains: Vec<Domain>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Address {
    pub id: AddressId,
    pub operator_id: AccountId,
    pub email_address: String,
    /// `active` (assigned to a device) or `unassigned`.
    pub status: AddressStatus,
    pub created_at: Timestamp,
    #[serde(rename = "assignedWorkerId")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assigned_device_id: Option<DeviceId>,
    pub retention_days: u8,
    pub paused_at: Option<Timestamp>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub meta: Option<SealedBox>,
    pub key_epoch: u32,
    /// X25519 public key mail is sealed to; null means the address refuses mail.
    #[serde(default, with = "opt_b64_32")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub public_key: Option<[u8; 32]>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AddressReply {
    #[serde(rename = "inbox")]
    pub address: Address,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AddressList {
    #[serde(rename = "inboxes")]
    pub addresses: Vec<Address>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreateAddressRequest {
    /// `ibx_` + 4 to 48 letters and digits, chosen by the client.
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::AddressId))]
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_part: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 90))]
    pub retention_days: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schemas::SealedBoxJson>))]
    pub meta: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schemas::Key32>))]
    pub public_key: Option<String>,
}

impl CreateAddressRequest {
    /// Address `id` on `domain` (one of `GET /domains`), everything else
    /// left to the service: a random name, 7 days' retention, no label, and
    /// no public key (it refuses mail until it has one).
    #[must_use]
    pub fn new(id: &AddressId, domain: impl Into<String>) -> Self {
        Self {
            id: id.to_string(),
            domain: Some(domain.into()),
            prefix: None,
            local_part: None,
            email_address: None,
            retention_days: None,
            meta: None,
            public_key: None,
        }
    }

    /// The sealed label.
    #[must_use]
    pub fn with_meta(mut self, meta: &SealedBox) -> Self {
        self.meta = Some(sealed_json(meta));
        self
    }

    /// The X25519 key mail to the address is sealed to.
    #[must_use]
    pub fn with_public_key(mut self, public_key: &[u8; 32]) -> Self {
        self.public_key = Some(b64::encode(public_key));
        self
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct UpdateAddressRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schemas::SealedBoxJson>))]
    pub meta: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 90))]
    pub retention_days: Option<i64>,
}

impl UpdateAddressRequest {
    /// A new sealed label.
    #[must_use]
    pub fn with_meta(mut self, meta: &SealedBox) -> Self {
        self.meta = Some(sealed_json(meta));
        self
    }

    /// A new retention, 1 to 90 days; a shorter one deletes stored mail past it.
    #[must_use]
    pub fn with_retention_days(mut self, days: u8) -> Self {
        self.retention_days = Some(i64::from(days));
        self
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Allocation {
    pub plan_id: PlanId,
    /// Addresses the plan allows.
    pub limit: u64,
    /// Addresses on the account, assigned or not.
    pub used: u64,
    pub assigned: u64,
    /// How many more can be created.
    pub remaining: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AssignRequest {
    #[serde(rename = "inboxId")]
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::AddressId))]
    pub address_id: String,
}

impl AssignRequest {
    /// Assigns address `inbox_id`.
    #[must_use]
    pub fn new(address_id: &AddressId) -> Self {
        Self {
            address_id: address_id.to_string(),
        }
    }
}
