use async_trait::async_trait;
use sealpost_activity::Records;
use sealpost_kernel::{
    AccountId, AddressId, DeviceId, PageRequest, PaymentId, PlanId, StoreError, Timestamp,
};

use crate::{Payment, PaymentStatus, ProviderId};

/// How many addresses and devices a paid plan holds: a payment releases
/// paused ones up to these and pauses active ones beyond them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldingLimits {
    pub addresses: u32,
    /// Devices and agents together; `None` is unlimited.
    pub devices: Option<u32>,
    /// API keys (every plan with keys has the same number, so a payment
    /// after a lapse releases them all).
    pub api_keys: u32,
}

/// The plan a paid payment buys, decided on the account as it was read.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanPurchase {
    /// Guards: the account must still be on this plan, with this period end,
    /// paused or not as it was.
    pub from_plan: PlanId,
    pub from_paid_until: Option<Timestamp>,
    pub was_paused: bool,
    pub plan: PlanId,
    pub paid_until: Timestamp,
    /// Fit the account to these: release paused rows oldest first while
    /// they fit (unless the pause's `deletesAt` has passed), pause active
    /// rows beyond them newest first, list the held mail of unpaused
    /// addresses with one `message.received` each (at the settlement time,
    /// oldest mail first); then end the pause if nothing stays paused, else
    /// keep it (or start one at the settlement time, deleted at
    /// `deletes_at`) with `planId` null.
    pub limits: HoldingLimits,
    /// `deletesAt` of a pause this payment starts.
    pub deletes_at: Timestamp,
    /// `subscription.updated` when the plan changes.
    pub records: Records,
}

/// A paid payment kept as a credit, its refund due ([`settles_as_credit`]):
/// the account keeps its plan, period and everything it holds.
///
/// [`settles_as_credit`]: crate::settles_as_credit
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Credit {
    /// Guards: the account must still be on this plan with this period end,
    /// and not paused.
    pub plan: PlanId,
    pub paid_until: Timestamp,
}

/// An account whose paid period ends soon: a renewal reminder may be due.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenewalCandidate {
    pub account: AccountId,
    pub paid_until: Timestamp,
    /// The days of the last reminder sent for this period, if any.
    pub reminded: Option<u32>,
}

/// A renewal reminder and its records (activity, `billing` notice), written
/// with the account row locked.
#[derive(Clone, Debug, PartialEq)]
pub struct RenewalReminder {
    pub account: AccountId,
    /// Guard: the period must still end here (a payment moves it).
    pub paid_until: Timestamp,
    /// Guard: no reminder of these days or fewer was sent for the period.
    pub days_left: u32,
    pub records: Records,
}

/// The card subscription a paid checkout started: kept on the account,
/// renewing, in the settlement's transaction (it replaces an earlier one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriptionStart {
    /// The provider's subscription id (`sub_...`).
    pub id: String,
    /// The provider's customer id (`cus_...`).
    pub customer: String,
    /// The plan it renews.
    pub plan: PlanId,
    /// The account's earlier subscription, still renewing, that this one
    /// replaces: queued to be stopped in the same transaction, to be
    /// stopped at the provider (now, or by the sweep until it is). Guard:
    /// the account's stored subscription and `renewing` still say so
    /// (`None`: no other subscription renews).
    pub supersedes: Option<String>,
}

/// The plan the account's card subscription renews, changed after its
/// price was switched at the provider (a move down scheduled while it
/// renews, or taken back).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CardPlanChange {
    pub account: AccountId,
    /// Guard: still the account's subscription.
    pub subscription: String,
    pub plan: PlanId,
}

/// The account's card subscription as stored (`None` where it never had one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CardAccount {
    pub account: AccountId,
    /// The provider's subscription id (`sub_...`).
    pub subscription: String,
    /// The provider's customer id (`cus_...`), for its billing portal.
    pub customer: String,
    /// The plan it renews.
    pub plan: PlanId,
    pub renewing: bool,
}

