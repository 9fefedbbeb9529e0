//! `GET /usage` (docs/api.md "Plans and usage") and `GET /overview`: pure
//! assembly of the plan's limits and the store's counts, field for field what
//! the API shows (`sealpost-http-api` maps them onto `sealpost-wire`'s bodies;
//! a `None` limit means unlimited).

use chrono::TimeDelta;
use sealpost_kernel::{PlanId, Timestamp};
use sealpost_plans::{Plan, plan, received_window};

use crate::Subscriber;

/// The windows every counter of the usage report is kept in, at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsageWindows {
    /// The fixed 30-day received-mail window, counted from the account's creation.
    pub received_start: Timestamp,
    pub received_end: Timestamp,
    /// The clock hour: object reads and hourly sending.
    pub hour_start: Timestamp,
    pub hour_end: Timestamp,
    /// The UTC day: daily sending restarts at 00:00 UTC.
    pub day_start: Timestamp,
    pub day_end: Timestamp,
}

impl UsageWindows {
    pub fn at(account_created: Timestamp, now: Timestamp) -> Self {
        let (received_start, received_end) = received_window(account_created, now);
        let hour_start = now.start_of_hour();
        let day_start = now.start_of_day();
        Self {
            received_start,
            received_end,
            hour_start,
            hour_end: hour_start + TimeDelta::hours(1),
            day_start,
            day_end: day_start + TimeDelta::days(1),
        }
    }
}

/// What the store counts for the usage report, in the windows it was given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsageCounts {
    /// Every address, assigned or not.
    pub addresses: u64,
    /// Addresses assigned to a device.
    pub assigned: u64,
    /// Paired workers of kind `device` (enabled or disabled).
    pub devices: u64,
    /// Paired workers of kind `agent`.
    pub agents: u64,
    /// Webhook endpoints, active or disabled.
    pub webhooks: u64,
    /// API keys, paused ones too.
    pub api_keys: u64,
    /// Messages inside their address's retention, listed or held.
    pub messages_stored: u64,
    /// The `received` counter of the current 30-day window.
    pub received: u64,
    /// The `object_reads` counter of the current clock hour.
    pub object_reads: u64,
    /// Sends (one per recipient) in the current clock hour.
    pub sent_hour: u64,
    /// Sends (one per recipient) in the current UTC day.
    pub sent_day: u64,
    /// Own domains, every claim (proved or not).
    pub domains: u64,
    /// Bytes of sealed mail held now (the store's counter).
    pub stored_bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressUsage {
    /// Every address counts, assigned or not.
    pub used: u64,
    pub limit: u64,
    /// How many more can be created.
    pub remaining: u64,
    pub assigned: u64,
}

/// A counter in a fixed window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowUsage {
    pub used: u64,
    pub limit: u64,
    /// When the counter starts again from zero.
    pub window_ends_at: Timestamp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentUsage {
    /// The clock hour.
    pub hour: WindowUsage,
    /// The UTC day (restarts 00:00 UTC).
    pub day: WindowUsage,
}

/// Bytes held against the plan's quota.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoredBytesUsage {
    pub used: u64,
    pub limit: u64,
}

/// A count against a limit; `limit` null means unlimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountUsage {
    pub used: u64,
    pub limit: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllowedUsage {
    pub used: u64,
    /// Whether the plan includes them.
    pub allowed: bool,
}

/// A count against a limit on a feature the plan may not include.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GatedUsage {
    pub used: u64,
    /// 0 when the plan does not include the feature; null when it sets no number.
    pub limit: Option<u64>,
    pub allowed: bool,
}

/// The usage object of `GET /usage` (docs/api.md "Plans and usage"), field for
/// field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    pub plan: PlanId,
    pub addresses: AddressUsage,
    /// SMTP and `POST /messages`, in the fixed 30-day window from account creation.
    pub messages_received: WindowUsage,
    /// One per recipient of `POST /messages/send`, by clock hour and UTC day.
    pub messages_sent: SentUsage,
    /// Message bodies and attachments fetched this clock hour.
    pub object_reads: WindowUsage,
    /// Devices, agents excluded.
    pub devices: CountUsage,
    /// Devices and agents together: what pairing counts against the device limit.
    pub paired: CountUsage,
    pub agents: AllowedUsage,
    /// API keys, paused ones too.
    pub api_keys: GatedUsage,
    pub webhooks: GatedUsage,
    /// Own domains, every claim counted (the limit is what `POST /domains/custom` checks).
    pub domains: CountUsage,
    /// Messages held now, listed or held after a missed payment, across addresses.
    pub messages_stored: u64,
    /// Bytes of sealed mail (content and attachments) held now, against the
    /// quota mail is refused at (the lapsed plan's while a lapse is unpaid,
    /// as for received mail).
    pub stored_bytes: StoredBytesUsage,
}

fn gated(used: u64, allowed: bool, limit: Option<u64>) -> GatedUsage {
    GatedUsage {
        used,
        limit: if allowed { limit } else { Some(0) },
        allowed,
    }
}

