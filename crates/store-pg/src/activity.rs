//! `ActivityRepository` over PostgreSQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use sealpost_activity::{ActivityEntry, ActivityRepository};
use sealpost_kernel::{
    AccountId, ActivityId, AddressId, DeviceId, PageRequest, StoreError, Timestamp,
};

use crate::schema::activity;
use crate::{PgStore, db_error};

#[derive(Queryable, Selectable)]
#[diesel(table_name = activity, check_for_backend(diesel::pg::Pg))]
struct ActivityRow {
    id: String,
    account_id: String,
    kind: String,
    address_id: Option<String>,
    device_id: Option<String>,
    created_at: DateTime<Utc>,
}

#[async_trait]
impl ActivityRepository for PgStore {
    async fn activity_page(
        &self,
        account: &AccountId,
        device: Option<DeviceId>,
        page: &PageRequest,
    ) -> Result<Vec<ActivityEntry>, StoreError> {
        let mut conn = self.conn().await?;
        let mut query = activity::table
            .filter(activity::account_id.eq(account.as_str()))
            .select(ActivityRow::as_select())
            .order((activity::created_at.desc(), activity::id.desc()))
            .limit(page.fetch_limit())
            .into_boxed();
        if let Some(device) = device {
            query = query.filter(activity::device_id.eq(device.into_string()));
        }
        if let Some(after) = &page.after {
            let at = after.at.as_datetime();
            query = query.filter(
                activity::created_at.lt(at).or(activity::created_at
                    .eq(at)
                    .and(activity::id.lt(after.id.clone()))),
            );
        }
        let rows: Vec<ActivityRow> = query.load(&mut conn).await.map_err(db_error)?;
        rows.into_iter()
            .map(|row| {
                Ok(ActivityEntry {
                    id: ActivityId::from_trusted(row.id),
                    account: AccountId::from_trusted(row.account_id),
                    kind: row.kind.parse().map_err(StoreError::failed)?,
                    address: row.address_id.map(AddressId::from_trusted),
                    device: row.device_id.map(DeviceId::from_trusted),
                    at: row.created_at.into(),
                })
            })
            .collect()
    }

    async fn delete_activity_before(&self, before: Timestamp) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        let deleted =
            diesel::delete(activity::table.filter(activity::created_at.lt(before.as_datetime())))
                .execute(&mut conn)
                .await
                .map_err(db_error)?;
        Ok(deleted as u64)
    }
}