/// Renewal turned off or on at the provider: one transaction, with the
/// account row locked.
#[derive(Clone, Debug, PartialEq)]
pub struct RenewingChange {
    pub account: AccountId,
    /// Guard: still the account's subscription.
    pub subscription: String,
    /// Guard: still on this plan (the event names it).
    pub plan: PlanId,
    /// The new value; guard: the stored one is the other.
    pub renewing: bool,
    /// `subscription.updated {planId, renewing}`.
    pub records: Records,
}

/// A payment's new state and, when paid, what it buys: one transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct Settlement {
    pub payment: PaymentId,
    pub account: AccountId,
    /// Guard: the state the decision was made on.
    pub from: PaymentStatus,
    pub to: PaymentStatus,
    pub at: Timestamp,
    pub purchase: Option<PlanPurchase>,
    /// Paid, but buying nothing: recorded with its refund due.
    pub credit: Option<Credit>,
    /// Paid through a card checkout that started a renewing subscription.
    pub subscription: Option<SubscriptionStart>,
    /// The payment's push notice (paid or failed).
    pub records: Records,
}

/// An unpaid period ending: one transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct Lapse {
    pub account: AccountId,
    /// Guards: still on this plan with this period end, and not lapsed.
    pub plan: PlanId,
    pub paid_until: Timestamp,
    pub since: Timestamp,
    pub deletes_at: Timestamp,
    /// `subscription.updated` to Free.
    pub records: Records,
}

/// A plan chosen during the paid period, applied at its end instead of a
/// lapse: one transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingApplied {
    pub account: AccountId,
    /// Guards: still on this plan with this period end and this pending plan.
    pub plan: PlanId,
    pub paid_until: Timestamp,
    pub to: PlanId,
    /// The pending plan's address limit.
    pub max_addresses: u32,
    /// Its device limit (devices and agents together); `None` is unlimited.
    pub max_paired: Option<u32>,
    /// `subscription.updated` to `to`.
    pub records: Records,
}

/// What a pause still holds when its `deletesAt` comes: deleted then.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PausedHoldings {
    pub addresses: Vec<AddressId>,
    /// Devices and agents.
    pub devices: Vec<DeviceId>,
}

/// Deleting one address or device a pause still holds at its `deletesAt`:
/// one transaction, applied only while the row is still paused and the
/// account's pause is still due at `due` (a payment that released it, or a
/// pause started again since, wins).
#[derive(Clone, Debug, PartialEq)]
pub struct PausedDeletion<Id> {
    pub account: AccountId,
    pub id: Id,
    /// The time the deletion was decided at: the pause's `deletesAt` must be
    /// at or before it.
    pub due: Timestamp,
    /// A device only: the addresses assigned to it when decided (guard).
    pub assigned: Vec<AddressId>,
    /// `inbox.deleted`, or `inbox.removed` for each assigned address and
    /// `worker.removed`.
    pub records: Records,
}

