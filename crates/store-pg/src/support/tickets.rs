//! Tickets: reading them (the account's, or all for staff), and opening,
//! closing and reopening one under the guard.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_kernel::{AccountId, PageRequest, StoreError, TicketId, Timestamp};
use sealpost_support::{
    AuditEntry, Author, Guard, NewTicket, Refusal, Ticket, TicketStatus, Trail,
};

use super::TICKET_ID_KIND;
use super::messages::{insert_message, message_id_taken};
use super::usage::usage;
use super::{TicketRow, TxError, finish, load_ticket, ticket_from};
use crate::records::{box_to_json, id_retired, write_records};
use crate::schema::support_tickets;
use crate::staff::insert_audit;
use crate::{PgStore, db_error};

pub(super) async fn tickets(
    store: &PgStore,
    account: &AccountId,
) -> Result<Vec<Ticket>, StoreError> {
    let mut conn = store.conn().await?;
    let rows: Vec<TicketRow> = support_tickets::table
        .filter(support_tickets::account_id.eq(account.as_str()))
        .order((
            support_tickets::created_at.desc(),
            support_tickets::id.desc(),
        ))
        .select(TicketRow::as_select())
        .load(&mut conn)
        .await
        .map_err(db_error)?;
    rows.into_iter().map(Ticket::try_from).collect()
}

/// A page of every account's tickets, and the staff read's audit row in
/// the same transaction.
pub(super) async fn all_tickets(
    store: &PgStore,
    status: Option<TicketStatus>,
    page: &PageRequest,
    read: &AuditEntry,
) -> Result<Vec<Ticket>, StoreError> {
    let mut conn = store.conn().await?;
    let rows: Vec<TicketRow> = conn
        .transaction(async |conn| {
            let mut query = support_tickets::table
                .order((
                    support_tickets::updated_at.desc(),
                    support_tickets::id.desc(),
                ))
                .select(TicketRow::as_select())
                .limit(page.fetch_limit())
                .into_boxed();
            if let Some(status) = status {
                query = query.filter(support_tickets::status.eq(status.as_str()));
            }
            if let Some(after) = &page.after {
                let at = after.at.as_datetime();
                query = query.filter(
                    support_tickets::updated_at
                        .lt(at)
                        .or(support_tickets::updated_at
                            .eq(at)
                            .and(support_tickets::id.lt(after.id.clone()))),
                );
            }
            let rows = query.load(conn).await?;
            insert_audit(conn, read).await?;
            diesel::QueryResult::Ok(rows)
        })
        .await
        .map_err(db_error)?;
    rows.into_iter().map(Ticket::try_from).collect()
}

pub(super) async fn ticket(
    store: &PgStore,
    account: Option<AccountId>,
    id: &TicketId,
) -> Result<Option<Ticket>, StoreError> {
    let mut conn = store.conn().await?;
    let Some(row) = load_ticket(&mut conn, id).await.map_err(db_error)? else {
        return Ok(None);
    };
    if account.is_some_and(|account| account.as_str() != row.account_id) {
        return Ok(None);
    }
    Ticket::try_from(row).map(Some)
}

