//! The inactivity sweep: tickets closed after their quiet time, closed
//! ones deleted (their ids retired).

use diesel::sql_types::{Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_kernel::StoreError;
use sealpost_support::{SweepCutoffs, SweepReport};

use super::{TICKET_ID_KIND, TICKET_MESSAGE_ID_KIND};
use crate::{PgStore, db_error};

pub(super) async fn sweep(
    store: &PgStore,
    cutoffs: &SweepCutoffs,
) -> Result<SweepReport, StoreError> {
    let mut conn = store.conn().await?;
    let closed = diesel::sql_query(
        "UPDATE support_tickets SET status = 'resolved', closed_at = $2 \
         WHERE status = 'open' AND updated_at < $1",
    )
    .bind::<Timestamptz, _>(cutoffs.close_inactive_before.as_datetime())
    .bind::<Timestamptz, _>(cutoffs.now.as_datetime())
    .execute(&mut conn)
    .await
    .map_err(db_error)?;
    // Ids are retired with the rows: never used again.
    let deleted = conn
        .transaction(async |conn| {
            diesel::sql_query(
                "INSERT INTO retired_ids (kind, id_hash, retired_at) \
                 SELECT $2, sha256(convert_to(m.id, 'UTF8')), $3 FROM support_messages m \
                 JOIN support_tickets t ON t.id = m.ticket_id \
                 WHERE t.closed_at < $1 ON CONFLICT DO NOTHING",
            )
            .bind::<Timestamptz, _>(cutoffs.delete_closed_before.as_datetime())
            .bind::<Text, _>(TICKET_MESSAGE_ID_KIND)
            .bind::<Timestamptz, _>(cutoffs.now.as_datetime())
            .execute(conn)
            .await?;
            diesel::sql_query(
                "INSERT INTO retired_ids (kind, id_hash, retired_at) \
                 SELECT $2, sha256(convert_to(id, 'UTF8')), $3 FROM support_tickets \
                 WHERE closed_at < $1 ON CONFLICT DO NOTHING",
            )
            .bind::<Timestamptz, _>(cutoffs.delete_closed_before.as_datetime())
            .bind::<Text, _>(TICKET_ID_KIND)
            .bind::<Timestamptz, _>(cutoffs.now.as_datetime())
            .execute(conn)
            .await?;
            diesel::sql_query("DELETE FROM support_tickets WHERE closed_at < $1")
                .bind::<Timestamptz, _>(cutoffs.delete_closed_before.as_datetime())
                .execute(conn)
                .await
        })
        .await
        .map_err(db_error)?;
    Ok(SweepReport {
        closed: closed as u64,
        deleted: deleted as u64,
    })
}