/// What a [`PausedDeletion`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deleted {
    Deleted,
    /// Gone already, no longer paused, or the pause no longer due: left alone.
    Spared,
    /// The device's addresses changed since they were read: decide again.
    Stale,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    Done,
    /// What the decision was made on changed: decide again.
    Stale,
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait BillingRepository: Send + Sync {
    async fn create_payment(&self, payment: &Payment) -> Result<(), StoreError>;
    /// The account's own payment; another account's is `None`.
    async fn payment(
        &self,
        account: &AccountId,
        id: &PaymentId,
    ) -> Result<Option<Payment>, StoreError>;
    /// The account's payments newest first (`(created_at, id)` descending),
    /// after `page.after`, up to `page.fetch_limit()` rows.
    async fn payments_page(
        &self,
        account: &AccountId,
        page: &PageRequest,
    ) -> Result<Vec<Payment>, StoreError>;
    async fn payment_by_reference(
        &self,
        provider: ProviderId,
        reference: &str,
    ) -> Result<Option<Payment>, StoreError>;
    /// With the account and payment rows locked, applies `settlement` when
    /// its guards hold.
    async fn settle(&self, settlement: Settlement) -> Result<Applied, StoreError>;
    /// Records a renewal the provider reported, `pending` until settled;
    /// false when a payment with its reference exists already (the notice
    /// came again).
    async fn create_renewal(&self, payment: &Payment) -> Result<bool, StoreError>;
    /// The account whose card subscription is `subscription`.
    async fn card_by_subscription(
        &self,
        subscription: &str,
    ) -> Result<Option<CardAccount>, StoreError>;
    /// The account's card subscription, if it ever had one.
    async fn card_of(&self, account: &AccountId) -> Result<Option<CardAccount>, StoreError>;
    /// With the account row locked, sets `renewing` and writes the records
    /// when the guards hold.
    async fn set_renewing(&self, change: RenewingChange) -> Result<Applied, StoreError>;
    /// Sets the plan the account's card subscription renews when it is
    /// still that subscription.
    async fn set_card_plan(&self, change: CardPlanChange) -> Result<Applied, StoreError>;
    /// Card subscriptions queued to be stopped (replaced by a later card
    /// checkout while still renewing, or their account erased), not yet
    /// stopped at the provider, oldest first, up to `limit`.
    async fn subscriptions_to_stop(&self, limit: i64) -> Result<Vec<String>, StoreError>;
    /// The provider confirmed that the queued `subscription` no longer
    /// renews: forgotten. False when it was not (or no longer) recorded.
    async fn queued_subscription_stopped(&self, subscription: &str) -> Result<bool, StoreError>;
    /// Accounts on a paid plan whose period ended at or before `now`, not
    /// paused, up to `limit`.
    async fn lapsed_accounts(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> Result<Vec<AccountId>, StoreError>;
    /// With the account row locked, pauses it when the guards hold.
    async fn lapse(&self, lapse: Lapse) -> Result<Applied, StoreError>;
    /// Moves the account to its pending plan (Free ends the paid period; a
    /// paid plan keeps it, and lapses on it). When the holdings no longer
    /// fit the pending plan it is dropped instead and `Stale` answered: the
    /// period then lapses as any other.
    async fn apply_pending(&self, change: PendingApplied) -> Result<Applied, StoreError>;
    /// Accounts on a plan sold through checkout, not paused, whose period
    /// ends after `now` and at or before `until`, and that are not yet
    /// reminded `last_reminder` days before it; soonest end first, up to
    /// `limit`.
    async fn renewal_candidates(
        &self,
        now: Timestamp,
        until: Timestamp,
        last_reminder: u32,
        limit: i64,
    ) -> Result<Vec<RenewalCandidate>, StoreError>;
    /// With the account row locked, notes the reminder and writes its
    /// records when its guards hold.
    async fn remind_renewal(&self, reminder: RenewalReminder) -> Result<Applied, StoreError>;
    /// Paused accounts whose `deletesAt` is at or before `now`, and those
    /// with nothing paused any more, up to `limit`.
    async fn expired_pauses(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> Result<Vec<AccountId>, StoreError>;
    async fn paused_holdings(&self, account: &AccountId) -> Result<PausedHoldings, StoreError>;
    /// The addresses assigned to the account's device, by id.
    async fn device_addresses(
        &self,
        account: &AccountId,
        device: &DeviceId,
    ) -> Result<Vec<AddressId>, StoreError>;
    /// With the account row locked, deletes the paused address as the
    /// owner's delete would (its mail's blobs queued, name and id retired)
    /// when the guards of [`PausedDeletion`] hold.
    async fn delete_paused_address(
        &self,
        deletion: PausedDeletion<AddressId>,
    ) -> Result<Deleted, StoreError>;
    /// With the account row locked, removes the paused device as the owner's
    /// removal would (addresses unassigned, id retired) when the guards of
    /// [`PausedDeletion`] hold; `Stale` when its addresses changed.
    async fn remove_paused_device(
        &self,
        deletion: PausedDeletion<DeviceId>,
    ) -> Result<Deleted, StoreError>;
    /// Lists held mail whose address is no longer paused (mail that was
    /// stored held while a payment released its address), with one
    /// `message.received` each at `at`. Returns how many.
    async fn release_stragglers(&self, at: Timestamp) -> Result<usize, StoreError>;
    /// Ends the pause when nothing on the account is paused any more; `Stale`
    /// when something still is.
    async fn end_pause(&self, account: &AccountId) -> Result<Applied, StoreError>;
}
