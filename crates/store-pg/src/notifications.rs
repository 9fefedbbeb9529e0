//! `NotificationRepository` over PostgreSQL: preferences, address mutes and
//! push tokens.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Bool, Integer, Nullable, Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_kernel::{AccountId, AddressId, DeviceId, StoreError, Timestamp};
use sealpost_notifications::{
    NotificationRepository, Preferences, PreferencesPatch, PushDevice, PushToken, Registered,
};

use crate::schema::{notification_mutes, notification_preferences, push_devices};
use crate::{PgStore, db_error};

#[derive(Queryable, Selectable, QueryableByName)]
#[diesel(table_name = notification_preferences, check_for_backend(diesel::pg::Pg))]
struct PreferencesRow {
    new_mail: bool,
    device_paired: bool,
    device_offline: bool,
    new_sign_in: bool,
    billing: bool,
    support: bool,
    webhook_failures: bool,
}

impl From<PreferencesRow> for Preferences {
    fn from(row: PreferencesRow) -> Self {
        Preferences {
            new_mail: row.new_mail,
            device_paired: row.device_paired,
            device_offline: row.device_offline,
            new_sign_in: row.new_sign_in,
            billing: row.billing,
            support: row.support,
            webhook_failures: row.webhook_failures,
        }
    }
}

