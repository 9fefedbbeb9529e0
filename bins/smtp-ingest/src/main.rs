//! `sealpost-smtp`: SMTP ingest on `SEALPOST_SMTP_ADDR` until SIGINT or
//! SIGTERM, then a drain of at most `SEALPOST_SMTP_DRAIN_SECS`: the listener
//! closes, idle sessions are answered 421 4.3.2, and messages already in
//! DATA are finished and answered before the process exits 0. A second
//! signal during the drain cuts it short.

use std::sync::Arc;

use anyhow::Context;
use sealpost_config::Config;
use sealpost_kernel::SystemClock;
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    sealpost_config::init_tracing(&config);
    let listener = TcpListener::bind(&config.smtp_addr)
        .await
        .with_context(|| format!("binding SEALPOST_SMTP_ADDR {}", config.smtp_addr))?;
    let running = sealpost_wiring::smtp::start(&config, Arc::new(SystemClock), listener).await?;
    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; draining"),
        _ = terminate.recv() => tracing::info!("terminated; draining"),
    }
    let drain_for = config.operations.smtp_drain;
    tokio::select! {
        drained = running.drain() => {
            let drained = drained?;
            if drained.cut > 0 {
                tracing::warn!(cut = drained.cut, ?drain_for, "drained; sessions cut at the deadline");
            } else {
                tracing::info!("drained; every session finished");
            }
        }
        _ = tokio::signal::ctrl_c() => tracing::warn!("interrupted again; stopping without draining"),
        _ = terminate.recv() => tracing::warn!("terminated again; stopping without draining"),
    }
    Ok(())
}
