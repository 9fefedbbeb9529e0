//! Addresses (inboxes): which names can be created on which domain, the plan
//! limits on creating and assigning them, retention, and retirement: a
//! deleted address is never issued again to anyone.

mod error;
mod model;
mod repository;
mod reserved;
mod service;

pub use error::AddressError;
pub use model::*;
pub use repository::{AddressRepository, AssignOutcome, CreateOutcome, OwnDomainDirectory};
#[cfg(any(test, feature = "mock"))]
pub use repository::{MockAddressRepository, MockOwnDomainDirectory};
pub use reserved::{ROLE_NAMES, ReservedNames};
pub use service::Addresses;

#[cfg(test)]
mod tests;
