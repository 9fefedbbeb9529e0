//! Group commit of delivered messages: `commit` calls that arrive while
//! other commits are running are written together, one transaction and one
//! WAL flush for all of them, with up to [`COMMITTERS`] such transactions
//! in flight at once.
//!
//! A caller queues its message and spawns a committer task when none is
//! running, or when more is queued than the running ones take in their
//! next batches (a full [`MAX_BATCH`] each), up to [`COMMITTERS`]; then it
//! only waits for its answer. One committer whose batches grow while it
//! commits costs less a message than several with small batches (each
//! batch's statements, round trips and WAL flush are a fixed cost:
//! docs/benchmarks.md); more join only when one cannot keep up. The
//! commit runs in that task, never in the caller's future, so a caller
//! dropped mid-commit (a closed SMTP session, a cancelled HTTP request)
//! cannot cancel a transaction that other callers wait on. A committer
//! takes up to [`MAX_BATCH`] queued messages, commits them, answers each,
//! and goes on while messages are queued; then it gives its slot back and
//! looks once more, since a caller that queued meanwhile and found every
//! slot taken counts on that look. A lone message is committed at once:
//! nothing waits for a batch to fill; under load the queue grows while
//! every committer is busy, and so do the batches.
//!
//! Commit order (see docs/architecture.md and the migration
//! `2026-11-27-000101_commit_order_parallel`): a batch first takes its
//! number from the commit clock and records it in flight, in a short
//! transaction of its own (asynchronous commit: it makes nothing durable
//! that a later durable commit does not flush first). Its own transaction
//! then deletes that in-flight row first and holds its lock until COMMIT:
//! the messages and the end of "in flight" become visible together, and
//! readers read only below the smallest number still in flight. No lock
//! is held from one batch's number to its COMMIT, so batches commit in
//! parallel.
//!
//! One batch, in one transaction: the in-flight row ended, the accounts and
//! addresses written to locked `FOR KEY SHARE` and re-checked (a message
//! whose address or account was deleted since its RCPT is answered
//! `Commit::RecipientGone`; one whose account was suspended, whose key
//! changed, or whose address was paused or resumed since its RCPT is
//! answered `Commit::RecipientChanged`; neither writes anything), the
//! pending rows of every other message's blobs
//! locked and cleared (a message some of whose blobs recovery took over is
//! answered `Commit::TakenOver` and writes nothing; no savepoints: such
//! messages are left out of every insert, so they cannot fail the batch),
//! activity and events (one statement), the messages with the batch's
//! commit number and the accounts' stored bytes (one), the received
//! counters summed per shard and the `pg_notify` (one), the attachments,
//! and `COMMIT`. Statements that need no answer from one another are sent
//! together (pipelined): the number's taking (its own transaction, the
//! number left in the session for the next statement), `BEGIN`, the
//! in-flight row's end and the owners' locks; then every insert and
//! `COMMIT`; so a batch takes two round trips to PostgreSQL, not one a
//! statement (ten).
//! Every statement, `BEGIN` and `COMMIT` included, is prepared once per
//! connection and goes through its statement cache, so they reach
//! PostgreSQL in the order they are polled (see [`commit`]). Any failure
//! fails the whole batch, and every message of it gets the error: its
//! client is told to try again, none is told it was stored; its number is
//! taken out of flight at once.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{
    Array, BigInt, Bool, Bytea, Integer, Nullable, SmallInt, Text, Timestamptz,
};
use diesel_async::pooled_connection::deadpool::Object;
use diesel_async::{AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use futures_util::future::{try_join, try_join3, try_join4};
use sealpost_activity::Records;
use sealpost_kernel::StoreError;
use sealpost_messages::store::{Commit, Message, NewMessage, RECEIVED_COUNTER};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::notify::{MAIL_CHANNEL, mail_payloads};
use crate::prepared::PrepareOnce;
use crate::records::{box_to_stored, write_numbered_records};
use crate::{PgStore, db_error};

/// Batches in flight at once, each on its own pooled connection.
pub(crate) const COMMITTERS: usize = 4;
/// Most messages in one transaction.
pub(crate) const MAX_BATCH: usize = 64;
/// Most sealed content in one transaction (ciphertext bytes). A batch holds
/// each message's box, and its copy in the insert's bound parameters, until
/// COMMIT: large mail makes smaller batches, so the batches in flight stay
/// within a few times this, however large the messages. A message larger
/// than this is a batch of its own.
pub(crate) const MAX_BATCH_BYTES: usize = 1024 * 1024;

/// Takes the next commit number with the commit clock's row lock held
/// until the transaction ends: for held mail released inside a settlement
/// (billing.rs), whose numbers need no in-flight row. Batches wait for it
/// only to take their own numbers.
pub(crate) const NEXT_COMMIT_SEQ: &str = "UPDATE commit_clock SET seq = seq + 1 RETURNING seq";

/// A batch's number, taken and recorded in flight in one statement, its
/// own transaction, and left in the session's `sealpost.batch_number` for
/// the batch's first statement ([`end_own_in_flight`]) to read: so the
/// batch needs no answer from it and sends it in the same round trip as
/// its `BEGIN` and first statements. Asynchronous commit: the clock's row
/// lock is held for the statement alone, not for a WAL flush; a number
/// lost in a crash was never in any reader's position (positions stop
/// below what is in flight) and no batch committed under it (its durable
/// COMMIT would have flushed this first).
const TAKE_COMMIT_NUMBER: &str = "WITH relaxed AS \
       (SELECT set_config('synchronous_commit', 'off', true)), \
     clock AS (UPDATE commit_clock SET seq = seq + 1 RETURNING seq), \
     recorded AS (INSERT INTO commit_in_flight (seq) \
       SELECT clock.seq FROM clock, relaxed RETURNING seq) \
     SELECT set_config('sealpost.batch_number', seq::text, false) FROM recorded";

/// How far waits may read: every number below the smallest still in
/// flight, or every number the clock gave when none is. A scalar subquery,
/// so it is read in the same snapshot as the rows it bounds.
pub(crate) const COMMITTED_UP_TO: &str = "(SELECT coalesce(\
       (SELECT min(seq) - 1 FROM commit_in_flight), \
       (SELECT seq FROM commit_clock)))";

/// [`COMMITTED_UP_TO`] as an expression of the query builder. Not a
/// `dsl::sql` fragment: diesel never caches a statement holding one, so a
/// wait's every look was parsed and planned anew; this text is fixed, so
/// the statements holding it stay prepared per connection.
#[derive(Debug, Clone, Copy, diesel::query_builder::QueryId, diesel::expression::ValidGrouping)]
pub(crate) struct CommittedUpTo;

impl diesel::Expression for CommittedUpTo {
    type SqlType = BigInt;
}

// A scalar subquery over tables of its own: it appears on any query.
impl<QS> diesel::AppearsOnTable<QS> for CommittedUpTo {}

impl<QS> diesel::SelectableExpression<QS> for CommittedUpTo {}

impl diesel::query_builder::QueryFragment<diesel::pg::Pg> for CommittedUpTo {
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> diesel::QueryResult<()> {
        out.push_sql(COMMITTED_UP_TO);
        Ok(())
    }
}

/// How many rows (`shard`s) an account's delivery counters (`received` in
/// `usage_counters`, and `stored_bytes`) are spread over. A transaction
/// that adds to a counter row holds its lock until COMMIT, so each batch
/// adds all its messages on one shard, the next of this process's round
/// (from a random start, so that processes seldom meet): the batches one
/// process has in flight never wait on each other's counter rows. Readers
/// sum the shards.
pub(crate) const COUNTER_SHARDS: u16 = 32;

/// An in-flight row older than this whose lock no batch holds is deleted.
/// A running batch holds its row's lock from its first statement on, so
/// only a batch that crashed, or failed and could not take its number back,
/// leaves one; until it goes, waits stop below it.
const ABANDONED_AFTER: Duration = Duration::from_secs(10);
/// How often one process looks for abandoned numbers (a statement that
/// finds none writes nothing).
const RECLAIM_EVERY: Duration = Duration::from_secs(1);

/// A start for the shard round that differs between processes.
fn random_start() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    // Below COUNTER_SHARDS: always fits.
    (RandomState::new().hash_one(std::process::id()) % u64::from(COUNTER_SHARDS)) as u16
}

