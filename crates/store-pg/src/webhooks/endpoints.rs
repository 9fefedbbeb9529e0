//! Webhook endpoints: creation under the account's plan and limit, reads,
//! changes, deletion (the id retired).

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_kernel::{AccountId, PlanId, StoreError, Timestamp, WebhookId};
use sealpost_webhooks::{CreateOutcome, Endpoint, EndpointChange};

use super::secrets::secret_columns;
use super::{EndpointRow, load_endpoints};
use crate::records::{box_to_json, id_retired, lock_account_plan, retire_id};
use crate::schema::webhooks;
use crate::{PgStore, db_error};

const WEBHOOK_ID_KIND: &str = "webhook";

pub(super) async fn create_endpoint(
    store: &PgStore,
    endpoint: Endpoint,
    plan: PlanId,
    max: u32,
) -> Result<CreateOutcome, StoreError> {
    let mut conn = store.conn().await?;
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
                webhooks::disabled_reason.eq(endpoint.status.disabled_reason().map(|r| r.as_str())),
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

pub(super) async fn endpoints(
    store: &PgStore,
    account: &AccountId,
) -> Result<Vec<Endpoint>, StoreError> {
    let mut conn = store.conn().await?;
    load_endpoints(&mut conn, account.as_str())
        .await
        .map_err(db_error)?
        .into_iter()
        .map(EndpointRow::into_endpoint)
        .collect()
}

pub(super) async fn endpoint(
    store: &PgStore,
    account: &AccountId,
    id: &WebhookId,
) -> Result<Option<Endpoint>, StoreError> {
    let mut conn = store.conn().await?;
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

pub(super) async fn update_endpoint(
    store: &PgStore,
    account: &AccountId,
    id: &WebhookId,
    change: EndpointChange,
) -> Result<Option<Endpoint>, StoreError> {
    let mut conn = store.conn().await?;
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

pub(super) async fn delete_endpoint(
    store: &PgStore,
    account: &AccountId,
    id: &WebhookId,
    at: Timestamp,
) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
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
