//! Addresses (inboxes): which names can be created on which domain, the plan
//! limits on creating and assigning them, retention, and retirement: a
//! deleted address is never issued again to anyone.

mod error;
mod model;
mod repository;
mod service;

pub use error::*;
pub use model::*;
pub use repository::*;
pub use service::*;

#[cfg(test)]
mod tests;
