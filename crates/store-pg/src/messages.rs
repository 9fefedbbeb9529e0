//! `MessageRepository` over PostgreSQL.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::dsl::AsExprOf;
use diesel::expression::{BoxableExpression, SqlLiteral, UncheckedBind, ValidGrouping};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Text, Timestamptz};
use diesel_async::pooled_connection::deadpool::Object;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::{
    AccountId, AddressId, CommitCursor, MessageId, PageRequest, PlanId, StoreError, Timestamp,
};
use sealpost_messages::folders::{Folder, FolderCounts, MessageFilter};
use sealpost_messages::store::{
    Arrived, Commit, Message, MessageRepository, NewMessage, PendingBlob, Reader, RecipientRecord,
    StoredAttachment, WaitFrom,
};
use sealpost_teams::Access;
use tokio::task::JoinHandle;

use crate::access::{Caller, Rule, may_use, on_device, owned_or_granted};
use crate::records::{DeletedMessages, box_from_json, delete_messages_of, delete_messages_sql};
use crate::schema::{
    account_suspensions, accounts, addresses, attachments, blob_garbage, commit_clock, messages,
    pending_blobs,
};
use crate::{PgStore, bytes32, db_error};

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
    content: serde_json::Value,
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
            content: box_from_json(self.content)?,
            folder: self.folder.parse::<Folder>().map_err(StoreError::failed)?,
            starred: self.starred,
            outgoing: self.outgoing,
        })
    }
}

fn rows_into_messages(rows: Vec<MessageRow>) -> Result<Vec<Message>, StoreError> {
    rows.into_iter().map(MessageRow::into_message).collect()
}

type RecipientColumns = (
    String,
    String,
    String,
    Option<String>,
    DateTime<Utc>,
    String,
    Option<Vec<u8>>,
    i32,
    Option<DateTime<Utc>>,
);

/// What RCPT and `POST /messages` read about an address, in `RecipientColumns` order.
const RECIPIENT_COLUMNS: (
    addresses::id,
    addresses::account_id,
    accounts::plan_id,
    accounts::lapsed_plan_id,
    accounts::created_at,
    addresses::domain,
    addresses::public_key,
    addresses::key_epoch,
    addresses::paused_at,
) = (
    addresses::id,
    addresses::account_id,
    accounts::plan_id,
    accounts::lapsed_plan_id,
    accounts::created_at,
    addresses::domain,
    addresses::public_key,
    addresses::key_epoch,
    addresses::paused_at,
);

/// The address's account's suspension, if any, read with the recipient
/// (`.left_join(with_suspension())`, then [`account_suspensions::account_id`]
/// beside [`RECIPIENT_COLUMNS`]).
fn with_suspension() -> diesel::dsl::On<
    account_suspensions::table,
    diesel::dsl::Eq<account_suspensions::account_id, addresses::account_id>,
> {
    account_suspensions::table.on(account_suspensions::account_id.eq(addresses::account_id))
}

fn into_recipient(
    (row, suspension): (RecipientColumns, Option<String>),
) -> Result<RecipientRecord, StoreError> {
    let (address, account, plan, lapsed_plan, created, domain, public_key, key_epoch, paused_at) =
        row;
    Ok(RecipientRecord {
        address: AddressId::from_trusted(address),
        account: AccountId::from_trusted(account),
        plan: lapsed_plan
            .unwrap_or(plan)
            .parse::<PlanId>()
            .map_err(StoreError::failed)?,
        account_created_at: created.into(),
        domain,
        public_key: public_key.map(bytes32).transpose()?,
        key_epoch: u32::try_from(key_epoch).map_err(StoreError::failed)?,
        paused: paused_at.is_some(),
        suspended: suspension.is_some(),
    })
}

/// The advisory lock key of an ingest instance. The same expression takes the
/// lock and tests it, so the two always agree.
const INSTANCE_LOCK_KEY: &str = "hashtextextended($1, 0)";

/// How often the instance lock's connection is checked while held.
const INSTANCE_LOCK_CHECK: Duration = Duration::from_secs(5);

/// Longest wait to take (or take back) the instance lock. Only another
/// process's liveness test ever holds it, for one statement.
const INSTANCE_LOCK_WAIT: Duration = Duration::from_secs(10);

