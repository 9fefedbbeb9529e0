//! Mail out to the account's clients: lists, single messages, attachments,
//! read marks, the hourly object-read allowance, retention.

use std::sync::Arc;

use chrono::TimeDelta;
use sealpost_kernel::{AddressId, Clock, Cursor, MessageId, Page, PageRequest, PlanId, StoreError};
use sealpost_plans::plan;

use crate::store::{BlobError, BlobStore, Message, MessageRepository, Reader};

/// SPEC.md Limits: `GET /workers/messages` returns up to 200.
pub const WORKER_MESSAGES: i64 = 200;
/// Blob deletions handled per sweep pass.
const GARBAGE_BATCH: i64 = 500;

#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("no such record")]
    NotFound,
    #[error("the hourly read allowance is used up; retry in {retry_after_seconds} seconds")]
    ReadsExhausted { retry_after_seconds: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Blob(#[from] BlobError),
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

    async fn check_inbox(&self, reader: &Reader, inbox: &AddressId) -> Result<(), MailError> {
        if self.repo.can_read_inbox(reader, inbox).await? {
            Ok(())
        } else {
            Err(MailError::NotFound)
        }
    }

    /// `GET /inboxes/:id/messages`: newest first; held mail and mail past retention never appear.
    pub async fn list(
        &self,
        reader: &Reader,
        inbox: &AddressId,
        request: &PageRequest,
    ) -> Result<Page<Message>, MailError> {
        self.check_inbox(reader, inbox).await?;
        let rows = self
            .repo
            .page(reader, inbox, self.clock.now(), request)
            .await?;
        Ok(Page::from_rows(rows, request, |message| Cursor {
            at: message.received_at,
            id: message.id.to_string(),
        }))
    }

    /// Messages that arrived after `after` (a cursor from a list), oldest first.
    pub async fn newer(
        &self,
        reader: &Reader,
        inbox: &AddressId,
        after: Option<&Cursor>,
    ) -> Result<Vec<Message>, MailError> {
        self.check_inbox(reader, inbox).await?;
        let after = after.map(|cursor| (cursor.at, cursor.id.clone()));
        Ok(self
            .repo
            .newer_than(reader, inbox, self.clock.now(), after, 50)
            .await?)
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

    /// `GET /workers/messages`: the 200 newest across the device's addresses.
    pub async fn worker_messages(&self, reader: &Reader) -> Result<Vec<Message>, MailError> {
        Ok(self
            .repo
            .worker_messages(reader, self.clock.now(), WORKER_MESSAGES)
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
