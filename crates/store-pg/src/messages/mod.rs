//! `MessageRepository` over PostgreSQL, by feature: `ingest` (recipients,
//! counters, the commit of a delivery), `mailbox` (lists, single messages,
//! attachments, read marks, folders, object reads, expiry) and `recovery`
//! (pending blobs, the ingest instance lock). Here: the message row, the
//! retention window and what a caller may see, shared by them.

mod ingest;
mod mailbox;
mod recovery;

pub(crate) use mailbox::page_sql;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::dsl::not;
use diesel::expression::{
    AppearsOnTable, BoxableExpression, Expression, SelectableExpression, ValidGrouping,
};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{Bool, Timestamptz};
use sealpost_kernel::{
    AccountId, AddressId, CommitCursor, MessageId, PageRequest, StoreError, Timestamp,
};
use sealpost_messages::folders::{Folder, FolderCounts, MessageFilter};
use sealpost_messages::store::{
    Arrived, Commit, Message, MessageRepository, NewMessage, PendingBlob, Reader, RecipientRecord,
    StoredAttachment, WaitFrom,
};
use sealpost_teams::Access;

use crate::PgStore;
use crate::access::{Caller, Rule, may_use, on_device, owned_or_granted};
use crate::records::box_from_stored;
use crate::schema::{addresses, messages};

pub use recovery::InstanceLock;

#[derive(Queryable, Selectable)]
#[diesel(table_name = messages, check_for_backend(diesel::pg::Pg))]
struct MessageRow {
    id: String,
    account_id: String,
    address_id: String,
    received_at: DateTime<Utc>,
    read: bool,
    size_bytes: i64,
    key_epoch: i32,
    content: Vec<u8>,
    folder: String,
    starred: bool,
    outgoing: bool,
}

impl MessageRow {
    fn into_message(self) -> Result<Message, StoreError> {
        Ok(Message {
            id: MessageId::from_trusted(self.id),
            account: AccountId::from_trusted(self.account_id),
            address: AddressId::from_trusted(self.address_id),
            received_at: self.received_at.into(),
            read: self.read,
            size_bytes: u64::try_from(self.size_bytes).map_err(StoreError::failed)?,
            key_epoch: u32::try_from(self.key_epoch).map_err(StoreError::failed)?,
            content: box_from_stored(&self.content)?,
            folder: self.folder.parse::<Folder>().map_err(StoreError::failed)?,
            starred: self.starred,
            outgoing: self.outgoing,
        })
    }
}

fn rows_into_messages(rows: Vec<MessageRow>) -> Result<Vec<Message>, StoreError> {
    rows.into_iter().map(MessageRow::into_message).collect()
}

/// The retention window, the one place it is spelled: an address keeps
/// its mail while it arrived after the instant minus the address's
/// `retention_days`. This is the SQL that follows the instant in the
/// cutoff, over the `addresses` row named between its two halves. The
/// builder form ([`retention_cutoff`]) writes these same halves around the
/// bound instant, so the builder's statements and the raw ones
/// ([`retained_sql`]) cannot drift apart. Constants: the builder writes
/// them on every mailbox read.
const MINUS_RETENTION: [&str; 2] = [" - make_interval(days => ", ".retention_days::int)"];

fn minus_retention(addresses: &str) -> String {
    let [head, tail] = MINUS_RETENTION;
    format!("{head}{addresses}{tail}")
}

/// The retention cutoff at `now` of the address in the query (mail received
/// at or before it is gone), for the query builder.
pub(crate) fn retention_cutoff(now: Timestamp) -> RetentionCutoff {
    RetentionCutoff {
        now: now.as_datetime(),
    }
}

/// `$now - make_interval(days => addresses.retention_days::int)`, written
/// as an expression of its own rather than a `dsl::sql` fragment: diesel
/// never caches a statement holding such a fragment, so every mailbox read
/// was parsed and planned anew; this text is fixed, so the statements
/// holding it stay prepared per connection.
#[derive(Debug, Clone, Copy, QueryId, ValidGrouping)]
pub(crate) struct RetentionCutoff {
    now: DateTime<Utc>,
}

