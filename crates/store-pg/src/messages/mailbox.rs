//! The mailbox: lists and waits, single messages, attachments, read marks,
//! stars, folders and the trash, folder counts, the hourly object reads,
//! and the expiry of mail past retention with its blobs.

use chrono::{DateTime, Utc};
use diesel::dsl::not;
use diesel::expression::BoxableExpression;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Text, Timestamptz};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::{
    AccountId, AddressId, CommitCursor, MessageId, PageRequest, StoreError, Timestamp,
};
use sealpost_messages::folders::{Folder, FolderCounts, MessageFilter};
use sealpost_messages::store::{Arrived, Message, Reader, StoredAttachment, WaitFrom};
use sealpost_teams::Access;

use super::{
    MessageRow, retained_sql, retention_cutoff, rows_into_messages, visible, visible_by_address,
};
use crate::access::{Caller, may_use};
use crate::group_commit::CommittedUpTo;
use crate::prepared::PrepareOnce;
use crate::records::{DeletedMessages, delete_messages_of, delete_messages_sql};
use crate::schema::{addresses, attachments, blob_garbage, messages};
use crate::{PgStore, db_error};

/// One message the reader may see (`Access::Send`: change).
async fn message_for(
    store: &PgStore,
    reader: &Reader,
    id: &MessageId,
    now: Timestamp,
    needed: Access,
) -> Result<Option<Message>, StoreError> {
    let mut conn = store.conn().await?;
    let found: Option<MessageRow> = messages::table
        .inner_join(addresses::table)
        .filter(messages::id.eq(id.as_str()))
        .filter(visible(Caller::reader(reader), now, needed))
        .select(MessageRow::as_select())
        .first(&mut conn)
        .await
        .optional()
        .map_err(db_error)?;
    found.map(MessageRow::into_message).transpose()
}

/// The retention cutoff of one readable address, or `None` when the
/// reader may not read it. Every list, wait and page of one address's
/// mail runs it.
async fn readable_cutoff(
    store: &PgStore,
    reader: &Reader,
    address: &AddressId,
    now: Timestamp,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    let conn = store.conn().await?;
    readable_cutoff_on(&conn, reader, address, now)
        .await
        .map_err(db_error)
}

/// [`readable_cutoff`] on a connection the caller holds (`&`: it can be
/// sent pipelined with another statement on it).
async fn readable_cutoff_on(
    mut conn: &AsyncPgConnection,
    reader: &Reader,
    address: &AddressId,
    now: Timestamp,
) -> Result<Option<DateTime<Utc>>, diesel::result::Error> {
    readable_cutoff_query(reader, address, now)
        .get_result(&mut conn)
        .await
        .optional()
}

/// The statement of [`readable_cutoff_on`].
type ReadableCutoff<'a> = diesel::dsl::Limit<
    diesel::dsl::Select<ReadableAddress<'a, addresses::table>, super::RetentionCutoff>,
>;

fn readable_cutoff_query<'a>(
    reader: &'a Reader,
    address: &'a AddressId,
    now: Timestamp,
) -> ReadableCutoff<'a> {
    readable_address::<addresses::table>(reader, address)
        .select(retention_cutoff(now))
        .limit(1)
}

type ReadableAddress<'a, QS> = diesel::dsl::Filter<
    diesel::dsl::Filter<addresses::table, diesel::dsl::Eq<addresses::id, &'a str>>,
    crate::access::Rule<'a, QS>,
>;

/// The address, when the reader may read it; its rule over the query
/// source `QS` (the addresses alone, or in a subquery of a statement over
/// `messages`, the two together).
fn readable_address<'a, QS: 'a>(
    reader: &'a Reader,
    address: &'a AddressId,
) -> ReadableAddress<'a, QS>
where
    crate::access::on_device<'a>: BoxableExpression<QS, Pg, SqlType = Bool> + 'a,
    crate::access::owned_or_granted<'a>: BoxableExpression<QS, Pg, SqlType = Bool> + 'a,
{
    addresses::table
        .filter(addresses::id.eq(address.as_str()))
        .filter(may_use(Caller::reader(reader), Access::Read))
}

