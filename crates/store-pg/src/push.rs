//! `PushRepository` over PostgreSQL: the outbox read with its own `pushed`
//! flag, open batches per account and kind, and the push queue (leased with
//! `FOR UPDATE SKIP LOCKED`).

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Int8, Integer, Text, Timestamptz};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_activity::{Notice, Records};
use sealpost_kernel::{AccountId, AddressId, StoreError, Timestamp};
use sealpost_notifications::push::{
    AccountSettings, DuePush, Next, OutboxEntry, PushRepository, PushResult, QueueRule,
};
use sealpost_notifications::{Platform, Preferences, PushKind, PushToken};

use crate::outbox::{OutboxConsumer, claim_outbox};
use crate::prepared::PrepareOnce;
use crate::records::write_records;
use crate::schema::{
    events, notification_mutes, notification_preferences, push_deliveries, push_devices,
};
use crate::{PgStore, db_error};

#[derive(QueryableByName)]
struct DueRow {
    #[diesel(sql_type = Int8)]
    id: i64,
    #[diesel(sql_type = Text)]
    token: String,
    #[diesel(sql_type = Text)]
    platform: String,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Integer)]
    count: i32,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Timestamptz)]
    created_at: DateTime<Utc>,
}

impl DueRow {
    fn into_due(self) -> Result<DuePush, StoreError> {
        let kind = PushKind::from_key(&self.kind).ok_or_else(|| {
            StoreError::Failed(format!("unknown push kind {:?}", self.kind).into())
        })?;
        Ok(DuePush {
            id: self.id,
            token: PushToken::from_trusted(self.token),
            platform: self
                .platform
                .parse::<Platform>()
                .map_err(StoreError::failed)?,
            kind,
            count: u32::try_from(self.count).map_err(StoreError::failed)?,
            attempts: u32::try_from(self.attempts).map_err(StoreError::failed)?,
            created_at: self.created_at.into(),
        })
    }
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn account_settings(
    conn: &mut AsyncPgConnection,
    account: &str,
) -> Result<AccountSettings, diesel::result::Error> {
    let stored: Option<(bool, bool, bool, bool, bool, bool, bool)> =
        notification_preferences::table
            .find(account)
            .select((
                notification_preferences::new_mail,
                notification_preferences::device_paired,
                notification_preferences::device_offline,
                notification_preferences::new_sign_in,
                notification_preferences::billing,
                notification_preferences::support,
                notification_preferences::webhook_failures,
            ))
            .first(conn)
            .await
            .optional()?;
    let preferences = stored.map_or_else(
        Preferences::default,
        |(
            new_mail,
            device_paired,
            device_offline,
            new_sign_in,
            billing,
            support,
            webhook_failures,
        )| {
            Preferences {
                new_mail,
                device_paired,
                device_offline,
                new_sign_in,
                billing,
                support,
                webhook_failures,
            }
        },
    );
    let muted: Vec<String> = notification_mutes::table
        .filter(notification_mutes::account_id.eq(account))
        .select(notification_mutes::address_id)
        .load(conn)
        .await?;
    let tokens: i64 = push_devices::table
        .filter(push_devices::account_id.eq(account))
        .count()
        .get_result(conn)
        .await?;
    Ok(AccountSettings {
        preferences,
        muted: muted.into_iter().map(AddressId::from_trusted).collect(),
        has_tokens: tokens > 0,
    })
}

#[async_trait]
impl PushRepository for PgStore {
    async fn collect(&self, limit: i64, rule: &QueueRule) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            let rows = claim_outbox(conn, OutboxConsumer::Push, limit).await?;
            if rows.is_empty() {
                return Ok(0);
            }
            let mut settings: HashMap<String, AccountSettings> = HashMap::new();
            // (account, kind) -> (entries, due time of the earliest).
            let mut batches: BTreeMap<(String, PushKind), (i32, Timestamp)> = BTreeMap::new();
            for (_, account, kind, payload, at) in &rows {
                if !settings.contains_key(account) {
                    let loaded = account_settings(conn, account).await?;
                    settings.insert(account.clone(), loaded);
                }
                let Some(account_settings) = settings.get(account) else {
                    continue;
                };
                let id = AccountId::from_trusted(account.clone());
                let entry = OutboxEntry {
                    account: &id,
                    kind,
                    payload,
                    at: (*at).into(),
                };
                if let Some(queued) = rule(&entry, account_settings) {
                    let slot = batches
                        .entry((account.clone(), queued.kind))
                        .or_insert((0, queued.due_at));
                    slot.0 += 1;
                    slot.1 = slot.1.min(queued.due_at);
                }
            }
            for ((account, kind), (count, due_at)) in &batches {
                // An open batch keeps its due time; it only grows.
                diesel::sql_query(
                    "INSERT INTO push_batches AS b (account_id, kind, count, due_at) \
                     VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (account_id, kind) DO UPDATE SET count = b.count + EXCLUDED.count",
                )
                .bind::<Text, _>(account)
                .bind::<Text, _>(kind.key())
                .bind::<Integer, _>(*count)
                .bind::<Timestamptz, _>(due_at.as_datetime())
                .prepared()
                .execute(conn)
                .await?;
            }
            let ids: Vec<&str> = rows.iter().map(|row| row.0.as_str()).collect();
            diesel::update(events::table.filter(events::id.eq_any(ids)))
                .set(events::pushed.eq(true))
                .execute(conn)
                .await?;
            Ok::<_, diesel::result::Error>(rows.len())
        })
        .await
        .map_err(db_error)
    }

    async fn release_due(&self, now: Timestamp, limit: i64) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        let made: Count = diesel::sql_query(
            "WITH due AS ( \
                 DELETE FROM push_batches b USING ( \
                     SELECT account_id, kind FROM push_batches WHERE due_at <= $1 \
                     ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED) picked \
                 WHERE b.account_id = picked.account_id AND b.kind = picked.kind \
                 RETURNING b.account_id, b.kind, b.count), \
             made AS ( \
                 INSERT INTO push_deliveries (token, account_id, platform, kind, count, \
                     attempts, next_attempt_at, created_at) \
                 SELECT d.token, d.account_id, d.platform, due.kind, due.count, 0, $1, $1 \
                 FROM due JOIN push_devices d ON d.account_id = due.account_id \
                 RETURNING 1) \
             SELECT count(*) AS n FROM made",
        )
        .bind::<Timestamptz, _>(now.as_datetime())
        .bind::<BigInt, _>(limit)
        .prepared()
        .get_result(&mut conn)
        .await
        .map_err(db_error)?;
        usize::try_from(made.n).map_err(StoreError::failed)
    }

    async fn claim(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: i64,
    ) -> Result<Vec<DuePush>, StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<DueRow> = diesel::sql_query(
            "UPDATE push_deliveries p SET lease_until = $2 FROM ( \
                 SELECT id FROM push_deliveries \
                 WHERE next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1) \
                 ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED) picked \
             WHERE p.id = picked.id \
             RETURNING p.id, p.token, p.platform, p.kind, p.count, p.attempts, p.created_at",
        )
        .bind::<Timestamptz, _>(now.as_datetime())
        .bind::<Timestamptz, _>(lease_until.as_datetime())
        .bind::<BigInt, _>(limit)
        .prepared()
        .load(&mut conn)
        .await
        .map_err(db_error)?;
        rows.into_iter().map(DueRow::into_due).collect()
    }

    async fn record(&self, results: &[PushResult]) -> Result<(), StoreError> {
        if results.is_empty() {
            return Ok(());
        }
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            for result in results {
                match &result.next {
                    Next::Done => {
                        diesel::delete(push_deliveries::table.find(result.id))
                            .execute(conn)
                            .await?;
                    }
                    Next::RetryAt(at) => {
                        diesel::update(push_deliveries::table.find(result.id))
                            .set((
                                push_deliveries::attempts.eq(push_deliveries::attempts + 1),
                                push_deliveries::next_attempt_at.eq(at.as_datetime()),
                                push_deliveries::lease_until.eq(None::<DateTime<Utc>>),
                            ))
                            .execute(conn)
                            .await?;
                    }
                    Next::RemoveToken => {
                        // This push and the token's others go with it (ON DELETE CASCADE).
                        diesel::delete(push_devices::table.find(result.token.as_str()))
                            .execute(conn)
                            .await?;
                    }
                }
            }
            Ok::<_, diesel::result::Error>(())
        })
        .await
        .map_err(db_error)
    }

    async fn add_notice(&self, notice: Notice) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        write_records(&mut conn, &Records::notice(notice))
            .await
            .map_err(db_error)
    }
}
