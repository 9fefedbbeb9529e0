//! In-app support (docs/api.md "Support": the ticket, its endpoints, its
//! states and the support limits; docs/api.md "Limits").
//!
//! A ticket's header and each message are two sealed boxes: one for the
//! support team's key, one for the account's own key. The service keeps
//! both and opens neither; it holds in the clear only who wrote, when, the
//! keys sealed to and the open and read flags.
//!
//! [`staff`] is the staff side (tokens, the audit log, abuse reports,
//! suspension): a self-contained feature with its own model, repository
//! trait, service and error in one module; [`staff_access`] says who may do
//! what there (roles, token lifetimes, the support key rotation proof).
//!
//! Pure like every domain crate: [`service::Support`] decides, the store
//! behind [`SupportRepository`] applies each write under the account's lock
//! after [`rules::Guard::check`] passes on the counts taken there.

mod error;
pub mod model;
mod repository;
pub mod rules;
pub mod service;
pub mod staff;
pub mod staff_access;

pub use error::SupportError;
pub use model::{
    Author, Binding, BoxPair, NewMessage, NewTicket, PublicKey, Ticket, TicketMessage,
    TicketStatus, box_bytes,
};
pub use repository::{SupportRepository, Switches, Trail};
pub use rules::{Guard, Refusal, SweepCutoffs, SweepReport, Usage, Write};
pub use service::{Availability, Overview, Support};
pub use staff::{
    AbuseReason, AbuseReport, AbuseStatus, AbuseTarget, AuditEntry, Staff, StaffError, StaffMember,
    StaffRepository, StaffTokenInfo, Suspension,
};
pub use staff_access::{Role, Roles, RotationChallenge, RotationProofs};

#[cfg(any(test, feature = "mock"))]
pub use repository::MockSupportRepository;
#[cfg(any(test, feature = "mock"))]
pub use staff::MockStaffRepository;

#[cfg(test)]
mod tests;
