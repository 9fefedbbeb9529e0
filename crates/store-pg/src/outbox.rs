//! The outbox's consumers: each reads every `events` row once, through its
//! own flag, and claims the rows it reads with the one query here.

use chrono::{DateTime, Utc};
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
    let not_taken: Box<dyn BoxableExpression<events::table, Pg, SqlType = Bool>> = match consumer {
        OutboxConsumer::Webhooks => Box::new(events::fanned_out.eq(false)),
        OutboxConsumer::Push => Box::new(events::pushed.eq(false)),
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
        .load(conn)
        .await
}