/// Keeps an ingest instance alive in the eyes of every process's recovery: a
/// session-level advisory lock on a connection of its own, out of the pool,
/// held for as long as this value lives and taken again should that
/// connection drop. Dropping it (or the process dying) releases the lock.
#[must_use = "the instance counts as dead as soon as this is dropped"]
pub struct InstanceLock {
    keeper: JoinHandle<()>,
}

impl Drop for InstanceLock {
    fn drop(&mut self) {
        // The keeper owns the connection; ending it closes the session.
        self.keeper.abort();
    }
}

#[derive(QueryableByName)]
struct Locked {
    #[diesel(sql_type = Bool)]
    locked: bool,
}

impl PgStore {
    /// Takes the instance lock of `instance` (see [`InstanceLock`]); returns
    /// once it is held. Call before the ingest of that instance delivers.
    pub async fn hold_instance_lock(&self, instance: &str) -> Result<InstanceLock, StoreError> {
        let conn = self.lock_instance(instance).await?;
        let keeper = tokio::spawn(keep_instance_lock(self.clone(), instance.to_owned(), conn));
        Ok(InstanceLock { keeper })
    }

    /// A connection of its own (taken out of the pool) holding the lock.
    async fn lock_instance(&self, instance: &str) -> Result<AsyncPgConnection, StoreError> {
        let mut conn = Object::take(self.conn().await?);
        let take = diesel::sql_query(format!("SELECT pg_advisory_lock({INSTANCE_LOCK_KEY})"))
            .bind::<Text, _>(instance)
            .execute(&mut conn);
        match tokio::time::timeout(INSTANCE_LOCK_WAIT, take).await {
            Ok(Ok(_)) => Ok(conn),
            Ok(Err(error)) => Err(db_error(error)),
            Err(_) => Err(StoreError::Unavailable(
                "timed out taking the ingest instance lock".into(),
            )),
        }
    }
}

async fn keep_instance_lock(store: PgStore, instance: String, mut conn: AsyncPgConnection) {
    loop {
        loop {
            tokio::time::sleep(INSTANCE_LOCK_CHECK).await;
            if diesel::sql_query("SELECT 1")
                .execute(&mut conn)
                .await
                .is_err()
            {
                break;
            }
        }
        // Until taken back, other processes may believe this instance dead and
        // take its pending blobs over; its commits then fail instead of
        // keeping messages whose blobs were deleted.
        tracing::warn!("the ingest instance lock's connection failed; taking the lock again");
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            match store.lock_instance(&instance).await {
                Ok(fresh) => {
                    conn = fresh;
                    tracing::info!("ingest instance lock held again");
                    break;
                }
                Err(error) => tracing::warn!(%error, "cannot take the ingest instance lock yet"),
            }
        }
    }
}

/// How many rows (`shard`s) the `received` counter of one account and window
/// is spread over. Every delivery's commit adds to one of them and holds its
/// row lock until COMMIT; with one row, an account's commits ran one at a
/// time. Readers sum the shards. The object-read counter stays on shard 0:
/// its limit check must see the whole count in one row.
const RECEIVED_SHARDS: u64 = 32;

/// The `received` shard a delivery adds to, from its (random) message id.
pub(crate) fn received_shard(id: &MessageId) -> i16 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    id.as_str().hash(&mut hasher);
    // Below RECEIVED_SHARDS (32): always fits.
    (hasher.finish() % RECEIVED_SHARDS) as i16
}

/// The retention window, the one place it is spelled: an address keeps
/// its mail while it arrived after `now` minus the address's
/// `retention_days`. This is what follows the instant `now` in the cutoff's
/// SQL, over an `addresses` row named `addresses` (a table or its alias).
fn minus_retention(addresses: &str) -> String {
    format!(" - make_interval(days => {addresses}.retention_days::int)")
}

/// The retention cutoff of the address in the query at `now` (mail received
/// at or before it is gone), with the query builder.
pub(crate) fn retention_cutoff(now: Timestamp) -> RetentionCutoff {
    diesel::dsl::sql::<Timestamptz>("")
        .bind::<Timestamptz, _>(now.as_datetime())
        .sql(&minus_retention("addresses"))
}

/// The type of [`retention_cutoff`].
pub(crate) type RetentionCutoff = SqlLiteral<
    Timestamptz,
    UncheckedBind<SqlLiteral<Timestamptz>, AsExprOf<DateTime<Utc>, Timestamptz>>,
>;

