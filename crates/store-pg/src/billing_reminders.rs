//! Renewal reminders (`BillingRepository::renewal_candidates` and
//! `remind_renewal`): which accounts' paid periods end soon, and the last
//! reminder each was sent for its period (`accounts.renewal_reminded_for`,
//! `renewal_reminded_days`).

use chrono::{DateTime, Utc};
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{Bool, SmallInt};
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_billing::{Applied, RenewalCandidate, RenewalReminder};
use sealpost_kernel::{AccountId, PlanId, StoreError, Timestamp};

use crate::records::write_records;
use crate::schema::accounts;
use crate::{PgStore, db_error};

pub(crate) async fn renewal_candidates(
    store: &PgStore,
    now: Timestamp,
    until: Timestamp,
    last_reminder: u32,
    limit: i64,
) -> Result<Vec<RenewalCandidate>, StoreError> {
    let mut conn = store.conn().await?;
    // Plans sold through checkout only: Enterprise is by contract.
    let sold: Vec<&str> = PlanId::ALL
        .into_iter()
        .filter(|id| sealpost_plans::plan(*id).sold_through_checkout())
        .map(PlanId::as_str)
        .collect();
    let last = i16::try_from(last_reminder).map_err(StoreError::failed)?;
    type Row = (
        String,
        Option<DateTime<Utc>>,
        Option<DateTime<Utc>>,
        Option<i16>,
    );
    let rows: Vec<Row> = accounts::table
        .filter(accounts::paid_until.gt(now.as_datetime()))
        .filter(accounts::paid_until.le(until.as_datetime()))
        .filter(accounts::lapsed_plan_id.is_null())
        .filter(accounts::plan_id.eq_any(sold))
        // A period a card subscription renews needs no reminder.
        .filter(accounts::renewing.eq(false))
        // Not those leaving for Free at the period end: nothing to renew.
        .filter(
            accounts::pending_plan_id
                .is_null()
                .or(accounts::pending_plan_id.ne(PlanId::Free.as_str())),
        )
        // Not those already sent the last reminder of this period.
        .filter(
            sql::<Bool>(
                "(renewal_reminded_for IS DISTINCT FROM paid_until \
                 OR renewal_reminded_days IS NULL OR renewal_reminded_days > ",
            )
            .bind::<SmallInt, _>(last)
            .sql(")"),
        )
        .order(accounts::paid_until)
        .select((
            accounts::id,
            accounts::paid_until,
            accounts::renewal_reminded_for,
            accounts::renewal_reminded_days,
        ))
        .limit(limit)
        .load(&mut conn)
        .await
        .map_err(db_error)?;
    rows.into_iter()
        .filter_map(|(id, paid_until, reminded_for, days)| {
            let paid_until = paid_until?;
            let reminded = days
                .filter(|_| reminded_for == Some(paid_until))
                .map(|days| u32::try_from(days).map_err(StoreError::failed));
            Some(reminded.transpose().map(|reminded| RenewalCandidate {
                account: AccountId::from_trusted(id),
                paid_until: paid_until.into(),
                reminded,
            }))
        })
        .collect()
}

/// The period end, and the period end and days of the last reminder sent.
type ReminderRow = (Option<DateTime<Utc>>, Option<DateTime<Utc>>, Option<i16>);

pub(crate) async fn remind_renewal(
    store: &PgStore,
    reminder: RenewalReminder,
) -> Result<Applied, StoreError> {
    let days = i16::try_from(reminder.days_left).map_err(StoreError::failed)?;
    let mut conn = store.conn().await?;
    conn.transaction(async |conn| {
        let row: Option<ReminderRow> = accounts::table
            .find(reminder.account.as_str())
            .select((
                accounts::paid_until,
                accounts::renewal_reminded_for,
                accounts::renewal_reminded_days,
            ))
            .for_update()
            .first(conn)
            .await
            .optional()?;
        let Some((paid_until, reminded_for, reminded_days)) = row else {
            return Ok(Applied::Stale);
        };
        let until = reminder.paid_until.as_datetime();
        let sent_already =
            reminded_for == Some(until) && reminded_days.is_some_and(|sent| sent <= days);
        if paid_until != Some(until) || sent_already {
            return Ok(Applied::Stale);
        }
        diesel::update(accounts::table.find(reminder.account.as_str()))
            .set((
                accounts::renewal_reminded_for.eq(Some(until)),
                accounts::renewal_reminded_days.eq(Some(days)),
            ))
            .execute(conn)
            .await?;
        write_records(conn, &reminder.records).await?;
        Ok::<_, diesel::result::Error>(Applied::Done)
    })
    .await
    .map_err(db_error)
}
