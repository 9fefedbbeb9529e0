//! Plans: the one table of prices and limits (docs/api.md "Plans and usage")
//! and the limit rules every other crate asks instead of hard-coding numbers.

use chrono::TimeDelta;
use sealpost_kernel::{PlanId, Timestamp};

mod decide;
mod error;

pub use decide::{OnPlan, PLAN_DECISIONS, decide_on_current_plan};
pub use error::LimitError;

/// Received mail counts in a fixed, non-rolling 30-day window (docs/api.md
/// "Limits").
pub const RECEIVED_WINDOW: TimeDelta = TimeDelta::days(30);

/// The 30-day window holding `now`, counted from the account's creation:
/// `[created + 30k days, created + 30(k+1) days)`.
pub fn received_window(account_created: Timestamp, now: Timestamp) -> (Timestamp, Timestamp) {
    let elapsed = (now - account_created).num_milliseconds().max(0);
    let periods = elapsed / RECEIVED_WINDOW.num_milliseconds();
    let start =
        account_created + TimeDelta::milliseconds(periods * RECEIVED_WINDOW.num_milliseconds());
    (start, start + RECEIVED_WINDOW)
}

/// How long a Free account counts as new: its daily sends are held to the
/// first-day allowance (docs/api.md "Sending"), so an account made to send
/// spam sends little before it can be noticed.
pub const NEW_ACCOUNT_AGE: TimeDelta = TimeDelta::hours(24);

/// Sends a day a new Free account may make unless configured otherwise
/// (`SEALPOST_NEW_ACCOUNT_SENDS`).
pub const DEFAULT_FIRST_DAY_SENDS: u32 = 10;

/// The daily send limit that applies now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DaySendLimit {
    pub limit: u32,
    /// While the first-day allowance holds: when it stops (the account is
    /// [`NEW_ACCOUNT_AGE`] old), so a refusal can say when to retry.
    pub first_day_until: Option<Timestamp>,
}

/// After losing custom domains (a downgrade) an own domain keeps
/// receiving this long; after a missed payment what is paused is removed
/// after this long unpaid.
pub const PLAN_LOSS_GRACE: TimeDelta = TimeDelta::days(21);

/// What an own domain may do after the account's plan changed (docs/domains.md
/// "Plan loss and missed payment"): for the own-domains work to consume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnDomainAccess {
    /// The plan includes own domains: new addresses and mail.
    Full,
    /// The plan dropped below own domains at `since`: no new addresses,
    /// mail still received until `until`.
    ReceiveOnly { until: Timestamp },
    /// The grace has run out: mail refused until the plan includes own
    /// domains again.
    Refused,
}

/// An own domain's access on `plan`, which lacks own domains since
/// `lost_at` (`None` while it has them), at `now`.
pub fn own_domain_access(
    plan: &Plan,
    lost_at: Option<Timestamp>,
    now: Timestamp,
) -> OwnDomainAccess {
    match lost_at {
        _ if plan.own_domains > 0 => OwnDomainAccess::Full,
        None => OwnDomainAccess::Refused,
        Some(since) if now < since + PLAN_LOSS_GRACE => OwnDomainAccess::ReceiveOnly {
            until: since + PLAN_LOSS_GRACE,
        },
        Some(_) => OwnDomainAccess::Refused,
    }
}

/// A plan's price and limits. `None` means unlimited (or, for the price, by contract).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub id: PlanId,
    /// USD cents per 30 days; `None` for Enterprise (by contract).
    pub price_cents: Option<u32>,
    pub addresses: u32,
    pub devices: Option<u32>,
    pub received_per_30_days: u64,
    pub sends_per_hour: u32,
    pub sends_per_day: u32,
    pub object_reads_per_hour: u32,
    /// Bytes of sealed mail (content and attachments, as stored) the
    /// account may hold; past it new mail is refused.
    pub stored_bytes: u64,
    pub own_domains: u32,
    /// Webhook endpoints; 0 means the plan has no webhooks.
    pub webhooks: u32,
    /// Team members; 0 means the plan has no teams.
    pub team_members: u32,
    /// Agents (devices run by a program, paired like a device) are allowed.
    pub api_keys_and_agents: bool,
    /// Live API keys an account may hold; 0 means the plan has no API keys.
    pub api_keys: u32,
}

const GIB: u64 = 1024 * 1024 * 1024;
/// API keys per account on every plan that has them. One figure for all:
/// paying for any plan after a lapse then releases every paused key.
pub const API_KEYS_PER_PAID_PLAN: u32 = 25;