impl Expression for RetentionCutoff {
    type SqlType = Timestamptz;
}

// Unchecked, as a `dsl::sql` fragment is: every statement holding it joins
// or names `addresses`.
impl<QS> AppearsOnTable<QS> for RetentionCutoff {}

impl<QS> SelectableExpression<QS> for RetentionCutoff {}

impl QueryFragment<Pg> for RetentionCutoff {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_bind_param::<Timestamptz, _>(&self.now)?;
        let [head, tail] = MINUS_RETENTION;
        out.push_sql(head);
        out.push_sql("addresses");
        out.push_sql(tail);
        Ok(())
    }
}

/// The message in the query is inside its address's retention at `now`.
fn retained(now: Timestamp) -> diesel::dsl::Gt<messages::received_at, RetentionCutoff> {
    messages::received_at.gt(retention_cutoff(now))
}

/// [`retained`] as raw SQL, over the message `messages` and its address
/// `addresses` at the instant `now` (a placeholder such as `$2`), for the
/// statements the query builder cannot write: the `DELETE`s that queue
/// their blobs in the same statement, and the usage counters' one query.
pub(crate) fn retained_sql(messages: &str, addresses: &str, now: &str) -> String {
    format!(
        "{messages}.received_at > {now}{}",
        minus_retention(addresses)
    )
}

/// A message `caller` may see (or with `Access::Send`, change): not held,
/// inside its address's retention at `now`, of an address the caller may
/// use ([`may_use`]). Over a query source holding the message and its
/// address (`messages` joined to `addresses`, or `addresses` inside a
/// statement over `messages`).
fn visible<'a, QS: 'a>(caller: Caller<'a>, now: Timestamp, needed: Access) -> Rule<'a, QS>
where
    on_device<'a>: BoxableExpression<QS, Pg, SqlType = Bool> + 'a,
    owned_or_granted<'a>: BoxableExpression<QS, Pg, SqlType = Bool> + 'a,
    messages::held: SelectableExpression<QS>
        + ValidGrouping<(), IsAggregate = diesel::expression::is_aggregate::No>,
    messages::received_at: SelectableExpression<QS>
        + ValidGrouping<(), IsAggregate = diesel::expression::is_aggregate::No>,
{
    Box::new(
        not(messages::held)
            .and(retained(now))
            .and(may_use(caller, needed)),
    )
}

/// [`visible`] for a statement over `messages` alone (an `UPDATE`, a row
/// lock): the message's address in an `EXISTS`.
fn visible_by_address<'a>(
    caller: Caller<'a>,
    now: Timestamp,
    needed: Access,
) -> Rule<'a, messages::table> {
    Box::new(diesel::dsl::exists(
        addresses::table
            .filter(addresses::id.eq(messages::address_id))
            .filter(visible(caller, now, needed)),
    ))
}

#[async_trait]
impl MessageRepository for PgStore {
    async fn recipient(&self, email_address: &str) -> Result<Option<RecipientRecord>, StoreError> {
        ingest::recipient(self, email_address).await
    }

    async fn recipient_by_id(
        &self,
        account: &AccountId,
        address: &AddressId,
    ) -> Result<Option<RecipientRecord>, StoreError> {
        ingest::recipient_by_id(self, account, address).await
    }

    async fn register_pending_blobs(
        &self,
        keys: Vec<String>,
        owner: &str,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        ingest::register_pending_blobs(self, keys, owner, at).await
    }

    async fn commit(&self, new: NewMessage) -> Result<Commit, StoreError> {
        ingest::commit(self, new).await
    }

    async fn pending_blobs(&self) -> Result<Vec<PendingBlob>, StoreError> {
        recovery::pending_blobs(self).await
    }

    async fn alive_owners(&self, owners: Vec<String>) -> Result<Vec<String>, StoreError> {
        recovery::alive_owners(self, owners).await
    }

    async fn disown_pending_blobs(&self, keys: Vec<String>) -> Result<Vec<String>, StoreError> {
        recovery::disown_pending_blobs(self, keys).await
    }

