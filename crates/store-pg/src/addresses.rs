//! `AddressRepository` over PostgreSQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_activity::Records;
use sealpost_addresses::{Address, AddressRepository, AssignOutcome, CreateOutcome, address_hash};
use sealpost_devices::PairingState;
use sealpost_kernel::{AccountId, AddressId, DeviceId, PlanId, StoreError, Timestamp};
use sealpost_seal::SealedBox;

use crate::messages::retained_sql;
use crate::records::{
    DeletedMessages, box_from_json, box_to_json, delete_messages_of, delete_messages_sql,
    id_retired, lock_account_plan, retire_id, write_records,
};
use crate::schema::{addresses, devices, own_domains, pairing_sessions, retired_addresses};
use crate::{PgStore, bytes32, db_error};

pub(crate) const ADDRESS_ID_KIND: &str = "inbox";

#[derive(Queryable, Selectable)]
#[diesel(table_name = addresses, check_for_backend(diesel::pg::Pg))]
struct AddressRow {
    id: String,
    account_id: String,
    email_address: String,
    domain: String,
    device_id: Option<String>,
    retention_days: i16,
    paused_at: Option<DateTime<Utc>>,
    meta: Option<serde_json::Value>,
    public_key: Option<Vec<u8>>,
    key_epoch: i32,
    created_at: DateTime<Utc>,
}

impl AddressRow {
    fn into_address(self) -> Result<Address, StoreError> {
        Ok(Address {
            id: AddressId::from_trusted(self.id),
            account: AccountId::from_trusted(self.account_id),
            email_address: self.email_address,
            domain: self.domain,
            device: self.device_id.map(DeviceId::from_trusted),
            retention_days: u8::try_from(self.retention_days).map_err(StoreError::failed)?,
            paused_at: self.paused_at.map(Into::into),
            meta: self.meta.map(box_from_json).transpose()?,
            public_key: self.public_key.map(bytes32).transpose()?,
            key_epoch: u32::try_from(self.key_epoch).map_err(StoreError::failed)?,
            created_at: self.created_at.into(),
        })
    }
}

/// Remembers an address's name and id as used, forever.
pub(crate) async fn retire_address(
    conn: &mut diesel_async::AsyncPgConnection,
    id: &str,
    email_address: &str,
    at: Timestamp,
) -> Result<(), diesel::result::Error> {
    diesel::insert_into(retired_addresses::table)
        .values((
            retired_addresses::address_hash.eq(address_hash(email_address).to_vec()),
            retired_addresses::retired_at.eq(at.as_datetime()),
        ))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    retire_id(conn, ADDRESS_ID_KIND, id, at).await
}

/// Deletes the account's address `id` in the caller's transaction: its mail's
/// blobs queued for deletion, its name and id retired, `records` written.
/// False when the account has no such address.
pub(crate) async fn delete_address(
    conn: &mut diesel_async::AsyncPgConnection,
    account: &AccountId,
    id: &AddressId,
    records: &Records,
) -> Result<bool, diesel::result::Error> {
    let at = records.events.as_slice().first().map(|event| event.at);
    // Only the caller's address, locked first: a delivery's foreign key
    // check waits for this lock, so no message is added between deleting the
    // mail (blobs queued from what that DELETE removed) and the address.
    let locked: Option<String> = addresses::table
        .filter(addresses::id.eq(id.as_str()))
        .filter(addresses::account_id.eq(account.as_str()))
        .select(addresses::id)
        .for_update()
        .first(conn)
        .await
        .optional()?;
    if locked.is_none() {
        return Ok(false);
    }
    delete_messages_of(conn, "m.inbox_id = $1", id.as_str(), at).await?;
    let deleted: Option<String> = diesel::delete(
        addresses::table
            .filter(addresses::id.eq(id.as_str()))
            .filter(addresses::account_id.eq(account.as_str())),
    )
    .returning(addresses::email_address)
    .get_result(conn)
    .await
    .optional()?;
    let Some(email_address) = deleted else {
        return Ok(false);
    };
    if let Some(at) = at {
        retire_address(conn, id.as_str(), &email_address, at).await?;
    }
    write_records(conn, records).await?;
    Ok(true)
}

#[derive(QueryableByName)]
struct IssuedId {
    #[diesel(sql_type = diesel::sql_types::Text)]
    id: String,
}

