//! `sealpost-smtp`: SMTP ingest on `SEALPOST_SMTP_ADDR` until SIGINT or SIGTERM.

use std::sync::Arc;

use anyhow::Context;
use sealpost_config::Config;
use sealpost_kernel::SystemClock;
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    sealpost_config::init_tracing(&config);
    let listener = TcpListener::bind(&config.smtp_addr)
        .await
        .with_context(|| format!("binding SEALPOST_SMTP_ADDR {}", config.smtp_addr))?;
    let running = sealpost_wiring::smtp::start(&config, Arc::new(SystemClock), listener).await?;
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; stopping"),
        _ = terminate.recv() => tracing::info!("terminated; stopping"),
    }
    running.stop();
    Ok(())
}
