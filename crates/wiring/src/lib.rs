//! The composition root: [`Services`] builds the PostgreSQL store, the blob
//! store and every domain service from a [`Config`](sealpost_config::Config)
//! once; `sealpost-api` (through `sealpost-api-server`), `sealpost-smtp`,
//! the test kit and the developer tools all start from it. [`smtp`] serves
//! the SMTP ingest over the same services. The background loops that run
//! over them live in `sealpost-jobs`.

pub mod metrics;
mod services;
pub mod smtp;

pub use services::{Services, blob_store, server_keys};
