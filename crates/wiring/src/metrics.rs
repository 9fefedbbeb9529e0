//! A process's metrics: the `/metrics` listener on the address configured
//! for it, and the database pool gauges kept current beside it.

use std::net::SocketAddr;

use sealpost_metrics::MetricsServer;
use sealpost_store_pg::PgStore;

/// The listener and the pool reporter; both stop when this is dropped.
pub struct ProcessMetrics {
    server: MetricsServer,
    pool: tokio::task::JoinHandle<()>,
}

impl ProcessMetrics {
    /// Where `/metrics` answers (the port chosen when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.server.addr
    }
}

impl Drop for ProcessMetrics {
    fn drop(&mut self) {
        self.pool.abort();
    }
}

/// Serves `/metrics` on `addr` when one is set (the setting of the process
/// at hand: `SEALPOST_METRICS_ADDR`, `SEALPOST_SMTP_METRICS_ADDR` or
/// `SEALPOST_DNS_METRICS_ADDR`), reporting `store`'s pool.
pub async fn start(
    addr: Option<SocketAddr>,
    store: &PgStore,
) -> anyhow::Result<Option<ProcessMetrics>> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let server = sealpost_metrics::serve(addr).await?;
    store.record_pool_metrics();
    let pool = tokio::spawn(store.clone().record_pool_metrics_forever());
    Ok(Some(ProcessMetrics { server, pool }))
}