pub(super) async fn can_read_address(
    store: &PgStore,
    reader: &Reader,
    address: &AddressId,
) -> Result<bool, StoreError> {
    Ok(readable_cutoff(store, reader, address, epoch())
        .await?
        .is_some())
}

/// A page of one address's mail. The access check and the page go to
/// PostgreSQL together (pipelined: one round trip): the page reads its
/// retention cutoff from the address under the same access rule, so it is
/// empty for an address the reader may not read, and the check tells an
/// empty page from such an address.
pub(super) async fn page(
    store: &PgStore,
    reader: &Reader,
    address: &AddressId,
    now: Timestamp,
    page: &PageRequest,
) -> Result<Option<Vec<Message>>, StoreError> {
    let conn = store.conn().await?;
    let mut conn: &AsyncPgConnection = &conn;
    let (readable, rows) = futures_util::future::try_join(
        readable_cutoff_on(conn, reader, address, now),
        page_query(reader, address, now, page).load(&mut conn),
    )
    .await
    .map_err(db_error)?;
    match readable {
        Some(_) => rows_into_messages(rows).map(Some),
        None => Ok(None),
    }
}

/// The statement of [`page`] after its access check.
fn page_query<'a>(
    reader: &'a Reader,
    address: &'a AddressId,
    now: Timestamp,
    page: &'a PageRequest,
) -> messages::BoxedQuery<'a, Pg, diesel::dsl::SqlTypeOf<diesel::dsl::AsSelect<MessageRow, Pg>>> {
    // The rule's query source is inferred: the subquery's own row and the
    // statement's (`addresses` with `messages`).
    let cutoff = readable_address(reader, address)
        .select(retention_cutoff(now))
        .single_value();
    let mut query = messages::table
        .filter(messages::address_id.eq(address.as_str()))
        .filter(not(messages::held))
        .filter(messages::received_at.nullable().gt(cutoff))
        .select(MessageRow::as_select())
        .order((messages::received_at.desc(), messages::id.desc()))
        .limit(page.fetch_limit())
        .into_boxed();
    if let Some(after) = &page.after {
        query = query.filter(older_than(after.at.as_datetime(), &after.id));
    }
    query
}

/// The SQL [`page`] sends, as diesel's `debug_query` writes it (the text,
/// then `-- binds: [...]`): the access check, then the page.
pub(crate) fn page_sql(
    reader: &Reader,
    address: &AddressId,
    now: Timestamp,
    page: &PageRequest,
) -> [String; 2] {
    [
        diesel::debug_query::<Pg, _>(&readable_cutoff_query(reader, address, now)).to_string(),
        diesel::debug_query::<Pg, _>(&page_query(reader, address, now, page)).to_string(),
    ]
}

