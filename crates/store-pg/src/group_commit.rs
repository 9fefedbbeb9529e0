//! Group commit of delivered messages: `commit` calls that arrive while
//! other commits are running are written together, one transaction and one
//! WAL flush for all of them.
//!
//! A caller queues its message and, when one of [`COMMITTERS`] slots is
//! free, spawns a committer task; then it only waits for its answer. The
//! commit runs in that task, never in the caller's future, so a caller
//! dropped mid-commit (a closed SMTP session, a cancelled HTTP request)
//! cannot cancel a transaction that other callers wait on. A committer
//! takes up to [`MAX_BATCH`] queued messages, commits them, answers each,
//! and goes on while messages are queued; then it gives its slot back and
//! looks once more, since a caller that queued meanwhile and found every
//! slot taken counts on that look. A lone message is committed at once:
//! nothing waits for a batch to fill. Each answer is sent only after
//! `COMMIT` returned.
//!
//! One batch, in one transaction: the accounts and addresses written to are
//! locked `FOR KEY SHARE` (a message whose address or account was deleted
//! since its RCPT is answered `Commit::RecipientGone` and writes nothing),
//! the pending rows of every other message's blobs are locked and cleared
//! (a message some of whose blobs recovery took over is answered
//! `Commit::TakenOver` and writes nothing; no savepoints: such messages are
//! left out of every insert, so they cannot fail the batch), activity and
//! events are written; then, last, under the commit clock's row lock
//! (see the migration `2026-11-26-000091_commit_order`): the messages with
//! the batch's commit number, their attachments, one upsert of the
//! received counters summed per shard, one `pg_notify`, and `COMMIT`.
//! Batches therefore finish one at a time in the order of their numbers,
//! and the key-share locks taken before the clock mean a batch holding it
//! waits on nothing but its own writes (settlement locks an account and
//! then takes the clock to release held mail; without them the two could
//! deadlock). Any failure fails the whole batch, and every message of it
//! gets the error: its client is told to try again, none is told it was
//! stored.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{
    Array, BigInt, Bool, Integer, Jsonb, Nullable, SmallInt, Text, Timestamptz,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_activity::Records;
use sealpost_kernel::StoreError;
use sealpost_messages::store::{Commit, Message, NewMessage, RECEIVED_COUNTER};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::notify::{MAIL_CHANNEL, mail_payloads};
use crate::records::{box_to_json, write_records};
use crate::{PgStore, db_error};

/// Batches in flight at once (each on its own pooled connection): one
/// finishes under the commit clock while the others write their first rows.
pub(crate) const COMMITTERS: usize = 4;
/// Most messages in one transaction.
pub(crate) const MAX_BATCH: usize = 64;
/// Most sealed content in one transaction (ciphertext bytes). A batch holds
/// each message's box, and its copy in the insert's bound parameters, until
/// COMMIT: large mail makes smaller batches, so the batches in flight stay
/// within a few times this, however large the messages. A message larger
/// than this is a batch of its own.
pub(crate) const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024;

/// Takes the next commit number; its row lock is held until COMMIT, so the
/// next batch gets its number only once this one is visible (or rolled
/// back). Also used when held mail is released (billing.rs).
pub(crate) const NEXT_COMMIT_SEQ: &str = "UPDATE commit_clock SET seq = seq + 1 RETURNING seq";

type Answer = oneshot::Sender<Result<Commit, StoreError>>;

/// The queue and the committer slots, shared by every clone of a `PgStore`.
pub(crate) struct Batcher {
    queue: Mutex<Vec<(NewMessage, Answer)>>,
    committers: Arc<Semaphore>,
}

impl Default for Batcher {
    fn default() -> Self {
        Self {
            queue: Mutex::new(Vec::new()),
            committers: Arc::new(Semaphore::new(COMMITTERS)),
        }
    }
}

impl Batcher {
    fn queue(&self) -> std::sync::MutexGuard<'_, Vec<(NewMessage, Answer)>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The oldest queued messages, up to [`MAX_BATCH`] of them and
    /// [`MAX_BATCH_BYTES`] of sealed content (at least one).
    fn take_batch(&self) -> Vec<(NewMessage, Answer)> {
        let mut queue = self.queue();
        let mut bytes = 0usize;
        let take = queue
            .iter()
            .take(MAX_BATCH)
            .enumerate()
            .take_while(|(taken, (new, _))| {
                bytes = bytes.saturating_add(new.message.content.c.len());
                *taken == 0 || bytes <= MAX_BATCH_BYTES
            })
            .count();
        queue.drain(..take).collect()
    }

    fn free_slot(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.committers).try_acquire_owned().ok()
    }
}

