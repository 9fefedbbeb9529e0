//! `sealpost-dns`: the authoritative DNS of own domains on `SEALPOST_DNS_ADDR`
//! (UDP and TCP). Zones are read from PostgreSQL on each question, so a
//! domain proved or removed is served or dropped at once; names of no proved
//! own domain are REFUSED; no recursion, no zone transfers.

mod zones;

use std::sync::Arc;

use anyhow::Context;
use sealpost_config::Config;
use sealpost_dns_server::DnsServer;
use sealpost_store_pg::PgStore;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    sealpost_config::init_tracing(&config);
    let store =
        PgStore::connect(config.database_url.expose(), 8).context("connecting to the database")?;
    let addr = config
        .dns
        .addr
        .parse()
        .context("SEALPOST_DNS_ADDR is not ip:port")?;
    let source = Arc::new(zones::PgZones {
        store,
        settings: zones::Settings {
            nameservers: config.dns.nameservers.clone(),
            mx_host: config.dns.mx_host.clone(),
        },
    });
    let server = DnsServer::start(addr, source)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    tracing::info!(udp = %server.udp_addr, tcp = %server.tcp_addr, "serving own domains' DNS");
    tokio::select! {
        result = server.run() => result.map_err(anyhow::Error::msg),
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}
