//! `SupportRepository` over PostgreSQL: tickets, their messages, bindings,
//! operator switches and the inactivity sweep. Every write takes the
//! account row's lock, counts, asks the domain's guard and writes in one
//! transaction, so two requests at once cannot pass a limit together.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text, Timestamptz};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::{AccountId, StoreError, TicketId, TicketMessageId, Timestamp};
use sealpost_support::{
    AuditEntry, Author, Binding, BoxPair, Guard, NewMessage, NewTicket, PublicKey, Refusal,
    SupportRepository, SweepCutoffs, SweepReport, Switches, Ticket, TicketMessage, TicketStatus,
    Trail, Usage,
};

use crate::records::{box_from_json, box_to_json, id_retired, write_records};
use crate::schema::{operator_switches, support_bindings, support_messages, support_tickets};
use crate::staff::insert_audit;
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

fn count(value: i64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// Locks the account row, then counts what the guard needs (and the state
/// of `ticket`, locked too, when given and the account's).
async fn usage(
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

/// Whether a ticket message id is in use now or was ever.
async fn message_id_taken(
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
async fn insert_message(
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
        let mut conn = self.conn().await?;
        let row: Option<(Option<Vec<u8>>, bool, bool)> = operator_switches::table
            .select((
                operator_switches::support_key,
                operator_switches::support_off,
                operator_switches::webhooks_paused,
            ))
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        let Some((key, support_off, webhooks_paused)) = row else {
            return Ok(Switches::default());
        };
        Ok(Switches {
            support_key: key.map(bytes32).transpose()?.map(PublicKey),
            support_off,
            webhooks_paused,
        })
    }

    async fn tickets(&self, account: &AccountId) -> Result<Vec<Ticket>, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn all_tickets(&self, status: Option<TicketStatus>) -> Result<Vec<Ticket>, StoreError> {
        let mut conn = self.conn().await?;
        let mut query = support_tickets::table
            .order((
                support_tickets::updated_at.desc(),
                support_tickets::id.desc(),
            ))
            .select(TicketRow::as_select())
            .limit(500)
            .into_boxed();
        if let Some(status) = status {
            query = query.filter(support_tickets::status.eq(status.as_str()));
        }
        let rows: Vec<TicketRow> = query.load(&mut conn).await.map_err(db_error)?;
        rows.into_iter().map(Ticket::try_from).collect()
    }

    async fn ticket(
        &self,
        account: Option<AccountId>,
        id: &TicketId,
    ) -> Result<Option<Ticket>, StoreError> {
        let mut conn = self.conn().await?;
        let Some(row) = load_ticket(&mut conn, id).await.map_err(db_error)? else {
            return Ok(None);
        };
        if account.is_some_and(|account| account.as_str() != row.account_id) {
            return Ok(None);
        }
        Ticket::try_from(row).map(Some)
    }

    async fn messages(&self, id: &TicketId) -> Result<Vec<TicketMessage>, StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<MessageRow> = support_messages::table
            .filter(support_messages::ticket_id.eq(id.as_str()))
            .order(support_messages::position.asc())
            .select(MessageRow::as_select())
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        rows.into_iter().map(TicketMessage::try_from).collect()
    }

    async fn mark_read(&self, id: &TicketId) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        diesel::update(support_tickets::table.find(id.as_str()))
            .set(support_tickets::unread.eq(false))
            .execute(&mut conn)
            .await
            .map_err(db_error)?;
        Ok(())
    }

    async fn create_ticket(
        &self,
        account: &AccountId,
        ticket: &NewTicket,
        guard: &Guard,
    ) -> Result<Result<Ticket, Refusal>, StoreError> {
        let mut conn = self.conn().await?;
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
                        support_tickets::header_for_account
                            .eq(box_to_json(&ticket.header.for_account)),
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

    async fn add_message(
        &self,
        account: &AccountId,
        ticket: &TicketId,
        author: Author,
        message: &NewMessage,
        guard: &Guard,
        trail: &Trail,
    ) -> Result<Result<Timestamp, Refusal>, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn close(
        &self,
        account: &AccountId,
        ticket: &TicketId,
        at: Timestamp,
        trail: &Trail,
    ) -> Result<Option<Ticket>, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn reopen(
        &self,
        account: &AccountId,
        ticket: &TicketId,
        guard: &Guard,
    ) -> Result<Result<Ticket, Refusal>, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn save_binding(&self, binding: &Binding) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let before: Option<(Vec<u8>, Vec<u8>, Vec<u8>)> = support_bindings::table
            .find(binding.account.as_str())
            .select((
                support_bindings::account_key,
                support_bindings::staff_key,
                support_bindings::mac,
            ))
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        let same = before.is_some_and(|(account_key, staff_key, mac)| {
            account_key == binding.account_key.0
                && staff_key == binding.staff_key.0
                && mac == binding.mac
        });
        if same {
            return Ok(false);
        }
        diesel::insert_into(support_bindings::table)
            .values((
                support_bindings::account_id.eq(binding.account.as_str()),
                support_bindings::account_key.eq(binding.account_key.0.as_slice()),
                support_bindings::staff_key.eq(binding.staff_key.0.as_slice()),
                support_bindings::mac.eq(binding.mac.as_slice()),
                support_bindings::updated_at.eq(binding.at.as_datetime()),
            ))
            .on_conflict(support_bindings::account_id)
            .do_update()
            .set((
                support_bindings::account_key.eq(binding.account_key.0.as_slice()),
                support_bindings::staff_key.eq(binding.staff_key.0.as_slice()),
                support_bindings::mac.eq(binding.mac.as_slice()),
                support_bindings::updated_at.eq(binding.at.as_datetime()),
            ))
            .execute(&mut conn)
            .await
            .map_err(db_error)?;
        Ok(true)
    }

    async fn binding(&self, account: &AccountId) -> Result<Option<Binding>, StoreError> {
        let mut conn = self.conn().await?;
        let row: Option<(Vec<u8>, Vec<u8>, Vec<u8>, DateTime<Utc>)> = support_bindings::table
            .find(account.as_str())
            .select((
                support_bindings::account_key,
                support_bindings::staff_key,
                support_bindings::mac,
                support_bindings::updated_at,
            ))
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        row.map(|(account_key, staff_key, mac, at)| {
            Ok(Binding {
                account: account.clone(),
                account_key: PublicKey(bytes32(account_key)?),
                staff_key: PublicKey(bytes32(staff_key)?),
                mac: bytes32(mac)?,
                at: at.into(),
            })
        })
        .transpose()
    }

    async fn sweep(&self, cutoffs: &SweepCutoffs) -> Result<SweepReport, StoreError> {
        let mut conn = self.conn().await?;
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
}

impl PgStore {
    /// Operator switches (`None` leaves one as it is); the support key once
    /// rotated overrides the configured one. `audit` is written in the same
    /// transaction.
    pub async fn set_switches(
        &self,
        support_key: Option<PublicKey>,
        support_off: Option<bool>,
        webhooks_paused: Option<bool>,
        at: Timestamp,
        audit: &AuditEntry,
    ) -> Result<Switches, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            diesel::sql_query(
                "UPDATE operator_switches SET support_key = COALESCE($1, support_key), \
                 support_off = COALESCE($2, support_off), \
                 webhooks_paused = COALESCE($3, webhooks_paused), updated_at = $4",
            )
            .bind::<Nullable<diesel::sql_types::Bytea>, _>(support_key.map(|key| key.0.to_vec()))
            .bind::<Nullable<diesel::sql_types::Bool>, _>(support_off)
            .bind::<Nullable<diesel::sql_types::Bool>, _>(webhooks_paused)
            .bind::<Timestamptz, _>(at.as_datetime())
            .execute(conn)
            .await?;
            crate::staff::insert_audit(conn, audit).await
        })
        .await
        .map_err(db_error)?;
        drop(conn);
        self.switches().await
    }
}
