//! `sealpost-api`: configuration from the environment, then serve until
//! SIGINT or SIGTERM.

use std::net::TcpListener;
use std::sync::Arc;

use anyhow::Context;
use sealpost_config::Config;
use sealpost_kernel::SystemClock;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    sealpost_config::init_tracing(&config);
    let listener = TcpListener::bind(&config.http_addr)
        .with_context(|| format!("binding SEALPOST_HTTP_ADDR {}", config.http_addr))?;
    let workers = std::thread::available_parallelism().map_or(2, usize::from);
    let options = sealpost_api::StartOptions {
        workers,
        background_jobs: true,
    };
    let running = sealpost_api::start(&config, Arc::new(SystemClock), listener, options).await?;

    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; stopping"),
        _ = terminate.recv() => tracing::info!("terminated; stopping"),
    }
    running.stop().await;
    Ok(())
}
