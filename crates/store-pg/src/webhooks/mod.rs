//! `WebhookRepository` over PostgreSQL: endpoints, the delivery queue
//! (leased with `FOR UPDATE SKIP LOCKED`), fan-out from the event outbox.
//! The row types live here; each feature's queries in its module
//! (`endpoints`, `secrets`, `deliveries`, `outbox`, `attempts`), which the
//! repository implementation below calls.

mod attempts;
mod deliveries;
mod endpoints;
mod outbox;
mod secrets;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::{
    AccountId, DeliveryId, EventId, PageRequest, PlanId, StoreError, Timestamp, WebhookId,
};
use sealpost_webhooks::delivery::{Delivery, DeliveryStatus};
use sealpost_webhooks::endpoint::{DisabledReason, EndpointHealth, EndpointStatus, StoredSecret};
use sealpost_webhooks::events::EventFilter;
use sealpost_webhooks::{
    AttemptRecord, CreateOutcome, DueDelivery, Endpoint, EndpointChange, FanOutRule,
    WebhookRepository,
};

use crate::PgStore;
use crate::records::box_from_json;
use crate::schema::{webhook_deliveries, webhooks};
use secrets::stored_secret;

#[derive(Queryable, Selectable)]
#[diesel(table_name = webhooks, check_for_backend(diesel::pg::Pg))]
struct EndpointRow {
    id: String,
    account_id: String,
    url: String,
    events: serde_json::Value,
    meta: Option<serde_json::Value>,
    secret: Option<String>,
    secret_sealed: Option<Vec<u8>>,
    active: bool,
    disabled_reason: Option<String>,
    active_since: DateTime<Utc>,
    failing_since: Option<DateTime<Utc>>,
    last_success_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
}

impl EndpointRow {
    fn into_endpoint(self) -> Result<Endpoint, StoreError> {
        let names: Vec<String> = serde_json::from_value(self.events).map_err(StoreError::failed)?;
        let reason = self
            .disabled_reason
            .map(|reason| reason.parse::<DisabledReason>())
            .transpose()
            .map_err(StoreError::failed)?;
        Ok(Endpoint {
            id: WebhookId::from_trusted(self.id),
            account: AccountId::from_trusted(self.account_id),
            url: self.url,
            events: EventFilter::parse(&names).map_err(StoreError::failed)?,
            meta: self.meta.map(box_from_json).transpose()?,
            secret: stored_secret(self.secret, self.secret_sealed)?,
            status: EndpointStatus::from_parts(self.active, reason),
            active_since: self.active_since.into(),
            health: EndpointHealth {
                failing_since: self.failing_since.map(Into::into),
                last_success_at: self.last_success_at.map(Into::into),
            },
            created_at: self.created_at.into(),
        })
    }
}

#[derive(Queryable, Selectable, QueryableByName)]
#[diesel(table_name = webhook_deliveries, check_for_backend(diesel::pg::Pg))]
struct DeliveryRow {
    id: String,
    webhook_id: String,
    event_id: String,
    event_type: String,
    body: String,
    status: String,
    attempts: i32,
    response_status: Option<i32>,
    error: Option<String>,
    created_at: DateTime<Utc>,
    last_attempt_at: Option<DateTime<Utc>>,
    next_attempt_at: Option<DateTime<Utc>>,
}

impl DeliveryRow {
    fn into_delivery(self) -> Result<Delivery, StoreError> {
        Ok(Delivery {
            id: DeliveryId::from_trusted(self.id),
            webhook_id: WebhookId::from_trusted(self.webhook_id),
            event_id: EventId::from_trusted(self.event_id),
            event_type: self.event_type.parse().map_err(StoreError::failed)?,
            body: self.body,
            status: self.status.parse().map_err(StoreError::failed)?,
            attempts: u32::try_from(self.attempts).map_err(StoreError::failed)?,
            response_status: self.response_status.map(|s| s as u16),
            error: self.error,
            created_at: self.created_at.into(),
            last_attempt_at: self.last_attempt_at.map(Into::into),
            next_attempt_at: self.next_attempt_at.map(Into::into),
        })
    }
}

