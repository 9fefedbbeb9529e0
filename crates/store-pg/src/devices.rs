//! `DeviceRepository` over PostgreSQL: pairing sessions, devices, credentials.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_activity::Records;
use sealpost_devices::{
    Claim, ClaimOutcome, Device, DeviceKind, DeviceRepository, HandoffKey, KeyBundle,
    PairingInsert, PairingSession, PairingState, Platform, WriteOutcome,
};
use sealpost_kernel::{
    AccountId, AddressId, DeviceId, PageRequest, PairingSessionId, StoreError, Timestamp,
};
use sealpost_seal::SealedBox;

use crate::records::{
    box_from_json, box_to_json, id_retired, lock_account_plan, retire_id, write_records,
};
use crate::schema::{
    addresses, device_credentials, devices, pairing_lookup_failures, pairing_sessions,
};
use crate::{PgStore, bytes32, db_error};

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

#[derive(Queryable, Selectable)]
#[diesel(table_name = pairing_sessions, check_for_backend(diesel::pg::Pg))]
struct PairingRow {
    id: String,
    token_hash: Vec<u8>,
    code: String,
    state: String,
    platform: String,
    device_name: String,
    public_key: Vec<u8>,
    handoff_key: Vec<u8>,
    created_at: DateTime<Utc>,
    detected_by: Option<String>,
    claimed_by: Option<String>,
    device_id: Option<String>,
    handoff: Option<serde_json::Value>,
}

impl PairingRow {
    fn into_session(self) -> Result<PairingSession, StoreError> {
        Ok(PairingSession {
            id: PairingSessionId::from_trusted(self.id),
            token_hash: bytes32(self.token_hash)?,
            code: self.code,
            state: self.state.parse().map_err(StoreError::failed)?,
            platform: self.platform.parse().unwrap_or(Platform::Unknown),
            device_name: self.device_name,
            public_key: bytes32(self.public_key)?,
            handoff_key: HandoffKey(bytes32(self.handoff_key)?),
            created_at: self.created_at.into(),
            detected_by: self.detected_by.map(AccountId::from_trusted),
            claimed_by: self.claimed_by.map(AccountId::from_trusted),
            device_id: self.device_id.map(DeviceId::from_trusted),
            handoff: self.handoff.map(box_from_json).transpose()?,
        })
    }
}

fn is_unique_violation(error: &diesel::result::Error) -> bool {
    matches!(
        error,
        diesel::result::Error::DatabaseError(diesel::result::DatabaseErrorKind::UniqueViolation, _)
    )
}