impl PgStore {
    /// Commits one message, in a batch with those committed at the same time.
    pub(crate) async fn group_commit(&self, new: NewMessage) -> Result<Commit, StoreError> {
        let (answer, answered) = oneshot::channel();
        self.batcher.queue().push((new, answer));
        if let Some(slot) = self.batcher.free_slot() {
            tokio::spawn(self.clone().commit_queued(slot));
        }
        answered.await.unwrap_or_else(|_| {
            Err(StoreError::Unavailable(
                "the commit task ended without an answer; try again".into(),
            ))
        })
    }

    /// A committer task: commits queued batches while there are any.
    async fn commit_queued(self, slot: OwnedSemaphorePermit) {
        let mut slot = Some(slot);
        while let Some(held) = slot.take() {
            loop {
                let batch = self.batcher.take_batch();
                if batch.is_empty() {
                    break;
                }
                self.commit_and_answer(batch).await;
            }
            drop(held);
            if !self.batcher.queue().is_empty() {
                slot = self.batcher.free_slot();
            }
        }
    }

    async fn commit_and_answer(&self, batch: Vec<(NewMessage, Answer)>) {
        let (news, answers): (Vec<NewMessage>, Vec<Answer>) = batch.into_iter().unzip();
        match self.commit_batch(&news).await {
            Ok(outcomes) => {
                for (answer, outcome) in answers.into_iter().zip(outcomes) {
                    // A caller that went away no longer needs its answer.
                    let _ = answer.send(Ok(outcome));
                }
            }
            Err(error) => {
                let text = error.to_string();
                tracing::warn!(messages = news.len(), error = %text, "a commit batch failed");
                for answer in answers {
                    let _ = answer.send(Err(StoreError::Failed(text.clone().into())));
                }
            }
        }
    }

    /// One transaction for `news`; one outcome per message, in order.
    async fn commit_batch(&self, news: &[NewMessage]) -> Result<Vec<Commit>, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            let mut outcomes = lock_owners(conn, news).await?;
            claim_pending_blobs(conn, news, &mut outcomes).await?;
            let stored: Vec<&NewMessage> = news
                .iter()
                .zip(&outcomes)
                .filter(|(_, outcome)| **outcome == Commit::Done)
                .map(|(new, _)| new)
                .collect();
            if stored.is_empty() {
                return Ok(outcomes);
            }
            let mut records = Records::new();
            for new in &stored {
                records.extend(new.records.clone());
            }
            write_records(conn, &records).await?;
            // From here to COMMIT under the commit clock.
            let rows: Vec<(&Message, bool, u64)> = stored
                .iter()
                .map(|new| (&new.message, new.held, sealed_attachment_bytes(new)))
                .collect();
            insert_messages(conn, &rows, CommitNumber::Next).await?;
            insert_attachments(conn, &stored).await?;
            add_received(conn, &stored).await?;
            notify_new_mail(conn, &stored).await?;
            Ok::<_, diesel::result::Error>(outcomes)
        })
        .await
        .map_err(db_error)
    }
}

fn blob_keys(new: &NewMessage) -> impl Iterator<Item = &str> {
    new.attachments
        .iter()
        .filter_map(|attachment| attachment.blob_key.as_deref())
}

#[derive(QueryableByName)]
struct BlobKey {
    #[diesel(sql_type = Text)]
    blob_key: String,
}

/// Locks and clears the pending rows of the blobs of the messages still
/// `Done` in `outcomes`. A message whose blobs are not all still pending
/// under its owner was taken over by recovery (its instance was believed
/// dead, its blobs are being deleted): `TakenOver`, and its rows are left
/// alone. The lock keeps recovery from taking a row over between the look
/// and the delete.
async fn claim_pending_blobs(
    conn: &mut AsyncPgConnection,
    news: &[NewMessage],
    outcomes: &mut [Commit],
) -> Result<(), diesel::result::Error> {
    let mut keys: Vec<&str> = Vec::new();
    let mut owners: Vec<&str> = Vec::new();
    for (new, _) in news
        .iter()
        .zip(outcomes.iter())
        .filter(|(_, outcome)| **outcome == Commit::Done)
    {
        for key in blob_keys(new) {
            keys.push(key);
            owners.push(&new.owner);
        }
    }
    if keys.is_empty() {
        return Ok(());
    }
    let held: HashSet<String> = diesel::sql_query(
        "SELECT p.blob_key FROM pending_blobs p \
         JOIN unnest($1::text[], $2::text[]) AS w(blob_key, owner) \
           ON p.blob_key = w.blob_key AND p.owner = w.owner \
         FOR UPDATE OF p",
    )
    .bind::<Array<Text>, _>(&keys)
    .bind::<Array<Text>, _>(&owners)
    .load::<BlobKey>(conn)
    .await?
    .into_iter()
    .map(|row| row.blob_key)
    .collect();
    for (new, outcome) in news.iter().zip(outcomes.iter_mut()) {
        if *outcome == Commit::Done && !blob_keys(new).all(|key| held.contains(key)) {
            *outcome = Commit::TakenOver;
        }
    }
    let cleared: Vec<&str> = news
        .iter()
        .zip(outcomes.iter())
        .filter(|(_, outcome)| **outcome == Commit::Done)
        .flat_map(|(new, _)| blob_keys(new))
        .collect();
    if !cleared.is_empty() {
        diesel::sql_query("DELETE FROM pending_blobs WHERE blob_key = ANY($1)")
            .bind::<Array<Text>, _>(&cleared)
            .execute(conn)
            .await?;
    }
    Ok(())
}