impl PgStore {
    /// Addresses on `domains` whose local part (or its part before a `+`)
    /// is one of `names`: issued before the name was reserved, they stay
    /// with their owners, and the API lists them for the operator at start.
    pub async fn addresses_under_names(
        &self,
        domains: &[String],
        names: &[String],
    ) -> Result<Vec<AddressId>, StoreError> {
        let mut conn = self.conn().await?;
        // Once at start: raw SQL is fine here (not prepared).
        let rows: Vec<IssuedId> = diesel::sql_query(
            "SELECT id FROM addresses WHERE domain = ANY($1) \
               AND (split_part(email_address, '@', 1) = ANY($2) \
                 OR split_part(split_part(email_address, '@', 1), '+', 1) = ANY($2)) \
             ORDER BY id",
        )
        .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(domains)
        .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(names)
        .load(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|row| AddressId::from_trusted(row.id))
            .collect())
    }
}

#[async_trait]
impl AddressRepository for PgStore {
    async fn create(
        &self,
        address: Address,
        plan: PlanId,
        on_own_domain: bool,
        max_addresses: u32,
        records: Records,
    ) -> Result<CreateOutcome, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            // The account row is the lock removing an own domain takes too:
            // the domain is checked again under it, so a removal between the
            // service's check and this insert is seen here.
            let current = lock_account_plan(conn, &address.account).await?;
            if current != plan {
                return Ok(CreateOutcome::PlanChanged(current));
            }
            if on_own_domain && !own_domain_is_live(conn, &address).await? {
                return Ok(CreateOutcome::DomainGone);
            }
            let id = address.id.as_str();
            let id_used: i64 = addresses::table.find(id).count().get_result(conn).await?;
            if id_used > 0 || id_retired(conn, ADDRESS_ID_KIND, id).await? {
                return Ok(CreateOutcome::IdTaken);
            }
            let live: i64 = addresses::table
                .filter(addresses::email_address.eq(&address.email_address))
                .count()
                .get_result(conn)
                .await?;
            let retired: i64 = retired_addresses::table
                .find(address_hash(&address.email_address).to_vec())
                .count()
                .get_result(conn)
                .await?;
            if live > 0 || retired > 0 {
                return Ok(CreateOutcome::AddressTaken);
            }
            let held: i64 = addresses::table
                .filter(addresses::account_id.eq(address.account.as_str()))
                .count()
                .get_result(conn)
                .await?;
            if held >= i64::from(max_addresses) {
                return Ok(CreateOutcome::LimitReached);
            }
            diesel::insert_into(addresses::table)
                .values((
                    addresses::id.eq(id),
                    addresses::account_id.eq(address.account.as_str()),
                    addresses::email_address.eq(&address.email_address),
                    addresses::domain.eq(&address.domain),
                    addresses::retention_days.eq(i16::from(address.retention_days)),
                    addresses::meta.eq(address.meta.as_ref().map(box_to_json)),
                    addresses::public_key.eq(address.public_key.map(|key| key.to_vec())),
                    addresses::key_epoch.eq(0),
                    addresses::created_at.eq(address.created_at.as_datetime()),
                ))
                .execute(conn)
                .await?;
            write_records(conn, &records).await?;
            Ok::<_, diesel::result::Error>(CreateOutcome::Created)
        })
        .await
        .map_err(db_error)
    }

    async fn addresses(
        &self,
        account: &AccountId,
        device: Option<DeviceId>,
    ) -> Result<Vec<Address>, StoreError> {
        let mut conn = self.conn().await?;
        let mut query = addresses::table
            .filter(addresses::account_id.eq(account.as_str()))
            .select(AddressRow::as_select())
            .order((addresses::created_at.desc(), addresses::id.desc()))
            .into_boxed();
        if let Some(device) = device {
            query = query.filter(addresses::device_id.eq(device.into_string()));
        }
        query
            .load(&mut conn)
            .await
            .map_err(db_error)?
            .into_iter()
            .map(AddressRow::into_address)
            .collect()
    }

    async fn address(
        &self,
        account: &AccountId,
        id: &AddressId,
    ) -> Result<Option<Address>, StoreError> {
        let mut conn = self.conn().await?;
        addresses::table
            .filter(addresses::id.eq(id.as_str()))
            .filter(addresses::account_id.eq(account.as_str()))
            .select(AddressRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?
            .map(AddressRow::into_address)
            .transpose()
    }

    async fn count(&self, account: &AccountId) -> Result<(u64, u64), StoreError> {
        let mut conn = self.conn().await?;
        let mine = addresses::table.filter(addresses::account_id.eq(account.as_str()));
        let total: i64 = mine.count().get_result(&mut conn).await.map_err(db_error)?;
        let assigned: i64 = mine
            .filter(addresses::device_id.is_not_null())
            .count()
            .get_result(&mut conn)
            .await
            .map_err(db_error)?;
        Ok((total as u64, assigned as u64))
    }

    async fn update(
        &self,
        account: &AccountId,
        id: &AddressId,
        meta: Option<SealedBox>,
        retention_days: Option<u8>,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let target = addresses::table
            .filter(addresses::id.eq(id.as_str()))
            .filter(addresses::account_id.eq(account.as_str()));
        conn.transaction(async |conn| {
            let exists: i64 = target.count().get_result(conn).await?;
            if exists == 0 {
                return Ok(false);
            }
            if let Some(meta) = &meta {
                diesel::update(target)
                    .set(addresses::meta.eq(box_to_json(meta)))
                    .execute(conn)
                    .await?;
            }
            if let Some(days) = retention_days {
                diesel::update(target)
                    .set(addresses::retention_days.eq(i16::from(days)))
                    .execute(conn)
                    .await?;
                // A shorter retention applies to mail already stored, at once
                // (the address row already holds it).
                let _: DeletedMessages = diesel::sql_query(delete_messages_sql(&format!(
                    "m.inbox_id = $1 AND NOT ({})",
                    retained_sql("m", "a", "$2")
                )))
                .bind::<diesel::sql_types::Text, _>(id.as_str())
                .bind::<diesel::sql_types::Timestamptz, _>(now.as_datetime())
                .get_result(conn)
                .await?;
            }
            Ok::<_, diesel::result::Error>(true)
        })
        .await
        .map_err(db_error)
    }

    async fn delete(
        &self,
        account: &AccountId,
        id: &AddressId,
        records: Records,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| delete_address(conn, account, id, &records).await)
            .await
            .map_err(db_error)
    }

    async fn assign(
        &self,
        account: &AccountId,
        id: &AddressId,
        device: &DeviceId,
        expected_device: Option<DeviceId>,
        max_per_device: Option<u32>,
        records: Records,
    ) -> Result<AssignOutcome, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            // A disabled device takes no new addresses: it can no longer read them.
            let usable_device: Option<String> = devices::table
                .filter(devices::id.eq(device.as_str()))
                .filter(devices::account_id.eq(account.as_str()))
                .filter(devices::disabled.eq(false))
                .select(devices::id)
                .for_update()
                .first(conn)
                .await
                .optional()?;
            let current: Option<Option<String>> = addresses::table
                .filter(addresses::id.eq(id.as_str()))
                .filter(addresses::account_id.eq(account.as_str()))
                .select(addresses::device_id)
                .for_update()
                .first(conn)
                .await
                .optional()?;
            let (Some(_), Some(current)) = (usable_device, current) else {
                return Ok(AssignOutcome::NotFound);
            };
            if current.as_deref() != expected_device.as_ref().map(DeviceId::as_str) {
                return Ok(AssignOutcome::Stale);
            }
            if let Some(max) = max_per_device {
                let held: i64 = addresses::table
                    .filter(addresses::device_id.eq(device.as_str()))
                    .count()
                    .get_result(conn)
                    .await?;
                if held >= i64::from(max) {
                    return Ok(AssignOutcome::DeviceFull);
                }
            }
            diesel::update(addresses::table.find(id.as_str()))
                .set(addresses::device_id.eq(device.as_str()))
                .execute(conn)
                .await?;
            // The pairing state machine: a new device's first address.
            diesel::update(
                pairing_sessions::table
                    .filter(pairing_sessions::device_id.eq(device.as_str()))
                    .filter(pairing_sessions::state.eq(PairingState::AwaitingAddress.as_str())),
            )
            .set(pairing_sessions::state.eq(PairingState::AddressAssigned.as_str()))
            .execute(conn)
            .await?;
            write_records(conn, &records).await?;
            Ok::<_, diesel::result::Error>(AssignOutcome::Assigned)
        })
        .await
        .map_err(db_error)
    }

    async fn unassign(
        &self,
        account: &AccountId,
        id: &AddressId,
        device: &DeviceId,
        records: Records,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            let changed = diesel::update(
                addresses::table
                    .filter(addresses::id.eq(id.as_str()))
                    .filter(addresses::account_id.eq(account.as_str()))
                    .filter(addresses::device_id.eq(device.as_str())),
            )
            .set(addresses::device_id.eq(None::<String>))
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
}

/// Whether the account's own domain of `address` is still live.
async fn own_domain_is_live(
    conn: &mut diesel_async::AsyncPgConnection,
    address: &Address,
) -> QueryResult<bool> {
    let step: Option<String> = own_domains::table
        .find((address.account.as_str(), address.domain.as_str()))
        .select(own_domains::step)
        .first(conn)
        .await
        .optional()?;
    Ok(step.as_deref() == Some(sealpost_domains::Step::Live.as_str()))
}
