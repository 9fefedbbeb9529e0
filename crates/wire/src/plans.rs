//! Plans and usage without a payment provider (docs/api.md "Plans and usage"):
//! the plan list, what the account has used, the dashboard's counters, the
//! subscription and plan changes.
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `GET /plans` | | [`PlanList`] |
//! | `GET /usage` | | [`Usage`] |
//! | `GET /overview` | | [`Overview`] |
//! | `GET /subscription` | | [`SubscriptionReply`] |
//! | `POST /subscription/plan` | [`ChangePlanRequest`] | [`SubscriptionReply`] |
//!
//! A `null` limit means unlimited.

use sealpost_kernel::{PlanId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::PlanRef;

/// A plan's limits, straight from the one plan table. `null` means unlimited.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PlanLimits {
    pub addresses: u32,
    /// Devices and agents together; null is unlimited.
    pub devices: Option<u32>,
    pub received_per_30_days: u64,
    pub sends_per_hour: u32,
    pub sends_per_day: u32,
    pub object_reads_per_hour: u32,
    /// Bytes of sealed mail the account may hold; at it new mail is refused.
    pub stored_bytes: u64,
    pub own_domains: u32,
    /// Webhook endpoints; 0 means the plan has no webhooks.
    pub webhooks: u32,
    /// Team members; 0 means the plan has no teams.
    pub team_members: u32,
    /// Live API keys the account may hold; 0 means the plan has no API keys.
    pub api_keys: u32,
    /// Whether the plan allows agents (counted in `devices`).
    pub agents: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PlanOffer {
    pub id: PlanId,
    pub name: String,
    /// USD cents per 30 days; null for Enterprise (by contract).
    pub price_cents: Option<u32>,
    pub currency: String,
    pub period: String,
    /// Whether checkout sells it (not Free, not Enterprise).
    pub purchasable: bool,
    pub limits: PlanLimits,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlanList {
    pub plans: Vec<PlanOffer>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AddressUsage {
    /// Every address counts, assigned or not.
    pub used: u64,
    pub limit: u64,
    /// How many more can be created.
    pub remaining: u64,
    pub assigned: u64,
}

/// A counter in a fixed window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WindowUsage {
    pub used: u64,
    pub limit: u64,
    /// When the counter starts again from zero.
    pub window_ends_at: Timestamp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SentUsage {
    /// The clock hour.
    pub hour: WindowUsage,
    /// The UTC day (restarts 00:00 UTC).
    pub day: WindowUsage,
}

/// A count against a limit; `limit` null means unlimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CountUsage {
    pub used: u64,
    pub limit: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AllowedUsage {
    pub used: u64,
    /// Whether the plan includes them.
    pub allowed: bool,
}

/// A count against a limit on a feature the plan may not include.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GatedUsage {
    pub used: u64,
    /// 0 when the plan does not include the feature; null when it sets no number.
    pub limit: Option<u64>,
    pub allowed: bool,
}

/// What the plan allows and what is used of it (`GET /usage`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub plan: PlanRef,
    pub addresses: AddressUsage,
    /// SMTP and `POST /messages`, in the fixed 30-day window from account creation.
    pub messages_received: WindowUsage,
    /// Sending is not built yet: always 0 used.
    pub messages_sent: SentUsage,
    /// Message bodies and attachments fetched this clock hour.
    pub object_reads: WindowUsage,
    /// Devices, agents excluded.
    pub devices: CountUsage,
    /// Devices and agents together: what pairing counts against the device limit.
    pub paired: CountUsage,
    pub agents: AllowedUsage,
    /// API keys cannot be issued yet: always 0 used.
    pub api_keys: GatedUsage,
    pub webhooks: GatedUsage,
    /// Own domains are not built yet: always 0 used.
    pub domains: CountUsage,
    /// Messages held now, listed or held after a missed payment, across addresses.
    pub messages_stored: u64,
    /// Bytes of sealed mail (content and attachments, as stored) held now,
    /// against the plan's quota: at the limit new mail is refused.
    pub stored_bytes: StoredBytesUsage,
}

/// Bytes held against the plan's stored-bytes quota.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StoredBytesUsage {
    pub used: u64,
    pub limit: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AddressCounts {
    pub total: u64,
    pub assigned: u64,
    pub unassigned: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeviceCounts {
    pub total: u64,
    pub online: u64,
    /// Not active for two hours or more.
    pub offline: u64,
    pub disabled: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MessageCounts {
    /// Held now across addresses (listed or held), like `messagesStored` of `GET /usage`.
    pub stored: u64,
    /// Listed and not marked read.
    pub unread: u64,
    /// Stored but not listed until a missed payment is settled.
    pub held: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WebhookCounts {
    pub total: u64,
    /// Active and delivering (the last attempt succeeded, or none failed yet).
    pub active: u64,
    /// Active, but every attempt since the last success failed.
    pub failing: u64,
    pub disabled: u64,
}

/// `GET /overview`: the dashboard's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    pub plan_id: PlanId,
    pub addresses: AddressCounts,
    /// Devices, agents excluded.
    pub devices: DeviceCounts,
    pub agents: u64,
    pub messages: MessageCounts,
    pub webhooks: WebhookCounts,
}

/// Money in minor units (cents).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Money {
    /// Minor units (cents).
    pub amount: i64,
    pub currency: String,
}

/// What a missed payment paused, and until when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Pause {
    /// Plan to pay for; null once paid if something the new plan does not cover is still paused.
    pub plan_id: Option<PlanId>,
    pub since: Timestamp,
    pub deletes_at: Timestamp,
    pub addresses: u64,
    pub devices: u64,
    pub api_keys: u64,
    pub domains: u64,
}

/// `GET /subscription`. The balance is always 0 USD: payments buy whole
/// 30-day periods and leave no credit (docs/api.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Subscription {
    pub plan_id: PlanId,
    pub plan_name: String,
    pub balance: Money,
    /// Null when nothing is paused.
    pub pause: Option<Pause>,
    /// When the paid 30-day period ends: pay again before then (checkout for
    /// the same plan adds 30 days), else the account pauses. Null on Free and
    /// Enterprise.
    pub renews_at: Option<Timestamp>,
    /// A cheaper plan chosen during the paid period: the plan moves to it
    /// at `pendingAt`. Null when no change is scheduled.
    #[serde(default)]
    pub pending_plan_id: Option<PlanId>,
    /// When the pending plan takes effect (the end of the paid period,
    /// `renewsAt`); null when no change is scheduled.
    #[serde(default)]
    pub pending_at: Option<Timestamp>,
    /// Whether the paid period renews by itself: a card subscription whose
    /// renewal is on at the card provider (`POST /billing/portal` turns it
    /// off or on). False for crypto and sandbox payments, which remind
    /// before `renewsAt` instead.
    pub renewing: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SubscriptionReply {
    pub subscription: Subscription,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ChangePlanRequest {
    /// `free`, `operator`, `scale`, `fleet` or `enterprise`.
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::PlanId))]
    pub plan_id: String,
}

impl ChangePlanRequest {
    /// A move to `plan`.
    #[must_use]
    pub fn new(plan: PlanId) -> Self {
        Self {
            plan_id: plan.as_str().to_owned(),
        }
    }
}
