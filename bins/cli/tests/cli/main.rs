//! The built `sealpost` binary against the real API (`TestApp`), a module
//! per command group; `support` holds what they share.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "test helpers: a failed step stops the test loudly; output is shown on failure"
)]

mod support;

mod accounts;
mod addresses;
mod api_keys;
mod billing;
mod devices;
mod domains;
mod mail;
mod notifications;
mod teams;
mod terminal;
mod tickets;
