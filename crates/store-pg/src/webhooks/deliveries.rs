//! The delivery log: inserting deliveries (many rows per statement;
//! manual sends counted under the account's lock), reading them, and the
//! sweep of old ones.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::{AccountId, DeliveryId, PageRequest, StoreError, Timestamp, WebhookId};
use sealpost_webhooks::delivery::{Delivery, DeliveryStatus};

use super::DeliveryRow;
use crate::records::lock_account_row;
use crate::schema::webhook_deliveries;
use crate::{PgStore, db_error};

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

pub(super) async fn insert_delivery_rows(
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

pub(super) async fn insert_delivery(
    store: &PgStore,
    account: &AccountId,
    delivery: Delivery,
    manual: bool,
) -> Result<(), StoreError> {
    let mut conn = store.conn().await?;
    insert_delivery_row(&mut conn, account, &delivery, manual)
        .await
        .map_err(db_error)
}

pub(super) async fn insert_manual_delivery(
    store: &PgStore,
    account: &AccountId,
    delivery: Delivery,
    since: Timestamp,
    limit: u64,
) -> Result<u64, StoreError> {
    let mut conn = store.conn().await?;
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

pub(super) async fn deliveries(
    store: &PgStore,
    account: &AccountId,
    webhook: &WebhookId,
    status: Option<DeliveryStatus>,
    page: &PageRequest,
) -> Result<Vec<Delivery>, StoreError> {
    let mut conn = store.conn().await?;
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

pub(super) async fn delivery(
    store: &PgStore,
    account: &AccountId,
    webhook: &WebhookId,
    id: &DeliveryId,
) -> Result<Option<Delivery>, StoreError> {
    let mut conn = store.conn().await?;
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

pub(super) async fn delete_deliveries_before(
    store: &PgStore,
    before: Timestamp,
) -> Result<u64, StoreError> {
    let mut conn = store.conn().await?;
    let deleted = diesel::delete(
        webhook_deliveries::table.filter(webhook_deliveries::created_at.lt(before.as_datetime())),
    )
    .execute(&mut conn)
    .await
    .map_err(db_error)?;
    Ok(deleted as u64)
}
