//! The storage trait the ticket service is given, and the operators'
//! switches it stores.

use async_trait::async_trait;
use sealpost_activity::Records;
use sealpost_kernel::{AccountId, PageRequest, StoreError, TicketId, Timestamp};

use crate::model::{
    Author, Binding, NewMessage, NewTicket, PublicKey, Ticket, TicketMessage, TicketStatus,
};
use crate::rules::{Guard, Refusal, SweepCutoffs, SweepReport};
use crate::staff::AuditEntry;

/// What operators switched, stored by the service (configuration gives the
/// defaults).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Switches {
    /// The support key staff rotated to; overrides `SEALPOST_SUPPORT_KEY`.
    pub support_key: Option<PublicKey>,
    /// In-app support switched off.
    pub support_off: bool,
    /// Adding webhooks paused.
    pub webhooks_paused: bool,
}

/// What a ticket write leaves besides itself, in its own transaction: the
/// activity, events and notices (`records`), and a staff action's audit row.
#[derive(Clone, Debug, Default)]
pub struct Trail {
    pub records: Records,
    pub audit: Option<AuditEntry>,
}

impl Trail {
    /// An account's own write: records only.
    pub fn of(records: Records) -> Self {
        Self {
            records,
            audit: None,
        }
    }

    /// A staff member's write: records and the audit row.
    pub fn staff(records: Records, audit: AuditEntry) -> Self {
        Self {
            records,
            audit: Some(audit),
        }
    }
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SupportRepository: Send + Sync {
    async fn switches(&self) -> Result<Switches, StoreError>;
    /// The account's tickets, newest first.
    async fn tickets(&self, account: &AccountId) -> Result<Vec<Ticket>, StoreError>;
    /// Tickets of every account (`status` or all), most recently active
    /// first by `(updatedAt, id)`, after `page.after`, `page.fetch_limit()`
    /// rows; `read` (the staff read's audit row) is written in the same
    /// transaction.
    async fn all_tickets(
        &self,
        status: Option<TicketStatus>,
        page: &PageRequest,
        read: &AuditEntry,
    ) -> Result<Vec<Ticket>, StoreError>;
    /// One ticket: the account's (`Some`) or anyone's (`None`, staff).
    async fn ticket(
        &self,
        account: Option<AccountId>,
        id: &TicketId,
    ) -> Result<Option<Ticket>, StoreError>;
    /// A ticket's messages, oldest first.
    async fn messages(&self, id: &TicketId) -> Result<Vec<TicketMessage>, StoreError>;
    /// Clears the ticket's unread flag.
    async fn mark_read(&self, id: &TicketId) -> Result<(), StoreError>;
    /// Stores the ticket and its first message when `guard` passes on the
    /// account's counts (taken under the account's lock).
    async fn create_ticket(
        &self,
        account: &AccountId,
        ticket: &NewTicket,
        guard: &Guard,
    ) -> Result<Result<Ticket, Refusal>, StoreError>;
    /// Adds a message by `author` when `guard` passes, with `records`.
    async fn add_message(
        &self,
        account: &AccountId,
        ticket: &TicketId,
        author: Author,
        message: &NewMessage,
        guard: &Guard,
        trail: &Trail,
    ) -> Result<Result<Timestamp, Refusal>, StoreError>;
    /// Resolves an open ticket (the trail's records written only when it
    /// changes). `None`: no such ticket of the account. A staff action's
    /// audit row is written in the same transaction whenever the ticket
    /// exists, as `add_message` writes it: no staff reply or resolution
    /// without its row.
    async fn close(
        &self,
        account: &AccountId,
        ticket: &TicketId,
        at: Timestamp,
        trail: &Trail,
    ) -> Result<Option<Ticket>, StoreError>;
    /// Opens a resolved ticket again when `guard` passes.
    async fn reopen(
        &self,
        account: &AccountId,
        ticket: &TicketId,
        guard: &Guard,
    ) -> Result<Result<Ticket, Refusal>, StoreError>;
    /// Stores the account's binding; `true` when anything changed.
    async fn save_binding(&self, binding: &Binding) -> Result<bool, StoreError>;
    /// The account's last binding.
    async fn binding(&self, account: &AccountId) -> Result<Option<Binding>, StoreError>;
    /// Closes inactive tickets and deletes long-closed ones.
    async fn sweep(&self, cutoffs: &SweepCutoffs) -> Result<SweepReport, StoreError>;
}
