//! The staff API (`/staff/...`, staff tokens only) and abuse reports.
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `POST /abuse/reports` (no token) | [`AbuseReportRequest`] | 202 [`AbuseReceived`] |
//! | `GET /staff/tickets?status=` | | [`StaffTicketList`] |
//! | `GET /staff/tickets/{id}` | | [`StaffTicketDetail`] |
//! | `POST /staff/tickets/{id}/messages` | [`TicketMessageRequest`] | 201 [`MessageAdded`] |
//! | `POST /staff/tickets/{id}/resolve` | | [`StaffTicket`] in [`StaffTicketReply`] |
//! | `POST /staff/support-key/challenge` | | [`RotationChallengeBody`] |
//! | `POST /staff/support-key` | [`RotateKeyRequest`] | [`SwitchesBody`] |
//! | `GET /staff/switches`, `PATCH /staff/switches` | [`SwitchesRequest`] | [`SwitchesBody`] |
//! | `POST /staff/accounts/{id}/suspend`, `.../unsuspend` | [`SuspendRequest`] | [`SuspensionBody`] |
//! | `GET /staff/abuse-reports?status=` | | [`AbuseReportList`] |
//! | `POST /staff/abuse-reports/{id}/resolve` | [`ResolveReportRequest`] | 204 |
//! | `GET /staff/audit?limit=&cursor=` | | [`AuditLog`] |

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
    /// The `nonce` of a challenge from `POST /staff/support-key/challenge`,
    /// at most five minutes old.
    pub nonce: String,
    /// HMAC-SHA256 keyed with X25519(current support secret, `challengeKey`)
    /// over `service/v1/support-key-rotation:<nonce>:<staffKey>` (base64url).
    pub proof: String,
}

/// A challenge to prove the current support key with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RotationChallengeBody {
    /// Sent back unchanged with the rotation.
    pub nonce: String,
    /// The service's X25519 public key for this challenge (base64url).
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Key32))]
    pub challenge_key: String,
    /// The support key in force, whose secret must prove the rotation;
    /// `null` when none is set (then no rotation can pass).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schemas::Key32>))]
    pub staff_key: Option<String>,
    pub expires_at: Timestamp,
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
#[serde(rename_all = "camelCase")]
pub struct AbuseReportList {
    pub reports: Vec<AbuseReportBody>,
    /// The next page's `cursor`; `null` when nothing more.
    pub next_cursor: Option<String>,
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
#[serde(rename_all = "camelCase")]
pub struct AuditLog {
    /// Newest first.
    pub entries: Vec<AuditEntryBody>,
    /// The next page's `cursor`; `null` when nothing more.
    pub next_cursor: Option<String>,
}