pub const PLANS: [Plan; 5] = [
    Plan {
        id: PlanId::Free,
        price_cents: Some(0),
        addresses: 3,
        devices: Some(1),
        received_per_30_days: 3_000,
        sends_per_hour: 60,
        sends_per_day: 200,
        object_reads_per_hour: 1_000,
        stored_bytes: GIB,
        own_domains: 0,
        webhooks: 0,
        team_members: 0,
        api_keys_and_agents: false,
        api_keys: 0,
    },
    Plan {
        id: PlanId::Operator,
        price_cents: Some(900),
        addresses: 100,
        devices: Some(10),
        received_per_30_days: 100_000,
        sends_per_hour: 60,
        sends_per_day: 1_000,
        object_reads_per_hour: 10_000,
        stored_bytes: 25 * GIB,
        own_domains: 0,
        webhooks: 10,
        team_members: 0,
        api_keys_and_agents: true,
        api_keys: API_KEYS_PER_PAID_PLAN,
    },
    Plan {
        id: PlanId::Scale,
        price_cents: Some(4_900),
        addresses: 1_000,
        devices: Some(50),
        received_per_30_days: 1_000_000,
        sends_per_hour: 60,
        sends_per_day: 5_000,
        object_reads_per_hour: 50_000,
        stored_bytes: 250 * GIB,
        own_domains: 10,
        webhooks: 10,
        team_members: 0,
        api_keys_and_agents: true,
        api_keys: API_KEYS_PER_PAID_PLAN,
    },
    Plan {
        id: PlanId::Fleet,
        price_cents: Some(19_900),
        addresses: 10_000,
        devices: None,
        received_per_30_days: 20_000_000,
        sends_per_hour: 600,
        sends_per_day: 20_000,
        object_reads_per_hour: 200_000,
        stored_bytes: 2_048 * GIB,
        own_domains: 50,
        webhooks: 10,
        team_members: 25,
        api_keys_and_agents: true,
        api_keys: API_KEYS_PER_PAID_PLAN,
    },
    Plan {
        id: PlanId::Enterprise,
        price_cents: None,
        addresses: 100_000,
        devices: None,
        received_per_30_days: 100_000_000,
        sends_per_hour: 3_600,
        sends_per_day: 100_000,
        object_reads_per_hour: 1_000_000,
        stored_bytes: 20_480 * GIB,
        own_domains: 50,
        webhooks: 10,
        team_members: 100,
        api_keys_and_agents: true,
        api_keys: API_KEYS_PER_PAID_PLAN,
    },
];

pub fn plan(id: PlanId) -> &'static Plan {
    match id {
        PlanId::Free => &PLANS[0],
        PlanId::Operator => &PLANS[1],
        PlanId::Scale => &PLANS[2],
        PlanId::Fleet => &PLANS[3],
        PlanId::Enterprise => &PLANS[4],
    }
}

impl Plan {
    pub fn is_free(&self) -> bool {
        self.id == PlanId::Free
    }

    /// Creating one more address when the account holds `current`.
    pub fn check_new_address(&self, current: u64) -> Result<(), LimitError> {
        if current >= u64::from(self.addresses) {
            return Err(LimitError::AllocationExhausted {
                limit: self.addresses,
            });
        }
        Ok(())
    }

    /// Pairing one more device when `paired` devices and agents exist.
    pub fn check_new_device(&self, paired: u64) -> Result<(), LimitError> {
        match self.devices {
            Some(limit) if paired >= u64::from(limit) => {
                Err(LimitError::DeviceLimitReached { limit })
            }
            _ => Ok(()),
        }
    }

    /// Pairing an agent (counted against the device limit with the devices,
    /// [`Plan::check_new_device`]).
    pub fn check_new_agent(&self) -> Result<(), LimitError> {
        if !self.api_keys_and_agents {
            return Err(LimitError::AgentsNeedOperator);
        }
        Ok(())
    }

    /// Creating one more API key when the account holds `held`.
    pub fn check_new_api_key(&self, held: u64) -> Result<(), LimitError> {
        if self.api_keys == 0 {
            return Err(LimitError::ApiKeysNeedOperator);
        }
        if held >= u64::from(self.api_keys) {
            return Err(LimitError::ApiKeyLimit {
                limit: self.api_keys,
            });
        }
        Ok(())
    }

    /// Assigning one more address to a device that holds `held`.
    pub fn check_assignment(&self, held: u64) -> Result<(), LimitError> {
        if self.is_free() && held >= 1 {
            return Err(LimitError::OneAddressPerDevice);
        }
        Ok(())
    }

