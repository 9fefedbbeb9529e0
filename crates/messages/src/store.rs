//! What the message rules need from storage, and the blob store.

use async_trait::async_trait;
use sealpost_activity::Records;
use sealpost_kernel::{
    AccountId, AddressId, CommitCursor, Cursor, DeviceId, MessageId, PageRequest, PlanId,
    StoreError, Timestamp,
};
use sealpost_seal::SealedBox;

use crate::folders::{Folder, FolderCounts, MessageFilter};

/// A stored message as clients see it.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub id: MessageId,
    pub account: AccountId,
    pub address: AddressId,
    pub received_at: Timestamp,
    pub read: bool,
    pub size_bytes: u64,
    pub key_epoch: u32,
    pub content: SealedBox,
    pub folder: Folder,
    pub starred: bool,
    /// The copy of mail sent from the service (`POST /messages/send`).
    pub outgoing: bool,
}

/// One attachment row: `blob_key` is `None` for attachments over 20 MB.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredAttachment {
    pub index: u32,
    pub blob_key: Option<String>,
    pub size_bytes: u64,
}

/// A message ready to commit.
#[derive(Clone, Debug, PartialEq)]
pub struct NewMessage {
    pub message: Message,
    pub attachments: Vec<StoredAttachment>,
    /// Held (paused address): stored but not listed, no event until released.
    pub held: bool,
    /// Start of the account's received-mail window, for the counter.
    pub window_start: Timestamp,
    pub records: Records,
    /// The ingest instance that registered the attachment blobs as pending:
    /// the commit only succeeds while they are all still registered to it.
    pub owner: String,
}

/// What became of a commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Commit {
    Done,
    /// Nothing was committed: recovery took the delivery's pending blobs
    /// over, believing its instance dead, and deletes them.
    TakenOver,
    /// Nothing was committed: the message's address (or its account) was
    /// deleted after RCPT, before this commit. Its blobs are still pending
    /// under the delivery, which deletes them; the rest of a batch it was
    /// in is committed as usual.
    RecipientGone,
    /// Nothing was committed: the recipient no longer stands as the message
    /// was sealed for it (its account was suspended, or its key changed or
    /// went, since the record the delivery used was read, at RCPT or at
    /// DATA). Its blobs are still pending under the delivery, which deletes
    /// them, and may read the recipient again and start over.
    RecipientChanged,
}

/// A blob registered before it is written, for a message not committed yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingBlob {
    pub key: String,
    /// The ingest instance delivering it; `None` for rows from before owners
    /// were recorded and for rows recovery has taken over.
    pub owner: Option<String>,
    pub written_at: Timestamp,
}

/// What RCPT needs to know about an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecipientRecord {
    pub address: AddressId,
    pub account: AccountId,
    /// The plan whose received-mail allowance applies: while a lapse is unpaid,
    /// the lapsed plan's (docs/api.md "Plans and usage"), else the account's.
    pub plan: PlanId,
    pub account_created_at: Timestamp,
    pub domain: String,
    pub public_key: Option<[u8; 32]>,
    pub key_epoch: u32,
    pub paused: bool,
    /// Staff suspended the account: its mail is refused.
    pub suspended: bool,
    /// Bytes of sealed mail the account holds now, against the plan's
    /// stored-bytes quota.
    pub stored_bytes: u64,
    /// The account's received-mail counter in the latest window that has
    /// one: (window start, messages), read with the address.
    pub latest_received: Option<(Timestamp, u64)>,
}

impl RecipientRecord {
    /// Messages the account received in the window starting at
    /// `window_start`. Windows only move forward, so a latest window that
    /// starts elsewhere is an earlier one: nothing received in this yet.
    pub fn received_in(&self, window_start: Timestamp) -> u64 {
        match self.latest_received {
            Some((start, used)) if start == window_start => used,
            _ => 0,
        }
    }
}

