//! The ticket service: both sides of a ticket, the support key and the sweep.

use std::sync::Arc;

use sealpost_activity::{Notice, Records};
use sealpost_kernel::{AccountId, Clock, Cursor, Page, PageRequest, TicketId, Timestamp};

use crate::error::SupportError;
use crate::model::{
    Author, Binding, NewMessage, NewTicket, PublicKey, Ticket, TicketMessage, TicketStatus,
};
use crate::repository::{SupportRepository, Switches, Trail};
use crate::rules::{Guard, Refusal, SweepCutoffs, SweepReport, Write};
use crate::staff::AuditEntry;

/// `GET /support`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overview {
    pub tickets: Vec<Ticket>,
    pub available: bool,
    pub staff_key: Option<PublicKey>,
}

/// Support as it stands: its key and whether accounts can write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Availability {
    pub staff_key: Option<PublicKey>,
    pub available: bool,
    pub switches: Switches,
}

#[derive(Clone)]
pub struct Support {
    repo: Arc<dyn SupportRepository>,
    clock: Arc<dyn Clock>,
    configured_key: Option<PublicKey>,
}

impl Support {
    pub fn new(
        repo: Arc<dyn SupportRepository>,
        clock: Arc<dyn Clock>,
        configured_key: Option<PublicKey>,
    ) -> Self {
        Self {
            repo,
            clock,
            configured_key,
        }
    }

    /// The current key (rotated by staff, else configured) and whether
    /// accounts can write: a key is set and support is not switched off.
    pub async fn availability(&self) -> Result<Availability, SupportError> {
        let switches = self.repo.switches().await?;
        let staff_key = switches.support_key.or(self.configured_key);
        Ok(Availability {
            staff_key,
            available: staff_key.is_some() && !switches.support_off,
            switches,
        })
    }

    /// The key writes must be sealed to; [`SupportError::Unavailable`] when
    /// accounts cannot write, [`SupportError::StaffKeyChanged`] when
    /// `sealed_to` is another key.
    async fn writable(&self, sealed_to: &PublicKey) -> Result<(), SupportError> {
        let availability = self.availability().await?;
        match availability.staff_key {
            Some(key) if availability.available => {
                if key == *sealed_to {
                    Ok(())
                } else {
                    Err(SupportError::StaffKeyChanged)
                }
            }
            _ => Err(SupportError::Unavailable),
        }
    }

    async fn open_for_writes(&self) -> Result<(), SupportError> {
        if self.availability().await?.available {
            Ok(())
        } else {
            Err(SupportError::Unavailable)
        }
    }

    pub async fn overview(&self, account: &AccountId) -> Result<Overview, SupportError> {
        let availability = self.availability().await?;
        Ok(Overview {
            tickets: self.repo.tickets(account).await?,
            available: availability.available,
            staff_key: availability.staff_key,
        })
    }

    /// `POST /support/tickets`.
    pub async fn open_ticket(
        &self,
        account: &AccountId,
        ticket: &NewTicket,
    ) -> Result<Ticket, SupportError> {
        self.writable(&ticket.staff_key).await?;
        let bytes = ticket.header.stored_bytes() + ticket.message.stored_bytes();
        let guard = Guard::new(Write::NewTicket, bytes, self.clock.now());
        Ok(self.repo.create_ticket(account, ticket, &guard).await??)
    }

    /// `GET /support/tickets/:id`: the ticket and its messages; staff
    /// replies are marked read.
    pub async fn read(
        &self,
        account: &AccountId,
        id: &TicketId,
    ) -> Result<(Ticket, Vec<TicketMessage>), SupportError> {
        let mut ticket = self
            .repo
            .ticket(Some(account.clone()), id)
            .await?
            .ok_or(Refusal::NotFound)?;
        let messages = self.repo.messages(id).await?;
        if ticket.unread {
            self.repo.mark_read(id).await?;
            ticket.unread = false;
        }
        Ok((ticket, messages))
    }

    /// `POST /support/tickets/:id/messages` by the account.
    pub async fn reply(
        &self,
        account: &AccountId,
        id: &TicketId,
        message: &NewMessage,
    ) -> Result<Timestamp, SupportError> {
        self.writable(&message.staff_key).await?;
        let guard = Guard::new(
            Write::Reply(Author::Account),
            message.boxes.stored_bytes(),
            self.clock.now(),
        );
        Ok(self
            .repo
            .add_message(
                account,
                id,
                Author::Account,
                message,
                &guard,
                &Trail::default(),
            )
            .await??)
    }

