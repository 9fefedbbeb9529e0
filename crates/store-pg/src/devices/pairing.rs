//! Pairing sessions: inserting one under a fresh code, polls, the lookups
//! (by token, id or live code, with the failed-lookup limits reserved and
//! released), detection, the credential handoff, and the sweep of
//! sessions and failures gone stale.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_devices::{HandoffKey, PairingInsert, PairingSession, PairingState, Platform};
use sealpost_kernel::{AccountId, DeviceId, PairingSessionId, StoreError, Timestamp};
use sealpost_seal::SealedBox;

use crate::records::box_from_json;
use crate::schema::{pairing_lookup_failures, pairing_sessions};
use crate::{PgStore, bytes32, db_error};

#[derive(Queryable, Selectable)]
#[diesel(table_name = pairing_sessions, check_for_backend(diesel::pg::Pg))]
struct PairingRow {
    id: String,
    token_hash: Vec<u8>,
    code: String,
    state: String,
    kind: String,
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
            kind: self.kind.parse().map_err(StoreError::failed)?,
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

pub(super) async fn insert_pairing(
    store: &PgStore,
    session: PairingSession,
    source: String,
    max: u32,
    live_since: Timestamp,
) -> Result<PairingInsert, StoreError> {
    let mut conn = store.conn().await?;
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
                    pairing_sessions::kind.eq(session.kind.as_str()),
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

pub(super) async fn poll_pairing(
    store: &PgStore,
    token_hash: [u8; 32],
    now: Timestamp,
    live_since: Timestamp,
) -> Result<Option<PairingSession>, StoreError> {
    let mut conn = store.conn().await?;
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

pub(super) async fn pairing_by_token(
    store: &PgStore,
    token_hash: [u8; 32],
) -> Result<Option<PairingSession>, StoreError> {
    store
        .pairing_where(|q| q.filter(pairing_sessions::token_hash.eq(token_hash.to_vec())))
        .await
}

pub(super) async fn pairing_by_id(
    store: &PgStore,
    id: &PairingSessionId,
) -> Result<Option<PairingSession>, StoreError> {
    let id = id.to_string();
    store
        .pairing_where(|q| q.filter(pairing_sessions::id.eq(id)))
        .await
}

pub(super) async fn live_pairing_by_code(
    store: &PgStore,
    code: &str,
    live_since: Timestamp,
) -> Result<Option<PairingSession>, StoreError> {
    let code = code.to_owned();
    store
        .pairing_where(|q| {
            q.filter(pairing_sessions::code.eq(code))
                .filter(pairing_sessions::claimed_by.is_null())
                .filter(pairing_sessions::last_polled_at.gt(live_since.as_datetime()))
        })
        .await
}

pub(super) async fn mark_detected(
    store: &PgStore,
    id: &PairingSessionId,
    by: &AccountId,
) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
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

pub(super) async fn delete_unclaimed_pairing(
    store: &PgStore,
    id: &PairingSessionId,
) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
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

pub(super) async fn take_handoff(
    store: &PgStore,
    id: &PairingSessionId,
) -> Result<Option<SealedBox>, StoreError> {
    let mut conn = store.conn().await?;
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

pub(super) async fn reserve_lookup(
    store: &PgStore,
    mut keys: Vec<String>,
    at: Timestamp,
    since: Timestamp,
    limit: u32,
) -> Result<Option<Vec<Timestamp>>, StoreError> {
    let mut conn = store.conn().await?;
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

pub(super) async fn release_lookup(
    store: &PgStore,
    keys: Vec<String>,
    at: Timestamp,
) -> Result<(), StoreError> {
    let mut conn = store.conn().await?;
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

pub(super) async fn sweep_pairing(
    store: &PgStore,
    created_before: Timestamp,
    polled_before: Timestamp,
    failures_before: Timestamp,
) -> Result<u64, StoreError> {
    let mut conn = store.conn().await?;
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