/// Raw SQL: the message `messages` is inside the retention of its address
/// `addresses` at the instant `now` (a placeholder such as `$2`); the
/// statements the query builder cannot write (a `DELETE` that queues blobs
/// in the same statement, the usage counters' one query) use it.
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
        messages::held
            .eq(false)
            .and(messages::received_at.gt(retention_cutoff(now)))
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

impl PgStore {
    /// One message the reader may see (`Access::Send`: change).
    async fn message_for(
        &self,
        reader: &Reader,
        id: &MessageId,
        now: Timestamp,
        needed: Access,
    ) -> Result<Option<Message>, StoreError> {
        let mut conn = self.conn().await?;
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
        &self,
        reader: &Reader,
        address: &AddressId,
        now: Timestamp,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        let mut conn = self.conn().await?;
        addresses::table
            .filter(addresses::id.eq(address.as_str()))
            .filter(may_use(Caller::reader(reader), Access::Read))
            .select(retention_cutoff(now))
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)
    }
}

#[async_trait]
impl MessageRepository for PgStore {
    async fn recipient(&self, email_address: &str) -> Result<Option<RecipientRecord>, StoreError> {
        let mut conn = self.conn().await?;
        addresses::table
            .inner_join(accounts::table)
            .left_join(with_suspension())
            .filter(addresses::email_address.eq(email_address))
            .select((
                RECIPIENT_COLUMNS,
                account_suspensions::account_id.nullable(),
            ))
            .first::<(RecipientColumns, Option<String>)>(&mut conn)
            .await
            .optional()
            .map_err(db_error)?
            .map(into_recipient)
            .transpose()
    }

    async fn recipient_by_id(
        &self,
        account: &AccountId,
        address: &AddressId,
    ) -> Result<Option<RecipientRecord>, StoreError> {
        let mut conn = self.conn().await?;
        addresses::table
            .inner_join(accounts::table)
            .left_join(with_suspension())
            .filter(addresses::id.eq(address.as_str()))
            .filter(addresses::account_id.eq(account.as_str()))
            .select((
                RECIPIENT_COLUMNS,
                account_suspensions::account_id.nullable(),
            ))
            .first::<(RecipientColumns, Option<String>)>(&mut conn)
            .await
            .optional()
            .map_err(db_error)?
            .map(into_recipient)
            .transpose()
    }