#[derive(QueryableByName)]
struct OwnerRow {
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    id: String,
}

/// Takes now the key-share locks the inserts' foreign keys would take
/// under the commit clock (see the module comment), and answers which
/// messages can be written: one whose address or account was deleted
/// since its RCPT (the delete committed first; a delete that comes later
/// waits for this lock, and then deletes the message with the address) is
/// `RecipientGone` and writes nothing, while the rest of the batch goes
/// on. Its pending blobs are left for its delivery to delete.
async fn lock_owners(
    conn: &mut AsyncPgConnection,
    news: &[NewMessage],
) -> Result<Vec<Commit>, diesel::result::Error> {
    let accounts: BTreeSet<&str> = news
        .iter()
        .map(|new| new.message.account.as_str())
        .collect();
    let addresses: BTreeSet<&str> = news
        .iter()
        .map(|new| new.message.address.as_str())
        .collect();
    let live: HashSet<(String, String)> = diesel::sql_query(
        "SELECT 'account' AS kind, a.id FROM (SELECT id FROM accounts WHERE id = ANY($1) \
                 ORDER BY id FOR KEY SHARE) a \
         UNION ALL \
         SELECT 'address' AS kind, b.id FROM (SELECT id FROM addresses WHERE id = ANY($2) \
                 ORDER BY id FOR KEY SHARE) b",
    )
    .bind::<Array<Text>, _>(accounts.into_iter().collect::<Vec<_>>())
    .bind::<Array<Text>, _>(addresses.into_iter().collect::<Vec<_>>())
    .load::<OwnerRow>(conn)
    .await?
    .into_iter()
    .map(|row| (row.kind, row.id))
    .collect();
    let is_live = |kind: &str, id: &str| live.contains(&(kind.to_owned(), id.to_owned()));
    Ok(news
        .iter()
        .map(|new| {
            if is_live("account", new.message.account.as_str())
                && is_live("address", new.message.address.as_str())
            {
                Commit::Done
            } else {
                Commit::RecipientGone
            }
        })
        .collect())
}

/// Where inserted messages stand in the commit order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CommitNumber {
    /// The next commit number, taken first (and with it the commit clock's
    /// row lock, held until COMMIT): delivered mail, which waits return.
    Next,
    /// None (0): sent copies, which no wait returns.
    None,
}

/// The bytes a message's attachment blobs take, sealed.
fn sealed_attachment_bytes(new: &NewMessage) -> u64 {
    new.attachments
        .iter()
        .filter(|attachment| attachment.blob_key.is_some())
        .map(|attachment| attachment.size_bytes + sealpost_seal::BINARY_HEADER_LEN as u64)
        .sum()
}

