//! Blobs of deliveries that died before committing: found through the
//! pending rows and deleted, at ingest start-up and in the hourly sweep.

use std::sync::Arc;

use chrono::TimeDelta;
use sealpost_kernel::{Clock, Timestamp};

use crate::ingest::IngestError;
use crate::store::{BlobStore, MessageRepository, PendingBlob};

/// Pending blobs without an owner (registered before owners were recorded,
/// or taken over by a recovery that did not finish) are abandoned once older
/// than this: a live delivery seals, writes and commits within seconds.
pub const PENDING_BLOB_GRACE: TimeDelta = TimeDelta::minutes(10);

#[derive(Clone)]
pub struct BlobRecovery {
    repo: Arc<dyn MessageRepository>,
    blobs: Arc<dyn BlobStore>,
    clock: Arc<dyn Clock>,
    /// This process's own ingest instance, whose deliveries are in flight.
    spared: Option<String>,
}

impl BlobRecovery {
    pub fn new(
        repo: Arc<dyn MessageRepository>,
        blobs: Arc<dyn BlobStore>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            repo,
            blobs,
            clock,
            spared: None,
        }
    }

    /// Never takes over the deliveries of `instance` (this process's own
    /// ingest), whatever the store says of it.
    #[must_use]
    pub fn sparing(mut self, instance: &str) -> Self {
        self.spared = Some(instance.to_owned());
        self
    }

    /// Deletes the blobs of deliveries that died before committing: those
    /// whose owning instance no longer runs, at once, and those without an
    /// owner once older than [`PENDING_BLOB_GRACE`]. Returns how many.
    pub async fn run(&self) -> Result<usize, IngestError> {
        let pending = self.repo.pending_blobs().await?;
        let mut owners: Vec<String> = pending
            .iter()
            .filter_map(|blob| blob.owner.clone())
            .filter(|owner| Some(owner) != self.spared.as_ref())
            .collect();
        owners.sort_unstable();
        owners.dedup();
        let alive = if owners.is_empty() {
            Vec::new()
        } else {
            self.repo.alive_owners(owners).await?
        };
        let abandoned = abandoned_blobs(
            pending,
            self.spared.as_deref(),
            &alive,
            self.clock.now() - PENDING_BLOB_GRACE,
        );
        if abandoned.is_empty() {
            return Ok(0);
        }
        // Taken from their owners first: were one wrongly believed dead, its
        // commit now fails rather than keeping a message whose blob is gone.
        let keys = self.repo.disown_pending_blobs(abandoned).await?;
        for key in &keys {
            self.blobs.delete(key).await?;
        }
        let count = keys.len();
        // Forgotten only once deleted: a crash here leaves them, ownerless, to a later pass.
        self.repo.forget_pending_blobs(keys).await?;
        Ok(count)
    }
}

/// The keys recovery deletes: owned by an instance other than `spared` that
/// is not alive, or ownerless and registered before `ownerless_before`.
fn abandoned_blobs(
    pending: Vec<PendingBlob>,
    spared: Option<&str>,
    alive: &[String],
    ownerless_before: Timestamp,
) -> Vec<String> {
    pending
        .into_iter()
        .filter(|blob| match &blob.owner {
            Some(owner) => Some(owner.as_str()) != spared && !alive.contains(owner),
            None => blob.written_at < ownerless_before,
        })
        .map(|blob| blob.key)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use sealpost_kernel::TestClock;

    use super::*;
    use crate::ingest::Ingest;
    use crate::store::{MockBlobStore, MockMessageRepository};

    fn clock() -> Arc<TestClock> {
        Arc::new(TestClock::at(
            Timestamp::parse("2026-11-22T12:00:00Z").unwrap(),
        ))
    }

    fn recovery(repo: MockMessageRepository, blobs: MockBlobStore) -> BlobRecovery {
        BlobRecovery::new(Arc::new(repo), Arc::new(blobs), clock())
    }

    fn pending(key: &str, owner: Option<&str>, written_at: &str) -> PendingBlob {
        PendingBlob {
            key: key.into(),
            owner: owner.map(str::to_owned),
            written_at: Timestamp::parse(written_at).unwrap(),
        }
    }

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[tokio::test]
    async fn recovery_takes_over_blobs_of_dead_owners_and_old_ownerless_ones_only() {
        let mut seq = mockall::Sequence::new();
        let mut repo = MockMessageRepository::new();
        repo.expect_pending_blobs().times(1).returning(|| {
            Ok(vec![
                // Its owner died: taken over at once, however recent.
                pending("msg_dead/0", Some("ing_dead"), "2026-11-22T11:59:59Z"),
                pending("msg_dead/1", Some("ing_dead"), "2026-11-22T11:59:59Z"),
                // Its owner still runs: a delivery in flight, however old.
                pending("msg_live/0", Some("ing_live"), "2026-11-22T10:00:00Z"),
                // No owner: only once older than the grace period.
                pending("msg_old/0", None, "2026-11-22T11:49:59Z"),
                pending("msg_new/0", None, "2026-11-22T11:50:01Z"),
            ])
        });
        repo.expect_alive_owners()
            .withf(|owners| *owners == strings(&["ing_dead", "ing_live"]))
            .times(1)
            .returning(|_| Ok(strings(&["ing_live"])));
        repo.expect_disown_pending_blobs()
            .withf(|keys| *keys == strings(&["msg_dead/0", "msg_dead/1", "msg_old/0"]))
            .times(1)
            .in_sequence(&mut seq)
            // msg_dead/1 was committed meanwhile after all: its blob stays.
            .returning(|_| Ok(strings(&["msg_dead/0", "msg_old/0"])));
        let mut blobs = MockBlobStore::new();
        blobs
            .expect_delete()
            .withf(|key| key == "msg_dead/0")
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| Ok(()));
        blobs
            .expect_delete()
            .withf(|key| key == "msg_old/0")
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| Ok(()));
        repo.expect_forget_pending_blobs()
            .withf(|keys| *keys == strings(&["msg_dead/0", "msg_old/0"]))
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| Ok(()));
        assert_eq!(recovery(repo, blobs).run().await.unwrap(), 2);
    }

    #[tokio::test]
    async fn recovery_never_takes_over_its_own_ingests_deliveries() {
        let me = Arc::new(Mutex::new(String::new()));
        let mine = me.clone();
        let mut repo = MockMessageRepository::new();
        repo.expect_pending_blobs().times(1).returning(move || {
            // Older than any grace period, and this instance holds no lock in
            // this test: still its own delivery in flight.
            Ok(vec![pending(
                "msg_mine/0",
                Some(&mine.lock().unwrap()),
                "2026-11-22T09:00:00Z",
            )])
        });
        repo.expect_alive_owners().never();
        repo.expect_disown_pending_blobs().never();
        repo.expect_forget_pending_blobs().never();
        let mut blobs = MockBlobStore::new();
        blobs.expect_delete().never();
        let ingest = Ingest::new(
            Arc::new(repo),
            Arc::new(blobs),
            clock(),
            vec!["mail.localhost".into()],
        );
        *me.lock().unwrap() = ingest.instance().to_owned();
        assert_eq!(ingest.recovery().run().await.unwrap(), 0);
    }
}