    /// `localPart` / `emailAddress` on address creation.
    pub fn check_custom_address(&self) -> Result<(), LimitError> {
        if matches!(self.id, PlanId::Free | PlanId::Operator) {
            return Err(LimitError::CustomAddressNeedsScale);
        }
        Ok(())
    }

    /// Adding one more own domain when the account holds `current` (every
    /// claim counts, proved or not).
    pub fn check_new_own_domain(&self, current: u64) -> Result<(), LimitError> {
        if self.own_domains == 0 {
            return Err(LimitError::OwnDomainsNeedScale);
        }
        if current >= u64::from(self.own_domains) {
            return Err(LimitError::OwnDomainLimit {
                limit: self.own_domains,
            });
        }
        Ok(())
    }

    /// The daily send limit of an account created at `account_created`, at
    /// `now`: a Free account younger than [`NEW_ACCOUNT_AGE`] gets at most
    /// `first_day_sends`; paid plans and older accounts the table's limit.
    pub fn day_send_limit(
        &self,
        account_created: Timestamp,
        now: Timestamp,
        first_day_sends: u32,
    ) -> DaySendLimit {
        let grown_at = account_created + NEW_ACCOUNT_AGE;
        if self.is_free() && now < grown_at && first_day_sends < self.sends_per_day {
            return DaySendLimit {
                limit: first_day_sends,
                first_day_until: Some(grown_at),
            };
        }
        DaySendLimit {
            limit: self.sends_per_day,
            first_day_until: None,
        }
    }

    /// Taking in mail while the account holds `stored` bytes: refused once
    /// the quota is reached (the message that crosses it is still taken,
    /// since its size is known only once it is sealed).
    pub fn check_stored_bytes(&self, stored: u64) -> Result<(), LimitError> {
        if stored >= self.stored_bytes {
            return Err(LimitError::StorageFull {
                limit: self.stored_bytes,
            });
        }
        Ok(())
    }

    pub fn has_webhooks(&self) -> bool {
        self.webhooks > 0
    }

    pub fn has_teams(&self) -> bool {
        self.team_members > 0
    }