/// The one insert of message rows (`held`: stored held; then the bytes its
/// sealed attachments take), all in one statement: a group commit's batch,
/// or a Sent copy as a batch of one. Each row records what it takes in
/// storage (its content box as JSON and its sealed attachments), and the
/// accounts' stored-bytes counters grow by as much, in the same
/// transaction ([`add_stored_bytes`]).
pub(crate) async fn insert_messages(
    conn: &mut AsyncPgConnection,
    stored: &[(&Message, bool, u64)],
    number: CommitNumber,
) -> Result<(), diesel::result::Error> {
    let messages = || stored.iter().map(|(message, _, _)| *message);
    let ids: Vec<&str> = messages().map(|message| message.id.as_str()).collect();
    let accounts: Vec<&str> = messages().map(|message| message.account.as_str()).collect();
    let addresses: Vec<&str> = messages().map(|message| message.address.as_str()).collect();
    let received: Vec<DateTime<Utc>> = messages()
        .map(|message| message.received_at.as_datetime())
        .collect();
    let sizes: Vec<i64> = messages()
        .map(|message| i64::try_from(message.size_bytes).unwrap_or(i64::MAX))
        .collect();
    let epochs: Vec<i32> = messages()
        .map(|message| i32::try_from(message.key_epoch).unwrap_or(i32::MAX))
        .collect();
    let contents: Vec<serde_json::Value> = messages()
        .map(|message| box_to_json(&message.content))
        .collect();
    let stored_bytes: Vec<i64> = contents
        .iter()
        .zip(stored)
        .map(|(content, (_, _, attached))| {
            let bytes = content.to_string().len() as u64 + attached;
            i64::try_from(bytes).unwrap_or(i64::MAX)
        })
        .collect();
    let held: Vec<bool> = stored.iter().map(|(_, held, _)| *held).collect();
    let read: Vec<bool> = messages().map(|message| message.read).collect();
    let folders: Vec<&str> = messages().map(|message| message.folder.as_str()).collect();
    let starred: Vec<bool> = messages().map(|message| message.starred).collect();
    let outgoing: Vec<bool> = messages().map(|message| message.outgoing).collect();
    let (clock, seq, from_clock) = match number {
        CommitNumber::Next => (
            format!("WITH clock AS ({NEXT_COMMIT_SEQ}) "),
            "clock.seq",
            ", clock",
        ),
        CommitNumber::None => (String::new(), "0", ""),
    };
    diesel::sql_query(format!(
        "{clock}INSERT INTO messages (id, account_id, inbox_id, received_at, size_bytes, key_epoch, \
             content, held, read, folder, starred, outgoing, commit_seq, stored_bytes) \
         SELECT m.id, m.account_id, m.inbox_id, m.received_at, m.size_bytes, m.key_epoch, \
             m.content, m.held, m.read, m.folder, m.starred, m.outgoing, {seq}, m.stored_bytes \
         FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::bigint[], \
             $6::int[], $7::jsonb[], $8::bool[], $9::bool[], $10::text[], $11::bool[], \
             $12::bool[], $13::bigint[]) \
           AS m(id, account_id, inbox_id, received_at, size_bytes, key_epoch, content, held, \
             read, folder, starred, outgoing, stored_bytes){from_clock}"
    ))
    .bind::<Array<Text>, _>(ids)
    .bind::<Array<Text>, _>(accounts)
    .bind::<Array<Text>, _>(addresses)
    .bind::<Array<Timestamptz>, _>(received)
    .bind::<Array<BigInt>, _>(sizes)
    .bind::<Array<Integer>, _>(epochs)
    .bind::<Array<Jsonb>, _>(contents)
    .bind::<Array<Bool>, _>(held)
    .bind::<Array<Bool>, _>(read)
    .bind::<Array<Text>, _>(folders)
    .bind::<Array<Bool>, _>(starred)
    .bind::<Array<Bool>, _>(outgoing)
    .bind::<Array<BigInt>, _>(&stored_bytes)
    .execute(conn)
    .await?;
    add_stored_bytes(conn, messages().zip(stored_bytes)).await
}

/// One upsert for the rows just inserted: each account's stored bytes grow
/// by theirs, on the message's shard (as the received counter, so parallel
/// deliveries to one account do not queue on one row), in key order.
async fn add_stored_bytes(
    conn: &mut AsyncPgConnection,
    inserted: impl Iterator<Item = (&Message, i64)>,
) -> Result<(), diesel::result::Error> {
    let mut counters: BTreeMap<(&str, i16), i64> = BTreeMap::new();
    for (message, bytes) in inserted {
        *counters
            .entry((
                message.account.as_str(),
                crate::messages::received_shard(&message.id),
            ))
            .or_default() += bytes;
    }
    let (keys, bytes): (Vec<(&str, i16)>, Vec<i64>) = counters.into_iter().unzip();
    let (accounts, shards): (Vec<&str>, Vec<i16>) = keys.into_iter().unzip();
    diesel::sql_query(
        "INSERT INTO stored_bytes (account_id, shard, bytes) \
         SELECT * FROM unnest($1::text[], $2::smallint[], $3::bigint[]) \
         ON CONFLICT (account_id, shard) DO UPDATE SET bytes = stored_bytes.bytes + EXCLUDED.bytes",
    )
    .bind::<Array<Text>, _>(accounts)
    .bind::<Array<SmallInt>, _>(shards)
    .bind::<Array<BigInt>, _>(bytes)
    .execute(conn)
    .await?;
    Ok(())
}

