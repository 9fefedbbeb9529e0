//! Group commit of delivered messages: `commit` calls that arrive while
//! other commits are running are written together, one transaction and one
//! WAL flush for all of them.
//!
//! No background task: a caller queues its message, and becomes a leader
//! when one of [`LEADERS`] slots is free. A leader takes up to
//! [`MAX_BATCH`] queued messages (its own among them, or it waits for the
//! leader that took it), commits them, answers each, and gives its slot
//! back; when messages are still queued it wakes a waiting caller to lead
//! next. A lone message is committed at once: nothing waits for a batch to
//! fill. Each message's answer is sent only after `COMMIT` returned.
//!
//! Inside the transaction each message has a savepoint: one whose pending
//! blobs were taken over by recovery is rolled back alone
//! (`Commit::TakenOver`); any other failure fails the whole batch, and every
//! message of it gets the error (its client is told to try again, none is
//! told it was stored).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::StoreError;
use sealpost_messages::store::{Commit, NewMessage};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, oneshot};

use crate::notify::MAIL_CHANNEL;
use crate::records::{box_to_json, write_records};
use crate::schema::{attachments, messages, pending_blobs, usage_counters};
use crate::{PgStore, db_error};

/// Batches committing at once (each on its own pooled connection), so WAL
/// flushes of several batches overlap.
pub(crate) const LEADERS: usize = 4;
/// Most messages in one transaction.
pub(crate) const MAX_BATCH: usize = 64;
/// How often a waiting caller checks that someone leads (a leader whose
/// task was dropped leaves its queue to the others).
const RECHECK: Duration = Duration::from_millis(50);

type Answer = oneshot::Sender<Result<Commit, StoreError>>;

/// The queue and the leader slots, shared by every clone of a `PgStore`.
pub(crate) struct Batcher {
    queue: Mutex<Vec<(NewMessage, Answer)>>,
    leaders: Arc<Semaphore>,
    wake: Notify,
}

impl Default for Batcher {
    fn default() -> Self {
        Self {
            queue: Mutex::new(Vec::new()),
            leaders: Arc::new(Semaphore::new(LEADERS)),
            wake: Notify::new(),
        }
    }
}

impl Batcher {
    fn queue(&self) -> std::sync::MutexGuard<'_, Vec<(NewMessage, Answer)>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl PgStore {
    /// Commits one message, in a batch with those committed at the same time.
    pub(crate) async fn group_commit(&self, new: NewMessage) -> Result<Commit, StoreError> {
        let (answer, mut answered) = oneshot::channel();
        self.batcher.queue().push((new, answer));
        loop {
            if let Ok(slot) = Arc::clone(&self.batcher.leaders).try_acquire_owned() {
                self.lead_one_batch(slot).await;
            }
            tokio::select! {
                result = &mut answered => {
                    return result.unwrap_or_else(|_| {
                        Err(StoreError::Unavailable(
                            "the commit's batch was abandoned; try again".into(),
                        ))
                    });
                }
                () = self.batcher.wake.notified() => {}
                () = tokio::time::sleep(RECHECK) => {}
            }
        }
    }