    async fn forget_pending_blobs(&self, keys: Vec<String>) -> Result<(), StoreError> {
        recovery::forget_pending_blobs(self, keys).await
    }

    async fn can_read_address(
        &self,
        reader: &Reader,
        address: &AddressId,
    ) -> Result<bool, StoreError> {
        mailbox::can_read_address(self, reader, address).await
    }

    async fn page(
        &self,
        reader: &Reader,
        address: &AddressId,
        now: Timestamp,
        page: &PageRequest,
    ) -> Result<Option<Vec<Message>>, StoreError> {
        mailbox::page(self, reader, address, now, page).await
    }

    async fn newer_than(
        &self,
        reader: &Reader,
        address: &AddressId,
        now: Timestamp,
        after: WaitFrom,
        limit: i64,
    ) -> Result<Option<Vec<Arrived>>, StoreError> {
        mailbox::newer_than(self, reader, address, now, after, limit).await
    }

    async fn commit_position(&self) -> Result<CommitCursor, StoreError> {
        mailbox::commit_position(self).await
    }

    async fn message(
        &self,
        reader: &Reader,
        id: &MessageId,
        now: Timestamp,
    ) -> Result<Option<Message>, StoreError> {
        mailbox::message(self, reader, id, now).await
    }

    async fn message_to_change(
        &self,
        reader: &Reader,
        id: &MessageId,
        now: Timestamp,
    ) -> Result<Option<Message>, StoreError> {
        mailbox::message_to_change(self, reader, id, now).await
    }

    async fn device_messages(
        &self,
        reader: &Reader,
        now: Timestamp,
        limit: i64,
    ) -> Result<Vec<Message>, StoreError> {
        mailbox::device_messages(self, reader, now, limit).await
    }

    async fn attachment(
        &self,
        reader: &Reader,
        id: &MessageId,
        index: u32,
        now: Timestamp,
    ) -> Result<Option<StoredAttachment>, StoreError> {
        mailbox::attachment(self, reader, id, index, now).await
    }

    async fn set_read(
        &self,
        reader: &Reader,
        id: &MessageId,
        read: bool,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        mailbox::set_read(self, reader, id, read, now).await
    }

    async fn spend_object_read(
        &self,
        account: &AccountId,
        hour: Timestamp,
        limit: u64,
    ) -> Result<bool, StoreError> {
        mailbox::spend_object_read(self, account, hour, limit).await
    }

    async fn page_all(
        &self,
        reader: &Reader,
        filter: &MessageFilter,
        now: Timestamp,
        page: &PageRequest,
    ) -> Result<Vec<Message>, StoreError> {
        mailbox::page_all(self, reader, filter, now, page).await
    }

    async fn set_starred(
        &self,
        reader: &Reader,
        id: &MessageId,
        starred: bool,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        mailbox::set_starred(self, reader, id, starred, now).await
    }

    async fn set_folder(
        &self,
        reader: &Reader,
        id: &MessageId,
        from: Folder,
        to: Folder,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        mailbox::set_folder(self, reader, id, from, to, now).await
    }

    async fn delete_from_trash(
        &self,
        reader: &Reader,
        id: &MessageId,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        mailbox::delete_from_trash(self, reader, id, now).await
    }

    async fn empty_trash(&self, account: &AccountId) -> Result<u64, StoreError> {
        mailbox::empty_trash(self, account).await
    }

    async fn folder_counts(
        &self,
        reader: &Reader,
        address: Option<AddressId>,
        now: Timestamp,
    ) -> Result<FolderCounts, StoreError> {
        mailbox::folder_counts(self, reader, address, now).await
    }

    async fn delete_expired(&self, now: Timestamp) -> Result<u64, StoreError> {
        mailbox::delete_expired(self, now).await
    }

    async fn garbage(&self, limit: i64) -> Result<Vec<String>, StoreError> {
        mailbox::garbage(self, limit).await
    }

    async fn forget_garbage(&self, keys: Vec<String>) -> Result<(), StoreError> {
        mailbox::forget_garbage(self, keys).await
    }
}
