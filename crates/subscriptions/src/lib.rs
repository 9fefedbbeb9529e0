//! Plans in use: what an account has spent of its plan (`GET /usage`), the
//! dashboard counters (`GET /overview`), the subscription record, and the
//! rule for moving between plans (`POST /subscription/plan`).
//!
//! Every limit is read from the one plan table (`sealpost-plans`); this crate
//! only counts and compares. Reading usage spends nothing: no counter is
//! incremented here. A plan change comes with its `subscription.updated`
//! records, written by the store in the change's own transaction.
//!
//! Billing (providers, payments, pauses, renewals) is another crate's; the
//! subscription record carries its fields with their "nothing yet" values.

mod change;
mod error;
mod repository;
mod service;
mod usage;

pub use change::*;
pub use error::*;
pub use repository::*;
pub use service::*;
pub use usage::*;

#[cfg(test)]
mod pending_tests;
#[cfg(test)]
mod tests;
