//! Every support limit, and the one check a write passes under the
//! account's lock.

use chrono::TimeDelta;
use sealpost_kernel::Timestamp;

use crate::model::{Author, TicketStatus};

/// Tickets open at once.
pub const MAX_OPEN: u32 = 5;
/// Tickets kept, open or resolved.
pub const MAX_STORED: u32 = 20;
/// Messages in one ticket, both sides together.
pub const MAX_MESSAGES: u32 = 50;
/// Ciphertext kept per account, both copies counted (see [`crate::model::box_bytes`]).
pub const MAX_BYTES: u64 = 512 * 1024;
/// New tickets per UTC day.
pub const NEW_PER_DAY: u32 = 5;
/// Replies the account writes per clock hour (first messages not counted).
pub const REPLIES_PER_HOUR: u32 = 30;
/// An open ticket with no activity for this long is closed.
pub const CLOSE_AFTER: TimeDelta = TimeDelta::days(60);
/// A closed ticket is deleted this long after closing.
pub const DELETE_AFTER: TimeDelta = TimeDelta::days(90);
/// The largest header box, as JSON.
pub const HEADER_MAX_LEN: usize = 16 * 1024;
/// The largest message box, as JSON.
pub const MESSAGE_MAX_LEN: usize = 64 * 1024;

/// Why a write is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no such ticket")]
    NotFound,
    #[error("that id is already in use")]
    IdTaken,
    #[error("five tickets are open; close one first")]
    TooManyOpen,
    #[error("twenty tickets are stored")]
    TooManyTickets,
    #[error("the ticket is resolved; reopen it first")]
    TicketClosed,
    #[error("the ticket holds 50 messages")]
    TicketFull,
    #[error("the account's support storage (512 KB) is full")]
    StorageFull,
    #[error("five new tickets today; try again tomorrow")]
    TooManyNew { retry_after_seconds: u64 },
    #[error("thirty replies this hour; try again later")]
    TooManyReplies { retry_after_seconds: u64 },
}

/// What the store counts for the account (and the ticket written to),
/// under the account's lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub open: u32,
    pub stored: u32,
    pub bytes: u64,
    /// Tickets created since [`Guard::day_start`].
    pub created_today: u32,
    /// Replies the account wrote since [`Guard::hour_start`].
    pub replies_this_hour: u32,
    /// The ticket written to: its status and message count.
    pub ticket: Option<(TicketStatus, u32)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    NewTicket,
    Reply(Author),
    Reopen,
}

/// One write and the windows it is counted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Guard {
    pub write: Write,
    /// The ciphertext the write adds.
    pub bytes: u64,
    pub now: Timestamp,
    pub day_start: Timestamp,
    pub hour_start: Timestamp,
}

fn seconds_until(from: Timestamp, to: Timestamp) -> u64 {
    u64::try_from((to - from).num_seconds()).unwrap_or(0).max(1)
}

impl Guard {
    pub fn new(write: Write, bytes: u64, now: Timestamp) -> Guard {
        Guard {
            write,
            bytes,
            now,
            day_start: now.start_of_day(),
            hour_start: now.start_of_hour(),
        }
    }

    /// The decision, on the counts taken under the account's lock.
    pub fn check(&self, usage: &Usage) -> Result<(), Refusal> {
        match self.write {
            Write::NewTicket => {
                if usage.stored >= MAX_STORED {
                    return Err(Refusal::TooManyTickets);
                }
                if usage.open >= MAX_OPEN {
                    return Err(Refusal::TooManyOpen);
                }
                if usage.created_today >= NEW_PER_DAY {
                    return Err(Refusal::TooManyNew {
                        retry_after_seconds: seconds_until(
                            self.now,
                            self.day_start + TimeDelta::days(1),
                        ),
                    });
                }
            }
            Write::Reply(author) => {
                let (status, messages) = usage.ticket.ok_or(Refusal::NotFound)?;
                if status != TicketStatus::Open {
                    return Err(Refusal::TicketClosed);
                }
                if messages >= MAX_MESSAGES {
                    return Err(Refusal::TicketFull);
                }
                if author == Author::Account && usage.replies_this_hour >= REPLIES_PER_HOUR {
                    return Err(Refusal::TooManyReplies {
                        retry_after_seconds: seconds_until(
                            self.now,
                            self.hour_start + TimeDelta::hours(1),
                        ),
                    });
                }
            }
            Write::Reopen => {
                let (status, _) = usage.ticket.ok_or(Refusal::NotFound)?;
                if status == TicketStatus::Resolved && usage.open >= MAX_OPEN {
                    return Err(Refusal::TooManyOpen);
                }
            }
        }
        if self.bytes > 0 && usage.bytes + self.bytes > MAX_BYTES {
            return Err(Refusal::StorageFull);
        }
        Ok(())
    }
}

/// The sweep's two cut-offs at `now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepCutoffs {
    /// Open tickets last active before this are closed.
    pub close_inactive_before: Timestamp,
    /// Tickets closed before this are deleted.
    pub delete_closed_before: Timestamp,
    pub now: Timestamp,
}

impl SweepCutoffs {
    pub fn at(now: Timestamp) -> SweepCutoffs {
        SweepCutoffs {
            close_inactive_before: now - CLOSE_AFTER,
            delete_closed_before: now - DELETE_AFTER,
            now,
        }
    }
}

/// What a sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub closed: u64,
    pub deleted: u64,
}
