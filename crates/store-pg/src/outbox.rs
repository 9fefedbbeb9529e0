//! The outbox's consumers: each reads every `events` row once, through its
//! own flag, and claims the rows it reads with the one query here.

use chrono::{DateTime, Utc};
use diesel::dsl::not;
use diesel::expression::BoxableExpression;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::Bool;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::schema::events;

/// A consumer of the outbox, by the flag it sets on the rows it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OutboxConsumer {
    /// The webhook fan-out (`fanned_out`).
    Webhooks,
    /// The push collector (`pushed`).
    Push,
}

/// An outbox row as its consumers read it: id, account, event type,
/// payload, when.
pub(crate) type OutboxRow = (String, String, String, serde_json::Value, DateTime<Utc>);

/// Up to `limit` rows `consumer` has not taken yet, oldest first, locked
/// for the caller's transaction (`FOR UPDATE SKIP LOCKED`: another process
/// running the same consumer takes the next rows instead of waiting). The
/// caller sets the consumer's flag on them in the same transaction.
pub(crate) async fn claim_outbox(
    conn: &mut AsyncPgConnection,
    consumer: OutboxConsumer,
    limit: i64,
) -> Result<Vec<OutboxRow>, diesel::result::Error> {
    claim_query(consumer, limit).load(conn).await
}

/// The claim, as a query of its own so its plan can be tested.
fn claim_query(
    consumer: OutboxConsumer,
    limit: i64,
) -> impl diesel_async::methods::LoadQuery<'static, AsyncPgConnection, OutboxRow>
+ diesel::query_builder::QueryFragment<Pg>
+ Send
+ 'static {
    // `NOT flag`, not `flag = $1`: a prepared statement's generic plan
    // cannot prove a bound `false` matches the partial indexes'
    // `WHERE NOT fanned_out` / `WHERE NOT pushed`, and scans and sorts the
    // whole table instead (test below).
    let not_taken: Box<dyn BoxableExpression<events::table, Pg, SqlType = Bool>> = match consumer {
        OutboxConsumer::Webhooks => Box::new(not(events::fanned_out)),
        OutboxConsumer::Push => Box::new(not(events::pushed)),
    };
    events::table
        .filter(not_taken)
        .order(events::seq.asc())
        .limit(limit)
        .for_update()
        .skip_locked()
        .select((
            events::id,
            events::account_id,
            events::event_type,
            events::payload,
            events::created_at,
        ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_db::{drop_database, fresh_store, generic_plan, run_all};

    /// Consumers run the claim as a prepared statement, which PostgreSQL
    /// plans generically after a few runs: its plan, with most of a large
    /// outbox already taken, must read the consumer's partial index rather
    /// than scan the table. With the flag bound as a parameter it scanned.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_generic_plan_of_each_claim_reads_its_partial_index() {
        const DATABASE: &str = "sealpost_store_pg_outbox_plan";
        let store = fresh_store(DATABASE).await;
        let mut conn = store.conn().await.unwrap();
        run_all(
            &mut conn,
            &[
                "INSERT INTO accounts (id, auth_public_key, auth_verifier_hash, created_at) \
                 VALUES ('acct_outbox1', decode(repeat('00', 32), 'hex'), \
                         decode(repeat('00', 32), 'hex'), now())",
                "INSERT INTO events (id, account_id, type, payload, created_at, fanned_out, pushed) \
                 SELECT 'evt_' || g, 'acct_outbox1', 'message.received', '{}', now(), \
                        g <= 19990, g <= 19990 \
                 FROM generate_series(1, 20000) AS g",
                "ANALYZE events",
            ],
        )
        .await;
        for (consumer, index) in [
            (OutboxConsumer::Webhooks, "events_to_fan_out"),
            (OutboxConsumer::Push, "events_to_push"),
        ] {
            let query = diesel::debug_query::<Pg, _>(&claim_query(consumer, 100)).to_string();
            let (sql, binds) = query.split_once(" -- binds: ").unwrap();
            let arguments = binds.trim_start_matches('[').trim_end_matches(']');
            let plan = generic_plan(&mut conn, sql, arguments).await;
            assert!(
                plan.contains(index),
                "{consumer:?}'s claim does not read {index}:\n{plan}"
            );
        }
        drop(conn);
        drop(store);
        drop_database(DATABASE).await;
    }
}
