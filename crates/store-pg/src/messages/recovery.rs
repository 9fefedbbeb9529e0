//! Recovery of the blobs of deliveries that died before committing: the
//! pending blobs, and the ingest instance lock that tells a live instance
//! from a dead one.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Bool, Text};
use diesel_async::pooled_connection::deadpool::Object;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::StoreError;
use sealpost_messages::store::PendingBlob;
use tokio::task::JoinHandle;

use crate::schema::pending_blobs;
use crate::{PgStore, db_error};

/// The advisory lock key of an ingest instance. The same expression takes the
/// lock and tests it, so the two always agree.
const INSTANCE_LOCK_KEY: &str = "hashtextextended($1, 0)";

/// How often the instance lock's connection is checked while held.
const INSTANCE_LOCK_CHECK: Duration = Duration::from_secs(5);

/// Longest wait to take (or take back) the instance lock. Only another
/// process's liveness test ever holds it, for one statement.
const INSTANCE_LOCK_WAIT: Duration = Duration::from_secs(10);

/// Keeps an ingest instance alive in the eyes of every process's recovery: a
/// session-level advisory lock on a connection of its own, out of the pool,
/// held for as long as this value lives and taken again should that
/// connection drop. Dropping it (or the process dying) releases the lock.
#[must_use = "the instance counts as dead as soon as this is dropped"]
pub struct InstanceLock {
    keeper: JoinHandle<()>,
}

impl Drop for InstanceLock {
    fn drop(&mut self) {
        // The keeper owns the connection; ending it closes the session.
        self.keeper.abort();
    }
}

#[derive(QueryableByName)]
struct Locked {
    #[diesel(sql_type = Bool)]
    locked: bool,
}

impl PgStore {
    /// Takes the instance lock of `instance` (see [`InstanceLock`]); returns
    /// once it is held. Call before the ingest of that instance delivers.
    pub async fn hold_instance_lock(&self, instance: &str) -> Result<InstanceLock, StoreError> {
        let conn = self.lock_instance(instance).await?;
        let keeper = tokio::spawn(keep_instance_lock(self.clone(), instance.to_owned(), conn));
        Ok(InstanceLock { keeper })
    }

    /// A connection of its own (taken out of the pool) holding the lock.
    async fn lock_instance(&self, instance: &str) -> Result<AsyncPgConnection, StoreError> {
        let mut conn = Object::take(self.conn().await?);
        let take = diesel::sql_query(format!("SELECT pg_advisory_lock({INSTANCE_LOCK_KEY})"))
            .bind::<Text, _>(instance)
            .execute(&mut conn);
        match tokio::time::timeout(INSTANCE_LOCK_WAIT, take).await {
            Ok(Ok(_)) => Ok(conn),
            Ok(Err(error)) => Err(db_error(error)),
            Err(_) => Err(StoreError::Unavailable(
                "timed out taking the ingest instance lock".into(),
            )),
        }
    }
}

async fn keep_instance_lock(store: PgStore, instance: String, mut conn: AsyncPgConnection) {
    loop {
        loop {
            tokio::time::sleep(INSTANCE_LOCK_CHECK).await;
            if diesel::sql_query("SELECT 1")
                .execute(&mut conn)
                .await
                .is_err()
            {
                break;
            }
        }
        // Until taken back, other processes may believe this instance dead and
        // take its pending blobs over; its commits then fail instead of
        // keeping messages whose blobs were deleted.
        tracing::warn!("the ingest instance lock's connection failed; taking the lock again");
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            match store.lock_instance(&instance).await {
                Ok(fresh) => {
                    conn = fresh;
                    tracing::info!("ingest instance lock held again");
                    break;
                }
                Err(error) => tracing::warn!(%error, "cannot take the ingest instance lock yet"),
            }
        }
    }
}

pub(super) async fn pending_blobs(store: &PgStore) -> Result<Vec<PendingBlob>, StoreError> {
    let mut conn = store.conn().await?;
    let rows: Vec<(String, Option<String>, DateTime<Utc>)> = pending_blobs::table
        .select((
            pending_blobs::blob_key,
            pending_blobs::owner,
            pending_blobs::written_at,
        ))
        .load(&mut conn)
        .await
        .map_err(db_error)?;
    Ok(rows
        .into_iter()
        .map(|(key, owner, written_at)| PendingBlob {
            key,
            owner,
            written_at: written_at.into(),
        })
        .collect())
}

pub(super) async fn alive_owners(
    store: &PgStore,
    owners: Vec<String>,
) -> Result<Vec<String>, StoreError> {
    let mut conn = store.conn().await?;
    let mut alive = Vec::new();
    for owner in owners {
        // Free means nobody holds it: the owner's process is gone. Given
        // back at once, in the same session.
        let tested = async {
            let free = diesel::sql_query(format!(
                "SELECT pg_try_advisory_lock({INSTANCE_LOCK_KEY}) AS locked"
            ))
            .bind::<Text, _>(&owner)
            .get_result::<Locked>(&mut conn)
            .await?
            .locked;
            if free {
                diesel::sql_query(format!("SELECT pg_advisory_unlock({INSTANCE_LOCK_KEY})"))
                    .bind::<Text, _>(&owner)
                    .execute(&mut conn)
                    .await?;
            }
            Ok::<_, diesel::result::Error>(free)
        }
        .await;
        match tested {
            Ok(true) => {}
            Ok(false) => alive.push(owner),
            Err(error) => {
                // The session may still hold a lock it took: closing it
                // (not returning it to the pool) releases every one.
                drop(Object::take(conn));
                return Err(db_error(error));
            }
        }
    }
    Ok(alive)
}

pub(super) async fn disown_pending_blobs(
    store: &PgStore,
    keys: Vec<String>,
) -> Result<Vec<String>, StoreError> {
    let mut conn = store.conn().await?;
    diesel::update(pending_blobs::table.filter(pending_blobs::blob_key.eq_any(keys)))
        .set(pending_blobs::owner.eq(None::<String>))
        .returning(pending_blobs::blob_key)
        .get_results(&mut conn)
        .await
        .map_err(db_error)
}

pub(super) async fn forget_pending_blobs(
    store: &PgStore,
    keys: Vec<String>,
) -> Result<(), StoreError> {
    let mut conn = store.conn().await?;
    diesel::delete(pending_blobs::table.filter(pending_blobs::blob_key.eq_any(keys)))
        .execute(&mut conn)
        .await
        .map(|_| ())
        .map_err(db_error)
}
