//! The shared vocabulary of every Sealpost crate: typed prefixed ids, the
//! clock and timestamps, cursor pages, plan ids, mailbox folders, string-valued enums
//! ([`string_enum!`]) and the storage error that domain crates surface
//! without knowing which database sits behind it.

#[macro_use]
mod string_enum;

pub mod clock;
pub mod folder;
pub mod id;
pub mod page;
pub mod plan;
pub mod store;
pub mod time;

pub use clock::{Clock, SystemClock, TestClock};
pub use folder::Folder;
pub use id::*;
pub use page::{CommitCursor, Cursor, Page, PageLimits, PageRequest, StreamPosition};
pub use plan::PlanId;
pub use store::StoreError;
pub use string_enum::UnknownValue;
pub use time::Timestamp;

#[cfg(feature = "openapi")]
mod openapi;

/// For [`string_enum_serde!`]: the serde its expansion names.
#[doc(hidden)]
pub use serde as __serde;
