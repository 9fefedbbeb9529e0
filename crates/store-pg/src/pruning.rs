//! Growth limits: the outbox rows every consumer has passed and the usage
//! windows that ended, pruned by the hourly sweep.

use chrono::TimeDelta;
use diesel::sql_types::{Interval, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use sealpost_kernel::{StoreError, Timestamp};

use crate::{PgStore, db_error};

impl PgStore {
    /// Outbox events the webhook fan-out and the push sender have not taken
    /// yet, each counted through its consumer's partial index.
    pub async fn outbox_backlog(&self) -> Result<(i64, i64), StoreError> {
        #[derive(diesel::QueryableByName)]
        struct Backlog {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            webhooks: i64,
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            push: i64,
        }
        let mut conn = self.conn().await?;
        let backlog = diesel::sql_query(
            "SELECT (SELECT count(*) FROM events WHERE NOT fanned_out) AS webhooks, \
                    (SELECT count(*) FROM events WHERE NOT pushed) AS push",
        )
        .get_result::<Backlog>(&mut conn)
        .await
        .map_err(db_error)?;
        Ok((backlog.webhooks, backlog.push))
    }

    /// Deletes `events` rows both consumers have passed (fanned out to
    /// webhooks and collected for pushes) that were written before
    /// `before`: the event stream reads them until then. Raises the
    /// stream's floor to the greatest position deleted, in the same
    /// statement, so a stream resuming below it is told to resync. Returns
    /// how many.
    pub async fn prune_outbox(&self, before: Timestamp) -> Result<u64, StoreError> {
        #[derive(diesel::QueryableByName)]
        struct Pruned {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            pruned: i64,
        }
        let mut conn = self.conn().await?;
        let Pruned { pruned } = diesel::sql_query(
            "WITH gone AS (DELETE FROM events \
                 WHERE fanned_out AND pushed AND created_at < $1 \
                 RETURNING commit_seq, seq), \
               top AS (SELECT commit_seq, seq FROM gone \
                 ORDER BY commit_seq DESC, seq DESC LIMIT 1), \
               raised AS (UPDATE event_stream_floor f \
                 SET commit_seq = top.commit_seq, seq = top.seq FROM top \
                 WHERE (top.commit_seq, top.seq) > (f.commit_seq, f.seq)) \
             SELECT count(*) AS pruned FROM gone",
        )
        .bind::<Timestamptz, _>(before.as_datetime())
        .get_result(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(pruned.max(0) as u64)
    }

    /// Deletes `usage_counters` rows whose window ended by `now`: a counter
    /// named in `windows` has that length, any other `longest`. Returns how
    /// many.
    pub async fn prune_usage_windows(
        &self,
        now: Timestamp,
        windows: &[(&str, TimeDelta)],
        longest: TimeDelta,
    ) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        let mut deleted = 0;
        for (counter, length) in windows {
            deleted += diesel::sql_query(
                "DELETE FROM usage_counters WHERE counter = $1 AND window_start + $2 <= $3",
            )
            .bind::<Text, _>(*counter)
            .bind::<Interval, _>(interval(*length))
            .bind::<Timestamptz, _>(now.as_datetime())
            .execute(&mut conn)
            .await
            .map_err(db_error)?;
        }
        let named: Vec<String> = windows.iter().map(|(name, _)| (*name).to_owned()).collect();
        deleted += diesel::sql_query(
            "DELETE FROM usage_counters WHERE counter <> ALL($1) AND window_start + $2 <= $3",
        )
        .bind::<diesel::sql_types::Array<Text>, _>(named)
        .bind::<Interval, _>(interval(longest))
        .bind::<Timestamptz, _>(now.as_datetime())
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(deleted as u64)
    }
}

fn interval(length: TimeDelta) -> diesel::data_types::PgInterval {
    diesel::data_types::PgInterval::from_microseconds(length.num_microseconds().unwrap_or(i64::MAX))
}
