//! Support (docs/api.md "Support"): sealed tickets (session only).
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `GET /support` | | [`SupportOverview`] |
//! | `POST /support/tickets` | [`CreateTicketRequest`] | 201 [`TicketReply`] |
//! | `GET /support/tickets/{id}` | | [`TicketDetail`] |
//! | `POST /support/tickets/{id}/messages` | [`TicketMessageRequest`] | 201 [`MessageAdded`] |
//! | `POST /support/tickets/{id}/close` | | [`TicketReply`] |
//! | `POST /support/tickets/{id}/reopen` | | [`TicketReply`] |
//! | `POST /support/key` | [`SupportKeyRequest`] | [`SupportKeyReply`] |
//!
//! The header and each message travel as two boxes, `forStaff` and
//! `forAccount`; the account gets only its `forAccount` copies back, staff
//! only the `forStaff` ones.

use sealpost_kernel::{AccountId, TicketId, TicketMessageId, Timestamp};
use sealpost_seal::SealedBox;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::encoding::{sealed_json, wire_enum};

wire_enum!(
    /// Where a ticket stands.
    TicketStatus {
        Open = "open",
        Resolved = "resolved",
    }
);

wire_enum!(
    /// Who wrote.
    TicketAuthor {
        Account = "account",
        Staff = "staff",
    }
);

/// A ticket as its reader sees it: the account its `forAccount` copy of the
/// header, staff the `forStaff` copy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    pub id: TicketId,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub status: TicketStatus,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub last_author: TicketAuthor,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub closed_at: Option<Timestamp>,
    /// A staff message the account has not read.
    pub unread: bool,
    /// Sealed JSON `{category, priority, subject}`; context
    /// `service/v1/support-header:<ticketId>`.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub header: SealedBox,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TicketMessage {
    pub id: TicketMessageId,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub author: TicketAuthor,
    pub at: Timestamp,
    /// The support key the `forStaff` copy is sealed to.
    pub staff_key: String,
    /// Sealed text; context `service/v1/support-message:<ticketId>:<messageId>`.
    #[serde(rename = "box")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub sealed: SealedBox,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SupportOverview {
    /// Newest first.
    pub tickets: Vec<Ticket>,
    /// False while support has no key or is switched off: writes answer 503.
    pub available: bool,
    /// The support team's X25519 public key new boxes are sealed to.
    pub staff_key: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TicketReply {
    pub ticket: Ticket,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TicketDetail {
    pub ticket: Ticket,
    /// Oldest first.
    pub messages: Vec<TicketMessage>,
    /// The current support key.
    pub staff_key: Option<String>,
}

/// Two copies of one record, as a request carries them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BoxPairRequest {
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::SealedBoxJson))]
    pub for_staff: Value,
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::SealedBoxJson))]
    pub for_account: Value,
}

impl BoxPairRequest {
    #[must_use]
    pub fn new(for_staff: &SealedBox, for_account: &SealedBox) -> Self {
        Self {
            for_staff: sealed_json(for_staff),
            for_account: sealed_json(for_account),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FirstMessageRequest {
    /// `tkm_` + 4 to 48 letters and digits.
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::TicketMessageId))]
    pub id: String,
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::SealedBoxJson))]
    pub for_staff: Value,
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::SealedBoxJson))]
    pub for_account: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreateTicketRequest {
    /// `tkt_` + 20 lowercase letters or digits, chosen by the client.
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::TicketId))]
    pub id: String,
    /// The X25519 public key the `forAccount` copies are sealed to.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Key32))]
    pub account_key: String,
    /// The support key the `forStaff` copies are sealed to; must be the current one.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Key32))]
    pub staff_key: String,
    /// base64url HMAC-SHA256 (see the binding in `docs/api.md`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schemas::Key32>))]
    pub binding: Option<String>,
    pub header: BoxPairRequest,
    pub message: FirstMessageRequest,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TicketMessageRequest {
    /// `tkm_` + 4 to 48 letters and digits.
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::TicketMessageId))]
    pub id: String,
    /// The support key `forStaff` is sealed to; must be the current one.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Key32))]
    pub staff_key: String,
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::SealedBoxJson))]
    pub for_staff: Value,
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::SealedBoxJson))]
    pub for_account: Value,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MessageAdded {
    pub ok: bool,
    pub at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SupportKeyRequest {
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Key32))]
    pub account_key: String,
    /// base64url HMAC-SHA256, 32 bytes.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Key32))]
    pub binding: String,
    /// The support key vouched for: the current one.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Key32))]
    pub staff_key: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SupportKeyReply {
    pub ok: bool,
    /// False when the same binding was already stored.
    pub changed: bool,
}

// ---- The staff API (`/staff/...`, staff tokens only) ----

/// A ticket as staff see it: the `forStaff` header copy and what the
/// service knows about its account.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct StaffTicket {
    pub ticket: Ticket,
    pub account_id: AccountId,
    /// The key staff seal their `forAccount` copies to.
    pub account_key: String,
    /// The support key the header's staff copy is sealed to.
    pub staff_key: String,
    /// The binding sent with the ticket, if any.
    pub binding: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct StaffTicketList {
    pub tickets: Vec<StaffTicket>,
    /// The next page's `cursor`; `null` when nothing more.
    pub next_cursor: Option<String>,
}

/// The account's latest `POST /support/key`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct StaffBinding {
    pub account_key: String,
    pub staff_key: String,
    pub binding: String,
    pub at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct StaffTicketDetail {
    pub ticket: StaffTicket,
    /// Oldest first, `forStaff` copies.
    pub messages: Vec<TicketMessage>,
    pub key_binding: Option<StaffBinding>,
}