async fn insert_attachments(
    conn: &mut AsyncPgConnection,
    stored: &[&NewMessage],
) -> Result<(), diesel::result::Error> {
    let mut messages: Vec<&str> = Vec::new();
    let mut indexes: Vec<i32> = Vec::new();
    let mut keys: Vec<Option<&str>> = Vec::new();
    let mut sizes: Vec<i64> = Vec::new();
    for new in stored {
        for attachment in &new.attachments {
            messages.push(new.message.id.as_str());
            indexes.push(i32::try_from(attachment.index).unwrap_or(i32::MAX));
            keys.push(attachment.blob_key.as_deref());
            sizes.push(i64::try_from(attachment.size_bytes).unwrap_or(i64::MAX));
        }
    }
    if messages.is_empty() {
        return Ok(());
    }
    diesel::sql_query(
        "INSERT INTO attachments (message_id, index, blob_key, size_bytes) \
         SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::bigint[])",
    )
    .bind::<Array<Text>, _>(messages)
    .bind::<Array<Integer>, _>(indexes)
    .bind::<Array<Nullable<Text>>, _>(keys)
    .bind::<Array<BigInt>, _>(sizes)
    .execute(conn)
    .await?;
    Ok(())
}

/// One upsert for the batch: the received counters summed per shard.
async fn add_received(
    conn: &mut AsyncPgConnection,
    stored: &[&NewMessage],
) -> Result<(), diesel::result::Error> {
    let mut counters: BTreeMap<(&str, DateTime<Utc>, i16), i64> = BTreeMap::new();
    for new in stored {
        let message = &new.message;
        *counters
            .entry((
                message.account.as_str(),
                new.window_start.as_datetime(),
                crate::messages::received_shard(&message.id),
            ))
            .or_default() += 1;
    }
    let mut accounts = Vec::new();
    let mut windows = Vec::new();
    let mut shards = Vec::new();
    let mut counts = Vec::new();
    for ((account, window, shard), count) in counters {
        accounts.push(account);
        windows.push(window);
        shards.push(shard);
        counts.push(count);
    }
    diesel::sql_query(
        "INSERT INTO usage_counters (account_id, counter, window_start, shard, used) \
         SELECT c.account_id, $1, c.window_start, c.shard, c.used \
         FROM unnest($2::text[], $3::timestamptz[], $4::smallint[], $5::bigint[]) \
           AS c(account_id, window_start, shard, used) \
         ON CONFLICT (account_id, counter, window_start, shard) \
         DO UPDATE SET used = usage_counters.used + EXCLUDED.used",
    )
    .bind::<Text, _>(RECEIVED_COUNTER)
    .bind::<Array<Text>, _>(accounts)
    .bind::<Array<Timestamptz>, _>(windows)
    .bind::<Array<SmallInt>, _>(shards)
    .bind::<Array<BigInt>, _>(counts)
    .execute(conn)
    .await?;
    Ok(())
}

