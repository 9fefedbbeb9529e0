//! `DeviceRepository` over PostgreSQL: pairing sessions, devices, credentials.
//! The device row and what other stores share (removing a device, its
//! addresses) live here; each feature's queries in its module (`pairing`,
//! `claim`, `lifecycle`, `keys`), which the repository implementation below
//! calls.

mod claim;
mod keys;
mod lifecycle;
mod pairing;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use sealpost_activity::Records;
use sealpost_devices::{
    Claim, ClaimOutcome, Device, DeviceKind, DeviceRepository, KeyBundle, PairingInsert,
    PairingSession, Platform, WriteOutcome,
};
use sealpost_kernel::{
    AccountId, AddressId, DeviceId, PageRequest, PairingSessionId, StoreError, Timestamp,
};
use sealpost_seal::SealedBox;

use crate::records::{box_from_json, retire_id, write_records};
use crate::schema::{addresses, devices};
use crate::{PgStore, bytes32};

pub(crate) const DEVICE_ID_KIND: &str = "worker";

#[derive(Queryable, Selectable)]
#[diesel(table_name = devices, check_for_backend(diesel::pg::Pg))]
pub(crate) struct DeviceRow {
    id: String,
    account_id: String,
    kind: String,
    platform: String,
    disabled: bool,
    connected: bool,
    created_at: DateTime<Utc>,
    last_active_at: Option<DateTime<Utc>>,
    paused_at: Option<DateTime<Utc>>,
    profile: Option<serde_json::Value>,
    public_key: Option<Vec<u8>>,
}

impl DeviceRow {
    fn into_device(self) -> Result<Device, StoreError> {
        Ok(Device {
            id: DeviceId::from_trusted(self.id),
            account: AccountId::from_trusted(self.account_id),
            kind: if self.kind == "agent" {
                DeviceKind::Agent
            } else {
                DeviceKind::Device
            },
            platform: self.platform.parse().unwrap_or(Platform::Unknown),
            disabled: self.disabled,
            connected: self.connected,
            created_at: self.created_at.into(),
            last_active_at: self.last_active_at.map(Into::into),
            paused_at: self.paused_at.map(Into::into),
            profile: self.profile.map(box_from_json).transpose()?,
            public_key: self.public_key.map(bytes32).transpose()?,
        })
    }
}

/// Removes the account's device `id` in the caller's transaction when the
/// addresses assigned to it are still `assigned`: they are unassigned, the
/// device deleted (its credential cascades), its id retired, `records`
/// written.
pub(crate) async fn remove_device(
    conn: &mut diesel_async::AsyncPgConnection,
    account: &AccountId,
    id: &DeviceId,
    assigned: &[AddressId],
    records: &Records,
) -> Result<WriteOutcome, diesel::result::Error> {
    let at = records.events.as_slice().first().map(|event| event.at);
    let found: Option<String> = devices::table
        .filter(devices::id.eq(id.as_str()))
        .filter(devices::account_id.eq(account.as_str()))
        .select(devices::id)
        .for_update()
        .first(conn)
        .await
        .optional()?;
    if found.is_none() {
        return Ok(WriteOutcome::NotFound);
    }
    let current: Vec<String> = addresses::table
        .filter(addresses::device_id.eq(id.as_str()))
        .select(addresses::id)
        .order(addresses::id)
        .load(conn)
        .await?;
    let expected: Vec<&str> = assigned.iter().map(AddressId::as_str).collect();
    if current != expected {
        return Ok(WriteOutcome::Stale);
    }
    diesel::update(addresses::table.filter(addresses::device_id.eq(id.as_str())))
        .set(addresses::device_id.eq(None::<String>))
        .execute(conn)
        .await?;
    diesel::delete(devices::table.find(id.as_str()))
        .execute(conn)
        .await?;
    if let Some(at) = at {
        retire_id(conn, DEVICE_ID_KIND, id.as_str(), at).await?;
    }
    write_records(conn, records).await?;
    Ok(WriteOutcome::Changed)
}

/// The addresses assigned to the account's device, by id.
pub(crate) async fn device_addresses(
    conn: &mut diesel_async::AsyncPgConnection,
    account: &AccountId,
    id: &DeviceId,
) -> Result<Vec<AddressId>, diesel::result::Error> {
    let ids: Vec<String> = addresses::table
        .filter(addresses::account_id.eq(account.as_str()))
        .filter(addresses::device_id.eq(id.as_str()))
        .select(addresses::id)
        .order(addresses::id)
        .load(conn)
        .await?;
    Ok(ids.into_iter().map(AddressId::from_trusted).collect())
}

#[async_trait]
impl DeviceRepository for PgStore {
    async fn insert_pairing(
        &self,
        session: PairingSession,
        source: String,
        max: u32,
        live_since: Timestamp,
    ) -> Result<PairingInsert, StoreError> {
        pairing::insert_pairing(self, session, source, max, live_since).await
    }