impl Usage {
    /// The report for `subscriber` at `now`. While a lapse is unpaid the
    /// received-mail limit is the lapsed plan's (docs/api.md, `GET /usage`).
    pub fn compute(subscriber: &Subscriber, now: Timestamp, counts: &UsageCounts) -> Usage {
        let plan_id = subscriber.plan;
        let limits: &Plan = plan(plan_id);
        let windows = UsageWindows::at(subscriber.created_at, now);
        let address_limit = u64::from(limits.addresses);
        let device_limit = limits.devices.map(u64::from);
        Usage {
            plan: plan_id,
            addresses: AddressUsage {
                used: counts.addresses,
                limit: address_limit,
                remaining: address_limit.saturating_sub(counts.addresses),
                assigned: counts.assigned,
            },
            messages_received: WindowUsage {
                used: counts.received,
                limit: plan(subscriber.received_plan()).received_per_30_days,
                window_ends_at: windows.received_end,
            },
            messages_sent: SentUsage {
                hour: WindowUsage {
                    used: counts.sent_hour,
                    limit: u64::from(limits.sends_per_hour),
                    window_ends_at: windows.hour_end,
                },
                day: WindowUsage {
                    used: counts.sent_day,
                    limit: u64::from(limits.sends_per_day),
                    window_ends_at: windows.day_end,
                },
            },
            object_reads: WindowUsage {
                used: counts.object_reads,
                limit: u64::from(limits.object_reads_per_hour),
                window_ends_at: windows.hour_end,
            },
            devices: CountUsage {
                used: counts.devices,
                limit: device_limit,
            },
            paired: CountUsage {
                used: counts.devices + counts.agents,
                limit: device_limit,
            },
            agents: AllowedUsage {
                used: counts.agents,
                allowed: limits.api_keys_and_agents,
            },
            api_keys: gated(
                counts.api_keys,
                limits.api_keys > 0,
                Some(u64::from(limits.api_keys)),
            ),
            webhooks: gated(
                counts.webhooks,
                limits.has_webhooks(),
                Some(u64::from(limits.webhooks)),
            ),
            domains: CountUsage {
                used: counts.domains,
                limit: Some(u64::from(limits.own_domains)),
            },
            messages_stored: counts.messages_stored,
            stored_bytes: StoredBytesUsage {
                used: counts.stored_bytes,
                limit: plan(subscriber.received_plan()).stored_bytes,
            },
        }
    }
}

/// What the store counts for the dashboard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OverviewCounts {
    pub addresses: u64,
    pub assigned: u64,
    /// Devices (agents excluded) by status.
    pub devices_online: u64,
    pub devices_offline: u64,
    pub devices_disabled: u64,
    pub agents: u64,
    /// Messages inside retention, listed or held.
    pub messages_stored: u64,
    /// Listed (not held) messages not marked read.
    pub messages_unread: u64,
    /// Held after a missed payment: stored, not listed.
    pub messages_held: u64,
    /// Active, with every attempt since the last success failed.
    pub webhooks_failing: u64,
    /// Active and not failing.
    pub webhooks_active: u64,
    pub webhooks_disabled: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressCounts {
    pub total: u64,
    pub assigned: u64,
    pub unassigned: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceCounts {
    pub total: u64,
    pub online: u64,
    /// Not active for two hours or more.
    pub offline: u64,
    pub disabled: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageCounts {
    /// Held now across addresses (listed or held), like `messagesStored` of `GET /usage`.
    pub stored: u64,
    /// Listed and not marked read.
    pub unread: u64,
    /// Stored but not listed until a missed payment is settled.
    pub held: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WebhookCounts {
    pub total: u64,
    /// Active and delivering (the last attempt succeeded, or none failed yet).
    pub active: u64,
    /// Active, but every attempt since the last success failed.
    pub failing: u64,
    pub disabled: u64,
}

/// `GET /overview`: the dashboard's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overview {
    pub plan_id: PlanId,
    pub addresses: AddressCounts,
    /// Devices, agents excluded.
    pub devices: DeviceCounts,
    pub agents: u64,
    pub messages: MessageCounts,
    pub webhooks: WebhookCounts,
}

impl Overview {
    pub fn compute(plan_id: PlanId, counts: &OverviewCounts) -> Overview {
        Overview {
            plan_id,
            addresses: AddressCounts {
                total: counts.addresses,
                assigned: counts.assigned,
                unassigned: counts.addresses.saturating_sub(counts.assigned),
            },
            devices: DeviceCounts {
                total: counts.devices_online + counts.devices_offline + counts.devices_disabled,
                online: counts.devices_online,
                offline: counts.devices_offline,
                disabled: counts.devices_disabled,
            },
            agents: counts.agents,
            messages: MessageCounts {
                stored: counts.messages_stored,
                unread: counts.messages_unread,
                held: counts.messages_held,
            },
            webhooks: WebhookCounts {
                total: counts.webhooks_active + counts.webhooks_failing + counts.webhooks_disabled,
                active: counts.webhooks_active,
                failing: counts.webhooks_failing,
                disabled: counts.webhooks_disabled,
            },
        }
    }
}
