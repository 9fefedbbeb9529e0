//! The plan-change rule of `POST /subscription/plan` (docs/api.md "Plans and
//! usage"), and the subscription record.

use std::fmt;

use sealpost_kernel::{PlanId, Timestamp};
use sealpost_plans::plan;

use crate::{PausedCounts, Subscriber};

/// What a plan change has to fit into the target plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Holdings {
    /// Every address, assigned or not.
    pub addresses: u64,
    /// Devices and agents together (what pairing counts against the device limit).
    pub paired: u64,
}

/// An allowed plan change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Already on the target plan: nothing is written.
    Unchanged(PlanId),
    /// Moves to a plan priced the same or lower.
    Moved { from: PlanId, to: PlanId },
}

/// Something the target plan does not hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Excess {
    pub held: u64,
    pub limit: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeError {
    /// 402 `payment_required`: a dearer plan goes through checkout; Enterprise by contract.
    PaymentRequired { target: PlanId },
    /// 409 `downgrade_blocked`: addresses or devices do not fit the target plan.
    DowngradeBlocked {
        target: PlanId,
        addresses: Option<Excess>,
        paired: Option<Excess>,
    },
}

impl std::error::Error for ChangeError {}

impl fmt::Display for ChangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ChangeError::PaymentRequired {
                target: PlanId::Enterprise,
            } => f.write_str(
                "the Enterprise plan is arranged by contract, not through this endpoint",
            ),
            ChangeError::PaymentRequired { target } => write!(
                f,
                "the {} plan costs more than the current one; upgrade through checkout (POST /billing/checkout)",
                target.display_name()
            ),
            ChangeError::DowngradeBlocked {
                target,
                addresses,
                paired,
            } => {
                let mut parts = Vec::new();
                if let Some(Excess { held, limit }) = addresses {
                    parts.push(format!(
                        "{} (the plan allows {limit}; delete {})",
                        plural(held, "address", "addresses"),
                        plural(held - limit, "address", "addresses"),
                    ));
                }
                if let Some(Excess { held, limit }) = paired {
                    parts.push(format!(
                        "{} (the plan allows {limit}; remove {})",
                        plural(held, "paired device", "paired devices"),
                        plural(held - limit, "device", "devices"),
                    ));
                }
                write!(
                    f,
                    "the account holds more than the {} plan allows: {}",
                    target.display_name(),
                    parts.join(" and ")
                )
            }
        }
    }
}

fn plural(count: u64, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// Enterprise is priced by contract: above every plan with a list price.
fn price_rank(id: PlanId) -> u64 {
    plan(id).price_cents.map_or(u64::MAX, u64::from)
}

fn excess(held: u64, limit: Option<u32>) -> Option<Excess> {
    let limit = u64::from(limit?);
    (held > limit).then_some(Excess { held, limit })
}

/// Moving from `current` to `target` with `holdings` on the account.
///
/// The same plan is a no-op; a dearer plan (Enterprise counts as dearer than
/// every other) needs payment; an equal or cheaper one needs the addresses and
/// the paired devices to fit its limits.
pub fn change_plan(
    current: PlanId,
    target: PlanId,
    holdings: &Holdings,
) -> Result<Change, ChangeError> {
    if current == target {
        return Ok(Change::Unchanged(current));
    }
    if price_rank(target) > price_rank(current) {
        return Err(ChangeError::PaymentRequired { target });
    }
    check_fits(target, holdings)?;
    Ok(Change::Moved {
        from: current,
        to: target,
    })
}

/// Whether `holdings` fit `target`'s address and device limits (409
/// `downgrade_blocked` naming what is over when they do not).
pub fn check_fits(target: PlanId, holdings: &Holdings) -> Result<(), ChangeError> {
    let limits = plan(target);
    let addresses = excess(holdings.addresses, Some(limits.addresses));
    let paired = excess(holdings.paired, limits.devices);
    if addresses.is_some() || paired.is_some() {
        return Err(ChangeError::DowngradeBlocked {
            target,
            addresses,
            paired,
        });
    }
    Ok(())
}

/// Whether a move down from `subscriber`'s plan at `now` waits for the end
/// of the paid period: it does while a period of a plan sold through checkout
/// runs (what was paid for is kept to its end), and while a renewing card
/// subscription's renewal is awaited past that end.
pub fn waits_for_period_end(subscriber: &Subscriber, now: Timestamp) -> bool {
    plan(subscriber.plan).sold_through_checkout()
        && subscriber
            .paid_until
            .is_some_and(|until| until > now || subscriber.renewing)
}

/// Money in minor units (the API's money is an integer number of cents).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Money {
    /// Minor units (cents).
    pub amount: i64,
    pub currency: &'static str,
}

/// What a missed payment paused (docs/api.md "Plans and usage", `pause`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pause {
    /// Plan to pay for; `None` once paid if something the new plan does not cover is still paused.
    pub plan_id: Option<PlanId>,
    pub since: Timestamp,
    pub deletes_at: Timestamp,
    pub addresses: u64,
    pub devices: u64,
    pub api_keys: u64,
    pub domains: u64,
}

/// The subscription record (`GET /subscription`). The balance is always
/// 0 USD: payments buy whole 30-day periods and leave no credit (docs/api.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subscription {
    pub plan_id: PlanId,
    pub balance: Money,
    /// `None` when nothing is paused.
    pub pause: Option<Pause>,
    /// When the paid 30-day period ends: pay again before then (checkout for
    /// the same plan adds 30 days), else the account pauses. `None` on Free
    /// and Enterprise.
    pub renews_at: Option<Timestamp>,
    /// A cheaper plan chosen during the paid period, applied at `renews_at`.
    pub pending_plan_id: Option<PlanId>,
    /// Whether the paid period renews by itself (a card subscription with
    /// renewal on at the provider); false for crypto and sandbox payments.
    pub renewing: bool,
}

impl Subscription {
    /// The record of an account on `plan_id` with no billing history.
    pub fn on(plan_id: PlanId) -> Subscription {
        Subscription {
            plan_id,
            balance: Money {
                amount: 0,
                currency: "USD",
            },
            pause: None,
            renews_at: None,
            pending_plan_id: None,
            renewing: false,
        }
    }

    /// The record of `subscriber`, with `paused` counted when it is paused.
    /// `pause` is `None` when nothing is paused (the owner may have
    /// deleted what was; the sweep ends such a pause).
    pub fn of(subscriber: &Subscriber, paused: PausedCounts) -> Subscription {
        Subscription {
            pause: subscriber
                .pause
                .filter(|_| paused.holds_anything())
                .map(|state| Pause {
                    plan_id: state.plan,
                    since: state.since,
                    deletes_at: state.deletes_at,
                    addresses: paused.addresses,
                    devices: paused.devices,
                    api_keys: paused.api_keys,
                    domains: paused.domains,
                }),
            renews_at: subscriber.paid_until,
            pending_plan_id: subscriber.pending_plan,
            renewing: subscriber.renewing,
            ..Subscription::on(subscriber.plan)
        }
    }
}
