//! `SupportRepository` over PostgreSQL: tickets, their messages, bindings,
//! operator switches and the inactivity sweep. Every write takes the
//! account row's lock, counts, asks the domain's guard and writes in one
//! transaction, so two requests at once cannot pass a limit together.
//! The rows and the transaction's failure type live here; each feature's
//! queries in its module, which the repository implementation below calls.

mod bindings;
mod messages;
mod sweep;
mod switches;
mod tickets;
mod usage;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::{AccountId, PageRequest, StoreError, TicketId, TicketMessageId, Timestamp};
use sealpost_support::{
    AuditEntry, Author, Binding, BoxPair, Guard, NewMessage, NewTicket, PublicKey, Refusal,
    SupportRepository, SweepCutoffs, SweepReport, Switches, Ticket, TicketMessage, TicketStatus,
    Trail,
};

use crate::records::box_from_json;
use crate::schema::{support_messages, support_tickets};
use crate::{PgStore, bytes32, db_error};

const TICKET_ID_KIND: &str = "ticket";
const TICKET_MESSAGE_ID_KIND: &str = "ticket_message";

#[derive(Queryable, Selectable)]
#[diesel(table_name = support_tickets, check_for_backend(diesel::pg::Pg))]
struct TicketRow {
    id: String,
    account_id: String,
    status: String,
    last_author: String,
    unread: bool,
    header_for_staff: serde_json::Value,
    header_for_account: serde_json::Value,
    account_key: Vec<u8>,
    staff_key: Vec<u8>,
    binding: Option<Vec<u8>>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    closed_at: Option<DateTime<Utc>>,
}

fn parse<T: std::str::FromStr>(text: &str) -> Result<T, StoreError>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    text.parse().map_err(StoreError::failed)
}

impl TryFrom<TicketRow> for Ticket {
    type Error = StoreError;

    fn try_from(row: TicketRow) -> Result<Ticket, StoreError> {
        Ok(Ticket {
            id: TicketId::from_trusted(row.id),
            account: AccountId::from_trusted(row.account_id),
            status: parse(&row.status)?,
            last_author: parse(&row.last_author)?,
            created_at: row.created_at.into(),
            updated_at: row.updated_at.into(),
            closed_at: row.closed_at.map(Timestamp::from),
            unread: row.unread,
            header: BoxPair {
                for_staff: box_from_json(row.header_for_staff)?,
                for_account: box_from_json(row.header_for_account)?,
            },
            account_key: PublicKey(bytes32(row.account_key)?),
            staff_key: PublicKey(bytes32(row.staff_key)?),
            binding: row.binding.map(bytes32).transpose()?,
        })
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = support_messages, check_for_backend(diesel::pg::Pg))]
struct MessageRow {
    id: String,
    ticket_id: String,
    author: String,
    staff_key: Vec<u8>,
    for_staff: serde_json::Value,
    for_account: serde_json::Value,
    created_at: DateTime<Utc>,
}

impl TryFrom<MessageRow> for TicketMessage {
    type Error = StoreError;

    fn try_from(row: MessageRow) -> Result<TicketMessage, StoreError> {
        Ok(TicketMessage {
            id: TicketMessageId::from_trusted(row.id),
            ticket: TicketId::from_trusted(row.ticket_id),
            author: parse(&row.author)?,
            at: row.created_at.into(),
            staff_key: PublicKey(bytes32(row.staff_key)?),
            boxes: BoxPair {
                for_staff: box_from_json(row.for_staff)?,
                for_account: box_from_json(row.for_account)?,
            },
        })
    }
}

async fn load_ticket(
    conn: &mut AsyncPgConnection,
    id: &TicketId,
) -> Result<Option<TicketRow>, diesel::result::Error> {
    support_tickets::table
        .find(id.as_str())
        .select(TicketRow::as_select())
        .first(conn)
        .await
        .optional()
}

/// A transaction's failure: a refusal rolls back like an error but is an answer.
#[derive(Debug)]
enum TxError {
    Db(diesel::result::Error),
    Refused(Refusal),
}

impl From<diesel::result::Error> for TxError {
    fn from(error: diesel::result::Error) -> Self {
        TxError::Db(error)
    }
}

fn finish<T>(result: Result<T, TxError>) -> Result<Result<T, Refusal>, StoreError> {
    match result {
        Ok(value) => Ok(Ok(value)),
        Err(TxError::Refused(refusal)) => Ok(Err(refusal)),
        Err(TxError::Db(error)) => Err(db_error(error)),
    }
}

fn ticket_from(row: Option<TicketRow>) -> Result<Ticket, TxError> {
    match row {
        Some(row) => Ticket::try_from(row).map_err(|error| {
            TxError::Db(diesel::result::Error::DeserializationError(Box::new(error)))
        }),
        None => Err(TxError::Refused(Refusal::NotFound)),
    }
}

#[async_trait]
impl SupportRepository for PgStore {
    async fn switches(&self) -> Result<Switches, StoreError> {
        switches::switches(self).await
    }

    async fn tickets(&self, account: &AccountId) -> Result<Vec<Ticket>, StoreError> {
        tickets::tickets(self, account).await
    }

    async fn all_tickets(
        &self,
        status: Option<TicketStatus>,
        page: &PageRequest,
        read: &AuditEntry,
    ) -> Result<Vec<Ticket>, StoreError> {
        tickets::all_tickets(self, status, page, read).await
    }

    async fn ticket(
        &self,
        account: Option<AccountId>,
        id: &TicketId,
    ) -> Result<Option<Ticket>, StoreError> {
        tickets::ticket(self, account, id).await
    }

    async fn messages(&self, id: &TicketId) -> Result<Vec<TicketMessage>, StoreError> {
        messages::messages(self, id).await
    }

    async fn mark_read(&self, id: &TicketId) -> Result<(), StoreError> {
        messages::mark_read(self, id).await
    }

    async fn create_ticket(
        &self,
        account: &AccountId,
        ticket: &NewTicket,
        guard: &Guard,
    ) -> Result<Result<Ticket, Refusal>, StoreError> {
        tickets::create_ticket(self, account, ticket, guard).await
    }

    async fn add_message(
        &self,
        account: &AccountId,
        ticket: &TicketId,
        author: Author,
        message: &NewMessage,
        guard: &Guard,
        trail: &Trail,
    ) -> Result<Result<Timestamp, Refusal>, StoreError> {
        messages::add_message(self, account, ticket, author, message, guard, trail).await
    }

    async fn close(
        &self,
        account: &AccountId,
        ticket: &TicketId,
        at: Timestamp,
        trail: &Trail,
    ) -> Result<Option<Ticket>, StoreError> {
        tickets::close(self, account, ticket, at, trail).await
    }

    async fn reopen(
        &self,
        account: &AccountId,
        ticket: &TicketId,
        guard: &Guard,
    ) -> Result<Result<Ticket, Refusal>, StoreError> {
        tickets::reopen(self, account, ticket, guard).await
    }

    async fn save_binding(&self, binding: &Binding) -> Result<bool, StoreError> {
        bindings::save_binding(self, binding).await
    }

    async fn binding(&self, account: &AccountId) -> Result<Option<Binding>, StoreError> {
        bindings::binding(self, account).await
    }

    async fn sweep(&self, cutoffs: &SweepCutoffs) -> Result<SweepReport, StoreError> {
        sweep::sweep(self, cutoffs).await
    }
}
