//! `sealpost-dns`: the authoritative DNS of own domains on `SEALPOST_DNS_ADDR`
//! (UDP and TCP). Zones are read from PostgreSQL in one query and kept for
//! `SEALPOST_DNS_ZONE_CACHE_SECS`, so a domain proved or removed is served or
//! dropped within that; names of no proved own domain are REFUSED; no
//! recursion, no zone transfers. UDP answers are bounded in size
//! (`SEALPOST_DNS_UDP_MAX`) and per client network (`SEALPOST_DNS_RATE`).
//! At SIGTERM or Ctrl-C it takes no new question, lets the answers in
//! flight go out (10 seconds at most), closes its sockets and exits 0.

mod cache;
mod zones;

use std::sync::Arc;

use anyhow::Context;
use sealpost_config::Config;
use sealpost_dns_server::{DnsServer, Limits, RateLimit};
use sealpost_store_pg::PgStore;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    sealpost_config::init_tracing(&config);
    // One query at a time: the zones are read whole, by one question.
    let store =
        PgStore::connect(config.database_url.expose(), 2).context("connecting to the database")?;
    let addr = config
        .dns
        .addr
        .parse()
        .context("SEALPOST_DNS_ADDR is not ip:port")?;
    // `/metrics` (`SEALPOST_DNS_METRICS_ADDR`) and the pool gauges.
    let _metrics = match config.operations.dns_metrics_addr {
        Some(addr) => {
            let server = sealpost_metrics::serve(addr).await?;
            store.record_pool_metrics();
            let pool = tokio::spawn(store.clone().record_pool_metrics_forever());
            tracing::info!(metrics = %server.addr, "serving metrics");
            Some((server, AbortOnDrop(pool)))
        }
        None => None,
    };
    let source = Arc::new(zones::PgZones {
        zones: cache::ZoneCache::new(store, config.dns.zone_cache),
        settings: zones::Settings {
            nameservers: config.dns.nameservers.clone(),
            mx_host: config.dns.mx_host.clone(),
        },
    });
    let limits = Limits {
        udp_max: config.dns.udp_max,
        rate: std::num::NonZeroU32::new(config.dns.rate_per_second).map(|per_second| RateLimit {
            per_second,
            slip: config.dns.rate_slip,
            ipv4_prefix: config.dns.rate_ipv4_prefix,
            ipv6_prefix: config.dns.rate_ipv6_prefix,
        }),
    };
    let server = DnsServer::start_with(addr, source, &limits)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    let mut server = server;
    tracing::info!(udp = %server.udp_addr, tcp = %server.tcp_addr, "serving own domains' DNS");
    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    tokio::select! {
        result = server.run() => return result.map_err(anyhow::Error::msg),
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; stopping"),
        _ = terminate.recv() => tracing::info!("terminated; stopping"),
    }
    if server.drain(DRAIN).await {
        tracing::info!("stopped; every answer in flight went out");
    } else {
        tracing::warn!("stopped; answers still in flight after {DRAIN:?} were dropped");
    }
    Ok(())
}

/// Stops the pool reporter with the process's metrics.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Longest wait for answers in flight at SIGTERM: an answer takes one
/// cached lookup or one query, so this is ample and stays well under the
/// usual 30 s before a supervisor sends SIGKILL.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(10);
