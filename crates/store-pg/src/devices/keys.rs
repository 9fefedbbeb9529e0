//! Key bundles: the address keys sealed to a device, set and read.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use sealpost_devices::KeyBundle;
use sealpost_kernel::{AccountId, DeviceId, StoreError};

use crate::records::{box_from_json, box_to_json};
use crate::schema::devices;
use crate::{PgStore, db_error};

pub(super) async fn set_keys(
    store: &PgStore,
    account: &AccountId,
    id: &DeviceId,
    bundle: KeyBundle,
) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
    let updated = diesel::update(
        devices::table
            .filter(devices::id.eq(id.as_str()))
            .filter(devices::account_id.eq(account.as_str())),
    )
    .set((
        devices::key_bundle.eq(box_to_json(&bundle.keys)),
        devices::keys_updated_at.eq(bundle.updated_at.as_datetime()),
    ))
    .execute(&mut conn)
    .await
    .map_err(db_error)?;
    Ok(updated > 0)
}

pub(super) async fn keys(
    store: &PgStore,
    account: &AccountId,
    id: &DeviceId,
) -> Result<Option<KeyBundle>, StoreError> {
    let mut conn = store.conn().await?;
    let row: Option<(Option<serde_json::Value>, Option<DateTime<Utc>>)> = devices::table
        .filter(devices::id.eq(id.as_str()))
        .filter(devices::account_id.eq(account.as_str()))
        .select((devices::key_bundle, devices::keys_updated_at))
        .first(&mut conn)
        .await
        .optional()
        .map_err(db_error)?;
    match row {
        Some((Some(keys), Some(updated_at))) => Ok(Some(KeyBundle {
            keys: box_from_json(keys)?,
            updated_at: updated_at.into(),
        })),
        _ => Ok(None),
    }
}
