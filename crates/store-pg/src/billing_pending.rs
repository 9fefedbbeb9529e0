//! The hourly sweep's other end of a paid period: a plan chosen during it
//! (`pendingPlanId`) applied instead of a lapse.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_billing::{Applied, PendingApplied};
use sealpost_kernel::{PlanId, StoreError};

use crate::billing::lock_account;
use crate::records::write_records;
use crate::schema::accounts;
use crate::{PgStore, db_error};

pub(crate) async fn apply_pending(
    store: &PgStore,
    change: PendingApplied,
) -> Result<Applied, StoreError> {
    let mut conn = store.conn().await?;
    conn.transaction(async |conn| {
        let Some(account) = lock_account(conn, &change.account).await? else {
            return Ok(Applied::Stale);
        };
        let pending: Option<String> = accounts::table
            .find(change.account.as_str())
            .select(accounts::pending_plan_id)
            .first(conn)
            .await?;
        if account.plan != change.plan.as_str()
            || account.paid_until != Some(change.paid_until)
            || account.lapsed
            || pending.as_deref() != Some(change.to.as_str())
        {
            return Ok(Applied::Stale);
        }
        let held = crate::subscriptions::holdings(conn, &change.account).await?;
        let fits = held.addresses <= u64::from(change.max_addresses)
            && change
                .max_paired
                .is_none_or(|max| held.paired <= u64::from(max));
        let target = diesel::update(accounts::table.find(change.account.as_str()));
        if !fits {
            target
                .set(accounts::pending_plan_id.eq(None::<String>))
                .execute(conn)
                .await?;
            return Ok(Applied::Stale);
        }
        let paid_until = (change.to != PlanId::Free).then(|| change.paid_until.as_datetime());
        target
            .set((
                accounts::plan_id.eq(change.to.as_str()),
                accounts::paid_until.eq(paid_until),
                accounts::pending_plan_id.eq(None::<String>),
                // Free has no period to renew.
                accounts::renewing.eq(paid_until.is_some() && account.renewing),
            ))
            .execute(conn)
            .await?;
        write_records(conn, &change.records).await?;
        Ok::<_, diesel::result::Error>(Applied::Done)
    })
    .await
    .map_err(db_error)
}
