//! `SubscriptionRepository` over PostgreSQL: the usage and overview counts in
//! one query each, and the guarded plan change.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_kernel::{AccountId, PlanId, StoreError, Timestamp};
use sealpost_messages::store::{
    OBJECT_READS_COUNTER, RECEIVED_COUNTER, SENT_DAY_COUNTER, SENT_HOUR_COUNTER,
};
use sealpost_subscriptions::{
    ChangeTiming, Holdings, OverviewCounts, PauseState, PausedCounts, PlanChange,
    PlanChangeOutcome, Subscriber, SubscriptionRepository, UsageCounts, UsageWindows,
};

use crate::messages::retained_sql;
use crate::prepared::PrepareOnce;
use crate::records::write_records;
use crate::schema::{accounts, addresses, devices};
use crate::{PgStore, db_error};

fn count(value: i64) -> u64 {
    value.max(0) as u64
}

#[derive(QueryableByName)]
struct UsageRow {
    #[diesel(sql_type = BigInt)]
    addresses: i64,
    #[diesel(sql_type = BigInt)]
    assigned: i64,
    #[diesel(sql_type = BigInt)]
    devices: i64,
    #[diesel(sql_type = BigInt)]
    agents: i64,
    #[diesel(sql_type = BigInt)]
    webhooks: i64,
    #[diesel(sql_type = BigInt)]
    api_keys: i64,
    #[diesel(sql_type = BigInt)]
    messages_stored: i64,
    #[diesel(sql_type = BigInt)]
    received: i64,
    #[diesel(sql_type = BigInt)]
    object_reads: i64,
    #[diesel(sql_type = BigInt)]
    sent_hour: i64,
    #[diesel(sql_type = BigInt)]
    sent_day: i64,
    #[diesel(sql_type = BigInt)]
    domains: i64,
    #[diesel(sql_type = BigInt)]
    stored_bytes: i64,
}

#[derive(QueryableByName)]
struct OverviewRow {
    #[diesel(sql_type = BigInt)]
    addresses: i64,
    #[diesel(sql_type = BigInt)]
    assigned: i64,
    #[diesel(sql_type = BigInt)]
    devices_online: i64,
    #[diesel(sql_type = BigInt)]
    devices_offline: i64,
    #[diesel(sql_type = BigInt)]
    devices_disabled: i64,
    #[diesel(sql_type = BigInt)]
    agents: i64,
    #[diesel(sql_type = BigInt)]
    messages_stored: i64,
    #[diesel(sql_type = BigInt)]
    messages_unread: i64,
    #[diesel(sql_type = BigInt)]
    messages_held: i64,
    #[diesel(sql_type = BigInt)]
    webhooks_active: i64,
    #[diesel(sql_type = BigInt)]
    webhooks_failing: i64,
    #[diesel(sql_type = BigInt)]
    webhooks_disabled: i64,
}

type SubscriberRow = (
    String,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
    Option<String>,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
    Option<String>,
    bool,
);

fn plan_id(text: &str) -> Result<PlanId, StoreError> {
    text.parse::<PlanId>().map_err(StoreError::failed)
}

fn into_subscriber(row: SubscriberRow) -> Result<Subscriber, StoreError> {
    let (plan, created_at, paid_until, lapsed_plan, paused_since, deletes_at, pending, renewing) =
        row;
    let pause = match (paused_since, deletes_at) {
        (Some(since), Some(deletes_at)) => Some(PauseState {
            plan: lapsed_plan.as_deref().map(plan_id).transpose()?,
            since: since.into(),
            deletes_at: deletes_at.into(),
        }),
        _ => None,
    };
    Ok(Subscriber {
        plan: plan_id(&plan)?,
        created_at: created_at.into(),
        paid_until: paid_until.map(Into::into),
        pause,
        pending_plan: pending.as_deref().map(plan_id).transpose()?,
        renewing,
    })
}

#[derive(QueryableByName)]
struct PausedRow {
    #[diesel(sql_type = BigInt)]
    addresses: i64,
    #[diesel(sql_type = BigInt)]
    devices: i64,
    #[diesel(sql_type = BigInt)]
    api_keys: i64,
    #[diesel(sql_type = BigInt)]
    domains: i64,
}

/// `$1` the account, `$2` now: the account's messages still inside retention,
/// listed and held counted separately so each side uses its partial index.
fn stored_messages(columns: &str) -> String {
    format!(
        "SELECT {columns} FROM addresses a JOIN messages m ON m.inbox_id = a.id \
         WHERE a.account_id = $1 AND {}",
        retained_sql("m", "a", "$2")
    )
}

#[async_trait]
impl SubscriptionRepository for PgStore {
    async fn subscriber(&self, account: &AccountId) -> Result<Option<Subscriber>, StoreError> {
        let mut conn = self.conn().await?;
        let row: Option<SubscriberRow> = accounts::table
            .find(account.as_str())
            .select((
                accounts::plan_id,
                accounts::created_at,
                accounts::paid_until,
                accounts::lapsed_plan_id,
                accounts::paused_since,
                accounts::pause_deletes_at,
                accounts::pending_plan_id,
                accounts::renewing,
            ))
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        row.map(into_subscriber).transpose()
    }

