//! API keys for `AccountRepository` (its impl in `accounts.rs` calls these).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_accounts::{ApiKey, ApiKeyOutcome, Bearer, FoundBearer};
use sealpost_kernel::{AccountId, ApiKeyId, PlanId, StoreError, Timestamp};

use crate::records::{box_from_json, box_to_json, id_retired, lock_account_plan, retire_id};
use crate::schema::{account_suspensions, api_keys};
use crate::{PgStore, bytes32, db_error};

/// The kind an API key id is retired under (`retired_ids`).
pub(crate) const API_KEY_ID_KIND: &str = "api_key";

#[derive(Queryable, Selectable)]
#[diesel(table_name = api_keys, check_for_backend(diesel::pg::Pg))]
struct ApiKeyRow {
    id: String,
    account_id: String,
    token_hash: Vec<u8>,
    label: serde_json::Value,
    created_at: DateTime<Utc>,
    last_used_at: Option<DateTime<Utc>>,
    paused_at: Option<DateTime<Utc>>,
}

impl ApiKeyRow {
    fn into_key(self) -> Result<ApiKey, StoreError> {
        Ok(ApiKey {
            id: ApiKeyId::from_trusted(self.id),
            account_id: AccountId::from_trusted(self.account_id),
            token_hash: bytes32(self.token_hash)?,
            label: box_from_json(self.label)?,
            created_at: self.created_at.into(),
            last_used_at: self.last_used_at.map(Into::into),
            paused: self.paused_at.is_some(),
        })
    }
}

/// The key a token hash belongs to, with its account's suspension.
pub(crate) async fn bearer(
    conn: &mut AsyncPgConnection,
    token_hash: &[u8; 32],
) -> Result<Option<FoundBearer>, StoreError> {
    let found: Option<(ApiKeyRow, Option<String>)> = api_keys::table
        .left_join(
            account_suspensions::table.on(account_suspensions::account_id.eq(api_keys::account_id)),
        )
        .filter(api_keys::token_hash.eq(token_hash.as_slice()))
        .select((
            ApiKeyRow::as_select(),
            account_suspensions::account_id.nullable(),
        ))
        .first(conn)
        .await
        .optional()
        .map_err(db_error)?;
    found
        .map(|(row, suspension)| {
            let key = row.into_key()?;
            Ok(FoundBearer {
                bearer: Bearer::ApiKey {
                    account_id: key.account_id,
                    key_id: key.id,
                    last_used_at: key.last_used_at,
                    paused: key.paused,
                },
                suspended: suspension.is_some(),
            })
        })
        .transpose()
}

pub(crate) async fn create(
    store: &PgStore,
    key: ApiKey,
    plan: PlanId,
    limit: u32,
) -> Result<ApiKeyOutcome, StoreError> {
    let mut conn = store.conn().await?;
    conn.transaction(async |conn| {
        // A plan change takes the same lock: the limit is the held plan's.
        let current = lock_account_plan(conn, &key.account_id).await?;
        if current != plan {
            return Ok(ApiKeyOutcome::PlanChanged(current));
        }
        let id = key.id.as_str();
        let used: i64 = api_keys::table.find(id).count().get_result(conn).await?;
        if used > 0 || id_retired(conn, API_KEY_ID_KIND, id).await? {
            return Ok(ApiKeyOutcome::IdTaken);
        }
        let held: i64 = api_keys::table
            .filter(api_keys::account_id.eq(key.account_id.as_str()))
            .count()
            .get_result(conn)
            .await?;
        if held >= i64::from(limit) {
            return Ok(ApiKeyOutcome::LimitReached);
        }
        diesel::insert_into(api_keys::table)
            .values((
                api_keys::id.eq(id),
                api_keys::account_id.eq(key.account_id.as_str()),
                api_keys::token_hash.eq(key.token_hash.as_slice()),
                api_keys::label.eq(box_to_json(&key.label)),
                api_keys::created_at.eq(key.created_at.as_datetime()),
            ))
            .execute(conn)
            .await?;
        Ok::<_, diesel::result::Error>(ApiKeyOutcome::Created)
    })
    .await
    .map_err(db_error)
}

pub(crate) async fn list(store: &PgStore, account: &AccountId) -> Result<Vec<ApiKey>, StoreError> {
    let mut conn = store.conn().await?;
    api_keys::table
        .filter(api_keys::account_id.eq(account.as_str()))
        .order((api_keys::created_at, api_keys::id))
        .select(ApiKeyRow::as_select())
        .load(&mut conn)
        .await
        .map_err(db_error)?
        .into_iter()
        .map(ApiKeyRow::into_key)
        .collect()
}

pub(crate) async fn delete(
    store: &PgStore,
    account: &AccountId,
    id: &ApiKeyId,
    at: Timestamp,
) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
    conn.transaction(async |conn| {
        let deleted = diesel::delete(
            api_keys::table
                .filter(api_keys::id.eq(id.as_str()))
                .filter(api_keys::account_id.eq(account.as_str())),
        )
        .execute(conn)
        .await?;
        if deleted > 0 {
            retire_id(conn, API_KEY_ID_KIND, id.as_str(), at).await?;
        }
        Ok::<_, diesel::result::Error>(deleted > 0)
    })
    .await
    .map_err(db_error)
}

pub(crate) async fn touch(
    store: &PgStore,
    id: &ApiKeyId,
    hour: Timestamp,
) -> Result<(), StoreError> {
    let mut conn = store.conn().await?;
    diesel::update(api_keys::table.find(id.as_str()))
        .set(api_keys::last_used_at.eq(Some(hour.as_datetime())))
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
    Ok(())
}

/// Retires the ids of the account's keys (erasure; the rows cascade).
pub(crate) async fn retire_all(
    conn: &mut AsyncPgConnection,
    account: &AccountId,
    at: Timestamp,
) -> Result<(), diesel::result::Error> {
    let ids: Vec<String> = api_keys::table
        .filter(api_keys::account_id.eq(account.as_str()))
        .select(api_keys::id)
        .load(conn)
        .await?;
    for id in &ids {
        retire_id(conn, API_KEY_ID_KIND, id, at).await?;
    }
    Ok(())
}