type Answer = oneshot::Sender<Result<Commit, StoreError>>;

/// The queue and the committer slots, shared by every clone of a `PgStore`.
pub(crate) struct Batcher {
    queue: Mutex<Vec<(NewMessage, Answer)>>,
    committers: Arc<Semaphore>,
    last_reclaim: Mutex<Option<Instant>>,
    /// The round of counter shards (see [`COUNTER_SHARDS`]).
    next_shard: AtomicU16,
}

impl Default for Batcher {
    fn default() -> Self {
        Self {
            queue: Mutex::new(Vec::new()),
            committers: Arc::new(Semaphore::new(COMMITTERS)),
            last_reclaim: Mutex::new(None),
            next_shard: AtomicU16::new(random_start()),
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

    /// The counter shard of the next transaction that adds to the
    /// delivery counters.
    pub(crate) fn next_shard(&self) -> i16 {
        // Below COUNTER_SHARDS (32): always fits.
        (self.next_shard.fetch_add(1, Ordering::Relaxed) % COUNTER_SHARDS) as i16
    }

    /// Whether a caller that has just queued, leaving `queued` messages,
    /// should start a committer: none is running, or the running ones
    /// would leave some of the queue for a later batch. A committer that is
    /// finishing looks at the queue again after giving its slot back, so a
    /// message queued meanwhile is never left without one.
    fn wants_committer(&self, queued: usize) -> bool {
        let running = COMMITTERS.saturating_sub(self.committers.available_permits());
        running == 0 || queued > running.saturating_mul(MAX_BATCH)
    }

    fn free_slot(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.committers).try_acquire_owned().ok()
    }

    /// Whether this process should look for abandoned numbers now (at most
    /// once per [`RECLAIM_EVERY`]).
    fn reclaim_due(&self) -> bool {
        let mut last = self
            .last_reclaim
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if last.is_some_and(|at| now.duration_since(at) < RECLAIM_EVERY) {
            return false;
        }
        *last = Some(now);
        true
    }
}

impl PgStore {
    /// Commits one message, in a batch with those committed at the same time.
    pub(crate) async fn group_commit(&self, new: NewMessage) -> Result<Commit, StoreError> {
        let (answer, answered) = oneshot::channel();
        let queued = {
            let mut queue = self.batcher.queue();
            queue.push((new, answer));
            queue.len()
        };
        if self.batcher.wants_committer(queued)
            && let Some(slot) = self.batcher.free_slot()
        {
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
        let started = Instant::now();
        let committed = self.commit_batch(&news).await;
        metrics::histogram!(sealpost_metrics::names::COMMIT_SECONDS)
            .record(started.elapsed().as_secs_f64());
        metrics::histogram!(sealpost_metrics::names::COMMIT_BATCH_SIZE).record(news.len() as f64);
        match committed {
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
        if self.batcher.reclaim_due() {
            reclaim_abandoned_numbers(&mut conn)
                .await
                .map_err(db_error)?;
        }
        let shard = self.batcher.next_shard();
        let error = match write_and_commit(&conn, news, shard).await {
            Ok(outcomes) => return Ok(outcomes),
            Err(error) => error,
        };
        // A statement failed (the transaction is open, or was ended by the
        // COMMIT sent behind it: PostgreSQL rolls an aborted transaction
        // back at COMMIT) or COMMIT did: ROLLBACK either way (only a
        // warning when none is open).
        if rollback(&conn).await.is_err() {
            // Never back in the pool inside a transaction. Its number is
            // reclaimed as abandoned.
            drop(Object::take(conn));
            return Err(db_error(error));
        }
        // Out of flight now rather than when reclaimed: waits stop below it
        // meanwhile (already gone if the batch ended it). If this fails
        // too, reclaiming deletes it.
        let _ = end_own_in_flight(&conn).await;
        Err(db_error(error))
    }
}

/// The batch's statements in one transaction, committed. Statements that
/// do not wait on each other's answers are sent together (pipelined): two
/// round trips a batch, three with pending blobs to claim.
///
/// The first sends its number's taking (a transaction of its own),
/// `BEGIN`, the in-flight row's end and the owners' locks together; the
/// last every insert and then `COMMIT`. They reach PostgreSQL in the order
/// they are polled here, prepared or not (see [`commit`]), and PostgreSQL
/// runs them in that order: the number is committed before `BEGIN`, the
/// attachments' foreign key finds their messages, and an insert that fails
/// aborts the transaction, which the `COMMIT` behind it rolls back.
/// diesel-async's `transaction` would await `BEGIN` alone. Had the number
/// or `BEGIN` failed, the others fail or run on their own, commit nothing
/// under a number, and the batch fails.
async fn write_and_commit(
    conn: &AsyncPgConnection,
    news: &[NewMessage],
    shard: i16,
) -> Result<Vec<Commit>, diesel::result::Error> {
    let ((), (), (number, mut outcomes)) = try_join3(
        take_commit_number(conn),
        begin(conn),
        try_join(end_own_in_flight(conn), lock_owners(conn, news)),
    )
    .await?;
    claim_pending_blobs(conn, news, &mut outcomes).await?;
    let stored: Vec<&NewMessage> = news
        .iter()
        .zip(&outcomes)
        .filter(|(_, outcome)| **outcome == Commit::Done)
        .map(|(new, _)| new)
        .collect();
    if stored.is_empty() {
        commit(conn).await?;
        return Ok(outcomes);
    }
    let mut records = Records::new();
    for new in &stored {
        records.extend(new.records.clone());
    }
    let rows: Vec<(&Message, bool, u64)> = stored
        .iter()
        .map(|new| (&new.message, new.held, sealed_attachment_bytes(new)))
        .collect();
    try_join(
        try_join4(
            write_numbered_records(conn, &records, number),
            insert_messages(conn, &rows, CommitNumber::Taken(number), shard),
            count_received_and_notify(conn, &stored, shard),
            insert_attachments(conn, &stored),
        ),
        commit(conn),
    )
    .await?;
    Ok(outcomes)
}

/// Begins the batch's transaction, its statements planned generically:
/// PostgreSQL's default chose a custom plan for [`LOCK_OWNERS`] on every
/// batch (its generic estimate, ten array elements, costs more than one),
/// and planning it cost seven times its running (docs/benchmarks.md). Its
/// generic plan reads the three tables' primary keys; the inserts' plans
/// were generic already (tests
/// `the_generic_plan_of_the_owners_lock_reads_primary_keys` and
/// `batches_never_custom_plan_the_owners_lock`). Both statements prepared,
/// like every other of the batch (see [`commit`]).
async fn begin(conn: &AsyncPgConnection) -> Result<(), diesel::result::Error> {
    try_join(
        run_prepared(conn, "BEGIN"),
        run_prepared(conn, "SET LOCAL plan_cache_mode = force_generic_plan"),
    )
    .await?;
    Ok(())
}

/// Commits the batch's transaction, sent behind its inserts without
/// waiting for their answers.
///
/// Why the batch's statements reach PostgreSQL in the order they are
/// polled: a statement diesel-async has not yet prepared on a connection
/// is sent only after its prepare's round trip, so a statement in the
/// simple query protocol (no prepare) polled after it would overtake it;
/// a `COMMIT` that overtook an insert would leave the insert to run
/// outside the transaction. So every statement of the batch, `BEGIN` and
/// `COMMIT` included, goes through the connection's statement cache,
/// whose lock (tokio's, granted in request order) each statement takes
/// when first polled, holds through its prepare if it needs one, and gives
/// up only as it sends itself: they are sent in the order they asked for
/// the lock, prepared or not (tests
/// `a_batch_failing_at_its_last_insert_commits_nothing`, and
/// `a_batch_s_first_statements_run_inside_its_transaction` for the
/// number, `BEGIN` and the first statements).
async fn commit(conn: &AsyncPgConnection) -> Result<(), diesel::result::Error> {
    run_prepared(conn, "COMMIT").await
}

/// Runs `sql`, a statement without parameters or rows to read, through the
/// connection's statement cache (see [`commit`] for why not in the simple
/// query protocol).
async fn run_prepared(
    mut conn: &AsyncPgConnection,
    sql: &'static str,
) -> Result<(), diesel::result::Error> {
    diesel::sql_query(sql).prepared().execute(&mut conn).await?;
    Ok(())
}

/// Awaited alone after everything else of the batch: the simple query
/// protocol will do.
async fn rollback(mut conn: &AsyncPgConnection) -> Result<(), diesel::result::Error> {
    conn.batch_execute("ROLLBACK").await
}

#[derive(QueryableByName)]
struct Seq {
    #[diesel(sql_type = BigInt)]
    seq: i64,
}

/// Takes a number and records it in flight (see [`TAKE_COMMIT_NUMBER`]).
pub(crate) async fn take_commit_number(
    conn: &AsyncPgConnection,
) -> Result<(), diesel::result::Error> {
    run_prepared(conn, TAKE_COMMIT_NUMBER).await
}

/// The batch transaction's first statement: deletes the in-flight row of
/// the number this session took last and so holds that row's lock until
/// COMMIT (reclaiming skips locked rows); the number. A row already gone
/// was reclaimed as abandoned, and readers may be past it: the batch fails
/// and its senders try again.
pub(crate) async fn end_own_in_flight(
    mut conn: &AsyncPgConnection,
) -> Result<i64, diesel::result::Error> {
    let ended: Vec<Seq> = diesel::sql_query(
        "DELETE FROM commit_in_flight WHERE seq = \
         current_setting('sealpost.batch_number', true)::bigint RETURNING seq",
    )
    .prepared()
    .load(&mut conn)
    .await?;
    match ended.as_slice() {
        [Seq { seq }] => Ok(*seq),
        _ => Err(diesel::result::Error::QueryBuilderError(
            "this batch's commit number was reclaimed before its batch began".into(),
        )),
    }
}

/// Deletes in-flight rows older than [`ABANDONED_AFTER`] that no running
/// batch holds. Durable (the session's synchronous commit): a reader may
/// read past them once they are gone, so their going must survive a crash.
pub(crate) async fn reclaim_abandoned_numbers(
    conn: &mut AsyncPgConnection,
) -> Result<usize, diesel::result::Error> {
    diesel::sql_query(
        "DELETE FROM commit_in_flight WHERE seq IN (SELECT seq FROM commit_in_flight \
         WHERE registered_at < now() - make_interval(secs => $1) \
         FOR UPDATE SKIP LOCKED)",
    )
    .bind::<diesel::sql_types::Double, _>(ABANDONED_AFTER.as_secs_f64())
    .prepared()
    .execute(conn)
    .await
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
    mut conn: &AsyncPgConnection,
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
    .prepared()
    .load::<BlobKey>(&mut conn)
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
            .prepared()
            .execute(&mut conn)
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
    /// An account suspended, or an address without a key: takes no mail.
    #[diesel(sql_type = Bool)]
    refuses: bool,
    /// An address's key epoch (`NULL` for accounts).
    #[diesel(sql_type = Nullable<Integer>)]
    key_epoch: Option<i32>,
    /// An address paused (its mail is held); false for accounts.
    #[diesel(sql_type = Bool)]
    paused: bool,
}

/// What the commit finds of an account or an address.
struct Owner {
    refuses: bool,
    key_epoch: Option<i32>,
    paused: bool,
}

/// The batch's accounts (`$1`) and addresses (`$2`), locked `FOR KEY
/// SHARE` in id order, with what the commit re-checks.
const LOCK_OWNERS: &str = "SELECT 'account' AS kind, a.id, \
        EXISTS (SELECT 1 FROM account_suspensions s WHERE s.account_id = a.id) AS refuses, \
        NULL::int AS key_epoch, false AS paused \
     FROM (SELECT id FROM accounts WHERE id = ANY($1) ORDER BY id FOR KEY SHARE) a \
     UNION ALL \
     SELECT 'address' AS kind, b.id, b.public_key IS NULL AS refuses, b.key_epoch, \
        b.paused_at IS NOT NULL AS paused \
     FROM (SELECT id, public_key, key_epoch, paused_at FROM addresses WHERE id = ANY($2) \
         ORDER BY id FOR KEY SHARE) b";

/// Takes now the key-share locks the inserts' foreign keys would take
/// under the commit clock (see the module comment), and answers which
/// messages can be written. The delivery sealed each message on a record
/// read earlier (at RCPT, or at DATA), and several ingests may run: a
/// message whose address or account was deleted since (the delete
/// committed first; a delete that comes later waits for this lock, and
/// then deletes the message with the address) is `RecipientGone`, one
/// whose account was suspended, whose address's key changed or went, or
/// whose address was paused or resumed (the message is held exactly while
/// its address is paused) is `RecipientChanged`; either writes nothing,
/// while the rest of the batch goes on. Its pending blobs are left for its
/// delivery to delete.
async fn lock_owners(
    mut conn: &AsyncPgConnection,
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
    let owners: HashMap<(String, String), Owner> = diesel::sql_query(LOCK_OWNERS)
        .bind::<Array<Text>, _>(accounts.into_iter().collect::<Vec<_>>())
        .bind::<Array<Text>, _>(addresses.into_iter().collect::<Vec<_>>())
        .prepared()
        .load::<OwnerRow>(&mut conn)
        .await?
        .into_iter()
        .map(|row| {
            let owner = Owner {
                refuses: row.refuses,
                key_epoch: row.key_epoch,
                paused: row.paused,
            };
            ((row.kind, row.id), owner)
        })
        .collect();
    let find = |kind: &str, id: &str| owners.get(&(kind.to_owned(), id.to_owned()));
    Ok(news
        .iter()
        .map(|new| {
            let message = &new.message;
            let (Some(account), Some(address)) = (
                find("account", message.account.as_str()),
                find("address", message.address.as_str()),
            ) else {
                return Commit::RecipientGone;
            };
            let sealed_epoch = i32::try_from(message.key_epoch).ok();
            if account.refuses
                || address.refuses
                || address.key_epoch != sealed_epoch
                || address.paused != new.held
            {
                Commit::RecipientChanged
            } else {
                Commit::Done
            }
        })
        .collect())
}

/// Where inserted messages stand in the commit order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CommitNumber {
    /// The batch's number, in flight until its COMMIT: delivered mail,
    /// which waits return.
    Taken(i64),
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
/// storage (its content box's bytes and its sealed attachments), and the
/// accounts' stored-bytes counters grow by as much, in the same statement
/// (the insert a data-modifying `WITH`; the counters' upsert its main
/// statement, each account's sum once, in key order), on `shard` (see
/// [`COUNTER_SHARDS`]). Takes the connection shared, so that a caller can
/// send its other statements beside it (pipelined).
pub(crate) async fn insert_messages(
    mut conn: &AsyncPgConnection,
    stored: &[(&Message, bool, u64)],
    number: CommitNumber,
    shard: i16,
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
    let contents: Vec<Vec<u8>> = messages()
        .map(|message| {
            box_to_stored(&message.content).ok_or_else(|| {
                diesel::result::Error::SerializationError(
                    "a sealed box with fields of the wrong length".into(),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let stored_bytes: Vec<i64> = contents
        .iter()
        .zip(stored)
        .map(|(content, (_, _, attached))| {
            let bytes = content.len() as u64 + attached;
            i64::try_from(bytes).unwrap_or(i64::MAX)
        })
        .collect();
    let held: Vec<bool> = stored.iter().map(|(_, held, _)| *held).collect();
    let read: Vec<bool> = messages().map(|message| message.read).collect();
    let folders: Vec<&str> = messages().map(|message| message.folder.as_str()).collect();
    let starred: Vec<bool> = messages().map(|message| message.starred).collect();
    let outgoing: Vec<bool> = messages().map(|message| message.outgoing).collect();
    let seq = match number {
        CommitNumber::Taken(seq) => seq,
        CommitNumber::None => 0,
    };
    let mut counters: BTreeMap<&str, i64> = BTreeMap::new();
    for (message, bytes) in messages().zip(&stored_bytes) {
        *counters.entry(message.account.as_str()).or_default() += bytes;
    }
    let (counted_accounts, counted_bytes): (Vec<&str>, Vec<i64>) = counters.into_iter().unzip();
    diesel::sql_query(
        "WITH inserted AS ( \
             INSERT INTO messages (id, account_id, inbox_id, received_at, size_bytes, key_epoch, \
                 content, held, read, folder, starred, outgoing, commit_seq, stored_bytes) \
             SELECT m.id, m.account_id, m.inbox_id, m.received_at, m.size_bytes, m.key_epoch, \
                 m.content, m.held, m.read, m.folder, m.starred, m.outgoing, $14, m.stored_bytes \
             FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::bigint[], \
                 $6::int[], $7::bytea[], $8::bool[], $9::bool[], $10::text[], $11::bool[], \
                 $12::bool[], $13::bigint[]) \
               AS m(id, account_id, inbox_id, received_at, size_bytes, key_epoch, content, held, \
                 read, folder, starred, outgoing, stored_bytes)) \
         INSERT INTO stored_bytes (account_id, shard, bytes) \
         SELECT a.account_id, $15, a.bytes FROM unnest($16::text[], $17::bigint[]) \
           AS a(account_id, bytes) \
         ON CONFLICT (account_id, shard) DO UPDATE SET bytes = stored_bytes.bytes + EXCLUDED.bytes",
    )
    .bind::<Array<Text>, _>(ids)
    .bind::<Array<Text>, _>(accounts)
    .bind::<Array<Text>, _>(addresses)
    .bind::<Array<Timestamptz>, _>(received)
    .bind::<Array<BigInt>, _>(sizes)
    .bind::<Array<Integer>, _>(epochs)
    .bind::<Array<Bytea>, _>(contents)
    .bind::<Array<Bool>, _>(held)
    .bind::<Array<Bool>, _>(read)
    .bind::<Array<Text>, _>(folders)
    .bind::<Array<Bool>, _>(starred)
    .bind::<Array<Bool>, _>(outgoing)
    .bind::<Array<BigInt>, _>(&stored_bytes)
    .bind::<BigInt, _>(seq)
    .bind::<SmallInt, _>(shard)
    .bind::<Array<Text>, _>(counted_accounts)
    .bind::<Array<BigInt>, _>(counted_bytes)
    .prepared()
    .execute(&mut conn)
    .await?;
    Ok(())
}

async fn insert_attachments(
    mut conn: &AsyncPgConnection,
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
    .prepared()
    .execute(&mut conn)
    .await?;
    Ok(())
}

/// The batch's received counters (summed per account and window, one
/// upsert on `shard`) and its wake-ups (`pg_notify` for each address with
/// delivered mail, sent at commit), in one statement: the upsert a
/// data-modifying `WITH`.
async fn count_received_and_notify(
    mut conn: &AsyncPgConnection,
    stored: &[&NewMessage],
    shard: i16,
) -> Result<(), diesel::result::Error> {
    let mut counters: BTreeMap<(&str, DateTime<Utc>), i64> = BTreeMap::new();
    for new in stored {
        *counters
            .entry((new.message.account.as_str(), new.window_start.as_datetime()))
            .or_default() += 1;
    }
    let mut accounts = Vec::new();
    let mut windows = Vec::new();
    let mut counts = Vec::new();
    for ((account, window), count) in counters {
        accounts.push(account);
        windows.push(window);
        counts.push(count);
    }
    let woken: BTreeSet<&str> = stored
        .iter()
        .filter(|new| !new.held && !new.message.outgoing)
        .map(|new| new.message.address.as_str())
        .collect();
    diesel::sql_query(
        "WITH counted AS ( \
             INSERT INTO usage_counters (account_id, counter, window_start, shard, used) \
             SELECT c.account_id, $1, c.window_start, $2, c.used \
             FROM unnest($3::text[], $4::timestamptz[], $5::bigint[]) \
               AS c(account_id, window_start, used) \
             ON CONFLICT (account_id, counter, window_start, shard) \
             DO UPDATE SET used = usage_counters.used + EXCLUDED.used) \
         SELECT pg_notify($6, payload) FROM unnest($7::text[]) AS payload",
    )
    .bind::<Text, _>(RECEIVED_COUNTER)
    .bind::<SmallInt, _>(shard)
    .bind::<Array<Text>, _>(accounts)
    .bind::<Array<Timestamptz>, _>(windows)
    .bind::<Array<BigInt>, _>(counts)
    .bind::<Text, _>(MAIL_CHANNEL)
    .bind::<Array<Text>, _>(mail_payloads(woken))
    .prepared()
    .execute(&mut conn)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use diesel::{ExpressionMethods, QueryDsl};
    use diesel_async::AsyncConnection;
    use sealpost_kernel::{AccountId, AddressId, MessageId, Timestamp};
    use sealpost_messages::folders::Folder;
    use sealpost_messages::store::{Message, MessageRepository, Reader, WaitFrom};
    use sealpost_seal::SealedBox;

    use super::*;
    use crate::schema::{addresses, commit_in_flight, messages};
    use crate::test_db::{
        TEST_ACCOUNT as ACCOUNT, TEST_ADDRESS as ADDRESS, database_url, drop_database, fresh_store,
        generic_plan, run_all, store_with_address, test_instant as at,
    };

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

    /// Batches in flight at once (at most COMMITTERS, far fewer than
    /// COUNTER_SHARDS) take different shards, so none waits on another's
    /// counter rows; the round covers every shard.
    #[test]
    fn consecutive_batches_take_different_counter_shards() {
        let batcher = Batcher::default();
        let round: Vec<i16> = (0..COUNTER_SHARDS).map(|_| batcher.next_shard()).collect();
        let distinct: BTreeSet<i16> = round.iter().copied().collect();
        assert_eq!(distinct.len(), usize::from(COUNTER_SHARDS), "{round:?}");
        assert!(
            distinct
                .iter()
                .all(|shard| (0..COUNTER_SHARDS as i16).contains(shard))
        );
    }

    /// A caller starts a committer when none runs, or when the queue holds
    /// more than the running ones take in their next batches; not while
    /// the running one will take everything queued.
    #[test]
    fn a_committer_starts_only_when_none_runs_or_the_queue_outgrows_them() {
        let batcher = Batcher::default();
        assert!(batcher.wants_committer(1), "none runs");
        let first = batcher.free_slot().unwrap();
        assert!(!batcher.wants_committer(2));
        assert!(!batcher.wants_committer(MAX_BATCH));
        assert!(batcher.wants_committer(MAX_BATCH + 1));
        let second = batcher.free_slot().unwrap();
        assert!(!batcher.wants_committer(2 * MAX_BATCH));
        assert!(batcher.wants_committer(2 * MAX_BATCH + 1));
        drop((first, second));
        assert!(batcher.wants_committer(1), "none runs again");
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
        let quarter = MAX_BATCH_BYTES / 4;
        queue(&[quarter; 10]);
        assert_eq!(batch_sizes(), [4, 4, 2]);
        // Larger than the bound: a batch of its own, never stuck.
        queue(&[10, 5 * MAX_BATCH_BYTES, 10]);
        assert_eq!(batch_sizes(), [1, 1, 1]);
        queue(&[10; MAX_BATCH + 1]);
        assert_eq!(batch_sizes(), [MAX_BATCH, 1]);
    }

    /// A connection of the test's own, holding the commit clock's row lock
    /// in an open transaction: every batch stops at its messages' insert.
    async fn hold_commit_clock(database: &str) -> AsyncPgConnection {
        connection_running(
            database,
            &["BEGIN", "SELECT seq FROM commit_clock FOR UPDATE"],
        )
        .await
    }

    async fn release_commit_clock(mut conn: AsyncPgConnection) {
        diesel::sql_query("COMMIT")
            .execute(&mut conn)
            .await
            .unwrap();
    }

    /// Waits until `count` backends of `database` wait on a lock; asks on
    /// a connection of its own, so the store's pool is left as it is.
    async fn until_waiting_on_locks(database: &str, count: i64) {
        let mut conn = connection_running(database, &[]).await;
        #[derive(QueryableByName)]
        struct Waiting {
            #[diesel(sql_type = BigInt)]
            waiting: i64,
        }
        for _ in 0..200 {
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

    /// The one bigint `sql` selects, named `value`.
    async fn bigint_of(store: &PgStore, sql: &str) -> i64 {
        #[derive(QueryableByName)]
        struct Value {
            #[diesel(sql_type = BigInt)]
            value: i64,
        }
        let mut conn = store.conn().await.unwrap();
        let Value { value } = diesel::sql_query(sql).get_result(&mut conn).await.unwrap();
        value
    }

    async fn distinct_commit_numbers(store: &PgStore) -> i64 {
        bigint_of(
            store,
            "SELECT count(DISTINCT commit_seq) AS value FROM messages",
        )
        .await
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
        // The committer stopped at the clock; the others queue behind it
        // (fewer than a batch: no second committer starts).
        until_waiting_on_locks(DATABASE, 1).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        release_commit_clock(clock).await;
        for commit in commits {
            assert_eq!(commit.await.unwrap().unwrap(), Commit::Done);
        }
        assert_eq!(stored_ids(&store).await, expected);
        let batches = distinct_commit_numbers(&store).await;
        assert!(
            batches <= 2,
            "{MESSAGES} messages in {batches} transactions"
        );
        let received = received_in_window(&store).await;
        assert_eq!(received, MESSAGES as u64);
        drop(store);
        drop_database(DATABASE).await;
    }

    /// Bytes in the messages table's TOAST relation (its heap, not its index).
    async fn out_of_line_bytes(store: &PgStore) -> i64 {
        bigint_of(
            store,
            "SELECT pg_relation_size(reltoastrelid) AS value FROM pg_class \
             WHERE relname = 'messages' AND relkind = 'r'",
        )
        .await
    }

    /// Mail of a few KB stays in its row (no TOAST chunks to write on
    /// delivery nor to look up on every read); larger content still goes
    /// out of line, so a page of rows stays a page.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_few_kb_of_content_stays_in_the_row_and_more_goes_out_of_line() {
        const DATABASE: &str = "sealpost_store_pg_group_commit_inline";
        let store = store_with_address(DATABASE).await;
        for bytes in [100, 2_000, 4_096, 7_000] {
            assert_eq!(store.commit(message_of(bytes)).await.unwrap(), Commit::Done);
        }
        assert_eq!(out_of_line_bytes(&store).await, 0);
        assert_eq!(
            store.commit(message_of(20_000)).await.unwrap(),
            Commit::Done
        );
        assert!(out_of_line_bytes(&store).await > 0);
        drop(store);
        drop_database(DATABASE).await;
    }

    /// More is queued than the running committer's next batch takes: more
    /// committers start, up to COMMITTERS, and every message is stored.
    #[tokio::test(flavor = "multi_thread")]
    async fn committers_join_when_the_queue_outgrows_a_batch() {
        const DATABASE: &str = "sealpost_store_pg_group_commit_join";
        const MESSAGES: usize = 3 * MAX_BATCH;
        let store = store_with_address(DATABASE).await;
        let clock = hold_commit_clock(DATABASE).await;
        let commits: Vec<_> = (0..MESSAGES)
            .map(|n| {
                let store = store.clone();
                let new = new_message(at(n as i64));
                tokio::spawn(async move { store.commit(new).await })
            })
            .collect();
        // A second committer (at least) stopped at the clock beside the first.
        until_waiting_on_locks(DATABASE, 2).await;
        release_commit_clock(clock).await;
        for commit in commits {
            assert_eq!(commit.await.unwrap().unwrap(), Commit::Done);
        }
        assert_eq!(stored_ids(&store).await.len(), MESSAGES);
        let batches = distinct_commit_numbers(&store).await;
        assert!(
            batches < MESSAGES as i64 / 8,
            "{MESSAGES} messages in {batches} transactions"
        );
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
        until_waiting_on_locks(DATABASE, 1).await;
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
        let received = received_in_window(&store).await;
        assert_eq!(received, 2, "only what was stored is counted");
        // Through the queue, alone: answered, not failed.
        let mut alone = new_message(at(4));
        alone.message.address = AddressId::from_trusted(GONE.to_owned());
        assert_eq!(store.commit(alone).await.unwrap(), Commit::RecipientGone);
        drop(store);
        drop_database(DATABASE).await;
    }

    /// RCPT's record goes to the commit unread at DATA, so the commit
    /// re-checks what a record can no longer promise: a message sealed to
    /// a key epoch the address has left, written held or not while the
    /// address is no longer (or now) paused, or to an account suspended
    /// since, is `RecipientChanged` and writes nothing; the rest of its
    /// batch is committed.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_message_sealed_before_its_recipient_changed_is_skipped_in_its_batch() {
        const DATABASE: &str = "sealpost_store_pg_group_commit_changed";
        let store = store_with_address(DATABASE).await;
        let current = new_message(at(1));
        let mut old_key = new_message(at(2));
        old_key.message.key_epoch = 1;
        let outcomes = store
            .commit_batch(&[current, old_key])
            .await
            .expect("the batch commits without the stale message");
        assert_eq!(outcomes, vec![Commit::Done, Commit::RecipientChanged]);
        assert_eq!(stored_ids(&store).await.len(), 1);

        // Held while the address is not paused, then not held while it is.
        let mut held = new_message(at(3));
        held.held = true;
        assert_eq!(
            store.commit(held).await.unwrap(),
            Commit::RecipientChanged,
            "mail for an address resumed since RCPT is not held"
        );
        let mut conn = store.conn().await.unwrap();
        diesel::update(addresses::table.filter(addresses::id.eq(ADDRESS)))
            .set(addresses::paused_at.eq(Some(chrono::Utc::now())))
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            store.commit(new_message(at(3))).await.unwrap(),
            Commit::RecipientChanged,
            "mail for an address paused since RCPT is held, not listed"
        );
        let mut held = new_message(at(3));
        held.held = true;
        assert_eq!(store.commit(held).await.unwrap(), Commit::Done);
        assert_eq!(stored_ids(&store).await.len(), 2);
        diesel::update(addresses::table.filter(addresses::id.eq(ADDRESS)))
            .set(addresses::paused_at.eq(None::<chrono::DateTime<chrono::Utc>>))
            .execute(&mut conn)
            .await
            .unwrap();

        diesel::sql_query(
            "INSERT INTO account_suspensions (account_id, reason, since) \
             VALUES ($1, 'abuse', now())",
        )
        .bind::<Text, _>(ACCOUNT)
        .execute(&mut conn)
        .await
        .unwrap();
        drop(conn);
        assert_eq!(
            store.commit(new_message(at(3))).await.unwrap(),
            Commit::RecipientChanged,
            "an account suspended since RCPT takes nothing"
        );
        assert_eq!(stored_ids(&store).await.len(), 2);
        assert_eq!(
            received_in_window(&store).await,
            2,
            "only what was stored is counted"
        );
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
                    .expect("the account reads its own address")
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
        // From a list cursor naming B, the wait follows commit order too:
        // `received_at` order (A began before B) would miss A.
        let from_list = newer(WaitFrom::Received(sealpost_kernel::Cursor {
            at: at(20),
            id: b.to_string(),
        }))
        .await;
        assert_eq!(
            from_list
                .iter()
                .map(|arrived| &arrived.message.id)
                .collect::<Vec<_>>(),
            vec![&a],
            "a wait from a list cursor skipped mail committed after it"
        );
        // A list cursor whose message is gone: mail received after it.
        let gone = newer(WaitFrom::Received(sealpost_kernel::Cursor {
            at: at(15),
            id: "msg_gone".to_owned(),
        }))
        .await;
        assert_eq!(
            gone.iter()
                .map(|arrived| &arrived.message.id)
                .collect::<Vec<_>>(),
            vec![&b]
        );
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

    /// What a wait returns from the start, as message ids.
    async fn waited_ids(store: &PgStore, after: WaitFrom) -> Vec<MessageId> {
        let reader = Reader {
            account: AccountId::from_trusted(ACCOUNT.to_owned()),
            device: None,
        };
        store
            .newer_than(
                &reader,
                &AddressId::from_trusted(ADDRESS.to_owned()),
                at(3_600),
                after,
                50,
            )
            .await
            .unwrap()
            .expect("the account reads its own address")
            .into_iter()
            .map(|arrived| arrived.message.id)
            .collect()
    }

    /// What RCPT reads of the account's received mail in its window.
    async fn received_in_window(store: &PgStore) -> u64 {
        store
            .recipient("batches@mail.localhost")
            .await
            .unwrap()
            .expect("the test's address")
            .received_in(at(0))
    }

    /// A connection of the test's own, with `statements` run on it.
    async fn connection_running(database: &str, statements: &[&str]) -> AsyncPgConnection {
        let mut conn = AsyncPgConnection::establish(&database_url(database))
            .await
            .unwrap();
        run_all(&mut conn, statements).await;
        conn
    }

    /// The counter shard of the tests' own batches: outside the store's
    /// round, so the store's batches never wait on the rows they hold.
    const HELD_BATCH_SHARD: i16 = COUNTER_SHARDS as i16 + 1;

    /// A batch of the test's own that took its number and stands inside its
    /// transaction, its message inserted but not committed.
    async fn batch_in_flight(database: &str, new: &NewMessage) -> (AsyncPgConnection, i64) {
        let mut conn = connection_running(database, &[]).await;
        let number = take_number(&conn).await;
        begin_batch(&mut conn, number, new).await;
        (conn, number)
    }

    /// Takes a number on `conn` as a batch does; the number.
    async fn take_number(conn: &AsyncPgConnection) -> i64 {
        take_commit_number(conn).await.unwrap();
        let mut conn = conn;
        let Seq { seq } =
            diesel::sql_query("SELECT current_setting('sealpost.batch_number')::bigint AS seq")
                .get_result(&mut conn)
                .await
                .unwrap();
        seq
    }

    /// The batch transaction of `number`, begun on `conn`, its message
    /// inserted, not committed.
    async fn begin_batch(conn: &mut AsyncPgConnection, number: i64, new: &NewMessage) {
        diesel::sql_query("BEGIN")
            .execute(&mut *conn)
            .await
            .unwrap();
        assert_eq!(end_own_in_flight(conn).await.unwrap(), number);
        insert_messages(
            conn,
            &[(&new.message, false, 0)],
            CommitNumber::Taken(number),
            HELD_BATCH_SHARD,
        )
        .await
        .unwrap();
    }

    /// Batches commit in parallel now, so a batch that took a smaller
    /// number can commit after one that took a larger: a wait reads only
    /// below the smallest number in flight, and gets both, in number order,
    /// once the first has committed. Reading up to the largest committed
    /// number would have returned the later one alone and moved its cursor
    /// past the earlier one for good.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_wait_stops_below_a_batch_still_in_flight() {
        const DATABASE: &str = "sealpost_store_pg_wait_in_flight";
        let store = store_with_address(DATABASE).await;
        let first = new_message(at(1));
        let later = new_message(at(2));
        let (first_id, later_id) = (first.message.id.clone(), later.message.id.clone());
        let before = store.commit_position().await.unwrap();
        let (mut open, number) = batch_in_flight(DATABASE, &first).await;
        // The later batch is not held by the first: it commits meanwhile.
        assert_eq!(store.commit(later).await.unwrap(), Commit::Done);
        assert!(
            waited_ids(&store, WaitFrom::Start).await.is_empty(),
            "a wait read past a number still in flight"
        );
        let position = store.commit_position().await.unwrap();
        assert_eq!(position.seq, u64::try_from(number - 1).unwrap());
        assert_eq!(position, before);
        diesel::sql_query("COMMIT")
            .execute(&mut open)
            .await
            .unwrap();
        assert_eq!(
            waited_ids(&store, WaitFrom::Committed(position)).await,
            vec![first_id, later_id]
        );
        drop(store);
        drop_database(DATABASE).await;
    }

    /// A long transaction elsewhere, in this database or another on the
    /// same server, holding a transaction id: waits go on (an order read
    /// below the server's oldest running transaction would stall them).
    #[tokio::test(flavor = "multi_thread")]
    async fn an_unrelated_long_transaction_holds_no_wait() {
        const DATABASE: &str = "sealpost_store_pg_wait_long_transaction";
        let store = store_with_address(DATABASE).await;
        let hold = ["BEGIN", "SELECT pg_current_xact_id()"];
        let here = connection_running(DATABASE, &hold).await;
        let elsewhere = connection_running("postgres", &hold).await;
        let before = store.commit_position().await.unwrap();
        let new = new_message(at(1));
        let id = new.message.id.clone();
        assert_eq!(store.commit(new).await.unwrap(), Commit::Done);
        assert_eq!(
            waited_ids(&store, WaitFrom::Committed(before.clone())).await,
            vec![id]
        );
        assert!(store.commit_position().await.unwrap().seq > before.seq);
        drop((here, elsewhere));
        drop(store);
        drop_database(DATABASE).await;
    }

    /// A number whose batch never ran its transaction (a crash between the
    /// two) holds waits only until it is reclaimed; a number whose batch is
    /// running is never reclaimed, however old, and a batch whose number
    /// was reclaimed fails rather than commit below a reader's position.
    #[tokio::test(flavor = "multi_thread")]
    async fn an_abandoned_number_is_reclaimed_and_a_running_one_is_not() {
        const DATABASE: &str = "sealpost_store_pg_wait_abandoned";
        let store = store_with_address(DATABASE).await;
        let mut abandoned = connection_running(DATABASE, &[]).await;
        let lost = take_number(&abandoned).await;
        let running = new_message(at(1));
        let mut open = connection_running(DATABASE, &[]).await;
        let number = take_number(&open).await;
        let mut conn = store.conn().await.unwrap();
        diesel::sql_query("UPDATE commit_in_flight SET registered_at = now() - interval '1 hour'")
            .execute(&mut conn)
            .await
            .unwrap();
        begin_batch(&mut open, number, &running).await;
        let after = new_message(at(2));
        let after_id = after.message.id.clone();
        assert_eq!(store.commit(after).await.unwrap(), Commit::Done);
        assert!(waited_ids(&store, WaitFrom::Start).await.is_empty());

        // The store's committer reclaimed the abandoned number before its
        // batch; the running batch's row is locked by it (its first
        // statement), so it stays, however old.
        assert_eq!(reclaim_abandoned_numbers(&mut conn).await.unwrap(), 0);
        let in_flight: Vec<i64> = commit_in_flight::table
            .select(commit_in_flight::seq)
            .load(&mut conn)
            .await
            .unwrap();
        assert_eq!(in_flight, vec![number]);
        assert!(lost < number);
        assert!(waited_ids(&store, WaitFrom::Start).await.is_empty());
        diesel::sql_query("COMMIT")
            .execute(&mut open)
            .await
            .unwrap();
        assert_eq!(
            waited_ids(&store, WaitFrom::Start).await,
            vec![running.message.id.clone(), after_id]
        );
        // The abandoned batch, resumed, cannot commit under its number.
        diesel::sql_query("BEGIN")
            .execute(&mut abandoned)
            .await
            .unwrap();
        assert!(end_own_in_flight(&abandoned).await.is_err());
        drop((abandoned, conn));
        drop(store);
        drop_database(DATABASE).await;
    }

    /// The batch's number, `BEGIN` and its first statements are sent
    /// together and must run in that order: while the batch waits at its
    /// inserts (another transaction holds the counters' table), its number
    /// is in flight, committed by its own transaction, and the in-flight
    /// row's end, the batch's first statement, is still uncommitted, so
    /// waits stop below its number until its COMMIT. On a connection that
    /// has prepared none of the batch's statements (each then waits for its
    /// prepare before it is sent) and on one that has prepared them all.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_batch_s_first_statements_run_inside_its_transaction() {
        const DATABASE: &str = "sealpost_store_pg_batch_begins_first";
        let observer = store_with_address(DATABASE).await;
        // One connection: the second batch runs on the first one's.
        let store = PgStore::connect(&database_url(DATABASE), 1).unwrap();
        let in_flight = "SELECT count(*) AS value FROM commit_in_flight";
        let mut ids = Vec::new();
        for connection in ["unprepared", "prepared"] {
            let mut blocker = connection_running(
                DATABASE,
                &["BEGIN", "LOCK TABLE usage_counters IN EXCLUSIVE MODE"],
            )
            .await;
            let new = new_message(at(ids.len() as i64));
            ids.push(new.message.id.clone());
            let answer = {
                let store = store.clone();
                tokio::spawn(async move { store.commit(new).await })
            };
            until_waiting_on_locks(DATABASE, 1).await;
            assert_eq!(
                bigint_of(&observer, in_flight).await,
                1,
                "{connection}: the number is committed before BEGIN, the in-flight row's \
                 end inside the batch's transaction"
            );
            diesel::sql_query("COMMIT")
                .execute(&mut blocker)
                .await
                .unwrap();
            assert_eq!(answer.await.unwrap().unwrap(), Commit::Done);
            assert_eq!(bigint_of(&observer, in_flight).await, 0);
        }
        assert_eq!(waited_ids(&observer, WaitFrom::Start).await, ids);
        drop((store, observer));
        drop_database(DATABASE).await;
    }

    /// The batch plans its statements generically ([`begin`]): the owners'
    /// lock's generic plan must read each table by its primary key, the
    /// suspensions too once they are many, never scan accounts or
    /// addresses.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_generic_plan_of_the_owners_lock_reads_primary_keys() {
        const DATABASE: &str = "sealpost_store_pg_owners_plan";
        let store = fresh_store(DATABASE).await;
        let mut conn = store.conn().await.unwrap();
        run_all(
            &mut conn,
            &[
                "INSERT INTO accounts (id, auth_public_key, auth_verifier_hash, created_at) \
                 SELECT 'acc_' || g, decode(repeat('00', 32), 'hex'), \
                        decode(repeat('00', 32), 'hex'), now() \
                 FROM generate_series(1, 20000) AS g",
                "INSERT INTO addresses (id, account_id, email_address, domain, retention_days, \
                                        public_key, created_at) \
                 SELECT 'adr_' || g, 'acc_' || g, 'a' || g || '@mail.localhost', \
                        'mail.localhost', 30, decode(repeat('07', 32), 'hex'), now() \
                 FROM generate_series(1, 20000) AS g",
                "INSERT INTO account_suspensions (account_id, reason, since) \
                 SELECT 'acc_' || g, 'abuse', now() FROM generate_series(1, 5000) AS g",
                "ANALYZE accounts",
                "ANALYZE addresses",
                "ANALYZE account_suspensions",
            ],
        )
        .await;
        let plan = generic_plan(&mut conn, LOCK_OWNERS, "'{acc_1}', '{adr_1}'").await;
        for index in [
            "accounts_pkey",
            "addresses_pkey",
            "account_suspensions_pkey",
        ] {
            assert!(plan.contains(index), "{index} not read:\n{plan}");
        }
        assert!(!plan.contains("Seq Scan"), "a table scanned:\n{plan}");
        drop(conn);
        drop(store);
        drop_database(DATABASE).await;
    }

    /// The batch's transaction plans its statements generically
    /// ([`begin`]): after more batches than PostgreSQL's default tries
    /// custom plans for (five), the owners' lock on the batches' connection
    /// was never custom-planned.
    #[tokio::test(flavor = "multi_thread")]
    async fn batches_never_custom_plan_the_owners_lock() {
        const DATABASE: &str = "sealpost_store_pg_batches_plan_generically";
        let store = store_with_address(DATABASE).await;
        for n in 0..8 {
            assert_eq!(
                store.commit(new_message(at(n))).await.unwrap(),
                Commit::Done
            );
        }
        // One batch at a time: the pool holds the one connection they ran on.
        let plans = |column: &str| {
            format!(
                "SELECT coalesce(sum({column}), -1)::bigint AS value FROM pg_prepared_statements \
                 WHERE statement LIKE '%FOR KEY SHARE%'"
            )
        };
        assert!(bigint_of(&store, &plans("generic_plans")).await >= 8);
        assert_eq!(bigint_of(&store, &plans("custom_plans")).await, 0);
        drop(store);
        drop_database(DATABASE).await;
    }

    /// A batch that fails at its inserts (here a message whose id is
    /// stored already) is rolled back whole: its message is not stored,
    /// its number leaves flight at once, and its connection goes back to
    /// the pool out of any transaction, so the next batch commits and
    /// waits read on.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_failed_batch_is_rolled_back_and_leaves_no_transaction_open() {
        const DATABASE: &str = "sealpost_store_pg_failed_batch";
        let store = store_with_address(DATABASE).await;
        let first = new_message(at(1));
        let first_id = first.message.id.clone();
        assert_eq!(store.commit(first).await.unwrap(), Commit::Done);
        let mut again = new_message(at(2));
        again.message.id = first_id.clone();
        assert!(store.commit(again).await.is_err(), "a duplicate id fails");
        let in_flight = bigint_of(&store, "SELECT count(*) AS value FROM commit_in_flight").await;
        assert_eq!(in_flight, 0, "the failed batch's number left flight");
        let open = bigint_of(
            &store,
            &format!(
                "SELECT count(*) AS value FROM pg_stat_activity \
                 WHERE datname = '{DATABASE}' AND state LIKE 'idle in transaction%'"
            ),
        )
        .await;
        assert_eq!(open, 0, "no connection left inside a transaction");
        let next = new_message(at(3));
        let next_id = next.message.id.clone();
        assert_eq!(store.commit(next).await.unwrap(), Commit::Done);
        assert_eq!(
            waited_ids(&store, WaitFrom::Start).await,
            vec![first_id, next_id]
        );
        drop(store);
        drop_database(DATABASE).await;
    }

    /// A batch whose last insert (its attachments') fails commits nothing,
    /// on a connection that has prepared none of the batch's statements and
    /// on one that has prepared them all: `COMMIT`, sent behind the inserts
    /// without waiting for them, never reaches PostgreSQL before one of
    /// them. Had it overtaken an insert still being prepared, the message,
    /// its received count and its stored bytes would have been committed,
    /// and the attachments' insert run on its own.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_batch_failing_at_its_last_insert_commits_nothing() {
        const DATABASE: &str = "sealpost_store_pg_failed_last_insert";
        drop(store_with_address(DATABASE).await);
        // One connection: every batch runs on the first one's.
        let store = PgStore::connect(&database_url(DATABASE), 1).unwrap();
        let attachment = |index| sealpost_messages::store::StoredAttachment {
            index,
            blob_key: None,
            size_bytes: 5,
        };
        let failing = || {
            let mut new = new_message(at(1));
            // The same index twice: the attachments' primary key refuses.
            new.attachments = vec![attachment(0), attachment(0)];
            new
        };
        let stored_bytes = || {
            bigint_of(
                &store,
                "SELECT coalesce(sum(bytes), 0)::bigint AS value FROM stored_bytes",
            )
        };
        let in_flight = || bigint_of(&store, "SELECT count(*) AS value FROM commit_in_flight");

        assert!(store.commit(failing()).await.is_err(), "unprepared");
        assert_eq!(stored_ids(&store).await, Vec::<String>::new());
        assert_eq!(received_in_window(&store).await, 0);
        assert_eq!(stored_bytes().await, 0);
        assert_eq!(in_flight().await, 0);

        let mut stored = new_message(at(2));
        stored.attachments = vec![attachment(0), attachment(1)];
        let stored_id = stored.message.id.as_str().to_owned();
        assert_eq!(store.commit(stored).await.unwrap(), Commit::Done);
        let bytes = stored_bytes().await;
        assert!(bytes > 0);

        assert!(store.commit(failing()).await.is_err(), "prepared");
        assert_eq!(stored_ids(&store).await, vec![stored_id]);
        assert_eq!(received_in_window(&store).await, 1);
        assert_eq!(stored_bytes().await, bytes);
        assert_eq!(in_flight().await, 0);
        drop(store);
        drop_database(DATABASE).await;
    }

    /// Two ingesting processes (two stores, each with its committers) and
    /// waiters reading all the while: every waiter gets every message
    /// once, in increasing positions.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn many_committers_and_waiters_miss_nothing_and_repeat_nothing() {
        const DATABASE: &str = "sealpost_store_pg_wait_many";
        const MESSAGES: usize = 240;
        const WAITERS: usize = 6;
        let store = store_with_address(DATABASE).await;
        let other = PgStore::connect(&database_url(DATABASE), 8).unwrap();
        let start = store.commit_position().await.unwrap();
        let news: Vec<NewMessage> = (0..MESSAGES)
            .map(|n| new_message(at(n as i64 % 7)))
            .collect();
        let mut expected: Vec<MessageId> = news.iter().map(|new| new.message.id.clone()).collect();
        expected.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        let waiters: Vec<_> = (0..WAITERS)
            .map(|_| {
                let store = store.clone();
                let mut after = WaitFrom::Committed(start.clone());
                let reader = Reader {
                    account: AccountId::from_trusted(ACCOUNT.to_owned()),
                    device: None,
                };
                tokio::spawn(async move {
                    let mut seen: Vec<MessageId> = Vec::new();
                    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
                    while seen.len() < MESSAGES && tokio::time::Instant::now() < deadline {
                        let arrived = store
                            .newer_than(
                                &reader,
                                &AddressId::from_trusted(ADDRESS.to_owned()),
                                at(3_600),
                                after.clone(),
                                50,
                            )
                            .await
                            .unwrap()
                            .expect("the account reads its own address");
                        for message in &arrived {
                            if let WaitFrom::Committed(cursor) = &after {
                                assert!(
                                    (message.position.seq, &message.position.id)
                                        > (cursor.seq, &cursor.id),
                                    "positions go back"
                                );
                            }
                            after = WaitFrom::Committed(message.position.clone());
                            seen.push(message.message.id.clone());
                        }
                        if arrived.is_empty() {
                            tokio::time::sleep(Duration::from_millis(2)).await;
                        }
                    }
                    seen
                })
            })
            .collect();
        let commits: Vec<_> = news
            .into_iter()
            .enumerate()
            .map(|(n, new)| {
                let store = if n % 2 == 0 {
                    store.clone()
                } else {
                    other.clone()
                };
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis((n % 17) as u64)).await;
                    store.commit(new).await
                })
            })
            .collect();
        for commit in commits {
            assert_eq!(commit.await.unwrap().unwrap(), Commit::Done);
        }
        for waiter in waiters {
            let mut seen = waiter.await.unwrap();
            let count = seen.len();
            seen.sort_by(|a, b| a.as_str().cmp(b.as_str()));
            seen.dedup();
            assert_eq!(seen.len(), count, "a waiter got a message twice");
            let missed = expected.iter().filter(|id| !seen.contains(id)).count();
            assert_eq!(missed, 0, "a waiter missed {missed} of {MESSAGES} messages");
            assert_eq!(seen, expected);
        }
        assert!(
            distinct_commit_numbers(&store).await < MESSAGES as i64,
            "no batch held more than one message"
        );
        drop((store, other));
        drop_database(DATABASE).await;
    }
}