    async fn paused_counts(&self, account: &AccountId) -> Result<PausedCounts, StoreError> {
        let mut conn = self.conn().await?;
        paused_counts(&mut conn, account).await.map_err(db_error)
    }

    async fn usage_counts(
        &self,
        account: &AccountId,
        windows: UsageWindows,
        now: Timestamp,
    ) -> Result<UsageCounts, StoreError> {
        let mut conn = self.conn().await?;
        let row: UsageRow = diesel::sql_query(format!(
            "SELECT ad.addresses, ad.assigned, dv.devices, dv.agents, wh.webhooks, \
               (SELECT count(*) FROM api_keys WHERE account_id = $1) AS api_keys, \
               ms.listed + mh.held AS messages_stored, \
               (SELECT COALESCE(sum(used), 0)::bigint FROM usage_counters WHERE account_id = $1 AND counter = $3 AND window_start = $4) AS received, \
               COALESCE((SELECT used FROM usage_counters WHERE account_id = $1 AND counter = $5 AND window_start = $6), 0) AS object_reads, \
               (SELECT COALESCE(sum(used), 0)::bigint FROM usage_counters WHERE account_id = $1 AND counter = $7 AND window_start = $6) AS sent_hour, \
               (SELECT COALESCE(sum(used), 0)::bigint FROM usage_counters WHERE account_id = $1 AND counter = $8 AND window_start = $9) AS sent_day, \
               (SELECT count(*) FROM own_domains WHERE account_id = $1) AS domains, \
               (SELECT COALESCE(sum(bytes), 0)::bigint FROM stored_bytes WHERE account_id = $1) AS stored_bytes \
             FROM (SELECT count(*) AS addresses, count(worker_id) AS assigned FROM addresses WHERE account_id = $1) ad, \
               (SELECT count(*) FILTER (WHERE kind = 'device') AS devices, count(*) FILTER (WHERE kind = 'agent') AS agents \
                  FROM devices WHERE account_id = $1) dv, \
               (SELECT count(*) AS webhooks FROM webhooks WHERE account_id = $1) wh, \
               ({listed}) ms, ({held}) mh",
            listed = stored_messages("count(*) AS listed") + " AND NOT m.held",
            held = stored_messages("count(*) AS held") + " AND m.held",
        ))
        .bind::<Text, _>(account.as_str())
        .bind::<Timestamptz, _>(now.as_datetime())
        .bind::<Text, _>(RECEIVED_COUNTER)
        .bind::<Timestamptz, _>(windows.received_start.as_datetime())
        .bind::<Text, _>(OBJECT_READS_COUNTER)
        .bind::<Timestamptz, _>(windows.hour_start.as_datetime())
        .bind::<Text, _>(SENT_HOUR_COUNTER)
        .bind::<Text, _>(SENT_DAY_COUNTER)
        .bind::<Timestamptz, _>(windows.day_start.as_datetime())
        // Built from constants: the same text every call.
        .prepared()
        .get_result(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(UsageCounts {
            addresses: count(row.addresses),
            assigned: count(row.assigned),
            devices: count(row.devices),
            agents: count(row.agents),
            webhooks: count(row.webhooks),
            api_keys: count(row.api_keys),
            messages_stored: count(row.messages_stored),
            received: count(row.received),
            object_reads: count(row.object_reads),
            sent_hour: count(row.sent_hour),
            sent_day: count(row.sent_day),
            domains: count(row.domains),
            stored_bytes: count(row.stored_bytes),
        })
    }

    async fn overview_counts(
        &self,
        account: &AccountId,
        now: Timestamp,
    ) -> Result<OverviewCounts, StoreError> {
        let mut conn = self.conn().await?;
        let row: OverviewRow = diesel::sql_query(format!(
            "SELECT ad.addresses, ad.assigned, \
               dv.devices_online, dv.devices_offline, dv.devices_disabled, dv.agents, \
               ms.listed + mh.held AS messages_stored, ms.unread AS messages_unread, mh.held AS messages_held, \
               wh.webhooks_active, wh.webhooks_failing, wh.webhooks_disabled \
             FROM (SELECT count(*) AS addresses, count(worker_id) AS assigned FROM addresses WHERE account_id = $1) ad, \
               (SELECT count(*) FILTER (WHERE kind = 'device' AND NOT disabled AND connected) AS devices_online, \
                       count(*) FILTER (WHERE kind = 'device' AND NOT disabled AND NOT connected) AS devices_offline, \
                       count(*) FILTER (WHERE kind = 'device' AND disabled) AS devices_disabled, \
                       count(*) FILTER (WHERE kind = 'agent') AS agents \
                  FROM devices WHERE account_id = $1) dv, \
               (SELECT count(*) FILTER (WHERE active AND failing_since IS NULL) AS webhooks_active, \
                       count(*) FILTER (WHERE active AND failing_since IS NOT NULL) AS webhooks_failing, \
                       count(*) FILTER (WHERE NOT active) AS webhooks_disabled \
                  FROM webhooks WHERE account_id = $1) wh, \
               ({listed}) ms, ({held}) mh",
            listed = stored_messages("count(*) AS listed, count(*) FILTER (WHERE NOT m.read) AS unread")
                + " AND NOT m.held",
            held = stored_messages("count(*) AS held") + " AND m.held",
        ))
        .bind::<Text, _>(account.as_str())
        .bind::<Timestamptz, _>(now.as_datetime())
        // Built from constants: the same text every call.
        .prepared()
        .get_result(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(OverviewCounts {
            addresses: count(row.addresses),
            assigned: count(row.assigned),
            devices_online: count(row.devices_online),
            devices_offline: count(row.devices_offline),
            devices_disabled: count(row.devices_disabled),
            agents: count(row.agents),
            messages_stored: count(row.messages_stored),
            messages_unread: count(row.messages_unread),
            messages_held: count(row.messages_held),
            webhooks_active: count(row.webhooks_active),
            webhooks_failing: count(row.webhooks_failing),
            webhooks_disabled: count(row.webhooks_disabled),
        })
    }

    async fn holdings(&self, account: &AccountId) -> Result<Holdings, StoreError> {
        let mut conn = self.conn().await?;
        holdings(&mut conn, account).await.map_err(db_error)
    }

    async fn set_plan(&self, change: PlanChange) -> Result<PlanChangeOutcome, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            // The lock address creation and device claims take: nothing is
            // added while the change is checked and written.
            let plan: Option<String> = accounts::table
                .find(change.account.as_str())
                .select(accounts::plan_id)
                .for_update()
                .first(conn)
                .await
                .optional()?;
            let Some(plan) = plan else {
                return Ok(PlanChangeOutcome::NotFound);
            };
            if plan != change.from.as_str() {
                return Ok(PlanChangeOutcome::Stale);
            }
            let target = diesel::update(accounts::table.find(change.account.as_str()));
            if change.timing == ChangeTiming::Cancel {
                target
                    .set(accounts::pending_plan_id.eq(None::<String>))
                    .execute(conn)
                    .await?;
                write_records(conn, &change.records).await?;
                return Ok(PlanChangeOutcome::Changed);
            }
            let held = holdings(conn, &change.account).await?;
            let fits = held.addresses <= u64::from(change.max_addresses)
                && change
                    .max_paired
                    .is_none_or(|max| held.paired <= u64::from(max));
            if !fits {
                return Ok(PlanChangeOutcome::Stale);
            }
            if change.timing == ChangeTiming::AtPeriodEnd {
                target
                    .set(accounts::pending_plan_id.eq(Some(change.to.as_str())))
                    .execute(conn)
                    .await?;
            } else if change.to == PlanId::Free {
                // Free has no paid period; a cheaper paid plan keeps the period paid for.
                target
                    .set((
                        accounts::plan_id.eq(change.to.as_str()),
                        accounts::paid_until.eq(None::<DateTime<Utc>>),
                        accounts::pending_plan_id.eq(None::<String>),
                    ))
                    .execute(conn)
                    .await?;
            } else {
                target
                    .set((
                        accounts::plan_id.eq(change.to.as_str()),
                        accounts::pending_plan_id.eq(None::<String>),
                    ))
                    .execute(conn)
                    .await?;
            }
            write_records(conn, &change.records).await?;
            Ok::<_, diesel::result::Error>(PlanChangeOutcome::Changed)
        })
        .await
        .map_err(db_error)
    }
}