pub(super) async fn newer_than(
    store: &PgStore,
    reader: &Reader,
    address: &AddressId,
    now: Timestamp,
    after: WaitFrom,
    limit: i64,
) -> Result<Option<Vec<Arrived>>, StoreError> {
    let Some(cutoff) = readable_cutoff(store, reader, address, now).await? else {
        return Ok(None);
    };
    let mut conn = store.conn().await?;
    // A list cursor names a message the reader has seen, and with it all
    // that committed before it: resume after its commit position, so mail
    // whose delivery began before it but committed after it still comes.
    // Only a cursor whose message is gone falls back to `received_at`.
    let after = match after {
        WaitFrom::Received(cursor) => messages::table
            .filter(messages::id.eq(&cursor.id))
            .filter(messages::address_id.eq(address.as_str()))
            .filter(messages::received_at.eq(cursor.at.as_datetime()))
            .select(messages::commit_seq)
            .first::<i64>(&mut conn)
            .await
            .optional()
            .map_err(db_error)?
            .map_or(WaitFrom::Received(cursor.clone()), |seq| {
                WaitFrom::Committed(CommitCursor {
                    seq: u64::try_from(seq).unwrap_or(0),
                    id: Some(cursor.id.clone()),
                })
            }),
        other => other,
    };
    let mut query = messages::table
        .filter(messages::address_id.eq(address.as_str()))
        .filter(not(messages::held))
        .filter(messages::received_at.gt(cutoff))
        // Waits are for mail arriving: sent copies do not count.
        .filter(not(messages::outgoing))
        // Only below what is still in flight: nothing can appear there later.
        .filter(messages::commit_seq.le(CommittedUpTo))
        .select((MessageRow::as_select(), messages::commit_seq))
        .order((messages::commit_seq.asc(), messages::id.asc()))
        .limit(limit)
        .into_boxed();
    match after {
        WaitFrom::Start => {}
        WaitFrom::Received(cursor) => {
            let at = cursor.at.as_datetime();
            query = query.filter(
                messages::received_at
                    .gt(at)
                    .or(messages::received_at.eq(at).and(messages::id.gt(cursor.id))),
            );
        }
        WaitFrom::Committed(CommitCursor { seq, id }) => {
            let seq = i64::try_from(seq).unwrap_or(i64::MAX);
            query = match id {
                None => query.filter(messages::commit_seq.gt(seq)),
                Some(id) => query.filter(
                    messages::commit_seq
                        .gt(seq)
                        .or(messages::commit_seq.eq(seq).and(messages::id.gt(id))),
                ),
            };
        }
    }
    let rows: Vec<(MessageRow, i64)> = query.load(&mut conn).await.map_err(db_error)?;
    rows.into_iter()
        .map(|(row, seq)| {
            let message = row.into_message()?;
            Ok(Arrived {
                position: CommitCursor {
                    seq: u64::try_from(seq).map_err(StoreError::failed)?,
                    id: Some(message.id.to_string()),
                },
                message,
            })
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

pub(super) async fn commit_position(store: &PgStore) -> Result<CommitCursor, StoreError> {
    let mut conn = store.conn().await?;
    let seq: i64 = diesel::select(CommittedUpTo)
        .get_result(&mut conn)
        .await
        .map_err(db_error)?;
    Ok(CommitCursor {
        seq: u64::try_from(seq).map_err(StoreError::failed)?,
        id: None,
    })
}

pub(super) async fn message(
    store: &PgStore,
    reader: &Reader,
    id: &MessageId,
    now: Timestamp,
) -> Result<Option<Message>, StoreError> {
    message_for(store, reader, id, now, Access::Read).await
}

pub(super) async fn message_to_change(
    store: &PgStore,
    reader: &Reader,
    id: &MessageId,
    now: Timestamp,
) -> Result<Option<Message>, StoreError> {
    message_for(store, reader, id, now, Access::Send).await
}

pub(super) async fn device_messages(
    store: &PgStore,
    reader: &Reader,
    now: Timestamp,
    limit: i64,
) -> Result<Vec<Message>, StoreError> {
    if reader.device.is_none() {
        return Ok(Vec::new());
    }
    let mut conn = store.conn().await?;
    let rows: Vec<MessageRow> = messages::table
        .inner_join(addresses::table)
        .filter(visible(Caller::reader(reader), now, Access::Read))
        .select(MessageRow::as_select())
        .order((messages::received_at.desc(), messages::id.desc()))
        .limit(limit)
        .load(&mut conn)
        .await
        .map_err(db_error)?;
    rows_into_messages(rows)
}

pub(super) async fn attachment(
    store: &PgStore,
    reader: &Reader,
    id: &MessageId,
    index: u32,
    now: Timestamp,
) -> Result<Option<StoredAttachment>, StoreError> {
    if message(store, reader, id, now).await?.is_none() {
        return Ok(None);
    }
    let mut conn = store.conn().await?;
    let row: Option<(Option<String>, i64)> = attachments::table
        .find((id.as_str(), index as i32))
        .select((attachments::blob_key, attachments::size_bytes))
        .first(&mut conn)
        .await
        .optional()
        .map_err(db_error)?;
    Ok(row.map(|(blob_key, size)| StoredAttachment {
        index,
        blob_key,
        size_bytes: size.max(0) as u64,
    }))
}

pub(super) async fn set_read(
    store: &PgStore,
    reader: &Reader,
    id: &MessageId,
    read: bool,
    now: Timestamp,
) -> Result<bool, StoreError> {
    if message(store, reader, id, now).await?.is_none() {
        return Ok(false);
    }
    let mut conn = store.conn().await?;
    diesel::update(messages::table.find(id.as_str()))
        .set(messages::read.eq(read))
        .execute(&mut conn)
        .await
        .map(|changed| changed > 0)
        .map_err(db_error)
}

pub(super) async fn spend_object_read(
    store: &PgStore,
    account: &AccountId,
    hour: Timestamp,
    limit: u64,
) -> Result<bool, StoreError> {
    #[derive(QueryableByName)]
    struct Used {
        #[diesel(sql_type = BigInt)]
        #[expect(dead_code, reason = "only whether a row came back matters")]
        used: i64,
    }
    let mut conn = store.conn().await?;
    let spent: Option<Used> = diesel::sql_query(
        "INSERT INTO usage_counters (account_id, counter, window_start, used) VALUES ($1, $2, $3, 1) \
         ON CONFLICT (account_id, counter, window_start, shard) \
         DO UPDATE SET used = usage_counters.used + 1 WHERE usage_counters.used < $4 \
         RETURNING used",
    )
    .bind::<Text, _>(account.as_str())
    .bind::<Text, _>(sealpost_messages::store::OBJECT_READS_COUNTER)
    .bind::<Timestamptz, _>(hour.as_datetime())
    .bind::<BigInt, _>(i64::try_from(limit).unwrap_or(i64::MAX)).prepared()
    .get_result(&mut conn)
    .await
    .optional()
    .map_err(db_error)?;
    Ok(spent.is_some())
}

pub(super) async fn page_all(
    store: &PgStore,
    reader: &Reader,
    filter: &MessageFilter,
    now: Timestamp,
    page: &PageRequest,
) -> Result<Vec<Message>, StoreError> {
    let folders: Vec<&str> = filter.folders().into_iter().map(Folder::as_str).collect();
    let mut conn = store.conn().await?;
    let mut query = messages::table
        .inner_join(addresses::table)
        .filter(visible(Caller::reader(reader), now, Access::Read))
        .filter(messages::folder.eq_any(folders))
        .select(MessageRow::as_select())
        .order((messages::received_at.desc(), messages::id.desc()))
        .limit(page.fetch_limit())
        .into_boxed();
    if let Some(address) = &filter.address {
        query = query.filter(messages::address_id.eq(address.as_str()));
    }
    if let Some(starred) = filter.starred {
        query = query.filter(messages::starred.eq(starred));
    }
    if let Some(unread) = filter.unread {
        query = query.filter(messages::read.ne(unread));
    }
    if let Some(after) = &page.after {
        query = query.filter(older_than(after.at.as_datetime(), &after.id));
    }
    rows_into_messages(query.load(&mut conn).await.map_err(db_error)?)
}

pub(super) async fn set_starred(
    store: &PgStore,
    reader: &Reader,
    id: &MessageId,
    starred: bool,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
    diesel::update(
        messages::table
            .filter(messages::id.eq(id.as_str()))
            .filter(visible_by_address(
                Caller::reader(reader),
                now,
                Access::Send,
            )),
    )
    .set(messages::starred.eq(starred))
    .execute(&mut conn)
    .await
    .map(|changed| changed > 0)
    .map_err(db_error)
}

pub(super) async fn set_folder(
    store: &PgStore,
    reader: &Reader,
    id: &MessageId,
    from: Folder,
    to: Folder,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
    diesel::update(
        messages::table
            .filter(messages::id.eq(id.as_str()))
            .filter(messages::folder.eq(from.as_str()))
            .filter(visible_by_address(
                Caller::reader(reader),
                now,
                Access::Send,
            )),
    )
    .set(messages::folder.eq(to.as_str()))
    .execute(&mut conn)
    .await
    .map(|changed| changed > 0)
    .map_err(db_error)
}

pub(super) async fn delete_from_trash(
    store: &PgStore,
    reader: &Reader,
    id: &MessageId,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
    // The access rule is a builder expression and the delete that queues
    // the blobs raw SQL: the message is found and locked with the rule,
    // then deleted by id in the same transaction.
    conn.transaction(async |conn| {
        let found: Option<String> = messages::table
            .filter(messages::id.eq(id.as_str()))
            .filter(messages::folder.eq(Folder::Trash.as_str()))
            .filter(visible_by_address(
                Caller::reader(reader),
                now,
                Access::Send,
            ))
            .select(messages::id)
            .for_update()
            .first(conn)
            .await
            .optional()?;
        match found {
            Some(id) => delete_messages_of(conn, "m.id = $1", &id, Some(now)).await,
            None => Ok(0),
        }
    })
    .await
    .map(|deleted| deleted > 0)
    .map_err(db_error)
}

pub(super) async fn empty_trash(store: &PgStore, account: &AccountId) -> Result<u64, StoreError> {
    let mut conn = store.conn().await?;
    delete_messages_of(
        &mut conn,
        "m.account_id = $1 AND m.folder = 'trash'",
        account.as_str(),
        None,
    )
    .await
    .map_err(db_error)
}

pub(super) async fn folder_counts(
    store: &PgStore,
    reader: &Reader,
    address: Option<AddressId>,
    now: Timestamp,
) -> Result<FolderCounts, StoreError> {
    let mut conn = store.conn().await?;
    let mut query = messages::table
        .inner_join(addresses::table)
        .filter(visible(Caller::reader(reader), now, Access::Read))
        .group_by((messages::folder, messages::read, messages::starred))
        .select((
            messages::folder,
            messages::read,
            messages::starred,
            diesel::dsl::count_star(),
        ))
        .into_boxed();
    if let Some(address) = &address {
        query = query.filter(messages::address_id.eq(address.as_str()));
    }
    let rows: Vec<(String, bool, bool, i64)> = query.load(&mut conn).await.map_err(db_error)?;
    let mut counts = FolderCounts::default();
    for (folder, read, starred, n) in rows {
        let folder = folder.parse::<Folder>().map_err(StoreError::failed)?;
        let n = n.max(0) as u64;
        let unread = if read { 0 } else { n };
        let count = counts.folder_mut(folder);
        count.total += n;
        count.unread += unread;
        // Starred mail in the trash is not shown as starred.
        if starred && folder != Folder::Trash {
            counts.starred.total += n;
            counts.starred.unread += unread;
        }
    }
    Ok(counts)
}

pub(super) async fn delete_expired(store: &PgStore, now: Timestamp) -> Result<u64, StoreError> {
    let mut conn = store.conn().await?;
    // One statement: the blobs queued are those of the messages this
    // DELETE removed, never of one kept because its retention changed.
    let DeletedMessages { deleted } = diesel::sql_query(delete_messages_sql(&format!(
        "$1::bool AND NOT ({})",
        retained_sql("m", "a", "$2")
    )))
    .bind::<Bool, _>(true)
    .bind::<Timestamptz, _>(now.as_datetime())
    .get_result(&mut conn)
    .await
    .map_err(db_error)?;
    Ok(deleted.max(0) as u64)
}

pub(super) async fn garbage(store: &PgStore, limit: i64) -> Result<Vec<String>, StoreError> {
    let mut conn = store.conn().await?;
    blob_garbage::table
        .select(blob_garbage::blob_key)
        .limit(limit)
        .load(&mut conn)
        .await
        .map_err(db_error)
}

pub(super) async fn forget_garbage(store: &PgStore, keys: Vec<String>) -> Result<(), StoreError> {
    let mut conn = store.conn().await?;
    diesel::delete(blob_garbage::table.filter(blob_garbage::blob_key.eq_any(keys)))
        .execute(&mut conn)
        .await
        .map(|_| ())
        .map_err(db_error)
}

/// Any instant serves when only the address's existence matters.
fn epoch() -> Timestamp {
    Timestamp::from_datetime(DateTime::<Utc>::UNIX_EPOCH)
}

/// Messages after a page's last one, newest first: received earlier, or at
/// the same time with a smaller id.
#[diesel::dsl::auto_type]
fn older_than<'a>(at: DateTime<Utc>, id: &'a str) -> _ {
    messages::received_at
        .lt(at)
        .or(messages::received_at.eq(at).and(messages::id.lt(id)))
}
