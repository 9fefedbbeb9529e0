//! Mail out to the account's clients: lists, single messages, attachments,
//! read marks, stars, folders and the trash, the hourly object-read
//! allowance, retention.

use std::sync::Arc;

use chrono::TimeDelta;
use sealpost_kernel::{
    AccountId, AddressId, Clock, Cursor, MessageId, Page, PageRequest, PlanId, StoreError,
};
use sealpost_plans::plan;

use crate::folders::{
    Deletion, Folder, FolderCounts, MessageFilter, MoveRefusal, check_move, deletion,
};
use crate::store::{Arrived, BlobError, BlobStore, Message, MessageRepository, Reader, WaitFrom};

/// `GET /workers/messages` returns up to 200 (docs/api.md "Limits").
pub const DEVICE_MESSAGES: i64 = 200;
/// Blob deletions handled per sweep pass.
const GARBAGE_BATCH: i64 = 500;
/// Times a move or delete decides again when the message changed folder
/// between reading and writing it.
const FOLDER_TRIES: usize = 3;

/// What `DELETE /messages/:id` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deleted {
    /// Moved to the trash.
    Trashed,
    /// Deleted from the trash for good, attachments included.
    ForGood,
}

#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("no such record")]
    NotFound,
    #[error("the hourly read allowance is used up; retry in {retry_after_seconds} seconds")]
    ReadsExhausted { retry_after_seconds: u64 },
    #[error(transparent)]
    Move(#[from] MoveRefusal),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Blob(#[from] BlobError),
}

fn kept_changing() -> MailError {
    MailError::Store(StoreError::Unavailable(
        "the message kept changing folder; retry".into(),
    ))
}

#[derive(Clone)]
pub struct Mailbox {
    repo: Arc<dyn MessageRepository>,
    blobs: Arc<dyn BlobStore>,
    clock: Arc<dyn Clock>,
}

impl Mailbox {
    pub fn new(
        repo: Arc<dyn MessageRepository>,
        blobs: Arc<dyn BlobStore>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self { repo, blobs, clock }
    }

    async fn check_address(&self, reader: &Reader, address: &AddressId) -> Result<(), MailError> {
        if self.repo.can_read_address(reader, address).await? {
            Ok(())
        } else {
            Err(MailError::NotFound)
        }
    }

    /// `GET /inboxes/:id/messages`: newest first; held mail and mail past retention never appear.
    pub async fn list(
        &self,
        reader: &Reader,
        address: &AddressId,
        request: &PageRequest,
    ) -> Result<Page<Message>, MailError> {
        let rows = self
            .repo
            .page(reader, address, self.clock.now(), request)
            .await?
            .ok_or(MailError::NotFound)?;
        Ok(Page::from_rows(rows, request, |message| Cursor {
            at: message.received_at,
            id: message.id.to_string(),
        }))
    }

    /// Messages that became visible after `after`, in commit order (at most 50).
    pub async fn newer(
        &self,
        reader: &Reader,
        address: &AddressId,
        after: &WaitFrom,
    ) -> Result<Vec<Arrived>, MailError> {
        self.repo
            .newer_than(reader, address, self.clock.now(), after.clone(), 50)
            .await?
            .ok_or(MailError::NotFound)
    }

    /// A wait's starting point for mail that commits from now on.
    pub async fn wait_from_now(&self) -> Result<WaitFrom, MailError> {
        Ok(WaitFrom::Committed(self.repo.commit_position().await?))
    }

    /// Spends one object read, or says when the next hour starts.
    async fn spend_read(&self, reader: &Reader, plan_id: PlanId) -> Result<(), MailError> {
        let now = self.clock.now();
        let hour = now.start_of_hour();
        let limit = u64::from(plan(plan_id).object_reads_per_hour);
        if self
            .repo
            .spend_object_read(&reader.account, hour, limit)
            .await?
        {
            return Ok(());
        }
        let wait = (hour + TimeDelta::hours(1) - now).num_milliseconds().max(0) as u64;
        Err(MailError::ReadsExhausted {
            retry_after_seconds: wait.div_ceil(1000).max(1),
        })
    }

    /// `GET /messages/:id`: counts one object read.
    pub async fn get(
        &self,
        reader: &Reader,
        plan_id: PlanId,
        id: &MessageId,
    ) -> Result<Message, MailError> {
        let message = self
            .repo
            .message(reader, id, self.clock.now())
            .await?
            .ok_or(MailError::NotFound)?;
        self.spend_read(reader, plan_id).await?;
        Ok(message)
    }

