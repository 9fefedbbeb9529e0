//! `EventStreamRepository`: the outbox's events in commit order for
//! `GET /events/stream`. Every event has a commit number by the time it is
//! visible (a batch's, or one taken at COMMIT by the trigger of the
//! migration `2026-11-28-000141_event_stream`), so reading only positions
//! at or below [`COMMITTED_UP_TO`] never skips one that commits later.

use async_trait::async_trait;
use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Jsonb, Nullable, Text};
use diesel_async::RunQueryDsl;
use sealpost_activity::{EventStreamRepository, EventType, StreamEvent, StreamRead};
use sealpost_kernel::{AccountId, DeviceId, EventId, StoreError, StreamPosition};

use crate::group_commit::COMMITTED_UP_TO;
use crate::prepared::PrepareOnce;
use crate::{PgStore, db_error};

#[derive(QueryableByName)]
struct Row {
    #[diesel(sql_type = BigInt)]
    commit_seq: i64,
    #[diesel(sql_type = BigInt)]
    seq: i64,
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Jsonb)]
    payload: serde_json::Value,
}

#[derive(QueryableByName)]
struct Floor {
    #[diesel(sql_type = BigInt)]
    commit_seq: i64,
    #[diesel(sql_type = BigInt)]
    seq: i64,
}

#[derive(QueryableByName)]
struct Head {
    #[diesel(sql_type = BigInt)]
    head: i64,
}

/// The types the stream carries: the API's events, never push notices
/// (which share the outbox) nor the request-only test type.
fn streamed_types() -> Vec<&'static str> {
    EventType::ALL
        .into_iter()
        .filter(|kind| !kind.is_test())
        .map(EventType::as_str)
        .collect()
}

fn number(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn unsigned(value: i64) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(StoreError::failed)
}

#[async_trait]
impl EventStreamRepository for PgStore {
    async fn stream_head(&self) -> Result<StreamPosition, StoreError> {
        let mut conn = self.conn().await?;
        // Formatted from constants: the text never varies, so it is kept prepared.
        let Head { head } = diesel::sql_query(format!("SELECT {COMMITTED_UP_TO} AS head"))
            .prepared()
            .get_result(&mut conn)
            .await
            .map_err(db_error)?;
        // Every event of commit `head` or below is visible already.
        Ok(StreamPosition {
            commit: unsigned(head)?,
            seq: u64::MAX,
        })
    }

    async fn stream_after(
        &self,
        account: &AccountId,
        device: Option<DeviceId>,
        after: StreamPosition,
        limit: i64,
    ) -> Result<StreamRead, StoreError> {
        let mut conn = self.conn().await?;
        // A device: the events naming it, or an address assigned to it now.
        let rows: Vec<Row> = diesel::sql_query(format!(
            "SELECT e.commit_seq, e.seq, e.id, e.type AS kind, e.payload FROM events e \
             WHERE e.account_id = $1 AND e.type = ANY($2) \
               AND (e.commit_seq, e.seq) > ($3, $4) \
               AND e.commit_seq <= {COMMITTED_UP_TO} \
               AND ($5::text IS NULL OR e.payload->>'workerId' = $5 \
                    OR e.payload->>'inboxId' IN (SELECT a.id FROM addresses a \
                        WHERE a.account_id = $1 AND a.worker_id = $5)) \
             ORDER BY e.commit_seq, e.seq LIMIT $6"
        ))
        .bind::<Text, _>(account.as_str())
        .bind::<Array<Text>, _>(streamed_types())
        .bind::<BigInt, _>(number(after.commit))
        .bind::<BigInt, _>(number(after.seq))
        .bind::<Nullable<Text>, _>(device.as_ref().map(DeviceId::as_str))
        .bind::<BigInt, _>(limit)
        .prepared()
        .load(&mut conn)
        .await
        .map_err(db_error)?;
        // Read after the events: pruning that deleted any of them before
        // that read committed has moved the floor by now.
        let floor: Floor = diesel::sql_query("SELECT commit_seq, seq FROM event_stream_floor")
            .prepared()
            .get_result(&mut conn)
            .await
            .map_err(db_error)?;
        let floor = StreamPosition {
            commit: unsigned(floor.commit_seq)?,
            seq: unsigned(floor.seq)?,
        };
        if after < floor {
            return Ok(StreamRead::Expired);
        }
        rows.into_iter()
            .filter_map(|row| {
                let kind = row.kind.parse::<EventType>().ok()?;
                Some(Ok(StreamEvent {
                    position: match (unsigned(row.commit_seq), unsigned(row.seq)) {
                        (Ok(commit), Ok(seq)) => StreamPosition { commit, seq },
                        (Err(error), _) | (_, Err(error)) => return Some(Err(error)),
                    },
                    id: EventId::from_trusted(row.id),
                    kind,
                    payload: row.payload,
                }))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(StreamRead::Events)
    }
}
