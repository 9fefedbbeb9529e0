//! The renewal clock and the pause rules, as pure functions of the account's
//! billing state and `now`.
//!
//! - A paid plan runs in 30-day periods from the paid date. Paying for the
//!   plan the account is on, before its period ends, adds 30 days to that
//!   period; any other payment starts a new period at the paid date (no
//!   proration; docs/api.md).
//! - A period that ends unpaid is a lapse: the account drops to Free, every
//!   address and device is paused (mail to paused addresses is held: stored
//!   sealed, not listed), and `pause.planId` names the lapsed plan.
//!   `pause.deletesAt` is 21 days after the lapse (as own domains are removed
//!   after 21 days unpaid: docs/domains.md "Plan loss and missed payment").
//! - A paid payment fits the account to the paid plan: paused addresses and
//!   devices are released, oldest first, while the plan holds them (not once
//!   the pause's `deletesAt` has passed: they are being deleted), and active
//!   ones beyond its limits are paused, newest first (two checkouts paid out
//!   of order, or a cheaper plan paid while paused). Held mail of released
//!   addresses is listed and fires `message.received` at release. What stays
//!   paused keeps (or starts) a pause with `planId` null.
//! - A payment for a plan cheaper than the one whose paid period is running
//!   (an expired crypto invoice confirmed after an upgrade) buys nothing: the
//!   plan, its period and every address and device stay as they are, and
//!   the payment is kept as a credit with its refund due.
//! - A period that cannot renew by itself (every payment buys one period)
//!   is reminded of 7 days and again 1 day before it ends, each once.
//! - A card checkout starts a subscription at the provider that renews by
//!   itself: each renewal it reports adds 30 days to the period it renews
//!   (also when the report comes a little after the period's end), so the
//!   account never lapses between periods. While it renews, the lapse waits
//!   [`RENEWAL_GRACE`] past the period end for the provider's report; once
//!   renewal is off (turned off at the provider, a failed renewal charge, the
//!   subscription ended there) the period lapses at its end like any other.

use chrono::TimeDelta;
use sealpost_kernel::{PlanId, Timestamp};
use sealpost_plans::plan;
use sealpost_subscriptions::{ChangeError, Holdings, Subscriber, check_fits};

use crate::ProviderId;

/// A paid period.
pub const PERIOD: TimeDelta = TimeDelta::days(30);
/// From a lapse to `pause.deletesAt`: the plan-loss grace (own domains are
/// removed after 21 days unpaid; docs/api.md "Limits").
pub const PAUSE_DELETES_AFTER: TimeDelta = sealpost_plans::PLAN_LOSS_GRACE;

/// Why checkout refuses a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckoutRefusal {
    /// Free needs no payment; Enterprise is by contract (400 `invalid_field`).
    #[error("the {} plan is not sold through checkout", .0.display_name())]
    NotForSale(PlanId),
    /// A cheaper plan the holdings do not fit (409 `downgrade_blocked`).
    #[error(transparent)]
    DoesNotFit(#[from] ChangeError),
    /// A provider that cannot renew while a card subscription renews the
    /// period: both would be paid for (409 `renewal_active`).
    #[error(
        "a card subscription renews this plan, so a {0} payment would pay twice: turn renewal off in the billing portal first (POST /billing/portal)"
    )]
    CardRenews(&'static str),
}

/// Whether `subscriber` may start a checkout for `target`.
///
/// Any plan with a list price above zero can be bought: a dearer one (an
/// upgrade), the same one (a renewal) or a cheaper one. An account that is not
/// paused must fit the target's limits, as with a downgrade; a paused one may
/// buy any plan, and the payment releases what that plan holds.
pub fn check_checkout(
    subscriber: &Subscriber,
    holdings: &Holdings,
    target: PlanId,
) -> Result<(), CheckoutRefusal> {
    if !plan(target).sold_through_checkout() {
        return Err(CheckoutRefusal::NotForSale(target));
    }
    if subscriber.pause.is_none() {
        check_fits(target, holdings)?;
    }
    Ok(())
}

/// Whether `subscriber` may pay with `provider`: one that cannot renew (a
/// crypto or sandbox payment) is refused while a card subscription renews
/// the period, which the provider would charge again as well.
pub fn check_provider(
    subscriber: &Subscriber,
    provider: ProviderId,
) -> Result<(), CheckoutRefusal> {
    if subscriber.renewing && !provider.renews() {
        return Err(CheckoutRefusal::CardRenews(provider.kind()));
    }
    Ok(())
}

/// The end of the period a payment for `paid_plan` at `paid_at` buys.
pub fn paid_until(subscriber: &Subscriber, paid_plan: PlanId, paid_at: Timestamp) -> Timestamp {
    // A lapsed account is on Free with no period, so this is a renewal of a
    // running period (also while part of the account stays paused).
    match subscriber.paid_until {
        Some(until) if subscriber.plan == paid_plan && until > paid_at => until + PERIOD,
        _ => paid_at + PERIOD,
    }
}

/// How long past the end of a renewing period its renewal is awaited before
/// the period lapses: Stripe charges a renewal about an hour after the period
/// ends, and its notice may take a while.
pub const RENEWAL_GRACE: TimeDelta = TimeDelta::days(1);