    /// `GET /messages/:id/attachments/:index`: the sealed bytes; counts one object read.
    pub async fn attachment(
        &self,
        reader: &Reader,
        plan_id: PlanId,
        id: &MessageId,
        index: u32,
    ) -> Result<Vec<u8>, MailError> {
        let attachment = self
            .repo
            .attachment(reader, id, index, self.clock.now())
            .await?
            .ok_or(MailError::NotFound)?;
        // Attachments over 20 MB are listed in the message but have no bytes.
        let key = attachment.blob_key.ok_or(MailError::NotFound)?;
        self.spend_read(reader, plan_id).await?;
        self.blobs.get(&key).await?.ok_or(MailError::NotFound)
    }

    pub async fn mark_read(
        &self,
        reader: &Reader,
        id: &MessageId,
        read: bool,
    ) -> Result<(), MailError> {
        if self
            .repo
            .set_read(reader, id, read, self.clock.now())
            .await?
        {
            Ok(())
        } else {
            Err(MailError::NotFound)
        }
    }

    /// `GET /messages`: newest first across the reader's addresses, filtered.
    pub async fn list_all(
        &self,
        reader: &Reader,
        filter: &MessageFilter,
        request: &PageRequest,
    ) -> Result<Page<Message>, MailError> {
        if let Some(address) = &filter.address {
            self.check_address(reader, address).await?;
        }
        let rows = self
            .repo
            .page_all(reader, filter, self.clock.now(), request)
            .await?;
        Ok(Page::from_rows(rows, request, |message| Cursor {
            at: message.received_at,
            id: message.id.to_string(),
        }))
    }

    pub async fn star(
        &self,
        reader: &Reader,
        id: &MessageId,
        starred: bool,
    ) -> Result<(), MailError> {
        if self
            .repo
            .set_starred(reader, id, starred, self.clock.now())
            .await?
        {
            Ok(())
        } else {
            Err(MailError::NotFound)
        }
    }

    /// `POST /messages/:id/move`: the message as it is afterwards. Moving to
    /// the folder it is in changes nothing.
    pub async fn move_to(
        &self,
        reader: &Reader,
        id: &MessageId,
        to: Folder,
    ) -> Result<Message, MailError> {
        for _ in 0..FOLDER_TRIES {
            let mut message = self.changeable(reader, id).await?;
            check_move(message.outgoing, to)?;
            if message.folder == to {
                return Ok(message);
            }
            if self
                .repo
                .set_folder(reader, id, message.folder, to, self.clock.now())
                .await?
            {
                message.folder = to;
                return Ok(message);
            }
        }
        Err(kept_changing())
    }

    /// `DELETE /messages/:id`: to the trash, or from the trash for good
    /// (its blobs deleted right after the rows).
    pub async fn delete(&self, reader: &Reader, id: &MessageId) -> Result<Deleted, MailError> {
        for _ in 0..FOLDER_TRIES {
            let message = self.changeable(reader, id).await?;
            let now = self.clock.now();
            let done = match deletion(message.folder) {
                Deletion::ToTrash => self
                    .repo
                    .set_folder(reader, id, message.folder, Folder::Trash, now)
                    .await?
                    .then_some(Deleted::Trashed),
                Deletion::ForGood => self
                    .repo
                    .delete_from_trash(reader, id, now)
                    .await?
                    .then_some(Deleted::ForGood),
            };
            if let Some(done) = done {
                if done == Deleted::ForGood {
                    self.collect_garbage().await?;
                }
                return Ok(done);
            }
        }
        Err(kept_changing())
    }

    /// `POST /messages/trash/empty` (the owner): how many messages went.
    pub async fn empty_trash(&self, account: &AccountId) -> Result<u64, MailError> {
        let deleted = self.repo.empty_trash(account).await?;
        if deleted > 0 {
            self.collect_garbage().await?;
        }
        Ok(deleted)
    }

    /// `GET /messages/folders`: counts per folder, across the reader's
    /// addresses or in one of them.
    pub async fn folder_counts(
        &self,
        reader: &Reader,
        address: Option<AddressId>,
    ) -> Result<FolderCounts, MailError> {
        if let Some(address) = &address {
            self.check_address(reader, address).await?;
        }
        Ok(self
            .repo
            .folder_counts(reader, address, self.clock.now())
            .await?)
    }

    /// A message the reader may change now (a team member: with `send`
    /// access), without spending an object read.
    async fn changeable(&self, reader: &Reader, id: &MessageId) -> Result<Message, MailError> {
        self.repo
            .message_to_change(reader, id, self.clock.now())
            .await?
            .ok_or(MailError::NotFound)
    }

