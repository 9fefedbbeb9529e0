//! The staff API (`/staff/...`, staff tokens only) and abuse reports.
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `POST /abuse/reports` (no token) | [`AbuseReportRequest`] | 202 [`AbuseReceived`] |
//! | `GET /staff/tickets?status=` | | [`StaffTicketList`] |
//! | `GET /staff/tickets/{id}` | | [`StaffTicketDetail`] |
//! | `POST /staff/tickets/{id}/messages` | [`TicketMessageRequest`] | 201 [`MessageAdded`] |
//! | `POST /staff/tickets/{id}/resolve` | | [`StaffTicket`] in [`StaffTicketReply`] |
//! | `POST /staff/support-key` | [`RotateKeyRequest`] | [`SwitchesBody`] |
//! | `GET /staff/switches`, `PATCH /staff/switches` | [`SwitchesRequest`] | [`SwitchesBody`] |
//! | `POST /staff/accounts/{id}/suspend`, `.../unsuspend` | [`SuspendRequest`] | [`SuspensionBody`] |
//! | `GET /staff/abuse-reports?status=` | | [`AbuseReportList`] |
//! | `POST /staff/abuse-reports/{id}/resolve` | [`ResolveReportRequest`] | 204 |
//! | `GET /staff/audit?limit=` | | [`AuditLog`] |

use sealpost_kernel::{AccountId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::StaffTicket;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StaffTicketReply {
    pub ticket: StaffTicket,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RotateKeyRequest {
    /// The new support X25519 public key (base64url).
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Key32))]
    pub staff_key: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SwitchesRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub support_off: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhooks_paused: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SwitchesBody {
    /// The current support key (rotated, else configured).
    pub staff_key: Option<String>,
    /// In-app support switched off.
    pub support_off: bool,
    /// Adding webhooks paused (`POST /webhook-endpoints` answers 503 `feature_disabled`).
    pub webhooks_paused: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SuspendRequest {
    /// 1 to 1000 characters, kept in the audit log.
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SuspensionBody {
    pub account_id: AccountId,
    pub suspended: bool,
    pub reason: Option<String>,
    pub since: Option<Timestamp>,
}

/// A report of an address or a message: exactly one of `emailAddress` and
/// `messageId`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AbuseReportRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// spam, phishing, malware, harassment, illegal_content, impersonation or other.
    pub reason: String,
    /// Up to 4000 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// How to reach the reporter, up to 320 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contact: Option<String>,
}

/// The same answer for every accepted report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AbuseReceived {
    pub received: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AbuseReportBody {
    pub id: String,
    pub email_address: Option<String>,
    pub message_id: Option<String>,
    pub reason: String,
    pub details: Option<String>,
    pub contact: Option<String>,
    /// open or resolved.
    pub status: String,
    /// The account the target belonged to when reported, if any.
    pub account_id: Option<AccountId>,
    pub created_at: Timestamp,
    pub resolved_at: Option<Timestamp>,
    pub resolution: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AbuseReportList {
    pub reports: Vec<AbuseReportBody>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResolveReportRequest {
    /// 1 to 1000 characters.
    pub resolution: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditEntryBody {
    /// A staff member id (`stm_...`), or `operator` for server commands.
    pub actor: String,
    pub action: String,
    pub target: Option<String>,
    pub note: Option<String>,
    pub at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditLog {
    /// Newest first.
    pub entries: Vec<AuditEntryBody>,
}
