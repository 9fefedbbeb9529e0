//! The shared vocabulary of every Sealpost crate: typed prefixed ids, the
//! clock and timestamps, cursor pages, plan ids and the storage error that
//! domain crates surface without knowing which database sits behind it.

pub mod clock;
pub mod id;
pub mod page;
pub mod plan;
pub mod store;
pub mod time;

pub use clock::{Clock, SystemClock, TestClock};
pub use id::*;
pub use page::{Cursor, Page, PageLimits, PageRequest};
pub use plan::PlanId;
pub use store::StoreError;
pub use time::Timestamp;

#[cfg(feature = "openapi")]
mod openapi;
