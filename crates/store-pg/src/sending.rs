//! `SendRepository` over PostgreSQL: the sending address, the hourly and
//! daily send counters, and the Sent copy with its records.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text, Timestamptz};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::{AccountId, AddressId, PlanId, StoreError, Timestamp};
use sealpost_messages::send::{Reservation, SendRepository, SendWindows, SenderRecord, SentCopy};
use sealpost_messages::store::{Reader, SENT_DAY_COUNTER, SENT_HOUR_COUNTER};
use sealpost_teams::Access;

use crate::access::{Caller, may_use};
use crate::group_commit::{CommitNumber, insert_messages};
use crate::records::write_records;
use crate::schema::{accounts, addresses};
use crate::{PgStore, bytes32, db_error};

/// Why a reservation's transaction rolls back.
enum Abort {
    Full(Reservation),
    Db(diesel::result::Error),
}

impl From<diesel::result::Error> for Abort {
    fn from(error: diesel::result::Error) -> Self {
        Abort::Db(error)
    }
}

#[derive(QueryableByName)]
struct Used {
    #[diesel(sql_type = BigInt)]
    #[expect(dead_code, reason = "only whether a row came back matters")]
    used: i64,
}

/// Adds `count` to one send counter unless it would pass `limit`; false when refused.
async fn add_within(
    conn: &mut AsyncPgConnection,
    account: &AccountId,
    counter: &str,
    window_start: Timestamp,
    count: i64,
    limit: i64,
) -> Result<bool, diesel::result::Error> {
    if count > limit {
        return Ok(false);
    }
    let added: Option<Used> = diesel::sql_query(
        "INSERT INTO usage_counters (account_id, counter, window_start, used) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (account_id, counter, window_start, shard) \
         DO UPDATE SET used = usage_counters.used + $4 WHERE usage_counters.used + $4 <= $5 \
         RETURNING used",
    )
    .bind::<Text, _>(account.as_str())
    .bind::<Text, _>(counter)
    .bind::<Timestamptz, _>(window_start.as_datetime())
    .bind::<BigInt, _>(count)
    .bind::<BigInt, _>(limit)
    .get_result(conn)
    .await
    .optional()?;
    Ok(added.is_some())
}

fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

#[async_trait]
impl SendRepository for PgStore {
    async fn sender(
        &self,
        by: &Reader,
        email_address: &str,
    ) -> Result<Option<SenderRecord>, StoreError> {
        type Row = (
            String,
            String,
            Option<String>,
            String,
            Option<Vec<u8>>,
            i32,
            Option<DateTime<Utc>>,
            Option<DateTime<Utc>>,
        );
        // The owner's plan and age apply, whoever sends.
        let owner_plan = accounts::table
            .filter(accounts::id.eq(addresses::account_id))
            .select(accounts::plan_id)
            .single_value();
        let owner_created = accounts::table
            .filter(accounts::id.eq(addresses::account_id))
            .select(accounts::created_at)
            .single_value();
        let mut conn = self.conn().await?;
        // The account's own address, or one its team owner granted it with
        // `send` access while the team is active: the owner's account and
        // plan then apply.
        let row: Option<Row> = addresses::table
            .filter(addresses::email_address.eq(email_address))
            .filter(may_use(Caller::reader(by), Access::Send))
            .select((
                addresses::id,
                addresses::account_id,
                owner_plan,
                addresses::email_address,
                addresses::public_key,
                addresses::key_epoch,
                addresses::paused_at,
                owner_created,
            ))
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        row.map(
            |(id, owner, plan, email_address, public_key, key_epoch, paused_at, created)| {
                let (Some(plan), Some(created)) = (plan, created) else {
                    return Err(StoreError::Failed("address without an owner".into()));
                };
                Ok(SenderRecord {
                    address: AddressId::from_trusted(id),
                    account: AccountId::from_trusted(owner),
                    plan: plan.parse::<PlanId>().map_err(StoreError::failed)?,
                    account_created_at: Timestamp::from(created),
                    email_address,
                    public_key: public_key.map(bytes32).transpose()?,
                    key_epoch: u32::try_from(key_epoch).map_err(StoreError::failed)?,
                    paused: paused_at.is_some(),
                })
            },
        )
        .transpose()
    }

    async fn reserve_sends(
        &self,
        account: &AccountId,
        windows: SendWindows,
        count: u64,
        hour_limit: u64,
        day_limit: u64,
    ) -> Result<Reservation, StoreError> {
        let mut conn = self.conn().await?;
        let (count, hour_limit, day_limit) = (signed(count), signed(hour_limit), signed(day_limit));
        // Day before hour, always: two reservations lock the rows in one order.
        let outcome = conn
            .transaction(async |conn| {
                if !add_within(
                    conn,
                    account,
                    SENT_DAY_COUNTER,
                    windows.day_start,
                    count,
                    day_limit,
                )
                .await?
                {
                    return Err(Abort::Full(Reservation::DayFull));
                }
                if !add_within(
                    conn,
                    account,
                    SENT_HOUR_COUNTER,
                    windows.hour_start,
                    count,
                    hour_limit,
                )
                .await?
                {
                    return Err(Abort::Full(Reservation::HourFull));
                }
                Ok(Reservation::Reserved)
            })
            .await;
        match outcome {
            Ok(reserved) => Ok(reserved),
            Err(Abort::Full(full)) => Ok(full),
            Err(Abort::Db(error)) => Err(db_error(error)),
        }
    }

    async fn release_sends(
        &self,
        account: &AccountId,
        windows: SendWindows,
        count: u64,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        diesel::sql_query(
            "UPDATE usage_counters SET used = greatest(used - $2, 0) \
             WHERE account_id = $1 AND ((counter = $3 AND window_start = $4) OR (counter = $5 AND window_start = $6))",
        )
        .bind::<Text, _>(account.as_str())
        .bind::<BigInt, _>(signed(count))
        .bind::<Text, _>(SENT_DAY_COUNTER)
        .bind::<Timestamptz, _>(windows.day_start.as_datetime())
        .bind::<Text, _>(SENT_HOUR_COUNTER)
        .bind::<Timestamptz, _>(windows.hour_start.as_datetime())
        .execute(&mut conn)
        .await
        .map(|_| ())
        .map_err(db_error)
    }

    async fn commit_sent(&self, sent: SentCopy) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        let shard = self.batcher.next_shard();
        conn.transaction(async |conn| {
            if let Some(message) = &sent.message {
                // A batch of one, outside the commit order.
                insert_messages(conn, &[(message, false, 0)], CommitNumber::None, shard).await?;
            }
            write_records(conn, &sent.records).await
        })
        .await
        .map_err(db_error)
    }
}
