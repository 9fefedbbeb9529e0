//! The account's support binding: saved once per key, read back.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use sealpost_kernel::{AccountId, StoreError};
use sealpost_support::{Binding, PublicKey};

use crate::schema::support_bindings;
use crate::{PgStore, bytes32, db_error};

pub(super) async fn save_binding(store: &PgStore, binding: &Binding) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
    let before: Option<(Vec<u8>, Vec<u8>, Vec<u8>)> = support_bindings::table
        .find(binding.account.as_str())
        .select((
            support_bindings::account_key,
            support_bindings::staff_key,
            support_bindings::mac,
        ))
        .first(&mut conn)
        .await
        .optional()
        .map_err(db_error)?;
    let same = before.is_some_and(|(account_key, staff_key, mac)| {
        account_key == binding.account_key.0
            && staff_key == binding.staff_key.0
            && mac == binding.mac
    });
    if same {
        return Ok(false);
    }
    diesel::insert_into(support_bindings::table)
        .values((
            support_bindings::account_id.eq(binding.account.as_str()),
            support_bindings::account_key.eq(binding.account_key.0.as_slice()),
            support_bindings::staff_key.eq(binding.staff_key.0.as_slice()),
            support_bindings::mac.eq(binding.mac.as_slice()),
            support_bindings::updated_at.eq(binding.at.as_datetime()),
        ))
        .on_conflict(support_bindings::account_id)
        .do_update()
        .set((
            support_bindings::account_key.eq(binding.account_key.0.as_slice()),
            support_bindings::staff_key.eq(binding.staff_key.0.as_slice()),
            support_bindings::mac.eq(binding.mac.as_slice()),
            support_bindings::updated_at.eq(binding.at.as_datetime()),
        ))
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
    Ok(true)
}

/// A binding row: account key, staff key, MAC, when it was written.
type BindingColumns = (Vec<u8>, Vec<u8>, Vec<u8>, DateTime<Utc>);

pub(super) async fn binding(
    store: &PgStore,
    account: &AccountId,
) -> Result<Option<Binding>, StoreError> {
    let mut conn = store.conn().await?;
    let row: Option<BindingColumns> = support_bindings::table
        .find(account.as_str())
        .select((
            support_bindings::account_key,
            support_bindings::staff_key,
            support_bindings::mac,
            support_bindings::updated_at,
        ))
        .first(&mut conn)
        .await
        .optional()
        .map_err(db_error)?;
    row.map(|(account_key, staff_key, mac, at)| {
        Ok(Binding {
            account: account.clone(),
            account_key: PublicKey(bytes32(account_key)?),
            staff_key: PublicKey(bytes32(staff_key)?),
            mac: bytes32(mac)?,
            at: at.into(),
        })
    })
    .transpose()
}