pub(super) async fn create_ticket(
    store: &PgStore,
    account: &AccountId,
    ticket: &NewTicket,
    guard: &Guard,
) -> Result<Result<Ticket, Refusal>, StoreError> {
    let mut conn = store.conn().await?;
    let result = conn
        .transaction(async |conn| {
            let usage = usage(conn, account, None, guard).await?;
            guard.check(&usage).map_err(TxError::Refused)?;
            let live: i64 = support_tickets::table
                .filter(support_tickets::id.eq(ticket.id.as_str()))
                .count()
                .get_result(conn)
                .await?;
            if live > 0
                || id_retired(conn, TICKET_ID_KIND, ticket.id.as_str()).await?
                || message_id_taken(conn, &ticket.message_id).await?
            {
                return Err(TxError::Refused(Refusal::IdTaken));
            }
            let at = guard.now;
            let bytes = ticket.header.stored_bytes() + ticket.message.stored_bytes();
            diesel::insert_into(support_tickets::table)
                .values((
                    support_tickets::id.eq(ticket.id.as_str()),
                    support_tickets::account_id.eq(account.as_str()),
                    support_tickets::status.eq(TicketStatus::Open.as_str()),
                    support_tickets::last_author.eq(Author::Account.as_str()),
                    support_tickets::unread.eq(false),
                    support_tickets::header_for_staff.eq(box_to_json(&ticket.header.for_staff)),
                    support_tickets::header_for_account.eq(box_to_json(&ticket.header.for_account)),
                    support_tickets::account_key.eq(ticket.account_key.0.as_slice()),
                    support_tickets::staff_key.eq(ticket.staff_key.0.as_slice()),
                    support_tickets::binding.eq(ticket.binding.as_ref().map(|b| b.as_slice())),
                    support_tickets::stored_bytes.eq(i64::try_from(bytes).unwrap_or(i64::MAX)),
                    support_tickets::message_count.eq(1),
                    support_tickets::created_at.eq(at.as_datetime()),
                    support_tickets::updated_at.eq(at.as_datetime()),
                ))
                .execute(conn)
                .await?;
            insert_message(
                conn,
                &ticket.message_id,
                &ticket.id,
                account,
                Author::Account,
                0,
                &ticket.staff_key,
                &ticket.message,
                at,
            )
            .await?;
            ticket_from(load_ticket(conn, &ticket.id).await?)
        })
        .await;
    finish(result)
}

pub(super) async fn close(
    store: &PgStore,
    account: &AccountId,
    ticket: &TicketId,
    at: Timestamp,
    trail: &Trail,
) -> Result<Option<Ticket>, StoreError> {
    let mut conn = store.conn().await?;
    let result = conn
        .transaction(async |conn| {
            let changed = diesel::update(
                support_tickets::table
                    .find(ticket.as_str())
                    .filter(support_tickets::account_id.eq(account.as_str()))
                    .filter(support_tickets::status.eq(TicketStatus::Open.as_str())),
            )
            .set((
                support_tickets::status.eq(TicketStatus::Resolved.as_str()),
                support_tickets::closed_at.eq(at.as_datetime()),
                support_tickets::updated_at.eq(at.as_datetime()),
            ))
            .execute(conn)
            .await?;
            if changed > 0 {
                write_records(conn, &trail.records).await?;
            }
            let row = load_ticket(conn, ticket)
                .await?
                .filter(|row| row.account_id == account.as_str());
            if let (Some(_), Some(entry)) = (&row, &trail.audit) {
                insert_audit(conn, entry).await?;
            }
            Ok::<_, TxError>(row)
        })
        .await;
    match result {
        Ok(row) => row.map(Ticket::try_from).transpose(),
        Err(TxError::Db(error)) => Err(db_error(error)),
        Err(TxError::Refused(_)) => Ok(None),
    }
}

pub(super) async fn reopen(
    store: &PgStore,
    account: &AccountId,
    ticket: &TicketId,
    guard: &Guard,
) -> Result<Result<Ticket, Refusal>, StoreError> {
    let mut conn = store.conn().await?;
    let result = conn
        .transaction(async |conn| {
            let usage = usage(conn, account, Some(ticket), guard).await?;
            guard.check(&usage).map_err(TxError::Refused)?;
            diesel::update(
                support_tickets::table
                    .find(ticket.as_str())
                    .filter(support_tickets::status.eq(TicketStatus::Resolved.as_str())),
            )
            .set((
                support_tickets::status.eq(TicketStatus::Open.as_str()),
                support_tickets::closed_at.eq(None::<DateTime<Utc>>),
                support_tickets::updated_at.eq(guard.now.as_datetime()),
            ))
            .execute(conn)
            .await?;
            ticket_from(load_ticket(conn, ticket).await?)
        })
        .await;
    finish(result)
}