/// When the account's paid period lapses if no payment comes: its end, or
/// [`RENEWAL_GRACE`] later while a card subscription renews it.
pub fn lapses_at(subscriber: &Subscriber) -> Option<Timestamp> {
    let until = subscriber.paid_until?;
    Some(if subscriber.renewing {
        until + RENEWAL_GRACE
    } else {
        until
    })
}

/// Whether the account's paid period ended unpaid at `now`. An account that
/// paid after a lapse but keeps something paused (`pause.planId` null) lapses
/// again when its new period ends unpaid.
pub fn has_lapsed(subscriber: &Subscriber, now: Timestamp) -> bool {
    subscriber.pause.is_none_or(|pause| pause.plan.is_none())
        && plan(subscriber.plan).sold_through_checkout()
        && lapses_at(subscriber).is_some_and(|at| at <= now)
}

/// The end of the period a renewal of `renewed_plan` reported at `paid_at`
/// buys: 30 days after the end of the period it renews while the account is
/// still on that plan, or has that plan scheduled for the period end
/// ([`renews_into_pending`]), and has not lapsed (a report that comes after
/// the end, within the grace, loses no time and gives none), else as any
/// payment ([`paid_until`]).
pub fn renewal_paid_until(
    subscriber: &Subscriber,
    renewed_plan: PlanId,
    paid_at: Timestamp,
) -> Timestamp {
    match subscriber.paid_until {
        Some(until)
            if (subscriber.plan == renewed_plan
                || renews_into_pending(subscriber, renewed_plan))
                && subscriber.pause.is_none_or(|pause| pause.plan.is_none()) =>
        {
            until + PERIOD
        }
        _ => paid_until(subscriber, renewed_plan, paid_at),
    }
}

/// Whether a card renewal of `renewed_plan` is the move down scheduled for
/// the period end (`pendingPlanId`, a paid plan): the subscription's price
/// was switched to it, so the renewal pays the next period of that plan,
/// which it starts then.
pub fn renews_into_pending(subscriber: &Subscriber, renewed_plan: PlanId) -> bool {
    subscriber.pending_plan == Some(renewed_plan) && subscriber.plan != renewed_plan
}

/// Whether a payment by `provider` settling now is a credit because a card
/// subscription renews the period (checkout refuses such a payment,
/// [`check_provider`], but one started before the card checkout may settle
/// after it): the period is paid for by the card already, and the provider
/// charges the next one too.
pub fn settles_beside_renewal(subscriber: &Subscriber, provider: ProviderId) -> bool {
    subscriber.renewing && !provider.renews() && subscriber.paid_until.is_some()
}

/// Whether a payment for `paid_plan` settling at `now` is a credit rather
/// than a purchase: the account is on a dearer plan whose paid period runs
/// past `now`, with nothing paused. Applying it would end that period early
/// and pause what the cheaper plan cannot hold, for a checkout the payer
/// overtook (docs/api.md, Billing). A cheaper plan is chosen with
/// `POST /subscription/plan`, which keeps the period paid for.
pub fn settles_as_credit(subscriber: &Subscriber, paid_plan: PlanId, now: Timestamp) -> bool {
    let price = |id: PlanId| plan(id).price_cents.unwrap_or(u32::MAX);
    subscriber.pause.is_none()
        && subscriber.paid_until.is_some_and(|until| until > now)
        && price(paid_plan) < price(subscriber.plan)
}

/// Days before the end of a paid period at which the account is reminded
/// that it ends, earliest first.
pub const RENEWAL_REMINDERS: [u32; 2] = [7, 1];

/// The reminder due at `now` for a period ending at `paid_until` (its days
/// left), given the last one sent for that period (`sent`, its days); `None`
/// when none is due. A reminder whose time passed unsent is skipped for the
/// later one: only the nearest is sent.
pub fn renewal_reminder_due(
    paid_until: Timestamp,
    now: Timestamp,
    sent: Option<u32>,
) -> Option<u32> {
    if paid_until <= now {
        return None;
    }
    let due = RENEWAL_REMINDERS
        .into_iter()
        .filter(|days| paid_until - TimeDelta::days(i64::from(*days)) <= now)
        .min()?;
    match sent {
        Some(done) if done <= due => None,
        _ => Some(due),
    }
}

#[cfg(test)]
mod reminder_tests {
    use super::*;

    #[test]
    fn seven_days_then_one_day_each_once() {
        let end = Timestamp::parse("2026-12-22T12:00:00Z").unwrap();
        let at = |days: i64, hours: i64| end - TimeDelta::days(days) - TimeDelta::hours(hours);
        assert_eq!(renewal_reminder_due(end, at(7, 1), None), None);
        assert_eq!(renewal_reminder_due(end, at(7, 0), None), Some(7));
        assert_eq!(renewal_reminder_due(end, at(3, 0), None), Some(7));
        assert_eq!(renewal_reminder_due(end, at(3, 0), Some(7)), None);
        assert_eq!(renewal_reminder_due(end, at(1, 0), Some(7)), Some(1));
        assert_eq!(renewal_reminder_due(end, at(0, 5), Some(1)), None);
        // Reminded of nothing yet with a day left: only the last one.
        assert_eq!(renewal_reminder_due(end, at(0, 5), None), Some(1));
        // Over: the lapse sweep takes it from there.
        assert_eq!(renewal_reminder_due(end, end, None), None);
    }
}
