//! The request and response bodies of the Sealpost HTTP API, exactly as they
//! travel: one definition shared by the server (`sealpost-http-api`, which
//! maps its domain types onto them) and the SDK (`sealpost-client`). The
//! OpenAPI schemas are derived from them behind the `openapi` feature.
//!
//! Field names are camelCase; binary values are base64url without padding;
//! timestamps are RFC 3339 UTC with milliseconds. Unknown fields are ignored
//! when reading, so the service can add fields without breaking older
//! clients, and names with a fixed set of values read a newer value as
//! `Other` instead of failing.
//!
//! Requests carry ids, keys, plan ids and sealed boxes as the plain JSON the
//! service checks itself after reading the body, so that a bad value gets its
//! own error code (`invalid_id`, `invalid_key`, `invalid_box`, `too_large`)
//! rather than a generic `invalid_field`; their constructors take the typed
//! values.

mod accounts;
mod activity;
mod addresses;
mod api_keys;
mod billing;
mod devices;
mod domains;
mod encoding;
mod folders;
mod messages;
mod notifications;
mod plans;
#[cfg(feature = "openapi")]
pub mod schemas;
mod sending;
mod service;
mod staff;
mod support;
mod teams;
mod webhooks;

pub use accounts::*;
pub use activity::*;
pub use addresses::*;
pub use api_keys::*;
pub use billing::*;
pub use devices::*;
pub use domains::*;
pub use encoding::sealed_json;
pub use folders::*;
pub use messages::*;
pub use notifications::*;
pub use plans::*;
pub use sending::*;
pub use service::*;
pub use staff::*;
pub use support::*;
pub use teams::*;
pub use webhooks::*;

#[cfg(test)]
mod tests;
