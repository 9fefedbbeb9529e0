//! The storage, network and alert traits the webhook services are given,
//! and the records they read and write.

use async_trait::async_trait;
use sealpost_activity::Event;
use sealpost_kernel::{
    AccountId, DeliveryId, PageRequest, PlanId, StoreError, Timestamp, WebhookId,
};
use sealpost_seal::SealedBox;

use crate::delivery::{AttemptOutcome, Delivery, DeliveryStatus};
use crate::endpoint::{EndpointHealth, EndpointStatus, StoredSecret};
use crate::events::EventFilter;

#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    pub id: WebhookId,
    pub account: AccountId,
    pub url: String,
    pub events: EventFilter,
    pub meta: Option<SealedBox>,
    /// `whsec_...`, sealed under the server key; shown on creation and
    /// rotation only.
    pub secret: StoredSecret,
    pub status: EndpointStatus,
    /// Events created before this were made while it was off (or before it existed).
    pub active_since: Timestamp,
    pub health: EndpointHealth,
    pub created_at: Timestamp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateOutcome {
    Created,
    IdTaken,
    LimitReached,
    /// The account (locked) is on this plan, not the one the request was
    /// decided with: decide again.
    PlanChanged(PlanId),
}

/// A claimed delivery with what the attempt needs.
#[derive(Clone, Debug, PartialEq)]
pub struct DueDelivery {
    pub delivery: Delivery,
    pub endpoint: Endpoint,
    pub plan: PlanId,
}

/// A finished attempt (or a delivery failed without one), to be written
/// back: the delivery's new state, its endpoint's failure record, and when
/// `disable` is set the endpoint switched off with its other pending
/// deliveries failed with that error.
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptRecord {
    pub delivery: Delivery,
    pub account: AccountId,
    pub health: EndpointHealth,
    pub disable: Option<String>,
}

/// Decides the deliveries one event creates, given the account's endpoints.
pub type FanOutRule = dyn Fn(&Event, &[Endpoint], PlanId) -> Vec<Delivery> + Send + Sync;

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait WebhookRepository: Send + Sync {
    /// Inserts unless the account is no longer on `plan`, the id was ever
    /// used or the account holds `max` endpoints.
    async fn create_endpoint(
        &self,
        endpoint: Endpoint,
        plan: PlanId,
        max: u32,
    ) -> Result<CreateOutcome, StoreError>;
    async fn endpoints(&self, account: &AccountId) -> Result<Vec<Endpoint>, StoreError>;
    async fn endpoint(
        &self,
        account: &AccountId,
        id: &WebhookId,
    ) -> Result<Option<Endpoint>, StoreError>;
    /// Writes only what `change` sets and answers the row as it then is;
    /// `None` when no such endpoint of the account. A column the change
    /// leaves alone keeps whatever a concurrent writer put there.
    async fn update_endpoint(
        &self,
        account: &AccountId,
        id: &WebhookId,
        change: EndpointChange,
    ) -> Result<Option<Endpoint>, StoreError>;
    /// Writes only the secret; false when no such endpoint of the account.
    async fn set_secret(
        &self,
        account: &AccountId,
        id: &WebhookId,
        secret: StoredSecret,
    ) -> Result<bool, StoreError>;
    /// Up to `limit` endpoints after `after` (by id) whose secret is plain
    /// or sealed under a key other than `current_key` (its hex id).
    async fn secrets_to_seal(
        &self,
        current_key: &str,
        after: Option<WebhookId>,
        limit: i64,
    ) -> Result<Vec<(WebhookId, StoredSecret)>, StoreError>;
    /// Replaces the secret only while it is still `old`.
    async fn replace_secret(
        &self,
        id: &WebhookId,
        old: StoredSecret,
        new: StoredSecret,
    ) -> Result<bool, StoreError>;
    /// Deletes it and its delivery log; its id is never used again.
    async fn delete_endpoint(
        &self,
        account: &AccountId,
        id: &WebhookId,
        at: Timestamp,
    ) -> Result<bool, StoreError>;
    async fn insert_delivery(
        &self,
        account: &AccountId,
        delivery: Delivery,
        manual: bool,
    ) -> Result<(), StoreError>;
    /// Counts the account's manual sends (tests and redeliveries) since
    /// `since` and, when fewer than `limit`, inserts `delivery` as one: under
    /// the account's row lock, so a burst cannot pass the count together.
    /// Answers the count before the insert.
    async fn insert_manual_delivery(
        &self,
        account: &AccountId,
        delivery: Delivery,
        since: Timestamp,
        limit: u64,
    ) -> Result<u64, StoreError>;
    async fn deliveries(
        &self,
        account: &AccountId,
        webhook: &WebhookId,
        status: Option<DeliveryStatus>,
        page: &PageRequest,
    ) -> Result<Vec<Delivery>, StoreError>;
    async fn delivery(
        &self,
        account: &AccountId,
        webhook: &WebhookId,
        id: &DeliveryId,
    ) -> Result<Option<Delivery>, StoreError>;

    /// Takes up to `limit` events not fanned out yet, applies `rule` to each
    /// with its account's endpoints and plan, stores the deliveries and marks
    /// the events done, in one transaction. Returns how many events.
    async fn fan_out(&self, limit: i64, rule: &FanOutRule) -> Result<usize, StoreError>;
    /// Leases up to `limit` pending deliveries due at `now` until
    /// `lease_until`, at most [`in_flight_cap`](crate::delivery::in_flight_cap)
    /// leased per endpoint at once; endpoints at their cap are skipped, so
    /// the others' due deliveries fill the free slots.
    async fn claim_due(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: i64,
    ) -> Result<Vec<DueDelivery>, StoreError>;
    /// Writes attempts' results (and their leases off), their endpoints'
    /// failure records (in order, as [`HealthWrite::merge`]), and for each
    /// with `disable` the endpoint off with its other pending deliveries
    /// failed with that error: all in one transaction.
    ///
    /// [`HealthWrite::merge`]: crate::delivery::HealthWrite::merge
    async fn record_attempts(&self, records: &[AttemptRecord]) -> Result<(), StoreError>;
    async fn delete_deliveries_before(&self, before: Timestamp) -> Result<u64, StoreError>;
}

/// Sends one attempt over HTTPS.
#[async_trait]
pub trait WebhookTransport: Send + Sync {
    async fn send(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: String,
    ) -> AttemptOutcome;
}

/// Tells the account an endpoint was switched off for failing (push, when on).
#[async_trait]
pub trait WebhookAlerts: Send + Sync {
    async fn webhook_disabled(&self, account: &AccountId, webhook: &WebhookId);
}

/// The columns one `PATCH` writes: only those it changes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EndpointChange {
    pub url: Option<String>,
    pub events: Option<EventFilter>,
    pub meta: Option<SealedBox>,
    /// Status and failure record, and `active_since` when switched back on.
    pub status: Option<(EndpointStatus, EndpointHealth, Option<Timestamp>)>,
}
