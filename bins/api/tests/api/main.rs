//! HTTP integration tests: the real API wiring on port 0, a database of its
//! own per test, requests over real TCP.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod support;

mod accounts;
mod addresses;
mod agents;
mod api_keys;
mod billing;
mod card_renewal;
mod deletion_races;
mod devices;
mod docs;
mod domains;
mod errors;
mod event_stream;
mod folders;
mod jobs;
mod messages;
mod metrics;
mod notifications;
mod ownership;
mod proxies;
mod push;
mod renewal_reminders;
mod scheduled_downgrade;
mod secrets;
mod sending;
mod smtp_limits;
mod staff;
mod staff_access;
mod storage;
mod stored_bytes;
mod teams;
mod tickets;
mod tls;
mod usage;
mod web_app;
mod webhook_delivery;
mod webhooks;