    async fn counter(
        &self,
        account: &AccountId,
        counter: &str,
        window_start: Timestamp,
    ) -> Result<u64, StoreError> {
        #[derive(QueryableByName)]
        struct Used {
            #[diesel(sql_type = BigInt)]
            used: i64,
        }
        // A counter is the sum of its shards (see `received_shard`).
        let mut conn = self.conn().await?;
        let Used { used } = diesel::sql_query(
            "SELECT COALESCE(sum(used), 0)::bigint AS used FROM usage_counters \
             WHERE account_id = $1 AND counter = $2 AND window_start = $3",
        )
        .bind::<Text, _>(account.as_str())
        .bind::<Text, _>(counter)
        .bind::<Timestamptz, _>(window_start.as_datetime())
        .get_result(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(used.max(0) as u64)
    }

    async fn register_pending_blobs(
        &self,
        keys: Vec<String>,
        owner: &str,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<_> = keys
            .iter()
            .map(|key| {
                (
                    pending_blobs::blob_key.eq(key),
                    pending_blobs::written_at.eq(at.as_datetime()),
                    pending_blobs::owner.eq(Some(owner)),
                )
            })
            .collect();
        diesel::insert_into(pending_blobs::table)
            .values(rows)
            .execute(&mut conn)
            .await
            .map(|_| ())
            .map_err(db_error)
    }

    async fn commit(&self, new: NewMessage) -> Result<Commit, StoreError> {
        // Batched with the commits running at the same time (group_commit.rs).
        self.group_commit(new).await
    }

    async fn pending_blobs(&self) -> Result<Vec<PendingBlob>, StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<(String, Option<String>, DateTime<Utc>)> = pending_blobs::table
            .select((
                pending_blobs::blob_key,
                pending_blobs::owner,
                pending_blobs::written_at,
            ))
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|(key, owner, written_at)| PendingBlob {
                key,
                owner,
                written_at: written_at.into(),
            })
            .collect())
    }

    async fn alive_owners(&self, owners: Vec<String>) -> Result<Vec<String>, StoreError> {
        let mut conn = self.conn().await?;
        let mut alive = Vec::new();
        for owner in owners {
            // Free means nobody holds it: the owner's process is gone. Given
            // back at once, in the same session.
            let tested = async {
                let free = diesel::sql_query(format!(
                    "SELECT pg_try_advisory_lock({INSTANCE_LOCK_KEY}) AS locked"
                ))
                .bind::<Text, _>(&owner)
                .get_result::<Locked>(&mut conn)
                .await?
                .locked;
                if free {
                    diesel::sql_query(format!("SELECT pg_advisory_unlock({INSTANCE_LOCK_KEY})"))
                        .bind::<Text, _>(&owner)
                        .execute(&mut conn)
                        .await?;
                }
                Ok::<_, diesel::result::Error>(free)
            }
            .await;
            match tested {
                Ok(true) => {}
                Ok(false) => alive.push(owner),
                Err(error) => {
                    // The session may still hold a lock it took: closing it
                    // (not returning it to the pool) releases every one.
                    drop(Object::take(conn));
                    return Err(db_error(error));
                }
            }
        }
        Ok(alive)
    }

    async fn disown_pending_blobs(&self, keys: Vec<String>) -> Result<Vec<String>, StoreError> {
        let mut conn = self.conn().await?;
        diesel::update(pending_blobs::table.filter(pending_blobs::blob_key.eq_any(keys)))
            .set(pending_blobs::owner.eq(None::<String>))
            .returning(pending_blobs::blob_key)
            .get_results(&mut conn)
            .await
            .map_err(db_error)
    }

    async fn forget_pending_blobs(&self, keys: Vec<String>) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        diesel::delete(pending_blobs::table.filter(pending_blobs::blob_key.eq_any(keys)))
            .execute(&mut conn)
            .await
            .map(|_| ())
            .map_err(db_error)
    }

    async fn can_read_address(
        &self,
        reader: &Reader,
        address: &AddressId,
    ) -> Result<bool, StoreError> {
        Ok(self
            .readable_cutoff(reader, address, epoch())
            .await?
            .is_some())
    }

    async fn page(
        &self,
        reader: &Reader,
        address: &AddressId,
        now: Timestamp,
        page: &PageRequest,
    ) -> Result<Vec<Message>, StoreError> {
        let Some(cutoff) = self.readable_cutoff(reader, address, now).await? else {
            return Ok(Vec::new());
        };
        let mut conn = self.conn().await?;
        let mut query = messages::table
            .filter(messages::address_id.eq(address.as_str()))
            .filter(messages::held.eq(false))
            .filter(messages::received_at.gt(cutoff))
            .select(MessageRow::as_select())
            .order((messages::received_at.desc(), messages::id.desc()))
            .limit(page.fetch_limit())
            .into_boxed();
        if let Some(after) = &page.after {
            let at = after.at.as_datetime();
            query = query.filter(
                messages::received_at.lt(at).or(messages::received_at
                    .eq(at)
                    .and(messages::id.lt(after.id.clone()))),
            );
        }
        rows_into_messages(query.load(&mut conn).await.map_err(db_error)?)
    }

    async fn newer_than(
        &self,
        reader: &Reader,
        address: &AddressId,
        now: Timestamp,
        after: WaitFrom,
        limit: i64,
    ) -> Result<Vec<Arrived>, StoreError> {
        let Some(cutoff) = self.readable_cutoff(reader, address, now).await? else {
            return Ok(Vec::new());
        };
        let mut conn = self.conn().await?;
        let mut query = messages::table
            .filter(messages::address_id.eq(address.as_str()))
            .filter(messages::held.eq(false))
            .filter(messages::received_at.gt(cutoff))
            // Waits are for mail arriving: sent copies do not count.
            .filter(messages::outgoing.eq(false))
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
            .collect()
    }

    async fn commit_position(&self) -> Result<CommitCursor, StoreError> {
        let mut conn = self.conn().await?;
        let seq: i64 = commit_clock::table
            .select(commit_clock::seq)
            .first(&mut conn)
            .await
            .map_err(db_error)?;
        Ok(CommitCursor {
            seq: u64::try_from(seq).map_err(StoreError::failed)?,
            id: None,
        })
    }

    async fn message(
        &self,
        reader: &Reader,
        id: &MessageId,
        now: Timestamp,
    ) -> Result<Option<Message>, StoreError> {
        self.message_for(reader, id, now, Access::Read).await
    }

    async fn message_to_change(
        &self,
        reader: &Reader,
        id: &MessageId,
        now: Timestamp,
    ) -> Result<Option<Message>, StoreError> {
        self.message_for(reader, id, now, Access::Send).await
    }

    async fn device_messages(
        &self,
        reader: &Reader,
        now: Timestamp,
        limit: i64,
    ) -> Result<Vec<Message>, StoreError> {
        if reader.device.is_none() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn().await?;
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

    async fn attachment(
        &self,
        reader: &Reader,
        id: &MessageId,
        index: u32,
        now: Timestamp,
    ) -> Result<Option<StoredAttachment>, StoreError> {
        if self.message(reader, id, now).await?.is_none() {
            return Ok(None);
        }
        let mut conn = self.conn().await?;
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

    async fn set_read(
        &self,
        reader: &Reader,
        id: &MessageId,
        read: bool,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        if self.message(reader, id, now).await?.is_none() {
            return Ok(false);
        }
        let mut conn = self.conn().await?;
        diesel::update(messages::table.find(id.as_str()))
            .set(messages::read.eq(read))
            .execute(&mut conn)
            .await
            .map(|changed| changed > 0)
            .map_err(db_error)
    }

    async fn spend_object_read(
        &self,
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
        let mut conn = self.conn().await?;
        let spent: Option<Used> = diesel::sql_query(
            "INSERT INTO usage_counters (account_id, counter, window_start, used) VALUES ($1, $2, $3, 1) \
             ON CONFLICT (account_id, counter, window_start, shard) \
             DO UPDATE SET used = usage_counters.used + 1 WHERE usage_counters.used < $4 \
             RETURNING used",
        )
        .bind::<Text, _>(account.as_str())
        .bind::<Text, _>(sealpost_messages::store::OBJECT_READS_COUNTER)
        .bind::<Timestamptz, _>(hour.as_datetime())
        .bind::<BigInt, _>(i64::try_from(limit).unwrap_or(i64::MAX))
        .get_result(&mut conn)
        .await
        .optional()
        .map_err(db_error)?;
        Ok(spent.is_some())
    }

    async fn page_all(
        &self,
        reader: &Reader,
        filter: &MessageFilter,
        now: Timestamp,
        page: &PageRequest,
    ) -> Result<Vec<Message>, StoreError> {
        let folders: Vec<&str> = filter.folders().into_iter().map(Folder::as_str).collect();
        let mut conn = self.conn().await?;
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
            let at = after.at.as_datetime();
            query = query.filter(
                messages::received_at.lt(at).or(messages::received_at
                    .eq(at)
                    .and(messages::id.lt(after.id.as_str()))),
            );
        }
        rows_into_messages(query.load(&mut conn).await.map_err(db_error)?)
    }

    async fn set_starred(
        &self,
        reader: &Reader,
        id: &MessageId,
        starred: bool,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        diesel::update(messages::table.filter(messages::id.eq(id.as_str())).filter(
            visible_by_address(Caller::reader(reader), now, Access::Send),
        ))
        .set(messages::starred.eq(starred))
        .execute(&mut conn)
        .await
        .map(|changed| changed > 0)
        .map_err(db_error)
    }

    async fn set_folder(
        &self,
        reader: &Reader,
        id: &MessageId,
        from: Folder,
        to: Folder,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn delete_from_trash(
        &self,
        reader: &Reader,
        id: &MessageId,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn empty_trash(&self, account: &AccountId) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        delete_messages_of(
            &mut conn,
            "m.account_id = $1 AND m.folder = 'trash'",
            account.as_str(),
            None,
        )
        .await
        .map_err(db_error)
    }

    async fn folder_counts(
        &self,
        reader: &Reader,
        address: Option<AddressId>,
        now: Timestamp,
    ) -> Result<FolderCounts, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn delete_expired(&self, now: Timestamp) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
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

    async fn garbage(&self, limit: i64) -> Result<Vec<String>, StoreError> {
        let mut conn = self.conn().await?;
        blob_garbage::table
            .select(blob_garbage::blob_key)
            .limit(limit)
            .load(&mut conn)
            .await
            .map_err(db_error)
    }

    async fn forget_garbage(&self, keys: Vec<String>) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        diesel::delete(blob_garbage::table.filter(blob_garbage::blob_key.eq_any(keys)))
            .execute(&mut conn)
            .await
            .map(|_| ())
            .map_err(db_error)
    }
}

