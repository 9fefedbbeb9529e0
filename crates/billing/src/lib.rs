//! Billing (docs/api.md "Plans and usage" and "Billing"): payments and their
//! states, what checkout may sell, the renewal clock (30-day periods from the
//! paid date), the lapse of an unpaid period (the account pauses), and what a
//! payment releases.
//!
//! Pure: providers sit behind [`PaymentProvider`], the store behind
//! [`BillingRepository`] (and the account facts behind
//! `SubscriptionRepository`), time comes from a `Clock`.

mod error;
mod payment;
pub mod provider;
mod repository;
mod rules;
mod service;

pub use error::*;
pub use payment::*;
pub use provider::*;
pub use repository::*;
pub use rules::*;
pub use service::*;

#[cfg(test)]
mod pending_service_tests;
#[cfg(test)]
mod reminder_service_tests;
#[cfg(test)]
mod renewal_tests;
#[cfg(test)]
mod tests;