/// Delivered at commit: waiters on these addresses wake up.
async fn notify_new_mail(
    conn: &mut AsyncPgConnection,
    stored: &[&NewMessage],
) -> Result<(), diesel::result::Error> {
    let woken: BTreeSet<&str> = stored
        .iter()
        .filter(|new| !new.held && !new.message.outgoing)
        .map(|new| new.message.address.as_str())
        .collect();
    let payloads = mail_payloads(woken);
    if payloads.is_empty() {
        return Ok(());
    }
    diesel::sql_query("SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload")
        .bind::<Text, _>(MAIL_CHANNEL)
        .bind::<Array<Text>, _>(payloads)
        .execute(conn)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use chrono::TimeDelta;
    use diesel::{ExpressionMethods, QueryDsl};
    use sealpost_kernel::{AccountId, AddressId, MessageId, Timestamp};
    use sealpost_messages::folders::Folder;
    use sealpost_messages::store::{Message, MessageRepository, Reader, WaitFrom};
    use sealpost_seal::SealedBox;

    use super::*;
    use crate::schema::{accounts, addresses, messages};
    use crate::test_db::{database_url, drop_database, fresh_store};

    const ACCOUNT: &str = "acct_batches1";
    const ADDRESS: &str = "ibx_batches1";

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_datetime(
            DateTime::<Utc>::UNIX_EPOCH + TimeDelta::days(20_000) + TimeDelta::seconds(seconds),
        )
    }

    /// A store whose database holds one account with one address.
    async fn store_with_address(database: &str) -> PgStore {
        let store = fresh_store(database).await;
        let mut conn = store.conn().await.unwrap();
        diesel::insert_into(accounts::table)
            .values((
                accounts::id.eq(ACCOUNT),
                accounts::auth_public_key.eq(vec![0_u8; 32]),
                accounts::auth_verifier_hash.eq(vec![0_u8; 32]),
                accounts::created_at.eq(at(0).as_datetime()),
            ))
            .execute(&mut conn)
            .await
            .unwrap();
        diesel::insert_into(addresses::table)
            .values((
                addresses::id.eq(ADDRESS),
                addresses::account_id.eq(ACCOUNT),
                addresses::email_address.eq("batches@mail.localhost"),
                addresses::domain.eq("mail.localhost"),
                addresses::retention_days.eq(30_i16),
                addresses::public_key.eq(Some(vec![7_u8; 32])),
                addresses::created_at.eq(at(0).as_datetime()),
            ))
            .execute(&mut conn)
            .await
            .unwrap();
        drop(conn);
        store
    }

    fn new_message(received_at: Timestamp) -> NewMessage {
        NewMessage {
            message: Message {
                id: MessageId::generate(),
                account: AccountId::from_trusted(ACCOUNT.to_owned()),
                address: AddressId::from_trusted(ADDRESS.to_owned()),
                received_at,
                read: false,
                size_bytes: 10,
                key_epoch: 0,
                content: SealedBox {
                    v: 2,
                    epk: vec![1; 32],
                    n: vec![2; 12],
                    c: vec![3; 10],
                    t: vec![4; 16],
                },
                folder: Folder::Inbox,
                starred: false,
                outgoing: false,
            },
            attachments: Vec::new(),
            held: false,
            window_start: at(0),
            records: Records::new(),
            owner: "instance-batches".to_owned(),
        }
    }

    /// `new_message` with `bytes` of ciphertext.
    fn message_of(bytes: usize) -> NewMessage {
        let mut new = new_message(at(0));
        new.message.content.c = vec![0; bytes];
        new
    }

    #[test]
    fn batches_are_bounded_by_sealed_bytes_as_well_as_by_count() {
        let batcher = Batcher::default();
        let queue = |sizes: &[usize]| {
            for &size in sizes {
                batcher
                    .queue()
                    .push((message_of(size), oneshot::channel().0));
            }
        };
        let batch_sizes = || {
            std::iter::from_fn(|| {
                let batch = batcher.take_batch();
                (!batch.is_empty()).then_some(batch.len())
            })
            .collect::<Vec<_>>()
        };
        let mib = 1024 * 1024;
        queue(&[mib; 10]);
        assert_eq!(batch_sizes(), [4, 4, 2]);
        // Larger than the bound: a batch of its own, never stuck.
        queue(&[10, 5 * mib, 10]);
        assert_eq!(batch_sizes(), [1, 1, 1]);
        queue(&[10; MAX_BATCH + 1]);
        assert_eq!(batch_sizes(), [MAX_BATCH, 1]);
    }

    /// A connection of the test's own, holding the commit clock's row lock
    /// in an open transaction: every batch stops at its messages' insert.
    async fn hold_commit_clock(database: &str) -> AsyncPgConnection {
        let mut conn = AsyncPgConnection::establish(&database_url(database))
            .await
            .unwrap();
        for statement in ["BEGIN", "SELECT seq FROM commit_clock FOR UPDATE"] {
            diesel::sql_query(statement)
                .execute(&mut conn)
                .await
                .unwrap();
        }
        conn
    }

    async fn release_commit_clock(mut conn: AsyncPgConnection) {
        diesel::sql_query("COMMIT")
            .execute(&mut conn)
            .await
            .unwrap();
    }

    /// Waits until `count` backends of `database` wait on a lock.
    async fn until_waiting_on_locks(store: &PgStore, database: &str, count: i64) {
        #[derive(QueryableByName)]
        struct Waiting {
            #[diesel(sql_type = BigInt)]
            waiting: i64,
        }
        for _ in 0..200 {
            let mut conn = store.conn().await.unwrap();
            let Waiting { waiting } = diesel::sql_query(
                "SELECT count(*) AS waiting FROM pg_stat_activity \
                 WHERE datname = $1 AND wait_event_type = 'Lock'",
            )
            .bind::<Text, _>(database)
            .get_result(&mut conn)
            .await
            .unwrap();
            if waiting >= count {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{count} commits never reached the commit clock");
    }

    async fn stored_ids(store: &PgStore) -> Vec<String> {
        let mut conn = store.conn().await.unwrap();
        messages::table
            .select(messages::id)
            .order(messages::id)
            .load(&mut conn)
            .await
            .unwrap()
    }

    async fn distinct_commit_numbers(store: &PgStore) -> i64 {
        #[derive(QueryableByName)]
        struct Numbers {
            #[diesel(sql_type = BigInt)]
            numbers: i64,
        }
        let mut conn = store.conn().await.unwrap();
        let Numbers { numbers } =
            diesel::sql_query("SELECT count(DISTINCT commit_seq) AS numbers FROM messages")
                .get_result(&mut conn)
                .await
                .unwrap();
        numbers
    }

    /// Commits that arrive while others are in flight are written in shared
    /// transactions: each batch has one commit number, so fewer numbers
    /// than messages means fewer transactions than messages.
    #[tokio::test(flavor = "multi_thread")]
    async fn concurrent_commits_share_transactions() {
        const DATABASE: &str = "sealpost_store_pg_group_commit_batches";
        const MESSAGES: usize = 40;
        let store = store_with_address(DATABASE).await;
        let clock = hold_commit_clock(DATABASE).await;
        let news: Vec<NewMessage> = (0..MESSAGES).map(|n| new_message(at(n as i64))).collect();
        let mut expected: Vec<String> = news.iter().map(|new| new.message.id.to_string()).collect();
        expected.sort();
        let commits: Vec<_> = news
            .into_iter()
            .map(|new| {
                let store = store.clone();
                tokio::spawn(async move { store.commit(new).await })
            })
            .collect();
        // Every committer stopped at the clock; the others queue behind them.
        until_waiting_on_locks(&store, DATABASE, COMMITTERS as i64).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        release_commit_clock(clock).await;
        for commit in commits {
            assert_eq!(commit.await.unwrap().unwrap(), Commit::Done);
        }
        assert_eq!(stored_ids(&store).await, expected);
        let batches = distinct_commit_numbers(&store).await;
        assert!(
            batches <= 2 * COMMITTERS as i64,
            "{MESSAGES} messages in {batches} transactions"
        );
        let received = store
            .counter(
                &AccountId::from_trusted(ACCOUNT.to_owned()),
                RECEIVED_COUNTER,
                at(0),
            )
            .await
            .unwrap();
        assert_eq!(received, MESSAGES as u64);
        drop(store);
        drop_database(DATABASE).await;
    }

    /// The commit runs in a task of its own: a caller dropped mid-batch (a
    /// closed SMTP session) cancels nothing. Its message is still committed
    /// (its blobs are kept with it), and every other caller is answered
    /// `Done` for a message that is stored.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_caller_dropped_mid_commit_cancels_nothing() {
        const DATABASE: &str = "sealpost_store_pg_group_commit_cancel";
        let store = store_with_address(DATABASE).await;
        let clock = hold_commit_clock(DATABASE).await;
        let first = new_message(at(0));
        let first_id = first.message.id.to_string();
        let dropped = {
            let store = store.clone();
            tokio::spawn(async move { store.commit(first).await })
        };
        // The first caller's batch is inside its transaction.
        until_waiting_on_locks(&store, DATABASE, 1).await;
        let others: Vec<NewMessage> = (1..8).map(|n| new_message(at(n))).collect();
        let other_ids: Vec<String> = others
            .iter()
            .map(|new| new.message.id.to_string())
            .collect();
        let answers: Vec<_> = others
            .into_iter()
            .map(|new| {
                let store = store.clone();
                tokio::spawn(async move { store.commit(new).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(200)).await;
        dropped.abort();
        assert!(dropped.await.unwrap_err().is_cancelled());
        release_commit_clock(clock).await;
        for answer in answers {
            assert_eq!(answer.await.unwrap().unwrap(), Commit::Done);
        }
        let stored = stored_ids(&store).await;
        for id in other_ids.iter().chain([&first_id]) {
            assert!(
                stored.contains(id),
                "{id} answered or committed but not stored"
            );
        }
        assert_eq!(stored.len(), 8);
        drop(store);
        drop_database(DATABASE).await;
    }

    /// Issue 15: an address deleted between a message's RCPT and its
    /// commit. Its message is answered `RecipientGone` and writes nothing
    /// (its blob stays pending for its delivery to delete), and the other
    /// messages of the same transaction are committed; before, the foreign
    /// key failed the whole batch and every sender got 451.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_message_to_an_address_deleted_before_its_commit_is_skipped_in_its_batch() {
        const DATABASE: &str = "sealpost_store_pg_group_commit_gone";
        const GONE: &str = "ibx_batches2";
        let store = store_with_address(DATABASE).await;
        let mut conn = store.conn().await.unwrap();
        diesel::insert_into(addresses::table)
            .values((
                addresses::id.eq(GONE),
                addresses::account_id.eq(ACCOUNT),
                addresses::email_address.eq("gone@mail.localhost"),
                addresses::domain.eq("mail.localhost"),
                addresses::retention_days.eq(30_i16),
                addresses::public_key.eq(Some(vec![7_u8; 32])),
                addresses::created_at.eq(at(0).as_datetime()),
            ))
            .execute(&mut conn)
            .await
            .unwrap();
        let first = new_message(at(1));
        let mut to_gone = new_message(at(2));
        to_gone.message.address = AddressId::from_trusted(GONE.to_owned());
        let blob = format!("{}/0", to_gone.message.id);
        to_gone
            .attachments
            .push(sealpost_messages::store::StoredAttachment {
                index: 0,
                blob_key: Some(blob.clone()),
                size_bytes: 3,
            });
        store
            .register_pending_blobs(vec![blob.clone()], &to_gone.owner, at(2))
            .await
            .unwrap();
        let last = new_message(at(3));
        // The address goes after its RCPT, before the commit.
        diesel::delete(addresses::table.filter(addresses::id.eq(GONE)))
            .execute(&mut conn)
            .await
            .unwrap();
        drop(conn);

        let mut expected = vec![first.message.id.to_string(), last.message.id.to_string()];
        expected.sort();
        let outcomes = store
            .commit_batch(&[first, to_gone, last])
            .await
            .expect("the batch commits without the gone address's message");
        assert_eq!(
            outcomes,
            vec![Commit::Done, Commit::RecipientGone, Commit::Done]
        );
        assert_eq!(stored_ids(&store).await, expected);
        let pending = store.pending_blobs().await.unwrap();
        assert_eq!(
            pending.iter().map(|p| p.key.as_str()).collect::<Vec<_>>(),
            vec![blob.as_str()],
            "the gone message's blob is still pending, for its delivery to delete"
        );
        let received = store
            .counter(
                &AccountId::from_trusted(ACCOUNT.to_owned()),
                RECEIVED_COUNTER,
                at(0),
            )
            .await
            .unwrap();
        assert_eq!(received, 2, "only what was stored is counted");
        // Through the queue, alone: answered, not failed.
        let mut alone = new_message(at(4));
        alone.message.address = AddressId::from_trusted(GONE.to_owned());
        assert_eq!(store.commit(alone).await.unwrap(), Commit::RecipientGone);
        drop(store);
        drop_database(DATABASE).await;
    }

    /// Issue 15's case: message A's delivery began first (a large message)
    /// but committed after B. A waiter that already saw B must still get A;
    /// `received_at` order (the old cursor) would have skipped it.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_waiter_past_a_later_message_still_gets_an_earlier_one_committed_after_it() {
        const DATABASE: &str = "sealpost_store_pg_wait_commit_order";
        let store = store_with_address(DATABASE).await;
        let reader = Reader {
            account: AccountId::from_trusted(ACCOUNT.to_owned()),
            device: None,
        };
        let address = AddressId::from_trusted(ADDRESS.to_owned());
        let now = at(3_600);
        let newer = |after: WaitFrom| {
            let (store, reader, address) = (store.clone(), reader.clone(), address.clone());
            async move {
                store
                    .newer_than(&reader, &address, now, after, 50)
                    .await
                    .unwrap()
            }
        };
        let started_first = new_message(at(10));
        let started_later = new_message(at(20));
        let (a, b) = (
            started_first.message.id.clone(),
            started_later.message.id.clone(),
        );

        let before_both = store.commit_position().await.unwrap();
        assert_eq!(store.commit(started_later).await.unwrap(), Commit::Done);
        let seen = newer(WaitFrom::Start).await;
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].message.id, b);
        let cursor = seen[0].position.clone();

        assert_eq!(store.commit(started_first).await.unwrap(), Commit::Done);
        let next = newer(WaitFrom::Committed(cursor.clone())).await;
        assert_eq!(
            next.iter()
                .map(|arrived| &arrived.message.id)
                .collect::<Vec<_>>(),
            vec![&a]
        );
        assert!(next[0].position.seq > cursor.seq);
        // The cursor of `received_at` order misses it.
        let by_received = newer(WaitFrom::Received(sealpost_kernel::Cursor {
            at: at(20),
            id: b.to_string(),
        }))
        .await;
        assert!(by_received.is_empty());
        // Nothing after A; and `now` taken before both counts both, in
        // commit order.
        assert!(
            newer(WaitFrom::Committed(next[0].position.clone()))
                .await
                .is_empty()
        );
        let since = newer(WaitFrom::Committed(before_both)).await;
        assert_eq!(
            since
                .iter()
                .map(|arrived| &arrived.message.id)
                .collect::<Vec<_>>(),
            vec![&b, &a]
        );
        let now_position = store.commit_position().await.unwrap();
        assert!(newer(WaitFrom::Committed(now_position)).await.is_empty());
        drop(store);
        drop_database(DATABASE).await;
    }
}