    async fn lead_one_batch(&self, slot: OwnedSemaphorePermit) {
        let batch: Vec<(NewMessage, Answer)> = {
            let mut queue = self.batcher.queue();
            let take = queue.len().min(MAX_BATCH);
            queue.drain(..take).collect()
        };
        if !batch.is_empty() {
            let (news, answers): (Vec<NewMessage>, Vec<Answer>) = batch.into_iter().unzip();
            match self.commit_batch(&news).await {
                Ok(outcomes) => {
                    for (answer, outcome) in answers.into_iter().zip(outcomes) {
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
        drop(slot);
        // Messages queued meanwhile may have found every slot taken: wake
        // one of their callers to lead.
        if !self.batcher.queue().is_empty() {
            self.batcher.wake.notify_one();
        }
    }

    /// One transaction for `news`; one outcome per message, in order.
    async fn commit_batch(&self, news: &[NewMessage]) -> Result<Vec<Commit>, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            let mut outcomes = Vec::with_capacity(news.len());
            let mut counters: BTreeMap<(String, DateTime<Utc>, i16), i64> = BTreeMap::new();
            let mut woken: BTreeSet<&str> = BTreeSet::new();
            for new in news {
                // A savepoint each: a message taken over rolls back alone.
                match conn
                    .transaction(async |conn| insert_message(conn, new).await)
                    .await
                {
                    Ok(()) => {
                        let message = &new.message;
                        *counters
                            .entry((
                                message.account.as_str().to_owned(),
                                new.window_start.as_datetime(),
                                crate::messages::received_shard(&message.id),
                            ))
                            .or_default() += 1;
                        if !new.held && !message.outgoing {
                            woken.insert(message.inbox.as_str());
                        }
                        outcomes.push(Commit::Done);
                    }
                    Err(diesel::result::Error::RollbackTransaction) => {
                        outcomes.push(Commit::TakenOver);
                    }
                    Err(error) => return Err(error),
                }
            }
            // Delivered at commit: waiters on these addresses wake up.
            for inbox in woken {
                diesel::sql_query("SELECT pg_notify($1, $2)")
                    .bind::<Text, _>(MAIL_CHANNEL)
                    .bind::<Text, _>(inbox)
                    .execute(conn)
                    .await?;
            }
            // Last, in one order for every batch (no deadlock between
            // batches), so the shards' row locks are held only through COMMIT.
            for ((account, window_start, shard), count) in counters {
                diesel::insert_into(usage_counters::table)
                    .values((
                        usage_counters::account_id.eq(&account),
                        usage_counters::counter.eq(sealpost_messages::store::RECEIVED_COUNTER),
                        usage_counters::window_start.eq(window_start),
                        usage_counters::shard.eq(shard),
                        usage_counters::used.eq(count),
                    ))
                    .on_conflict((
                        usage_counters::account_id,
                        usage_counters::counter,
                        usage_counters::window_start,
                        usage_counters::shard,
                    ))
                    .do_update()
                    .set(usage_counters::used.eq(usage_counters::used + count))
                    .execute(conn)
                    .await?;
            }
            Ok::<_, diesel::result::Error>(outcomes)
        })
        .await
        .map_err(db_error)
    }
}

/// The rows of one message: the message, its attachments, its pending
/// blobs cleared (owner checked) and its records. `RollbackTransaction`
/// when recovery took its pending blobs over.
async fn insert_message(
    conn: &mut AsyncPgConnection,
    new: &NewMessage,
) -> Result<(), diesel::result::Error> {
    let message = &new.message;
    diesel::insert_into(messages::table)
        .values((
            messages::id.eq(message.id.as_str()),
            messages::account_id.eq(message.account.as_str()),
            messages::inbox_id.eq(message.inbox.as_str()),
            messages::received_at.eq(message.received_at.as_datetime()),
            messages::size_bytes.eq(message.size_bytes as i64),
            messages::key_epoch.eq(message.key_epoch as i32),
            messages::content.eq(box_to_json(&message.content)),
            messages::held.eq(new.held),
            messages::read.eq(message.read),
            messages::folder.eq(message.folder.as_str()),
            messages::starred.eq(message.starred),
            messages::outgoing.eq(message.outgoing),
        ))
        .execute(conn)
        .await?;
    if !new.attachments.is_empty() {
        let rows: Vec<_> = new
            .attachments
            .iter()
            .map(|attachment| {
                (
                    attachments::message_id.eq(message.id.as_str()),
                    attachments::index.eq(attachment.index as i32),
                    attachments::blob_key.eq(attachment.blob_key.as_deref()),
                    attachments::size_bytes.eq(attachment.size_bytes as i64),
                )
            })
            .collect();
        diesel::insert_into(attachments::table)
            .values(rows)
            .execute(conn)
            .await?;
        let keys: Vec<&str> = new
            .attachments
            .iter()
            .filter_map(|a| a.blob_key.as_deref())
            .collect();
        let cleared = diesel::delete(
            pending_blobs::table
                .filter(pending_blobs::blob_key.eq_any(&keys))
                .filter(pending_blobs::owner.eq(&new.owner)),
        )
        .execute(conn)
        .await?;
        if cleared != keys.len() {
            // Recovery took them over (this instance was believed dead)
            // and deletes their blobs: keep nothing of this message.
            return Err(diesel::result::Error::RollbackTransaction);
        }
    }
    write_records(conn, &new.records).await
}