/// The account's paused addresses and devices (billing reads them inside
/// its transactions too).
pub(crate) async fn paused_counts(
    conn: &mut diesel_async::AsyncPgConnection,
    account: &AccountId,
) -> Result<PausedCounts, diesel::result::Error> {
    let row: PausedRow = diesel::sql_query(
        "SELECT (SELECT count(*) FROM addresses WHERE account_id = $1 AND paused_at IS NOT NULL) AS addresses, \
                (SELECT count(*) FROM devices WHERE account_id = $1 AND paused_at IS NOT NULL) AS devices, \
                (SELECT count(*) FROM api_keys WHERE account_id = $1 AND paused_at IS NOT NULL) AS api_keys, \
                (SELECT count(*) FROM own_domains WHERE account_id = $1 AND proved_at IS NOT NULL) AS domains",
    )
    .bind::<Text, _>(account.as_str()).prepared()
    .get_result(conn)
    .await?;
    Ok(PausedCounts {
        addresses: count(row.addresses),
        devices: count(row.devices),
        api_keys: count(row.api_keys),
        domains: count(row.domains),
    })
}

pub(crate) async fn holdings(
    conn: &mut diesel_async::AsyncPgConnection,
    account: &AccountId,
) -> Result<Holdings, diesel::result::Error> {
    let addresses: i64 = addresses::table
        .filter(addresses::account_id.eq(account.as_str()))
        .count()
        .get_result(conn)
        .await?;
    let paired: i64 = devices::table
        .filter(devices::account_id.eq(account.as_str()))
        .count()
        .get_result(conn)
        .await?;
    Ok(Holdings {
        addresses: count(addresses),
        paired: count(paired),
    })
}
