//! What the guard counts: the account row locked, then its open and
//! stored tickets, bytes, today's tickets and this hour's replies (and the
//! ticket's own state).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::{AccountId, TicketId};
use sealpost_support::{Guard, TicketStatus, Usage};

#[derive(QueryableByName)]
struct Counts {
    #[diesel(sql_type = BigInt)]
    open: i64,
    #[diesel(sql_type = BigInt)]
    stored: i64,
    #[diesel(sql_type = BigInt)]
    bytes: i64,
    #[diesel(sql_type = BigInt)]
    created_today: i64,
    #[diesel(sql_type = BigInt)]
    replies_this_hour: i64,
}

#[derive(QueryableByName)]
struct TicketState {
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Integer)]
    message_count: i32,
}

pub(super) fn count(value: i64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// Locks the account row, then counts what the guard needs (and the state
/// of `ticket`, locked too, when given and the account's).
pub(super) async fn usage(
    conn: &mut AsyncPgConnection,
    account: &AccountId,
    ticket: Option<&TicketId>,
    guard: &Guard,
) -> Result<Usage, diesel::result::Error> {
    diesel::sql_query("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE")
        .bind::<Text, _>(account.as_str())
        .execute(conn)
        .await?;
    let counts: Counts = diesel::sql_query(
        "SELECT count(*) FILTER (WHERE status = 'open') AS open, count(*) AS stored, \
         COALESCE(sum(stored_bytes), 0)::bigint AS bytes, \
         count(*) FILTER (WHERE created_at >= $2) AS created_today, \
         (SELECT count(*) FROM support_messages WHERE account_id = $1 AND author = 'account' \
          AND position > 0 AND created_at >= $3) AS replies_this_hour \
         FROM support_tickets WHERE account_id = $1",
    )
    .bind::<Text, _>(account.as_str())
    .bind::<Timestamptz, _>(guard.day_start.as_datetime())
    .bind::<Timestamptz, _>(guard.hour_start.as_datetime())
    .get_result(conn)
    .await?;
    let state = match ticket {
        None => None,
        Some(id) => {
            let state: Option<TicketState> = diesel::sql_query(
                "SELECT status, message_count FROM support_tickets \
                 WHERE id = $1 AND account_id = $2 FOR UPDATE",
            )
            .bind::<Text, _>(id.as_str())
            .bind::<Text, _>(account.as_str())
            .get_result(conn)
            .await
            .optional()?;
            state.and_then(|state| {
                let status = state.status.parse::<TicketStatus>().ok()?;
                Some((
                    status,
                    u32::try_from(state.message_count).unwrap_or(u32::MAX),
                ))
            })
        }
    };
    Ok(Usage {
        open: count(counts.open),
        stored: count(counts.stored),
        bytes: u64::try_from(counts.bytes).unwrap_or(0),
        created_today: count(counts.created_today),
        replies_this_hour: count(counts.replies_this_hour),
        ticket: state,
    })
}