    /// `GET /workers/messages`: the 200 newest across the device's addresses.
    pub async fn device_messages(&self, reader: &Reader) -> Result<Vec<Message>, MailError> {
        Ok(self
            .repo
            .device_messages(reader, self.clock.now(), DEVICE_MESSAGES)
            .await?)
    }

    /// Hourly: deletes mail past retention, then the blobs queued for deletion.
    pub async fn sweep(&self) -> Result<(u64, usize), MailError> {
        let expired = self.repo.delete_expired(self.clock.now()).await?;
        Ok((expired, self.collect_garbage().await?))
    }

    /// Deletes the blobs whose rows are gone (deleted address or account, expired mail).
    pub async fn collect_garbage(&self) -> Result<usize, MailError> {
        let mut blobs = 0;
        loop {
            let keys = self.repo.garbage(GARBAGE_BATCH).await?;
            if keys.is_empty() {
                break;
            }
            for key in &keys {
                self.blobs.delete(key).await?;
            }
            blobs += keys.len();
            self.repo.forget_garbage(keys).await?;
        }
        Ok(blobs)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use sealpost_kernel::{AccountId, TestClock, Timestamp};

    use super::*;
    use crate::store::{MockBlobStore, MockMessageRepository};

    fn reader() -> Reader {
        Reader {
            account: AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap(),
            device: None,
        }
    }

    fn message(folder: Folder, outgoing: bool) -> Message {
        Message {
            id: MessageId::parse("msg_00000000000000000000000000").unwrap(),
            account: reader().account,
            address: AddressId::parse("ibx_shop01").unwrap(),
            received_at: Timestamp::parse("2026-11-22T11:00:00Z").unwrap(),
            read: false,
            size_bytes: 10,
            key_epoch: 0,
            content: sealpost_seal::SealedBox::seal(&[7; 32], "test", b"{}"),
            folder,
            starred: false,
            outgoing,
        }
    }

    fn mailbox(repo: MockMessageRepository, blobs: MockBlobStore) -> Mailbox {
        let clock = Arc::new(TestClock::at(
            Timestamp::parse("2026-11-22T12:00:00Z").unwrap(),
        ));
        Mailbox::new(Arc::new(repo), Arc::new(blobs), clock)
    }

    fn id() -> MessageId {
        message(Folder::Inbox, false).id
    }

    #[tokio::test]
    async fn a_move_is_checked_against_the_folder_rules_before_anything_is_written() {
        let mut repo = MockMessageRepository::new();
        repo.expect_message_to_change()
            .returning(|_, _, _| Ok(Some(message(Folder::Inbox, false))));
        repo.expect_set_folder().never();
        let result = mailbox(repo, MockBlobStore::new())
            .move_to(&reader(), &id(), Folder::Sent)
            .await;
        assert!(matches!(
            result,
            Err(MailError::Move(MoveRefusal::ReceivedToSent))
        ));
    }

    #[tokio::test]
    async fn a_move_guards_on_the_folder_it_read_and_decides_again_when_it_changed() {
        let mut repo = MockMessageRepository::new();
        // First read: in the inbox; meanwhile someone archived it, so the
        // guarded write fails and the second read sees the archive.
        let reads = Arc::new(Mutex::new(vec![
            message(Folder::Archive, false),
            message(Folder::Inbox, false),
        ]));
        repo.expect_message_to_change()
            .times(2)
            .returning(move |_, _, _| Ok(reads.lock().unwrap().pop()));
        let mut seq = mockall::Sequence::new();
        repo.expect_set_folder()
            .withf(|_, _, from, to, _| (*from, *to) == (Folder::Inbox, Folder::Trash))
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_, _, _, _, _| Ok(false));
        repo.expect_set_folder()
            .withf(|_, _, from, to, _| (*from, *to) == (Folder::Archive, Folder::Trash))
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_, _, _, _, _| Ok(true));
        let moved = mailbox(repo, MockBlobStore::new())
            .move_to(&reader(), &id(), Folder::Trash)
            .await
            .unwrap();
        assert_eq!(moved.folder, Folder::Trash);
    }

    #[tokio::test]
    async fn moving_to_the_folder_a_message_is_in_writes_nothing() {
        let mut repo = MockMessageRepository::new();
        repo.expect_message_to_change()
            .returning(|_, _, _| Ok(Some(message(Folder::Sent, true))));
        repo.expect_set_folder().never();
        let same = mailbox(repo, MockBlobStore::new())
            .move_to(&reader(), &id(), Folder::Sent)
            .await
            .unwrap();
        assert_eq!(same.folder, Folder::Sent);
    }

    #[tokio::test]
    async fn deleting_trashes_and_deleting_from_the_trash_deletes_the_rows_then_the_blobs() {
        let mut repo = MockMessageRepository::new();
        repo.expect_message_to_change()
            .times(1)
            .returning(|_, _, _| Ok(Some(message(Folder::Archive, false))));
        repo.expect_set_folder()
            .withf(|_, _, from, to, _| (*from, *to) == (Folder::Archive, Folder::Trash))
            .times(1)
            .returning(|_, _, _, _, _| Ok(true));
        repo.expect_delete_from_trash().never();
        let trashed = mailbox(repo, MockBlobStore::new())
            .delete(&reader(), &id())
            .await
            .unwrap();
        assert_eq!(trashed, Deleted::Trashed);

        let mut seq = mockall::Sequence::new();
        let mut repo = MockMessageRepository::new();
        repo.expect_message_to_change()
            .returning(|_, _, _| Ok(Some(message(Folder::Trash, false))));
        repo.expect_set_folder().never();
        repo.expect_delete_from_trash()
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_, _, _| Ok(true));
        repo.expect_garbage()
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| Ok(vec!["msg_x/0".to_owned()]));
        let mut blobs = MockBlobStore::new();
        blobs
            .expect_delete()
            .withf(|key| key == "msg_x/0")
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| Ok(()));
        repo.expect_forget_garbage()
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| Ok(()));
        repo.expect_garbage().returning(|_| Ok(Vec::new()));
        let gone = mailbox(repo, blobs).delete(&reader(), &id()).await.unwrap();
        assert_eq!(gone, Deleted::ForGood);
    }

    #[tokio::test]
    async fn a_message_that_cannot_be_read_cannot_be_starred_moved_or_deleted() {
        let mut repo = MockMessageRepository::new();
        repo.expect_message().returning(|_, _, _| Ok(None));
        repo.expect_message_to_change()
            .returning(|_, _, _| Ok(None));
        repo.expect_set_starred().returning(|_, _, _, _| Ok(false));
        let mailbox = mailbox(repo, MockBlobStore::new());
        assert!(matches!(
            mailbox.star(&reader(), &id(), true).await,
            Err(MailError::NotFound)
        ));
        assert!(matches!(
            mailbox.move_to(&reader(), &id(), Folder::Archive).await,
            Err(MailError::NotFound)
        ));
        assert!(matches!(
            mailbox.delete(&reader(), &id()).await,
            Err(MailError::NotFound)
        ));
    }

    #[tokio::test]
    async fn lists_and_counts_of_one_address_check_the_reader_may_read_it() {
        let mut repo = MockMessageRepository::new();
        repo.expect_can_read_address().returning(|_, _| Ok(false));
        repo.expect_page_all().never();
        repo.expect_folder_counts().never();
        let mailbox = mailbox(repo, MockBlobStore::new());
        let filter = MessageFilter {
            address: Some(AddressId::parse("ibx_other1").unwrap()),
            ..MessageFilter::default()
        };
        let request = PageRequest {
            limit: 50,
            after: None,
        };
        assert!(matches!(
            mailbox.list_all(&reader(), &filter, &request).await,
            Err(MailError::NotFound)
        ));
        assert!(matches!(
            mailbox
                .folder_counts(&reader(), filter.address.clone())
                .await,
            Err(MailError::NotFound)
        ));
    }

    #[tokio::test]
    async fn a_page_or_a_wait_on_an_address_the_reader_may_not_read_is_not_found() {
        // The page's and the wait's own statements check the reader: no
        // separate check runs first.
        let mut repo = MockMessageRepository::new();
        repo.expect_can_read_address().never();
        repo.expect_page().times(1).returning(|_, _, _, _| Ok(None));
        repo.expect_newer_than()
            .times(1)
            .returning(|_, _, _, _, _| Ok(None));
        let mailbox = mailbox(repo, MockBlobStore::new());
        let address = AddressId::parse("ibx_other1").unwrap();
        let request = PageRequest {
            limit: 50,
            after: None,
        };
        assert!(matches!(
            mailbox.list(&reader(), &address, &request).await,
            Err(MailError::NotFound)
        ));
        assert!(matches!(
            mailbox.newer(&reader(), &address, &WaitFrom::Start).await,
            Err(MailError::NotFound)
        ));
    }

    #[tokio::test]
    async fn emptying_an_empty_trash_touches_no_blobs() {
        let mut repo = MockMessageRepository::new();
        repo.expect_empty_trash().times(1).returning(|_| Ok(0));
        repo.expect_garbage().never();
        let emptied = mailbox(repo, MockBlobStore::new())
            .empty_trash(&reader().account)
            .await
            .unwrap();
        assert_eq!(emptied, 0);
    }
}