    /// Enterprise is arranged by contract, never through checkout.
    pub fn sold_through_checkout(&self) -> bool {
        self.price_cents.is_some() && self.id != PlanId::Free
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_received_window_is_fixed_from_account_creation() {
        let created = Timestamp::parse("2026-01-01T10:00:00Z").unwrap();
        let (start, end) = received_window(created, created);
        assert_eq!((start, end), (created, created + TimeDelta::days(30)));
        let later = Timestamp::parse("2026-02-15T00:00:00Z").unwrap();
        let (start, end) = received_window(created, later);
        assert_eq!(start.to_string(), "2026-01-31T10:00:00.000Z");
        assert_eq!(end.to_string(), "2026-03-02T10:00:00.000Z");
    }

    #[test]
    fn an_own_domain_receives_for_21_days_after_the_plan_loses_domains() {
        let lost = Timestamp::parse("2026-11-01T00:00:00Z").unwrap();
        let scale = plan(PlanId::Scale);
        let operator = plan(PlanId::Operator);
        assert_eq!(
            own_domain_access(scale, Some(lost), lost + TimeDelta::days(40)),
            OwnDomainAccess::Full,
            "the plan includes domains again"
        );
        let until = Timestamp::parse("2026-11-22T00:00:00Z").unwrap();
        assert_eq!(
            own_domain_access(operator, Some(lost), lost),
            OwnDomainAccess::ReceiveOnly { until }
        );
        assert_eq!(
            own_domain_access(operator, Some(lost), until - TimeDelta::milliseconds(1)),
            OwnDomainAccess::ReceiveOnly { until }
        );
        assert_eq!(
            own_domain_access(operator, Some(lost), until),
            OwnDomainAccess::Refused
        );
        assert_eq!(
            own_domain_access(operator, None, lost),
            OwnDomainAccess::Refused
        );
    }

    #[test]
    fn the_table_is_indexed_by_id() {
        for id in PlanId::ALL {
            assert_eq!(plan(id).id, id);
        }
    }

    #[test]
    fn prices_rise_with_the_plans() {
        let prices: Vec<u32> = PLANS.iter().filter_map(|p| p.price_cents).collect();
        assert_eq!(prices, vec![0, 900, 4_900, 19_900]);
    }

    #[test]
    fn address_limit() {
        let free = plan(PlanId::Free);
        assert_eq!(free.check_new_address(2), Ok(()));
        assert_eq!(
            free.check_new_address(3),
            Err(LimitError::AllocationExhausted { limit: 3 })
        );
    }

    #[test]
    fn device_limits() {
        let free = plan(PlanId::Free);
        assert_eq!(free.check_new_device(0), Ok(()));
        assert_eq!(
            free.check_new_device(1),
            Err(LimitError::DeviceLimitReached { limit: 1 })
        );
        assert_eq!(plan(PlanId::Fleet).check_new_device(1_000_000), Ok(()));
        assert_eq!(free.check_assignment(0), Ok(()));
        assert_eq!(
            free.check_assignment(1),
            Err(LimitError::OneAddressPerDevice)
        );
        assert_eq!(plan(PlanId::Operator).check_assignment(5), Ok(()));
    }

    #[test]
    fn agents_from_operator_up() {
        assert_eq!(
            plan(PlanId::Free).check_new_agent(),
            Err(LimitError::AgentsNeedOperator)
        );
        for id in [
            PlanId::Operator,
            PlanId::Scale,
            PlanId::Fleet,
            PlanId::Enterprise,
        ] {
            assert_eq!(plan(id).check_new_agent(), Ok(()), "{id:?}");
        }
    }

    #[test]
    fn own_domain_limits() {
        assert_eq!(
            plan(PlanId::Operator).check_new_own_domain(0),
            Err(LimitError::OwnDomainsNeedScale)
        );
        assert_eq!(plan(PlanId::Scale).check_new_own_domain(9), Ok(()));
        assert_eq!(
            plan(PlanId::Scale).check_new_own_domain(10),
            Err(LimitError::OwnDomainLimit { limit: 10 })
        );
        assert_eq!(plan(PlanId::Fleet).check_new_own_domain(49), Ok(()));
        assert_eq!(
            plan(PlanId::Fleet).check_new_own_domain(50),
            Err(LimitError::OwnDomainLimit { limit: 50 })
        );
    }

    #[test]
    fn a_new_free_account_sends_its_first_day_allowance_only() {
        let created = Timestamp::parse("2026-11-22T12:00:00Z").unwrap();
        let grown = created + NEW_ACCOUNT_AGE;
        let free = plan(PlanId::Free);
        assert_eq!(
            free.day_send_limit(created, created, 10),
            DaySendLimit {
                limit: 10,
                first_day_until: Some(grown)
            }
        );
        assert_eq!(
            free.day_send_limit(created, grown - TimeDelta::milliseconds(1), 10),
            DaySendLimit {
                limit: 10,
                first_day_until: Some(grown)
            }
        );
        assert_eq!(
            free.day_send_limit(created, grown, 10),
            DaySendLimit {
                limit: 200,
                first_day_until: None
            },
            "a day old: the plan's limit"
        );
        assert_eq!(
            plan(PlanId::Operator).day_send_limit(created, created, 10),
            DaySendLimit {
                limit: 1_000,
                first_day_until: None
            },
            "a paid plan is never held to it"
        );
        assert_eq!(
            free.day_send_limit(created, created, 500).limit,
            200,
            "an allowance above the plan's limit changes nothing"
        );
    }

    #[test]
    fn stored_bytes_quota() {
        let free = plan(PlanId::Free);
        assert_eq!(free.stored_bytes, 1024 * 1024 * 1024);
        assert_eq!(free.check_stored_bytes(free.stored_bytes - 1), Ok(()));
        assert_eq!(
            free.check_stored_bytes(free.stored_bytes),
            Err(LimitError::StorageFull {
                limit: free.stored_bytes
            })
        );
        let quotas: Vec<u64> = PLANS.iter().map(|p| p.stored_bytes).collect();
        assert!(quotas.is_sorted(), "{quotas:?}");
    }

    #[test]
    fn capabilities() {
        assert!(plan(PlanId::Free).check_custom_address().is_err());
        assert!(plan(PlanId::Operator).check_custom_address().is_err());
        assert!(plan(PlanId::Scale).check_custom_address().is_ok());
        assert!(!plan(PlanId::Free).has_webhooks());
        assert!(plan(PlanId::Operator).has_webhooks());
        assert!(!plan(PlanId::Scale).has_teams());
        assert!(plan(PlanId::Fleet).has_teams());
        assert!(!plan(PlanId::Enterprise).sold_through_checkout());
        assert!(!plan(PlanId::Free).sold_through_checkout());
        assert!(plan(PlanId::Scale).sold_through_checkout());
    }
}
