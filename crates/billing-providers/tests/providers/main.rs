//! The providers against recorded requests, responses and notices
//! (`tests/fixtures`, see `regenerate.py` there), and over the wire against
//! a loopback HTTP server.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod btcpay;
mod common;
mod stripe;
