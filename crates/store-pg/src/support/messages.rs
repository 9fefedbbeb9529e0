//! A ticket's messages: reading them, marking them read, and adding one
//! under the guard (its id never used twice).

use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::{AccountId, StoreError, TicketId, TicketMessageId, Timestamp};
use sealpost_support::{
    Author, BoxPair, Guard, NewMessage, PublicKey, Refusal, TicketMessage, Trail,
};

use super::TICKET_MESSAGE_ID_KIND;
use super::usage::usage;
use super::{MessageRow, TxError, finish};
use crate::records::{box_to_json, id_retired, write_records};
use crate::schema::{support_messages, support_tickets};
use crate::staff::insert_audit;
use crate::{PgStore, db_error};

/// Whether a ticket message id is in use now or was ever.
pub(super) async fn message_id_taken(
    conn: &mut AsyncPgConnection,
    id: &TicketMessageId,
) -> Result<bool, diesel::result::Error> {
    let live: i64 = support_messages::table
        .filter(support_messages::id.eq(id.as_str()))
        .count()
        .get_result(conn)
        .await?;
    Ok(live > 0 || id_retired(conn, TICKET_MESSAGE_ID_KIND, id.as_str()).await?)
}

#[allow(
    clippy::too_many_arguments,
    reason = "one row's columns, named at the one call site"
)]
pub(super) async fn insert_message(
    conn: &mut AsyncPgConnection,
    id: &TicketMessageId,
    ticket: &TicketId,
    account: &AccountId,
    author: Author,
    position: i32,
    staff_key: &PublicKey,
    boxes: &BoxPair,
    at: Timestamp,
) -> Result<(), diesel::result::Error> {
    diesel::insert_into(support_messages::table)
        .values((
            support_messages::id.eq(id.as_str()),
            support_messages::ticket_id.eq(ticket.as_str()),
            support_messages::account_id.eq(account.as_str()),
            support_messages::author.eq(author.as_str()),
            support_messages::position.eq(position),
            support_messages::staff_key.eq(staff_key.0.as_slice()),
            support_messages::for_staff.eq(box_to_json(&boxes.for_staff)),
            support_messages::for_account.eq(box_to_json(&boxes.for_account)),
            support_messages::stored_bytes
                .eq(i64::try_from(boxes.stored_bytes()).unwrap_or(i64::MAX)),
            support_messages::created_at.eq(at.as_datetime()),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

pub(super) async fn messages(
    store: &PgStore,
    id: &TicketId,
) -> Result<Vec<TicketMessage>, StoreError> {
    let mut conn = store.conn().await?;
    let rows: Vec<MessageRow> = support_messages::table
        .filter(support_messages::ticket_id.eq(id.as_str()))
        .order(support_messages::position.asc())
        .select(MessageRow::as_select())
        .load(&mut conn)
        .await
        .map_err(db_error)?;
    rows.into_iter().map(TicketMessage::try_from).collect()
}

pub(super) async fn mark_read(store: &PgStore, id: &TicketId) -> Result<(), StoreError> {
    let mut conn = store.conn().await?;
    diesel::update(support_tickets::table.find(id.as_str()))
        .set(support_tickets::unread.eq(false))
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
    Ok(())
}

pub(super) async fn add_message(
    store: &PgStore,
    account: &AccountId,
    ticket: &TicketId,
    author: Author,
    message: &NewMessage,
    guard: &Guard,
    trail: &Trail,
) -> Result<Result<Timestamp, Refusal>, StoreError> {
    let mut conn = store.conn().await?;
    let result = conn
        .transaction(async |conn| {
            let usage = usage(conn, account, Some(ticket), guard).await?;
            guard.check(&usage).map_err(TxError::Refused)?;
            if message_id_taken(conn, &message.id).await? {
                return Err(TxError::Refused(Refusal::IdTaken));
            }
            let position = usage.ticket.map_or(0, |(_, count)| count);
            let at = guard.now;
            insert_message(
                conn,
                &message.id,
                ticket,
                account,
                author,
                i32::try_from(position).unwrap_or(i32::MAX),
                &message.staff_key,
                &message.boxes,
                at,
            )
            .await?;
            let bytes = i64::try_from(message.boxes.stored_bytes()).unwrap_or(i64::MAX);
            diesel::update(support_tickets::table.find(ticket.as_str()))
                .set((
                    support_tickets::message_count.eq(support_tickets::message_count + 1),
                    support_tickets::stored_bytes.eq(support_tickets::stored_bytes + bytes),
                    support_tickets::last_author.eq(author.as_str()),
                    support_tickets::unread.eq(author == Author::Staff),
                    support_tickets::updated_at.eq(at.as_datetime()),
                ))
                .execute(conn)
                .await?;
            write_records(conn, &trail.records).await?;
            if let Some(entry) = &trail.audit {
                insert_audit(conn, entry).await?;
            }
            Ok::<_, TxError>(at)
        })
        .await;
    finish(result)
}
