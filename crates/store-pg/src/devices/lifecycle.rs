//! Devices once paired: lists, profile, disable, remove, heartbeats, and
//! the stale devices the disconnect sweep marks.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_activity::Records;
use sealpost_devices::{Device, WriteOutcome};
use sealpost_kernel::{AccountId, AddressId, DeviceId, PageRequest, StoreError, Timestamp};
use sealpost_seal::SealedBox;

use super::{DeviceRow, device_addresses, remove_device};
use crate::records::{box_to_json, write_records};
use crate::schema::{device_credentials, devices};
use crate::{PgStore, db_error};

pub(super) async fn devices(
    store: &PgStore,
    account: &AccountId,
    page: &PageRequest,
) -> Result<Vec<Device>, StoreError> {
    let mut conn = store.conn().await?;
    let mut query = devices::table
        .filter(devices::account_id.eq(account.as_str()))
        .select(DeviceRow::as_select())
        .order((devices::created_at.desc(), devices::id.desc()))
        .limit(page.fetch_limit())
        .into_boxed();
    if let Some(after) = &page.after {
        let at = after.at.as_datetime();
        query = query.filter(
            devices::created_at.lt(at).or(devices::created_at
                .eq(at)
                .and(devices::id.lt(after.id.clone()))),
        );
    }
    query
        .load(&mut conn)
        .await
        .map_err(db_error)?
        .into_iter()
        .map(DeviceRow::into_device)
        .collect()
}

pub(super) async fn device(
    store: &PgStore,
    account: &AccountId,
    id: &DeviceId,
) -> Result<Option<Device>, StoreError> {
    let mut conn = store.conn().await?;
    devices::table
        .filter(devices::id.eq(id.as_str()))
        .filter(devices::account_id.eq(account.as_str()))
        .select(DeviceRow::as_select())
        .first(&mut conn)
        .await
        .optional()
        .map_err(db_error)?
        .map(DeviceRow::into_device)
        .transpose()
}

pub(super) async fn assigned_addresses(
    store: &PgStore,
    account: &AccountId,
    id: &DeviceId,
) -> Result<Vec<AddressId>, StoreError> {
    let mut conn = store.conn().await?;
    device_addresses(&mut conn, account, id)
        .await
        .map_err(db_error)
}

pub(super) async fn update_profile(
    store: &PgStore,
    account: &AccountId,
    id: &DeviceId,
    profile: SealedBox,
) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
    let updated = diesel::update(
        devices::table
            .filter(devices::id.eq(id.as_str()))
            .filter(devices::account_id.eq(account.as_str())),
    )
    .set(devices::profile.eq(box_to_json(&profile)))
    .execute(&mut conn)
    .await
    .map_err(db_error)?;
    Ok(updated > 0)
}

pub(super) async fn disable(
    store: &PgStore,
    account: &AccountId,
    id: &DeviceId,
) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
    conn.transaction(async |conn| {
        let updated = diesel::update(
            devices::table
                .filter(devices::id.eq(id.as_str()))
                .filter(devices::account_id.eq(account.as_str())),
        )
        .set(devices::disabled.eq(true))
        .execute(conn)
        .await?;
        diesel::delete(
            device_credentials::table.filter(device_credentials::device_id.eq(id.as_str())),
        )
        .execute(conn)
        .await?;
        Ok::<_, diesel::result::Error>(updated > 0)
    })
    .await
    .map_err(db_error)
}

pub(super) async fn remove(
    store: &PgStore,
    account: &AccountId,
    id: &DeviceId,
    assigned: Vec<AddressId>,
    records: Records,
) -> Result<WriteOutcome, StoreError> {
    let mut conn = store.conn().await?;
    conn.transaction(async |conn| remove_device(conn, account, id, &assigned, &records).await)
        .await
        .map_err(db_error)
}

pub(super) async fn record_activity(
    store: &PgStore,
    account: &AccountId,
    id: &DeviceId,
    at: Timestamp,
    records: Records,
) -> Result<(), StoreError> {
    let mut conn = store.conn().await?;
    conn.transaction(async |conn| {
        let mine = devices::table
            .filter(devices::id.eq(id.as_str()))
            .filter(devices::account_id.eq(account.as_str()));
        // Only a device that really was disconnected reports worker.connected.
        let reconnected = diesel::update(mine.filter(devices::connected.eq(false)))
            .set(devices::connected.eq(true))
            .execute(conn)
            .await?;
        if reconnected > 0 {
            write_records(conn, &records).await?;
        }
        diesel::update(mine)
            .set(devices::last_active_at.eq(at.as_datetime()))
            .execute(conn)
            .await?;
        Ok::<_, diesel::result::Error>(())
    })
    .await
    .map_err(db_error)
}

pub(super) async fn stale_devices(
    store: &PgStore,
    before: Timestamp,
) -> Result<Vec<Device>, StoreError> {
    let mut conn = store.conn().await?;
    devices::table
        .filter(devices::connected.eq(true))
        .filter(devices::disabled.eq(false))
        .filter(devices::last_active_at.le(before.as_datetime()))
        .select(DeviceRow::as_select())
        .load(&mut conn)
        .await
        .map_err(db_error)?
        .into_iter()
        .map(DeviceRow::into_device)
        .collect()
}

pub(super) async fn mark_disconnected(
    store: &PgStore,
    id: &DeviceId,
    before: Timestamp,
    records: Records,
) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
    conn.transaction(async |conn| {
        let changed = diesel::update(
            devices::table
                .filter(devices::id.eq(id.as_str()))
                .filter(devices::connected.eq(true))
                .filter(devices::last_active_at.le(before.as_datetime())),
        )
        .set(devices::connected.eq(false))
        .execute(conn)
        .await?;
        if changed > 0 {
            write_records(conn, &records).await?;
        }
        Ok::<_, diesel::result::Error>(changed > 0)
    })
    .await
    .map_err(db_error)
}