/// Who is reading: the whole account, or one device (only its addresses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reader {
    pub account: AccountId,
    pub device: Option<DeviceId>,
}

/// Where a wait for new mail resumes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitFrom {
    /// Any mail in the address.
    Start,
    /// After a list cursor (`received_at`, id): after the commit position
    /// of the message it names (by `received_at` if that message is gone);
    /// the answer's cursor is a commit position.
    Received(Cursor),
    /// After this position in commit order.
    Committed(CommitCursor),
}

/// A message a wait returns, with its position in commit order.
#[derive(Clone, Debug, PartialEq)]
pub struct Arrived {
    pub message: Message,
    pub position: CommitCursor,
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait MessageRepository: Send + Sync {
    /// The live address with this name (lowercased), if any.
    async fn recipient(&self, email_address: &str) -> Result<Option<RecipientRecord>, StoreError>;
    async fn recipient_by_id(
        &self,
        account: &AccountId,
        address: &AddressId,
    ) -> Result<Option<RecipientRecord>, StoreError>;
    /// Remembers blobs about to be written for a message not committed yet,
    /// as delivered by the ingest instance `owner`.
    async fn register_pending_blobs(
        &self,
        keys: Vec<String>,
        owner: &str,
        at: Timestamp,
    ) -> Result<(), StoreError>;
    /// Commits the message rows, its counter, records and clears its pending
    /// blobs, in one transaction. Commits nothing and answers
    /// [`Commit::TakenOver`] when any of those blobs is no longer pending for
    /// `message.owner`, [`Commit::RecipientGone`] when its address or
    /// account no longer exists, and [`Commit::RecipientChanged`] when the
    /// account is suspended or the address's key epoch is no longer the
    /// message's (or the address has no key).
    async fn commit(&self, message: NewMessage) -> Result<Commit, StoreError>;
    /// Every pending blob: registered, never committed, never forgotten.
    async fn pending_blobs(&self) -> Result<Vec<PendingBlob>, StoreError>;
    /// Of these ingest instances, the ones whose process still runs.
    async fn alive_owners(&self, owners: Vec<String>) -> Result<Vec<String>, StoreError>;
    /// Takes these pending blobs away from their owners, so that a late commit
    /// by a delivery believed dead fails instead of pointing at a deleted
    /// blob; returns the keys still pending (a commit may have won).
    async fn disown_pending_blobs(&self, keys: Vec<String>) -> Result<Vec<String>, StoreError>;
    async fn forget_pending_blobs(&self, keys: Vec<String>) -> Result<(), StoreError>;

    /// Whether the reader may read this address (a device: only its own).
    async fn can_read_address(
        &self,
        reader: &Reader,
        address: &AddressId,
    ) -> Result<bool, StoreError>;
    /// Newest first, listed (not held) and within retention at `now`;
    /// `None` when the reader may not read the address (the same check as
    /// [`MessageRepository::can_read_address`], made by the store with the
    /// page's read, not by a call before it).
    async fn page(
        &self,
        reader: &Reader,
        address: &AddressId,
        now: Timestamp,
        page: &PageRequest,
    ) -> Result<Option<Vec<Message>>, StoreError>;
    /// Listed mail of the address (sent copies aside) that became visible
    /// after `after`, in commit order, up to `limit`; `None` when the reader
    /// may not read the address, as for [`MessageRepository::page`]. Commit
    /// order, not `received_at`: a message whose delivery began earlier but
    /// committed later still sorts after what a waiter has already seen.
    async fn newer_than(
        &self,
        reader: &Reader,
        address: &AddressId,
        now: Timestamp,
        after: WaitFrom,
        limit: i64,
    ) -> Result<Option<Vec<Arrived>>, StoreError>;
    /// The commit position of everything visible now: whatever commits
    /// later sorts after it.
    async fn commit_position(&self) -> Result<CommitCursor, StoreError>;
    async fn message(
        &self,
        reader: &Reader,
        id: &MessageId,
        now: Timestamp,
    ) -> Result<Option<Message>, StoreError>;
    /// [`MessageRepository::message`] when the reader may also change it
    /// (move, delete): the owner, or a team member with `send` access.
    async fn message_to_change(
        &self,
        reader: &Reader,
        id: &MessageId,
        now: Timestamp,
    ) -> Result<Option<Message>, StoreError>;
    /// The newest messages across the device's addresses.
    async fn device_messages(
        &self,
        reader: &Reader,
        now: Timestamp,
        limit: i64,
    ) -> Result<Vec<Message>, StoreError>;
    async fn attachment(
        &self,
        reader: &Reader,
        id: &MessageId,
        index: u32,
        now: Timestamp,
    ) -> Result<Option<StoredAttachment>, StoreError>;
    async fn set_read(
        &self,
        reader: &Reader,
        id: &MessageId,
        read: bool,
        now: Timestamp,
    ) -> Result<bool, StoreError>;
    /// Adds one to the hourly object-read counter unless it is at `limit`; false when refused.
    async fn spend_object_read(
        &self,
        account: &AccountId,
        hour: Timestamp,
        limit: u64,
    ) -> Result<bool, StoreError>;
    /// Newest first across the reader's addresses (a device: its own),
    /// listed (not held), within retention at `now`, as `filter` says.
    async fn page_all(
        &self,
        reader: &Reader,
        filter: &MessageFilter,
        now: Timestamp,
        page: &PageRequest,
    ) -> Result<Vec<Message>, StoreError>;
    async fn set_starred(
        &self,
        reader: &Reader,
        id: &MessageId,
        starred: bool,
        now: Timestamp,
    ) -> Result<bool, StoreError>;
    /// Moves a readable message from `from` to `to`; false when it is not
    /// (or no longer) in `from`.
    async fn set_folder(
        &self,
        reader: &Reader,
        id: &MessageId,
        from: Folder,
        to: Folder,
        now: Timestamp,
    ) -> Result<bool, StoreError>;
    /// Deletes a readable message that is in the trash, its attachment blobs
    /// queued for deletion in the same transaction; false when it is not
    /// (or no longer) there.
    async fn delete_from_trash(
        &self,
        reader: &Reader,
        id: &MessageId,
        now: Timestamp,
    ) -> Result<bool, StoreError>;
    /// Deletes every message in the account's trash (blobs queued); how many.
    async fn empty_trash(&self, account: &AccountId) -> Result<u64, StoreError>;
    /// Listed mail within retention per folder, across the reader's
    /// addresses or in one of them.
    async fn folder_counts(
        &self,
        reader: &Reader,
        address: Option<AddressId>,
        now: Timestamp,
    ) -> Result<FolderCounts, StoreError>;
    /// Deletes messages past their address's retention; their blobs go to the garbage queue.
    async fn delete_expired(&self, now: Timestamp) -> Result<u64, StoreError>;
    /// Blob keys queued for deletion (up to `limit`).
    async fn garbage(&self, limit: i64) -> Result<Vec<String>, StoreError>;
    async fn forget_garbage(&self, keys: Vec<String>) -> Result<(), StoreError>;
}

#[derive(Debug, thiserror::Error)]
#[error("blob store: {0}")]
pub struct BlobError(pub String);

/// Where sealed attachment bytes live. Only ciphertext is ever written.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait BlobStore: Send + Sync {
    /// Writes durably (synced) before returning.
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError>;
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError>;
    /// Deleting a missing blob is not an error.
    async fn delete(&self, key: &str) -> Result<(), BlobError>;
}

pub const RECEIVED_COUNTER: &str = "received";
pub const OBJECT_READS_COUNTER: &str = "object_reads";
/// Sends in the clock hour (`window_start` the hour) and in the UTC day
/// (`window_start` 00:00 UTC), one per recipient.
pub const SENT_HOUR_COUNTER: &str = "sent_hour";
pub const SENT_DAY_COUNTER: &str = "sent_day";