async fn load_endpoints(
    conn: &mut AsyncPgConnection,
    account: &str,
) -> Result<Vec<EndpointRow>, diesel::result::Error> {
    webhooks::table
        .filter(webhooks::account_id.eq(account))
        .select(EndpointRow::as_select())
        .order(webhooks::created_at.asc())
        .load(conn)
        .await
}

#[async_trait]
impl WebhookRepository for PgStore {
    async fn create_endpoint(
        &self,
        endpoint: Endpoint,
        plan: PlanId,
        max: u32,
    ) -> Result<CreateOutcome, StoreError> {
        endpoints::create_endpoint(self, endpoint, plan, max).await
    }

    async fn endpoints(&self, account: &AccountId) -> Result<Vec<Endpoint>, StoreError> {
        endpoints::endpoints(self, account).await
    }

    async fn endpoint(
        &self,
        account: &AccountId,
        id: &WebhookId,
    ) -> Result<Option<Endpoint>, StoreError> {
        endpoints::endpoint(self, account, id).await
    }

    async fn update_endpoint(
        &self,
        account: &AccountId,
        id: &WebhookId,
        change: EndpointChange,
    ) -> Result<Option<Endpoint>, StoreError> {
        endpoints::update_endpoint(self, account, id, change).await
    }

    async fn set_secret(
        &self,
        account: &AccountId,
        id: &WebhookId,
        secret: StoredSecret,
    ) -> Result<bool, StoreError> {
        secrets::set_secret(self, account, id, secret).await
    }

    async fn secrets_to_seal(
        &self,
        current_key: &str,
        after: Option<WebhookId>,
        limit: i64,
    ) -> Result<Vec<(WebhookId, StoredSecret)>, StoreError> {
        secrets::secrets_to_seal(self, current_key, after, limit).await
    }

    async fn replace_secret(
        &self,
        id: &WebhookId,
        old: StoredSecret,
        new: StoredSecret,
    ) -> Result<bool, StoreError> {
        secrets::replace_secret(self, id, old, new).await
    }

    async fn delete_endpoint(
        &self,
        account: &AccountId,
        id: &WebhookId,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        endpoints::delete_endpoint(self, account, id, at).await
    }

    async fn insert_delivery(
        &self,
        account: &AccountId,
        delivery: Delivery,
        manual: bool,
    ) -> Result<(), StoreError> {
        deliveries::insert_delivery(self, account, delivery, manual).await
    }

    async fn insert_manual_delivery(
        &self,
        account: &AccountId,
        delivery: Delivery,
        since: Timestamp,
        limit: u64,
    ) -> Result<u64, StoreError> {
        deliveries::insert_manual_delivery(self, account, delivery, since, limit).await
    }

    async fn deliveries(
        &self,
        account: &AccountId,
        webhook: &WebhookId,
        status: Option<DeliveryStatus>,
        page: &PageRequest,
    ) -> Result<Vec<Delivery>, StoreError> {
        deliveries::deliveries(self, account, webhook, status, page).await
    }

    async fn delivery(
        &self,
        account: &AccountId,
        webhook: &WebhookId,
        id: &DeliveryId,
    ) -> Result<Option<Delivery>, StoreError> {
        deliveries::delivery(self, account, webhook, id).await
    }

    async fn fan_out(&self, limit: i64, rule: &FanOutRule) -> Result<usize, StoreError> {
        outbox::fan_out(self, limit, rule).await
    }

    async fn claim_due(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: i64,
    ) -> Result<Vec<DueDelivery>, StoreError> {
        attempts::claim_due(self, now, lease_until, limit).await
    }

    async fn record_attempts(&self, records: &[AttemptRecord]) -> Result<(), StoreError> {
        attempts::record_attempts(self, records).await
    }

    async fn delete_deliveries_before(&self, before: Timestamp) -> Result<u64, StoreError> {
        deliveries::delete_deliveries_before(self, before).await
    }
}