impl PgStore {
    async fn pairing_where(
        &self,
        filter: impl FnOnce(
            pairing_sessions::BoxedQuery<'static, diesel::pg::Pg>,
        ) -> pairing_sessions::BoxedQuery<'static, diesel::pg::Pg>,
    ) -> Result<Option<PairingSession>, StoreError> {
        let mut conn = self.conn().await?;
        filter(pairing_sessions::table.into_boxed())
            .select(PairingRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?
            .map(PairingRow::into_session)
            .transpose()
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
        let mut conn = self.conn().await?;
        let outcome = conn
            .transaction(async |conn| {
                // One opener at a time per source: count and insert together.
                diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 7))")
                    .bind::<Text, _>(&source)
                    .execute(conn)
                    .await?;
                let live: i64 = pairing_sessions::table
                    .filter(pairing_sessions::opened_from.eq(&source))
                    .filter(pairing_sessions::claimed_by.is_null())
                    .filter(pairing_sessions::last_polled_at.gt(live_since.as_datetime()))
                    .count()
                    .get_result(conn)
                    .await?;
                if live >= i64::from(max) {
                    return Ok(PairingInsert::TooMany);
                }
                diesel::insert_into(pairing_sessions::table)
                    .values((
                        pairing_sessions::id.eq(session.id.as_str()),
                        pairing_sessions::token_hash.eq(session.token_hash.as_slice()),
                        pairing_sessions::code.eq(&session.code),
                        pairing_sessions::state.eq(session.state.as_str()),
                        pairing_sessions::platform.eq(session.platform.as_str()),
                        pairing_sessions::device_name.eq(&session.device_name),
                        pairing_sessions::public_key.eq(session.public_key.as_slice()),
                        pairing_sessions::handoff_key.eq(session.handoff_key.0.as_slice()),
                        pairing_sessions::created_at.eq(session.created_at.as_datetime()),
                        pairing_sessions::last_polled_at.eq(session.created_at.as_datetime()),
                        pairing_sessions::opened_from.eq(&source),
                    ))
                    .execute(conn)
                    .await?;
                Ok::<_, diesel::result::Error>(PairingInsert::Inserted)
            })
            .await;
        match outcome {
            Ok(outcome) => Ok(outcome),
            Err(error) if is_unique_violation(&error) => Ok(PairingInsert::CodeTaken),
            Err(error) => Err(db_error(error)),
        }
    }

    async fn poll_pairing(
        &self,
        token_hash: [u8; 32],
        now: Timestamp,
        live_since: Timestamp,
    ) -> Result<Option<PairingSession>, StoreError> {
        let mut conn = self.conn().await?;
        diesel::update(
            pairing_sessions::table
                .filter(pairing_sessions::token_hash.eq(token_hash.as_slice()))
                .filter(
                    pairing_sessions::claimed_by
                        .is_not_null()
                        .or(pairing_sessions::last_polled_at.gt(live_since.as_datetime())),
                ),
        )
        .set(pairing_sessions::last_polled_at.eq(now.as_datetime()))
        .returning(PairingRow::as_returning())
        .get_result(&mut conn)
        .await
        .optional()
        .map_err(db_error)?
        .map(PairingRow::into_session)
        .transpose()
    }

    async fn pairing_by_token(
        &self,
        token_hash: [u8; 32],
    ) -> Result<Option<PairingSession>, StoreError> {
        self.pairing_where(|q| q.filter(pairing_sessions::token_hash.eq(token_hash.to_vec())))
            .await
    }

    async fn pairing_by_id(
        &self,
        id: &PairingSessionId,
    ) -> Result<Option<PairingSession>, StoreError> {
        let id = id.to_string();
        self.pairing_where(|q| q.filter(pairing_sessions::id.eq(id)))
            .await
    }

    async fn live_pairing_by_code(
        &self,
        code: &str,
        live_since: Timestamp,
    ) -> Result<Option<PairingSession>, StoreError> {
        let code = code.to_owned();
        self.pairing_where(|q| {
            q.filter(pairing_sessions::code.eq(code))
                .filter(pairing_sessions::claimed_by.is_null())
                .filter(pairing_sessions::last_polled_at.gt(live_since.as_datetime()))
        })
        .await
    }

    async fn mark_detected(
        &self,
        id: &PairingSessionId,
        by: &AccountId,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        // The first account to detect it keeps it.
        let updated = diesel::update(
            pairing_sessions::table
                .filter(pairing_sessions::id.eq(id.as_str()))
                .filter(pairing_sessions::claimed_by.is_null())
                .filter(
                    pairing_sessions::detected_by
                        .is_null()
                        .or(pairing_sessions::detected_by.eq(by.as_str())),
                ),
        )
        .set((
            pairing_sessions::state.eq(PairingState::OperatorDetected.as_str()),
            pairing_sessions::detected_by.eq(by.as_str()),
        ))
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(updated > 0)
    }

    async fn delete_unclaimed_pairing(&self, id: &PairingSessionId) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let deleted = diesel::delete(
            pairing_sessions::table
                .filter(pairing_sessions::id.eq(id.as_str()))
                .filter(pairing_sessions::claimed_by.is_null()),
        )
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(deleted > 0)
    }

    async fn take_handoff(&self, id: &PairingSessionId) -> Result<Option<SealedBox>, StoreError> {
        let mut conn = self.conn().await?;
        // Take the row lock, read and clear in one transaction: two polls
        // racing cannot both get the credential.
        let handoff: Option<serde_json::Value> = conn
            .transaction(async |conn| {
                let handoff: Option<Option<serde_json::Value>> = pairing_sessions::table
                    .find(id.as_str())
                    .select(pairing_sessions::handoff)
                    .for_update()
                    .first(conn)
                    .await
                    .optional()?;
                let handoff = handoff.flatten();
                if handoff.is_some() {
                    diesel::update(pairing_sessions::table.find(id.as_str()))
                        .set(pairing_sessions::handoff.eq(None::<serde_json::Value>))
                        .execute(conn)
                        .await?;
                }
                Ok::<_, diesel::result::Error>(handoff)
            })
            .await
            .map_err(db_error)?;
        handoff.map(box_from_json).transpose()
    }

    async fn reserve_lookup(
        &self,
        mut keys: Vec<String>,
        at: Timestamp,
        since: Timestamp,
        limit: u32,
    ) -> Result<Option<Vec<Timestamp>>, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            // Locks in one order, so two lookups never wait on each other in a cycle.
            let mut ordered = keys.clone();
            ordered.sort();
            for key in &ordered {
                diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 11))")
                    .bind::<Text, _>(key)
                    .execute(conn)
                    .await?;
            }
            for key in &keys {
                let failures: Vec<DateTime<Utc>> = pairing_lookup_failures::table
                    .filter(pairing_lookup_failures::key.eq(key))
                    .filter(pairing_lookup_failures::at.gt(since.as_datetime()))
                    .select(pairing_lookup_failures::at)
                    .load(conn)
                    .await?;
                if failures.len() >= limit as usize {
                    return Ok(Some(failures.into_iter().map(Into::into).collect()));
                }
            }
            let rows: Vec<_> = keys
                .drain(..)
                .map(|key| {
                    (
                        pairing_lookup_failures::key.eq(key),
                        pairing_lookup_failures::at.eq(at.as_datetime()),
                    )
                })
                .collect();
            diesel::insert_into(pairing_lookup_failures::table)
                .values(rows)
                .execute(conn)
                .await?;
            Ok::<_, diesel::result::Error>(None)
        })
        .await
        .map_err(db_error)
    }

    async fn release_lookup(&self, keys: Vec<String>, at: Timestamp) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        for key in keys {
            diesel::sql_query(
                "DELETE FROM pairing_lookup_failures WHERE ctid IN \
                 (SELECT ctid FROM pairing_lookup_failures WHERE key = $1 AND at = $2 LIMIT 1)",
            )
            .bind::<Text, _>(key)
            .bind::<Timestamptz, _>(at.as_datetime())
            .execute(&mut conn)
            .await
            .map_err(db_error)?;
        }
        Ok(())
    }

    async fn claim(&self, claim: Claim) -> Result<ClaimOutcome, StoreError> {
        let mut conn = self.conn().await?;
        let account = claim.device.account.clone();
        conn.transaction(async |conn| {
            // Serialises the account's limit checks, on the plan it holds now.
            let current = lock_account_plan(conn, &account).await?;
            if current != claim.plan {
                return Ok(ClaimOutcome::PlanChanged(current));
            }
            let session: Option<(Option<String>, Option<String>)> = pairing_sessions::table
                .find(claim.session.as_str())
                .select((pairing_sessions::detected_by, pairing_sessions::claimed_by))
                .for_update()
                .first(conn)
                .await
                .optional()?;
            match session {
                None => return Ok(ClaimOutcome::NotFound),
                Some((_, Some(_))) => return Ok(ClaimOutcome::AlreadyUsed),
                Some((detected_by, None)) if detected_by.as_deref() != Some(account.as_str()) => {
                    return Ok(ClaimOutcome::NotFound);
                }
                Some(_) => {}
            }
            let id = claim.device.id.as_str();
            let exists: i64 = devices::table.find(id).count().get_result(conn).await?;
            if exists > 0 || id_retired(conn, DEVICE_ID_KIND, id).await? {
                return Ok(ClaimOutcome::IdTaken);
            }
            if let Some(max) = claim.max_devices {
                let paired: i64 = devices::table
                    .filter(devices::account_id.eq(account.as_str()))
                    .count()
                    .get_result(conn)
                    .await?;
                if paired >= i64::from(max) {
                    return Ok(ClaimOutcome::LimitReached);
                }
            }
            let device = &claim.device;
            diesel::insert_into(devices::table)
                .values((
                    devices::id.eq(id),
                    devices::account_id.eq(account.as_str()),
                    devices::kind.eq(device.kind.as_str()),
                    devices::platform.eq(device.platform.as_str()),
                    devices::created_at.eq(device.created_at.as_datetime()),
                    devices::last_active_at.eq(device.last_active_at.map(|t| t.as_datetime())),
                    devices::profile.eq(device.profile.as_ref().map(box_to_json)),
                    devices::public_key.eq(device.public_key.map(|key| key.to_vec())),
                ))
                .execute(conn)
                .await?;
            diesel::insert_into(device_credentials::table)
                .values((
                    device_credentials::token_hash.eq(claim.credential_hash.as_slice()),
                    device_credentials::device_id.eq(id),
                    device_credentials::account_id.eq(account.as_str()),
                    device_credentials::created_at.eq(device.created_at.as_datetime()),
                ))
                .execute(conn)
                .await?;
            diesel::update(pairing_sessions::table.find(claim.session.as_str()))
                .set((
                    pairing_sessions::state.eq(PairingState::AwaitingAddress.as_str()),
                    pairing_sessions::claimed_by.eq(account.as_str()),
                    pairing_sessions::device_id.eq(id),
                    pairing_sessions::handoff.eq(box_to_json(&claim.handoff)),
                ))
                .execute(conn)
                .await?;
            write_records(conn, &claim.records).await?;
            Ok::<_, diesel::result::Error>(ClaimOutcome::Claimed)
        })
        .await
        .map_err(db_error)
    }

    async fn devices(
        &self,
        account: &AccountId,
        page: &PageRequest,
    ) -> Result<Vec<Device>, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn device(
        &self,
        account: &AccountId,
        id: &DeviceId,
    ) -> Result<Option<Device>, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn assigned_addresses(
        &self,
        account: &AccountId,
        id: &DeviceId,
    ) -> Result<Vec<AddressId>, StoreError> {
        let mut conn = self.conn().await?;
        device_addresses(&mut conn, account, id)
            .await
            .map_err(db_error)
    }

    async fn update_profile(
        &self,
        account: &AccountId,
        id: &DeviceId,
        profile: SealedBox,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn disable(&self, account: &AccountId, id: &DeviceId) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn remove(
        &self,
        account: &AccountId,
        id: &DeviceId,
        assigned: Vec<AddressId>,
        records: Records,
    ) -> Result<WriteOutcome, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| remove_device(conn, account, id, &assigned, &records).await)
            .await
            .map_err(db_error)
    }

    async fn record_activity(
        &self,
        account: &AccountId,
        id: &DeviceId,
        at_hour: Timestamp,
        records: Records,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
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
                .set(devices::last_active_at.eq(at_hour.as_datetime()))
                .execute(conn)
                .await?;
            Ok::<_, diesel::result::Error>(())
        })
        .await
        .map_err(db_error)
    }

    async fn set_keys(
        &self,
        account: &AccountId,
        id: &DeviceId,
        bundle: KeyBundle,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn keys(
        &self,
        account: &AccountId,
        id: &DeviceId,
    ) -> Result<Option<KeyBundle>, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn stale_devices(&self, before: Timestamp) -> Result<Vec<Device>, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn mark_disconnected(
        &self,
        id: &DeviceId,
        before: Timestamp,
        records: Records,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn sweep_pairing(
        &self,
        created_before: Timestamp,
        polled_before: Timestamp,
        failures_before: Timestamp,
    ) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        // Claimed sessions stay: their device may not have fetched its
        // credential yet.
        let sessions = diesel::delete(
            pairing_sessions::table
                .filter(pairing_sessions::claimed_by.is_null())
                .filter(
                    pairing_sessions::created_at
                        .lt(created_before.as_datetime())
                        .or(pairing_sessions::last_polled_at.lt(polled_before.as_datetime())),
                ),
        )
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        let failures = diesel::delete(
            pairing_lookup_failures::table
                .filter(pairing_lookup_failures::at.lt(failures_before.as_datetime())),
        )
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok((sessions + failures) as u64)
    }
}