#[async_trait]
impl NotificationRepository for PgStore {
    async fn preferences(&self, account: &AccountId) -> Result<Option<Preferences>, StoreError> {
        let mut conn = self.conn().await?;
        let row: Option<PreferencesRow> = notification_preferences::table
            .find(account.as_str())
            .select(PreferencesRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        Ok(row.map(Preferences::from))
    }

    async fn update_preferences(
        &self,
        account: &AccountId,
        patch: &PreferencesPatch,
        defaults: &Preferences,
        at: Timestamp,
    ) -> Result<Preferences, StoreError> {
        let mut conn = self.conn().await?;
        // Each column: the patch's value, else the stored one (or the
        // default for a first row). One statement, so two patches of
        // different kinds at once both stick.
        let row: PreferencesRow = diesel::sql_query(
            "INSERT INTO notification_preferences AS p (account_id, new_mail, device_paired, \
             device_offline, new_sign_in, billing, support, webhook_failures, updated_at) \
             VALUES ($1, COALESCE($2, $9), COALESCE($3, $10), COALESCE($4, $11), \
             COALESCE($5, $12), COALESCE($6, $13), COALESCE($7, $14), COALESCE($8, $15), $16) \
             ON CONFLICT (account_id) DO UPDATE SET \
             new_mail = COALESCE($2, p.new_mail), device_paired = COALESCE($3, p.device_paired), \
             device_offline = COALESCE($4, p.device_offline), \
             new_sign_in = COALESCE($5, p.new_sign_in), billing = COALESCE($6, p.billing), \
             support = COALESCE($7, p.support), \
             webhook_failures = COALESCE($8, p.webhook_failures), updated_at = $16 \
             RETURNING new_mail, device_paired, device_offline, new_sign_in, billing, support, \
             webhook_failures",
        )
        .bind::<Text, _>(account.as_str())
        .bind::<Nullable<Bool>, _>(patch.new_mail)
        .bind::<Nullable<Bool>, _>(patch.device_paired)
        .bind::<Nullable<Bool>, _>(patch.device_offline)
        .bind::<Nullable<Bool>, _>(patch.new_sign_in)
        .bind::<Nullable<Bool>, _>(patch.billing)
        .bind::<Nullable<Bool>, _>(patch.support)
        .bind::<Nullable<Bool>, _>(patch.webhook_failures)
        .bind::<Bool, _>(defaults.new_mail)
        .bind::<Bool, _>(defaults.device_paired)
        .bind::<Bool, _>(defaults.device_offline)
        .bind::<Bool, _>(defaults.new_sign_in)
        .bind::<Bool, _>(defaults.billing)
        .bind::<Bool, _>(defaults.support)
        .bind::<Bool, _>(defaults.webhook_failures)
        .bind::<Timestamptz, _>(at.as_datetime())
        .get_result(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(row.into())
    }

    async fn muted_addresses(&self, account: &AccountId) -> Result<Vec<AddressId>, StoreError> {
        let mut conn = self.conn().await?;
        let ids: Vec<String> = notification_mutes::table
            .filter(notification_mutes::account_id.eq(account.as_str()))
            .select(notification_mutes::address_id)
            .order(notification_mutes::address_id.asc())
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        Ok(ids.into_iter().map(AddressId::from_trusted).collect())
    }

    async fn set_muted(
        &self,
        account: &AccountId,
        device: Option<DeviceId>,
        address: &AddressId,
        muted: bool,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let device = device.as_ref().map(DeviceId::as_str);
        conn.transaction(async |conn| {
            // Locks the address so it cannot be deleted between check and write.
            let owned: i64 = diesel::sql_query(
                "SELECT count(*) AS n FROM (SELECT 1 FROM addresses WHERE id = $1 \
                 AND account_id = $2 AND ($3::text IS NULL OR worker_id = $3) FOR SHARE) a",
            )
            .bind::<Text, _>(address.as_str())
            .bind::<Text, _>(account.as_str())
            .bind::<Nullable<Text>, _>(device)
            .get_result::<Count>(conn)
            .await?
            .n;
            if owned == 0 {
                return Ok(false);
            }
            if muted {
                diesel::insert_into(notification_mutes::table)
                    .values((
                        notification_mutes::address_id.eq(address.as_str()),
                        notification_mutes::account_id.eq(account.as_str()),
                        notification_mutes::muted_at.eq(at.as_datetime()),
                    ))
                    .on_conflict_do_nothing()
                    .execute(conn)
                    .await?;
            } else {
                diesel::delete(notification_mutes::table.find(address.as_str()))
                    .execute(conn)
                    .await?;
            }
            Ok::<_, diesel::result::Error>(true)
        })
        .await
        .map_err(db_error)
    }

    async fn register_device(
        &self,
        device: &PushDevice,
        keep: u32,
    ) -> Result<Option<Registered>, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            let existing: Option<(String, DateTime<Utc>)> = push_devices::table
                .find(device.token.as_str())
                .select((push_devices::account_id, push_devices::registered_at))
                .for_update()
                .first(conn)
                .await
                .optional()?;
            match existing {
                Some((owner, registered_at)) if owner == device.account.as_str() => {
                    diesel::update(push_devices::table.find(device.token.as_str()))
                        .set(push_devices::platform.eq(device.platform.as_str()))
                        .execute(conn)
                        .await?;
                    return Ok(Some(Registered::Existing(PushDevice {
                        registered_at: registered_at.into(),
                        ..device.clone()
                    })));
                }
                // Another account's phone: it keeps its token.
                Some(_) => return Ok(None),
                None => {}
            }
            // Two accounts registering one new token at once: the first
            // insert wins, the other finds it taken.
            let inserted = diesel::insert_into(push_devices::table)
                .values((
                    push_devices::token.eq(device.token.as_str()),
                    push_devices::account_id.eq(device.account.as_str()),
                    push_devices::platform.eq(device.platform.as_str()),
                    push_devices::registered_at.eq(device.registered_at.as_datetime()),
                ))
                .on_conflict(push_devices::token)
                .do_nothing()
                .execute(conn)
                .await?;
            if inserted == 0 {
                return Ok(None);
            }
            // The newest `keep` stay; older tokens of the account go.
            diesel::sql_query(
                "DELETE FROM push_devices WHERE account_id = $1 AND token NOT IN \
                 (SELECT token FROM push_devices WHERE account_id = $1 \
                  ORDER BY registered_at DESC, token LIMIT $2)",
            )
            .bind::<Text, _>(device.account.as_str())
            .bind::<Integer, _>(i32::try_from(keep).unwrap_or(i32::MAX))
            .execute(conn)
            .await?;
            Ok::<_, diesel::result::Error>(Some(Registered::Added(device.clone())))
        })
        .await
        .map_err(db_error)
    }

    async fn remove_device(
        &self,
        account: &AccountId,
        token: &PushToken,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let removed = diesel::delete(
            push_devices::table
                .filter(push_devices::token.eq(token.as_str()))
                .filter(push_devices::account_id.eq(account.as_str())),
        )
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(removed > 0)
    }
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}
