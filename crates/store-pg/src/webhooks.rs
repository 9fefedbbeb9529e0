//! `WebhookRepository` over PostgreSQL: endpoints, the delivery queue
//! (leased with `FOR UPDATE SKIP LOCKED`), fan-out from the event outbox.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Integer, Nullable, Text, Timestamptz};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_activity::Event;
use sealpost_kernel::{
    AccountId, DeliveryId, EventId, PageRequest, PlanId, StoreError, Timestamp, WebhookId,
};
use sealpost_webhooks::delivery::{
    Delivery, DeliveryStatus, FAILING_IN_FLIGHT, HEALTHY_IN_FLIGHT, HealthWrite,
};
use sealpost_webhooks::endpoint::{DisabledReason, EndpointHealth, EndpointStatus, StoredSecret};
use sealpost_webhooks::events::EventFilter;
use sealpost_webhooks::{
    AttemptRecord, CreateOutcome, DueDelivery, Endpoint, EndpointChange, FanOutRule,
    WebhookRepository,
};

use crate::outbox::{OutboxConsumer, claim_outbox};
use crate::records::{
    box_from_json, box_to_json, id_retired, lock_account_plan, lock_account_row, retire_id,
};
use crate::schema::{accounts, events, webhook_deliveries, webhooks};
use crate::{PgStore, db_error};

const WEBHOOK_ID_KIND: &str = "webhook";

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

/// The one of the two secret columns that is set (a CHECK keeps it one).
fn stored_secret(
    plain: Option<String>,
    sealed: Option<Vec<u8>>,
) -> Result<StoredSecret, StoreError> {
    match (plain, sealed) {
        (_, Some(sealed)) => Ok(StoredSecret::Sealed(sealed)),
        (Some(plain), None) => Ok(StoredSecret::Plain(plain)),
        (None, None) => Err(StoreError::Failed("a webhook row without a secret".into())),
    }
}