    /// `POST /support/tickets/:id/close`: resolved (already resolved: as it is).
    pub async fn close(&self, account: &AccountId, id: &TicketId) -> Result<Ticket, SupportError> {
        self.open_for_writes().await?;
        let now = self.clock.now();
        let records = Records::notice(Notice::support(account, id, false, now));
        Ok(self
            .repo
            .close(account, id, now, &Trail::of(records))
            .await?
            .ok_or(Refusal::NotFound)?)
    }

    /// `POST /support/tickets/:id/reopen`: counts against the open limit.
    pub async fn reopen(&self, account: &AccountId, id: &TicketId) -> Result<Ticket, SupportError> {
        self.open_for_writes().await?;
        let guard = Guard::new(Write::Reopen, 0, self.clock.now());
        Ok(self.repo.reopen(account, id, &guard).await??)
    }

    /// `POST /support/key`: stores the binding for the current key; `true`
    /// when anything changed.
    pub async fn bind(
        &self,
        account: &AccountId,
        account_key: PublicKey,
        staff_key: PublicKey,
        mac: [u8; 32],
    ) -> Result<bool, SupportError> {
        self.writable(&staff_key).await?;
        let binding = Binding {
            account: account.clone(),
            account_key,
            staff_key,
            mac,
            at: self.clock.now(),
        };
        Ok(self.repo.save_binding(&binding).await?)
    }

    /// The hourly sweep: open tickets idle for 60 days are closed, tickets
    /// closed 90 days ago are deleted.
    pub async fn sweep(&self) -> Result<SweepReport, SupportError> {
        Ok(self.repo.sweep(&SweepCutoffs::at(self.clock.now())).await?)
    }

    // Staff side: every ticket, the staff copies.

    /// A page of tickets of every account; `read` is the audit row of the
    /// read, written with it.
    pub async fn staff_list(
        &self,
        status: Option<TicketStatus>,
        page: &PageRequest,
        read: &AuditEntry,
    ) -> Result<Page<Ticket>, SupportError> {
        let rows = self.repo.all_tickets(status, page, read).await?;
        Ok(Page::from_rows(rows, page, |ticket| Cursor {
            at: ticket.updated_at,
            id: ticket.id.to_string(),
        }))
    }

    /// A ticket, its messages and the account's last binding.
    pub async fn staff_read(
        &self,
        id: &TicketId,
    ) -> Result<(Ticket, Vec<TicketMessage>, Option<Binding>), SupportError> {
        let ticket = self.repo.ticket(None, id).await?.ok_or(Refusal::NotFound)?;
        let messages = self.repo.messages(id).await?;
        let binding = self.repo.binding(&ticket.account).await?;
        Ok((ticket, messages, binding))
    }

    /// A staff reply: both copies sealed by staff; the ticket becomes unread
    /// for the account with `lastAuthor: staff`, and a support push is queued.
    /// Staff replies have no hourly limit; the ticket's and the account's
    /// limits still hold. `actor`'s `ticket.reply` audit row commits with it.
    pub async fn staff_reply(
        &self,
        actor: &str,
        id: &TicketId,
        message: &NewMessage,
    ) -> Result<(AccountId, Timestamp), SupportError> {
        let ticket = self.repo.ticket(None, id).await?.ok_or(Refusal::NotFound)?;
        let availability = self.availability().await?;
        if availability.staff_key != Some(message.staff_key) {
            return Err(SupportError::StaffKeyChanged);
        }
        let now = self.clock.now();
        let guard = Guard::new(
            Write::Reply(Author::Staff),
            message.boxes.stored_bytes(),
            now,
        );
        let records = Records::notice(Notice::support(&ticket.account, id, true, now));
        let audit = AuditEntry::ticket(actor, "ticket.reply", id, now);
        let at = self
            .repo
            .add_message(
                &ticket.account,
                id,
                Author::Staff,
                message,
                &guard,
                &Trail::staff(records, audit),
            )
            .await??;
        Ok((ticket.account, at))
    }

    /// Staff resolve a ticket; the account is told by push. `actor`'s
    /// `ticket.resolve` audit row commits with it.
    pub async fn staff_resolve(&self, actor: &str, id: &TicketId) -> Result<Ticket, SupportError> {
        let ticket = self.repo.ticket(None, id).await?.ok_or(Refusal::NotFound)?;
        let now = self.clock.now();
        let records = Records::notice(Notice::support(&ticket.account, id, false, now));
        let audit = AuditEntry::ticket(actor, "ticket.resolve", id, now);
        Ok(self
            .repo
            .close(&ticket.account, id, now, &Trail::staff(records, audit))
            .await?
            .ok_or(Refusal::NotFound)?)
    }
}