/// Any instant serves when only the address's existence matters.
fn epoch() -> Timestamp {
    Timestamp::from_datetime(DateTime::<Utc>::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use sealpost_subscriptions::{SubscriptionRepository, UsageWindows};

    use super::*;
    use crate::schema::usage_counters;
    use crate::test_db::{drop_database, fresh_store};

    #[test]
    fn received_shards_spread_message_ids() {
        let shards: std::collections::BTreeSet<i16> = (0..2000)
            .map(|_| received_shard(&MessageId::generate()))
            .collect();
        assert_eq!(shards.len() as u64, RECEIVED_SHARDS);
        assert!(
            shards
                .iter()
                .all(|&s| (0..RECEIVED_SHARDS as i16).contains(&s))
        );
        let id = MessageId::generate();
        assert_eq!(received_shard(&id), received_shard(&id));
    }

    /// GET /usage and the RCPT allowance check read the sum of every shard
    /// of `received`; object reads keep their atomic limit on one row.
    #[tokio::test(flavor = "multi_thread")]
    async fn received_counter_sums_its_shards() {
        const DATABASE: &str = "sealpost_store_pg_received_shards";
        let store = fresh_store(DATABASE).await;
        let account = AccountId::from_trusted("acct_shards01".to_owned());
        let created =
            Timestamp::from_datetime(DateTime::<Utc>::UNIX_EPOCH + chrono::TimeDelta::days(20_000));
        let now = created + chrono::TimeDelta::hours(5);
        let windows = UsageWindows::at(created, now);
        let window = windows.received_start.as_datetime();
        {
            let mut conn = store.conn().await.unwrap();
            diesel::insert_into(accounts::table)
                .values((
                    accounts::id.eq(account.as_str()),
                    accounts::auth_public_key.eq(vec![0_u8; 32]),
                    accounts::auth_verifier_hash.eq(vec![0_u8; 32]),
                    accounts::created_at.eq(created.as_datetime()),
                ))
                .execute(&mut conn)
                .await
                .unwrap();
            // A row from before the shards (shard 0 by default), two more
            // shards, and another window that must not count.
            diesel::sql_query(
                "INSERT INTO usage_counters (account_id, counter, window_start, used) \
                 VALUES ($1, 'received', $2, 7)",
            )
            .bind::<Text, _>(account.as_str())
            .bind::<Timestamptz, _>(window)
            .execute(&mut conn)
            .await
            .unwrap();
            for (shard, window_start, used) in [
                (3_i16, window, 5_i64),
                (31, window, 1),
                (3, window - chrono::TimeDelta::days(30), 100),
            ] {
                diesel::insert_into(usage_counters::table)
                    .values((
                        usage_counters::account_id.eq(account.as_str()),
                        usage_counters::counter.eq(sealpost_messages::store::RECEIVED_COUNTER),
                        usage_counters::window_start.eq(window_start),
                        usage_counters::shard.eq(shard),
                        usage_counters::used.eq(used),
                    ))
                    .execute(&mut conn)
                    .await
                    .unwrap();
            }
        }
        let received = store
            .counter(
                &account,
                sealpost_messages::store::RECEIVED_COUNTER,
                windows.received_start,
            )
            .await
            .unwrap();
        assert_eq!(received, 13);
        let usage = store.usage_counts(&account, windows, now).await.unwrap();
        assert_eq!(usage.received, 13);
        let nothing = store
            .counter(
                &account,
                sealpost_messages::store::RECEIVED_COUNTER,
                windows.received_start + chrono::TimeDelta::days(30),
            )
            .await
            .unwrap();
        assert_eq!(nothing, 0);

        // Object reads: an exact limit, on shard 0.
        for _ in 0..3 {
            assert!(
                store
                    .spend_object_read(&account, windows.hour_start, 3)
                    .await
                    .unwrap()
            );
        }
        assert!(
            !store
                .spend_object_read(&account, windows.hour_start, 3)
                .await
                .unwrap()
        );
        let usage = store.usage_counts(&account, windows, now).await.unwrap();
        assert_eq!((usage.received, usage.object_reads), (13, 3));
        drop(store);
        drop_database(DATABASE).await;
    }
}