    async fn poll_pairing(
        &self,
        token_hash: [u8; 32],
        now: Timestamp,
        live_since: Timestamp,
    ) -> Result<Option<PairingSession>, StoreError> {
        pairing::poll_pairing(self, token_hash, now, live_since).await
    }

    async fn pairing_by_token(
        &self,
        token_hash: [u8; 32],
    ) -> Result<Option<PairingSession>, StoreError> {
        pairing::pairing_by_token(self, token_hash).await
    }

    async fn pairing_by_id(
        &self,
        id: &PairingSessionId,
    ) -> Result<Option<PairingSession>, StoreError> {
        pairing::pairing_by_id(self, id).await
    }

    async fn live_pairing_by_code(
        &self,
        code: &str,
        live_since: Timestamp,
    ) -> Result<Option<PairingSession>, StoreError> {
        pairing::live_pairing_by_code(self, code, live_since).await
    }

    async fn mark_detected(
        &self,
        id: &PairingSessionId,
        by: &AccountId,
    ) -> Result<bool, StoreError> {
        pairing::mark_detected(self, id, by).await
    }

    async fn delete_unclaimed_pairing(&self, id: &PairingSessionId) -> Result<bool, StoreError> {
        pairing::delete_unclaimed_pairing(self, id).await
    }

    async fn take_handoff(&self, id: &PairingSessionId) -> Result<Option<SealedBox>, StoreError> {
        pairing::take_handoff(self, id).await
    }

    async fn reserve_lookup(
        &self,
        keys: Vec<String>,
        at: Timestamp,
        since: Timestamp,
        limit: u32,
    ) -> Result<Option<Vec<Timestamp>>, StoreError> {
        pairing::reserve_lookup(self, keys, at, since, limit).await
    }

    async fn release_lookup(&self, keys: Vec<String>, at: Timestamp) -> Result<(), StoreError> {
        pairing::release_lookup(self, keys, at).await
    }

    async fn claim(&self, claim: Claim) -> Result<ClaimOutcome, StoreError> {
        claim::claim(self, claim).await
    }

    async fn devices(
        &self,
        account: &AccountId,
        page: &PageRequest,
    ) -> Result<Vec<Device>, StoreError> {
        lifecycle::devices(self, account, page).await
    }

    async fn device(
        &self,
        account: &AccountId,
        id: &DeviceId,
    ) -> Result<Option<Device>, StoreError> {
        lifecycle::device(self, account, id).await
    }

    async fn assigned_addresses(
        &self,
        account: &AccountId,
        id: &DeviceId,
    ) -> Result<Vec<AddressId>, StoreError> {
        lifecycle::assigned_addresses(self, account, id).await
    }

    async fn update_profile(
        &self,
        account: &AccountId,
        id: &DeviceId,
        profile: SealedBox,
    ) -> Result<bool, StoreError> {
        lifecycle::update_profile(self, account, id, profile).await
    }

    async fn disable(&self, account: &AccountId, id: &DeviceId) -> Result<bool, StoreError> {
        lifecycle::disable(self, account, id).await
    }

    async fn remove(
        &self,
        account: &AccountId,
        id: &DeviceId,
        assigned: Vec<AddressId>,
        records: Records,
    ) -> Result<WriteOutcome, StoreError> {
        lifecycle::remove(self, account, id, assigned, records).await
    }

    async fn record_activity(
        &self,
        account: &AccountId,
        id: &DeviceId,
        at: Timestamp,
        records: Records,
    ) -> Result<(), StoreError> {
        lifecycle::record_activity(self, account, id, at, records).await
    }

    async fn set_keys(
        &self,
        account: &AccountId,
        id: &DeviceId,
        bundle: KeyBundle,
    ) -> Result<bool, StoreError> {
        keys::set_keys(self, account, id, bundle).await
    }

    async fn keys(
        &self,
        account: &AccountId,
        id: &DeviceId,
    ) -> Result<Option<KeyBundle>, StoreError> {
        keys::keys(self, account, id).await
    }

    async fn stale_devices(&self, before: Timestamp) -> Result<Vec<Device>, StoreError> {
        lifecycle::stale_devices(self, before).await
    }

    async fn mark_disconnected(
        &self,
        id: &DeviceId,
        before: Timestamp,
        records: Records,
    ) -> Result<bool, StoreError> {
        lifecycle::mark_disconnected(self, id, before, records).await
    }

    async fn sweep_pairing(
        &self,
        created_before: Timestamp,
        polled_before: Timestamp,
        failures_before: Timestamp,
    ) -> Result<u64, StoreError> {
        pairing::sweep_pairing(self, created_before, polled_before, failures_before).await
    }
}