/// The two secret columns of a stored secret.
fn secret_columns(secret: &StoredSecret) -> (Option<&str>, Option<&[u8]>) {
    match secret {
        StoredSecret::Sealed(sealed) => (None, Some(sealed.as_slice())),
        StoredSecret::Plain(plain) => (Some(plain.as_str()), None),
    }
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

/// Rows per INSERT: 11 bound values each, well under PostgreSQL's 65,535.
const INSERT_CHUNK: usize = 1000;

async fn insert_delivery_row(
    conn: &mut AsyncPgConnection,
    account: &AccountId,
    delivery: &Delivery,
    manual: bool,
) -> Result<(), diesel::result::Error> {
    insert_delivery_rows(conn, &[(account.clone(), delivery.clone())], manual).await
}

async fn insert_delivery_rows(
    conn: &mut AsyncPgConnection,
    rows: &[(AccountId, Delivery)],
    manual: bool,
) -> Result<(), diesel::result::Error> {
    for chunk in rows.chunks(INSERT_CHUNK) {
        let values: Vec<_> = chunk
            .iter()
            .map(|(account, delivery)| delivery_values(account, delivery, manual))
            .collect();
        diesel::insert_into(webhook_deliveries::table)
            .values(values)
            .execute(conn)
            .await?;
    }
    Ok(())
}

#[expect(
    clippy::type_complexity,
    reason = "diesel's tuple of column assignments"
)]
fn delivery_values<'a>(
    account: &'a AccountId,
    delivery: &'a Delivery,
    manual: bool,
) -> (
    diesel::dsl::Eq<webhook_deliveries::id, &'a str>,
    diesel::dsl::Eq<webhook_deliveries::webhook_id, &'a str>,
    diesel::dsl::Eq<webhook_deliveries::account_id, &'a str>,
    diesel::dsl::Eq<webhook_deliveries::event_id, &'a str>,
    diesel::dsl::Eq<webhook_deliveries::event_type, &'static str>,
    diesel::dsl::Eq<webhook_deliveries::body, &'a String>,
    diesel::dsl::Eq<webhook_deliveries::status, &'static str>,
    diesel::dsl::Eq<webhook_deliveries::attempts, i32>,
    diesel::dsl::Eq<webhook_deliveries::created_at, DateTime<Utc>>,
    diesel::dsl::Eq<webhook_deliveries::next_attempt_at, Option<DateTime<Utc>>>,
    diesel::dsl::Eq<webhook_deliveries::manual, bool>,
) {
    (
        webhook_deliveries::id.eq(delivery.id.as_str()),
        webhook_deliveries::webhook_id.eq(delivery.webhook_id.as_str()),
        webhook_deliveries::account_id.eq(account.as_str()),
        webhook_deliveries::event_id.eq(delivery.event_id.as_str()),
        webhook_deliveries::event_type.eq(delivery.event_type.as_str()),
        webhook_deliveries::body.eq(&delivery.body),
        webhook_deliveries::status.eq(delivery.status.as_str()),
        webhook_deliveries::attempts.eq(delivery.attempts as i32),
        webhook_deliveries::created_at.eq(delivery.created_at.as_datetime()),
        webhook_deliveries::next_attempt_at.eq(delivery.next_attempt_at.map(|t| t.as_datetime())),
        webhook_deliveries::manual.eq(manual),
    )
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
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            // Under the lock a plan change takes too: the plan the request
            // was decided with still holds, or it is decided again.
            let current = lock_account_plan(conn, &endpoint.account).await?;
            if current != plan {
                return Ok(CreateOutcome::PlanChanged(current));
            }
            let id = endpoint.id.as_str();
            let used: i64 = webhooks::table.find(id).count().get_result(conn).await?;
            if used > 0 || id_retired(conn, WEBHOOK_ID_KIND, id).await? {
                return Ok(CreateOutcome::IdTaken);
            }
            let held: i64 = webhooks::table
                .filter(webhooks::account_id.eq(endpoint.account.as_str()))
                .count()
                .get_result(conn)
                .await?;
            if held >= i64::from(max) {
                return Ok(CreateOutcome::LimitReached);
            }
            diesel::insert_into(webhooks::table)
                .values((
                    webhooks::id.eq(id),
                    webhooks::account_id.eq(endpoint.account.as_str()),
                    webhooks::url.eq(&endpoint.url),
                    webhooks::events.eq(serde_json::json!(endpoint.events.to_strings())),
                    webhooks::meta.eq(endpoint.meta.as_ref().map(box_to_json)),
                    webhooks::secret.eq(secret_columns(&endpoint.secret).0),
                    webhooks::secret_sealed.eq(secret_columns(&endpoint.secret).1),
                    webhooks::active.eq(endpoint.status.is_active()),
                    webhooks::disabled_reason
                        .eq(endpoint.status.disabled_reason().map(|r| r.as_str())),
                    webhooks::active_since.eq(endpoint.active_since.as_datetime()),
                    webhooks::created_at.eq(endpoint.created_at.as_datetime()),
                ))
                .execute(conn)
                .await?;
            Ok::<_, diesel::result::Error>(CreateOutcome::Created)
        })
        .await
        .map_err(db_error)
    }

    async fn endpoints(&self, account: &AccountId) -> Result<Vec<Endpoint>, StoreError> {
        let mut conn = self.conn().await?;
        load_endpoints(&mut conn, account.as_str())
            .await
            .map_err(db_error)?
            .into_iter()
            .map(EndpointRow::into_endpoint)
            .collect()
    }

    async fn endpoint(
        &self,
        account: &AccountId,
        id: &WebhookId,
    ) -> Result<Option<Endpoint>, StoreError> {
        let mut conn = self.conn().await?;
        webhooks::table
            .filter(webhooks::id.eq(id.as_str()))
            .filter(webhooks::account_id.eq(account.as_str()))
            .select(EndpointRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?
            .map(EndpointRow::into_endpoint)
            .transpose()
    }

    async fn update_endpoint(
        &self,
        account: &AccountId,
        id: &WebhookId,
        change: EndpointChange,
    ) -> Result<Option<Endpoint>, StoreError> {
        let mut conn = self.conn().await?;
        let target = webhooks::table
            .filter(webhooks::id.eq(id.as_str()))
            .filter(webhooks::account_id.eq(account.as_str()));
        let status = change.status.as_ref();
        // Only the columns the change sets: a `None` leaves its column out.
        let columns = (
            change.url.as_ref().map(|url| webhooks::url.eq(url)),
            change
                .events
                .as_ref()
                .map(|events| webhooks::events.eq(serde_json::json!(events.to_strings()))),
            change
                .meta
                .as_ref()
                .map(|meta| webhooks::meta.eq(Some(box_to_json(meta)))),
            status.map(|(status, _, _)| webhooks::active.eq(status.is_active())),
            status.map(|(status, _, _)| {
                webhooks::disabled_reason.eq(status.disabled_reason().map(|r| r.as_str()))
            }),
            status.map(|(_, health, _)| {
                webhooks::failing_since.eq(health.failing_since.map(|t| t.as_datetime()))
            }),
            status.map(|(_, health, _)| {
                webhooks::last_success_at.eq(health.last_success_at.map(|t| t.as_datetime()))
            }),
            status
                .and_then(|(_, _, since)| *since)
                .map(|since| webhooks::active_since.eq(since.as_datetime())),
        );
        let nothing = change == EndpointChange::default();
        let row = if nothing {
            target
                .select(EndpointRow::as_select())
                .first(&mut conn)
                .await
                .optional()
        } else {
            diesel::update(target)
                .set(columns)
                .returning(EndpointRow::as_returning())
                .get_result(&mut conn)
                .await
                .optional()
        }
        .map_err(db_error)?;
        row.map(EndpointRow::into_endpoint).transpose()
    }

    async fn set_secret(
        &self,
        account: &AccountId,
        id: &WebhookId,
        secret: StoredSecret,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let (plain, sealed) = secret_columns(&secret);
        let updated = diesel::update(
            webhooks::table
                .filter(webhooks::id.eq(id.as_str()))
                .filter(webhooks::account_id.eq(account.as_str())),
        )
        .set((
            webhooks::secret.eq(plain),
            webhooks::secret_sealed.eq(sealed),
        ))
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(updated > 0)
    }

    async fn secrets_to_seal(
        &self,
        current_key: &str,
        after: Option<WebhookId>,
        limit: i64,
    ) -> Result<Vec<(WebhookId, StoredSecret)>, StoreError> {
        #[derive(QueryableByName)]
        struct SecretRow {
            #[diesel(sql_type = Text)]
            id: String,
            #[diesel(sql_type = Nullable<Text>)]
            secret: Option<String>,
            #[diesel(sql_type = Nullable<diesel::sql_types::Bytea>)]
            secret_sealed: Option<Vec<u8>>,
        }
        let mut conn = self.conn().await?;
        // Bytes 2 to 5 of a sealed value are its key's id.
        let rows: Vec<SecretRow> = diesel::sql_query(
            "SELECT id, secret, secret_sealed FROM webhooks \
             WHERE (secret IS NOT NULL \
                    OR encode(substring(secret_sealed FROM 2 FOR 4), 'hex') <> $1) \
               AND id > $2 \
             ORDER BY id LIMIT $3",
        )
        .bind::<Text, _>(current_key)
        .bind::<Text, _>(after.as_ref().map_or("", WebhookId::as_str))
        .bind::<BigInt, _>(limit)
        .load(&mut conn)
        .await
        .map_err(db_error)?;
        rows.into_iter()
            .map(|row| {
                Ok((
                    WebhookId::from_trusted(row.id),
                    stored_secret(row.secret, row.secret_sealed)?,
                ))
            })
            .collect()
    }

    async fn replace_secret(
        &self,
        id: &WebhookId,
        old: StoredSecret,
        new: StoredSecret,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let (old_plain, old_sealed) = secret_columns(&old);
        let (plain, sealed) = secret_columns(&new);
        let updated = diesel::update(
            webhooks::table
                .filter(webhooks::id.eq(id.as_str()))
                .filter(webhooks::secret.is_not_distinct_from(old_plain))
                .filter(webhooks::secret_sealed.is_not_distinct_from(old_sealed)),
        )
        .set((
            webhooks::secret.eq(plain),
            webhooks::secret_sealed.eq(sealed),
        ))
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(updated > 0)
    }

    async fn delete_endpoint(
        &self,
        account: &AccountId,
        id: &WebhookId,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            let deleted = diesel::delete(
                webhooks::table
                    .filter(webhooks::id.eq(id.as_str()))
                    .filter(webhooks::account_id.eq(account.as_str())),
            )
            .execute(conn)
            .await?;
            if deleted > 0 {
                retire_id(conn, WEBHOOK_ID_KIND, id.as_str(), at).await?;
            }
            Ok::<_, diesel::result::Error>(deleted > 0)
        })
        .await
        .map_err(db_error)
    }

    async fn insert_delivery(
        &self,
        account: &AccountId,
        delivery: Delivery,
        manual: bool,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        insert_delivery_row(&mut conn, account, &delivery, manual)
            .await
            .map_err(db_error)
    }

    async fn insert_manual_delivery(
        &self,
        account: &AccountId,
        delivery: Delivery,
        since: Timestamp,
        limit: u64,
    ) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            // One manual send at a time per account: count and insert together.
            lock_account_row(conn, account).await?;
            let count: i64 = webhook_deliveries::table
                .filter(webhook_deliveries::account_id.eq(account.as_str()))
                .filter(webhook_deliveries::manual.eq(true))
                .filter(webhook_deliveries::created_at.ge(since.as_datetime()))
                .count()
                .get_result(conn)
                .await?;
            let used = count.max(0) as u64;
            if used < limit {
                insert_delivery_row(conn, account, &delivery, true).await?;
            }
            Ok::<_, diesel::result::Error>(used)
        })
        .await
        .map_err(db_error)
    }

    async fn deliveries(
        &self,
        account: &AccountId,
        webhook: &WebhookId,
        status: Option<DeliveryStatus>,
        page: &PageRequest,
    ) -> Result<Vec<Delivery>, StoreError> {
        let mut conn = self.conn().await?;
        let mut query = webhook_deliveries::table
            .filter(webhook_deliveries::webhook_id.eq(webhook.as_str()))
            .filter(webhook_deliveries::account_id.eq(account.as_str()))
            .select(DeliveryRow::as_select())
            .order((
                webhook_deliveries::created_at.desc(),
                webhook_deliveries::id.desc(),
            ))
            .limit(page.fetch_limit())
            .into_boxed();
        if let Some(status) = status {
            query = query.filter(webhook_deliveries::status.eq(status.as_str()));
        }
        if let Some(after) = &page.after {
            let at = after.at.as_datetime();
            query = query.filter(
                webhook_deliveries::created_at
                    .lt(at)
                    .or(webhook_deliveries::created_at
                        .eq(at)
                        .and(webhook_deliveries::id.lt(after.id.clone()))),
            );
        }
        query
            .load(&mut conn)
            .await
            .map_err(db_error)?
            .into_iter()
            .map(DeliveryRow::into_delivery)
            .collect()
    }

    async fn delivery(
        &self,
        account: &AccountId,
        webhook: &WebhookId,
        id: &DeliveryId,
    ) -> Result<Option<Delivery>, StoreError> {
        let mut conn = self.conn().await?;
        webhook_deliveries::table
            .filter(webhook_deliveries::id.eq(id.as_str()))
            .filter(webhook_deliveries::webhook_id.eq(webhook.as_str()))
            .filter(webhook_deliveries::account_id.eq(account.as_str()))
            .select(DeliveryRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?
            .map(DeliveryRow::into_delivery)
            .transpose()
    }

    async fn fan_out(&self, limit: i64, rule: &FanOutRule) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            let rows = claim_outbox(conn, OutboxConsumer::Webhooks, limit).await?;
            if rows.is_empty() {
                return Ok(0);
            }
            let mut accounts_seen: HashMap<String, (Vec<Endpoint>, PlanId)> = HashMap::new();
            let mut created = Vec::new();
            for (id, account, kind, payload, at) in &rows {
                if !accounts_seen.contains_key(account) {
                    let plan: Option<String> = accounts::table
                        .find(account.as_str())
                        .select(accounts::plan_id)
                        .first(conn)
                        .await
                        .optional()?;
                    let endpoints = load_endpoints(conn, account)
                        .await?
                        .into_iter()
                        .filter_map(|row| row.into_endpoint().ok())
                        .collect();
                    let plan = plan.and_then(|p| p.parse().ok()).unwrap_or(PlanId::Free);
                    accounts_seen.insert(account.clone(), (endpoints, plan));
                }
                let Some((endpoints, plan)) = accounts_seen.get(account) else {
                    continue;
                };
                let Ok(kind) = kind.parse() else {
                    continue;
                };
                let event = Event {
                    id: EventId::from_trusted(id.clone()),
                    account: AccountId::from_trusted(account.clone()),
                    kind,
                    payload: payload.clone(),
                    at: (*at).into(),
                };
                created.extend(
                    rule(&event, endpoints, *plan)
                        .into_iter()
                        .map(|delivery| (event.account.clone(), delivery)),
                );
            }
            insert_delivery_rows(conn, &created, false).await?;
            let ids: Vec<&str> = rows.iter().map(|row| row.0.as_str()).collect();
            diesel::update(events::table.filter(events::id.eq_any(ids)))
                .set(events::fanned_out.eq(true))
                .execute(conn)
                .await?;
            Ok::<_, diesel::result::Error>(rows.len())
        })
        .await
        .map_err(db_error)
    }

    async fn claim_due(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: i64,
    ) -> Result<Vec<DueDelivery>, StoreError> {
        let mut conn = self.conn().await?;
        // Per endpoint with pending deliveries (found by a skip scan of the
        // pending index, so cost follows endpoints, not queue length): its
        // free slots (cap less leased attempts, counted on the in-flight
        // index: only pending deliveries hold a lease, every status change
        // ends it; a failing endpoint has a smaller cap), then its oldest due
        // unleased deliveries up to that. The count walks the index in lease
        // order and stops at the cap: a plain index scan skips the entries
        // of ended leases once it has seen them dead, where a bitmap scan
        // would visit every one until vacuum.
        // Endpoints at their cap take nothing, so they never crowd out
        // others. A suspended account's endpoints take nothing either: their
        // deliveries wait, pending, until the suspension is lifted. Rows another sender is leasing right now are skipped, and
        // the lease is re-checked as it is taken: no delivery is leased twice.
        let rows: Vec<DeliveryRow> = diesel::sql_query(
            "WITH RECURSIVE endpoints AS ( \
               (SELECT webhook_id AS id FROM webhook_deliveries WHERE status = 'pending' \
                ORDER BY webhook_id LIMIT 1) \
               UNION ALL \
               SELECT (SELECT d.webhook_id FROM webhook_deliveries d \
                       WHERE d.status = 'pending' AND d.webhook_id > e.id \
                       ORDER BY d.webhook_id LIMIT 1) \
               FROM endpoints e WHERE e.id IS NOT NULL), \
             slots AS MATERIALIZED ( \
               SELECT w.id, CASE WHEN w.failing_since IS NULL THEN $4 ELSE $5 END \
                 - (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries f \
                      WHERE f.webhook_id = w.id AND f.lease_until > $1 \
                      ORDER BY f.lease_until LIMIT $4) l) AS free \
               FROM endpoints e JOIN webhooks w ON w.id = e.id \
               WHERE NOT EXISTS (SELECT 1 FROM account_suspensions x \
                                 WHERE x.account_id = w.account_id)), \
             picked AS ( \
               SELECT p.id, p.next_attempt_at FROM slots s CROSS JOIN LATERAL ( \
                 SELECT d.id, d.next_attempt_at FROM webhook_deliveries d \
                 WHERE d.webhook_id = s.id AND d.status = 'pending' AND d.next_attempt_at <= $1 \
                   AND (d.lease_until IS NULL OR d.lease_until <= $1) \
                 ORDER BY d.next_attempt_at LIMIT greatest(s.free, 0) \
                 FOR UPDATE SKIP LOCKED) p \
               WHERE s.free > 0) \
             UPDATE webhook_deliveries SET lease_until = $2 \
             WHERE id IN (SELECT id FROM picked ORDER BY next_attempt_at LIMIT $3) \
               AND status = 'pending' AND (lease_until IS NULL OR lease_until <= $1) \
             RETURNING id, webhook_id, event_id, event_type, body, status, attempts, response_status, \
                       error, created_at, last_attempt_at, next_attempt_at",
        )
        .bind::<Timestamptz, _>(now.as_datetime())
        .bind::<Timestamptz, _>(lease_until.as_datetime())
        .bind::<BigInt, _>(limit)
        .bind::<BigInt, _>(i64::from(HEALTHY_IN_FLIGHT))
        .bind::<BigInt, _>(i64::from(FAILING_IN_FLIGHT))
        .load(&mut conn)
        .await
        .map_err(db_error)?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        // The endpoints (and their accounts' plans) in one read.
        let mut ids: Vec<&str> = rows.iter().map(|row| row.webhook_id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        let found: Vec<(EndpointRow, String)> = webhooks::table
            .inner_join(accounts::table)
            .filter(webhooks::id.eq_any(&ids))
            .select((EndpointRow::as_select(), accounts::plan_id))
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        let mut endpoints: HashMap<String, (Endpoint, PlanId)> = HashMap::new();
        for (endpoint, plan) in found {
            let endpoint = endpoint.into_endpoint()?;
            let plan = plan.parse().map_err(StoreError::failed)?;
            endpoints.insert(endpoint.id.to_string(), (endpoint, plan));
        }
        let mut due = Vec::with_capacity(rows.len());
        for row in rows {
            let delivery = row.into_delivery()?;
            if let Some((endpoint, plan)) = endpoints.get(delivery.webhook_id.as_str()) {
                due.push(DueDelivery {
                    delivery,
                    endpoint: endpoint.clone(),
                    plan: *plan,
                });
            }
        }
        Ok(due)
    }

    async fn record_attempts(&self, records: &[AttemptRecord]) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        // Every delivery in one statement; one failure-record write per
        // endpoint, in id order (so concurrent senders lock endpoints in the
        // same order); then the rare switch-offs.
        let mut ids = Vec::with_capacity(records.len());
        let mut statuses = Vec::with_capacity(records.len());
        let mut attempts = Vec::with_capacity(records.len());
        let mut responses = Vec::with_capacity(records.len());
        let mut errors = Vec::with_capacity(records.len());
        let mut last_attempts = Vec::with_capacity(records.len());
        let mut next_attempts = Vec::with_capacity(records.len());
        let mut healths: std::collections::BTreeMap<&str, Vec<EndpointHealth>> =
            std::collections::BTreeMap::new();
        for record in records {
            let delivery = &record.delivery;
            ids.push(delivery.id.as_str());
            statuses.push(delivery.status.as_str());
            attempts.push(i32::try_from(delivery.attempts).unwrap_or(i32::MAX));
            responses.push(delivery.response_status.map(i32::from));
            errors.push(delivery.error.as_deref());
            last_attempts.push(delivery.last_attempt_at.map(|t| t.as_datetime()));
            next_attempts.push(delivery.next_attempt_at.map(|t| t.as_datetime()));
            healths
                .entry(delivery.webhook_id.as_str())
                .or_default()
                .push(record.health);
        }
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            diesel::sql_query(
                "UPDATE webhook_deliveries d SET status = v.status, attempts = v.attempts, \
                   response_status = v.response_status, error = v.error, \
                   last_attempt_at = v.last_attempt_at, next_attempt_at = v.next_attempt_at, \
                   lease_until = NULL \
                 FROM unnest($1::text[], $2::text[], $3::int4[], $4::int4[], $5::text[], \
                             $6::timestamptz[], $7::timestamptz[]) \
                   AS v(id, status, attempts, response_status, error, last_attempt_at, next_attempt_at) \
                 WHERE d.id = v.id",
            )
            .bind::<Array<Text>, _>(&ids)
            .bind::<Array<Text>, _>(&statuses)
            .bind::<Array<Integer>, _>(&attempts)
            .bind::<Array<Nullable<Integer>>, _>(&responses)
            .bind::<Array<Nullable<Text>>, _>(&errors)
            .bind::<Array<Nullable<Timestamptz>>, _>(&last_attempts)
            .bind::<Array<Nullable<Timestamptz>>, _>(&next_attempts)
            .execute(conn)
            .await?;
            for (webhook_id, records) in &healths {
                let Some(write) = HealthWrite::merge(records.iter().copied()) else {
                    continue;
                };
                // After a success: cleared (or failing again from a later
                // failure) and `last_success_at` written. Failures only:
                // the earliest start is kept when attempts race.
                diesel::sql_query(
                    "UPDATE webhooks SET \
                       failing_since = CASE WHEN $1 THEN $3 ELSE COALESCE(failing_since, $3) END, \
                       last_success_at = CASE WHEN $1 THEN $2 ELSE last_success_at END \
                     WHERE id = $4",
                )
                .bind::<Bool, _>(write.succeeded)
                .bind::<Nullable<Timestamptz>, _>(write.last_success_at.map(|t| t.as_datetime()))
                .bind::<Nullable<Timestamptz>, _>(write.failing_since.map(|t| t.as_datetime()))
                .bind::<Text, _>(*webhook_id)
                .execute(conn)
                .await?;
            }
            for record in records {
                let Some(error) = &record.disable else {
                    continue;
                };
                let webhook_id = record.delivery.webhook_id.as_str();
                diesel::update(webhooks::table.find(webhook_id))
                    .set((
                        webhooks::active.eq(false),
                        webhooks::disabled_reason.eq(DisabledReason::Failing.as_str()),
                    ))
                    .execute(conn)
                    .await?;
                diesel::update(
                    webhook_deliveries::table
                        .filter(webhook_deliveries::webhook_id.eq(webhook_id))
                        .filter(webhook_deliveries::status.eq(DeliveryStatus::Pending.as_str())),
                )
                .set((
                    webhook_deliveries::status.eq(DeliveryStatus::Failed.as_str()),
                    webhook_deliveries::error.eq(error),
                    webhook_deliveries::next_attempt_at.eq(None::<DateTime<Utc>>),
                    webhook_deliveries::lease_until.eq(None::<DateTime<Utc>>),
                ))
                .execute(conn)
                .await?;
            }
            Ok::<_, diesel::result::Error>(())
        })
        .await
        .map_err(db_error)
    }

    async fn delete_deliveries_before(&self, before: Timestamp) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        let deleted = diesel::delete(
            webhook_deliveries::table
                .filter(webhook_deliveries::created_at.lt(before.as_datetime())),
        )
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(deleted as u64)
    }
}
