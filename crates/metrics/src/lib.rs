//! Prometheus metrics of the Sealpost processes, in one place: the names of
//! every series ([`names`]), the process-wide recorder ([`install`]) and the
//! `/metrics` listener each process serves on an address of its own
//! ([`serve`]; `SEALPOST_METRICS_ADDR`, `SEALPOST_SMTP_METRICS_ADDR`,
//! `SEALPOST_DNS_METRICS_ADDR`, all off unless set).
//!
//! Adapters record through the `metrics` facade macros with these names;
//! with no recorder installed (a process without a listener, most tests)
//! recording does nothing. Labels hold only small fixed sets of values: a
//! route template, a status, a reason, an outcome. Never an address, a
//! subject, a token or a raw path.

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Context;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The series, by name. Units are in the names (`_seconds`, `_bytes`).
pub mod names {
    /// Counter: HTTP requests answered, by `method`, `route` (the route
    /// template, e.g. `/inboxes/{id}/messages`; `unmatched` for none) and
    /// `status`.
    pub const HTTP_REQUESTS: &str = "sealpost_http_requests_total";
    /// Histogram: seconds from a request's arrival to its answer, by
    /// `method` and `route`.
    pub const HTTP_REQUEST_SECONDS: &str = "sealpost_http_request_duration_seconds";

    /// Counter: SMTP connections admitted to a session.
    pub const SMTP_SESSIONS: &str = "sealpost_smtp_sessions_total";
    /// Gauge: SMTP sessions running now.
    pub const SMTP_SESSIONS_ACTIVE: &str = "sealpost_smtp_sessions_active";
    /// Counter: SMTP refusals, by `reason` (see [`crate::smtp_reason`]).
    pub const SMTP_REFUSALS: &str = "sealpost_smtp_refusals_total";
    /// Counter: messages answered 250 at the end of DATA.
    pub const SMTP_MESSAGES_ACCEPTED: &str = "sealpost_smtp_messages_accepted_total";
    /// Counter: octets of the messages answered 250.
    pub const SMTP_ACCEPTED_BYTES: &str = "sealpost_smtp_accepted_bytes_total";

    /// Histogram: seconds one group commit of sealed messages took.
    pub const COMMIT_SECONDS: &str = "sealpost_ingest_commit_duration_seconds";
    /// Histogram: messages written by one group commit.
    pub const COMMIT_BATCH_SIZE: &str = "sealpost_ingest_commit_batch_size";

    /// Counter: webhook attempts, by `outcome` (`succeeded`, `retry`:
    /// failed and due again, `failed`: failed for good).
    pub const WEBHOOK_DELIVERIES: &str = "sealpost_webhook_deliveries_total";
    /// Counter: push attempts, by `platform` and `outcome` (`delivered`,
    /// `retry`, `dropped`, `unregistered`).
    pub const PUSH_DELIVERIES: &str = "sealpost_push_deliveries_total";
    /// Gauge: outbox events a consumer (`webhooks`, `push`) has not taken
    /// yet; set by the jobs.
    pub const OUTBOX_BACKLOG: &str = "sealpost_outbox_backlog";

    /// Counter: DNS questions answered, by `transport` and `rcode`.
    pub const DNS_QUERIES: &str = "sealpost_dns_queries_total";

    /// Gauge: database connections of this process's pool, by `state`
    /// (`in_use`, `idle`).
    pub const DB_POOL_CONNECTIONS: &str = "sealpost_db_pool_connections";
    /// Gauge: the pool's size limit.
    pub const DB_POOL_MAX: &str = "sealpost_db_pool_max_connections";
    /// Gauge: tasks waiting for a database connection.
    pub const DB_POOL_WAITING: &str = "sealpost_db_pool_waiting";
}

/// The `reason` label of [`names::SMTP_REFUSALS`]: one of a fixed set.
pub mod smtp_reason {
    /// All sessions taken (421 4.3.2 at connect).
    pub const CAPACITY: &str = "capacity";
    /// Over a per-client or per-network session cap or the connection
    /// rate (421 4.7.0 at connect).
    pub const CLIENT_LIMIT: &str = "client_limit";
    /// RCPT of an address that does not exist (550 5.1.1).
    pub const UNKNOWN_ADDRESS: &str = "unknown_address";
    /// RCPT of an address that takes no mail (550 5.7.1).
    pub const RECIPIENT_REFUSED: &str = "recipient_refused";
    /// RCPT answered 452 4.2.2 (allowance, storage).
    pub const RECIPIENT_LATER: &str = "recipient_try_later";
    /// Over the message size (552 5.3.4).
    pub const TOO_LARGE: &str = "too_large";
    /// No memory or spool room (452 4.3.1).
    pub const STORAGE: &str = "storage";
    /// Refused at the end of DATA by the delivery (its structure, its
    /// recipients gone) or a temporary failure (451).
    pub const DELIVERY: &str = "delivery";
    /// A session timed out (421 4.4.2).
    pub const TIMEOUT: &str = "timeout";
    /// Too many errors (421 4.7.0).
    pub const ERRORS: &str = "errors";
    /// Answered 421 4.3.2 while draining.
    pub const SHUTTING_DOWN: &str = "shutting_down";
    /// A command refused for its syntax or sequence (5.5.x).
    pub const PROTOCOL: &str = "protocol";
    /// More recipients than a message may have (452 4.5.3).
    pub const TOO_MANY_RECIPIENTS: &str = "too_many_recipients";
}

/// Histogram buckets of the latencies, in seconds.
const SECONDS_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Histogram buckets of the commit batch sizes.
const BATCH_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process-wide recorder (once; later calls return the same
/// handle) and describes every series.
pub fn install() -> anyhow::Result<PrometheusHandle> {
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
        .context("latency buckets")?
        .set_buckets_for_metric(
            Matcher::Full(names::COMMIT_BATCH_SIZE.into()),
            BATCH_BUCKETS,
        )
        .context("batch size buckets")?
        .build_recorder();
    let handle = recorder.handle();
    // Two installs racing: the loser's recorder is dropped, the winner's
    // handle returned.
    if metrics::set_global_recorder(recorder).is_ok() {
        let _ = HANDLE.set(handle);
        describe();
    }
    HANDLE
        .get()
        .cloned()
        .context("another metrics recorder is installed in this process")
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    use names::*;
    describe_counter!(
        HTTP_REQUESTS,
        "HTTP requests answered, by route template and status"
    );
    describe_histogram!(
        HTTP_REQUEST_SECONDS,
        metrics::Unit::Seconds,
        "HTTP request latency"
    );
    describe_counter!(SMTP_SESSIONS, "SMTP connections admitted to a session");
    describe_gauge!(SMTP_SESSIONS_ACTIVE, "SMTP sessions running");
    describe_counter!(SMTP_REFUSALS, "SMTP refusals by reason");
    describe_counter!(SMTP_MESSAGES_ACCEPTED, "messages answered 250");
    describe_counter!(
        SMTP_ACCEPTED_BYTES,
        metrics::Unit::Bytes,
        "octets of messages answered 250"
    );
    describe_histogram!(
        COMMIT_SECONDS,
        metrics::Unit::Seconds,
        "duration of one group commit"
    );
    describe_histogram!(COMMIT_BATCH_SIZE, "messages written by one group commit");
    describe_counter!(WEBHOOK_DELIVERIES, "webhook attempts by outcome");
    describe_counter!(PUSH_DELIVERIES, "push attempts by platform and outcome");
    describe_gauge!(OUTBOX_BACKLOG, "outbox events not yet taken, by consumer");
    describe_counter!(
        DNS_QUERIES,
        "DNS questions answered, by transport and response code"
    );
    describe_gauge!(DB_POOL_CONNECTIONS, "database connections by state");
    describe_gauge!(DB_POOL_MAX, "database pool size limit");
    describe_gauge!(DB_POOL_WAITING, "tasks waiting for a database connection");
}

/// A running `/metrics` listener; stops when dropped.
pub struct MetricsServer {
    pub addr: SocketAddr,
    serving: JoinHandle<()>,
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

/// Longest wait for a scraper's request, and for the answer to go out.
const IO_LIMIT: Duration = Duration::from_secs(10);
/// Largest request head read.
const MAX_REQUEST: usize = 8 * 1024;

/// Installs the recorder and serves `GET /metrics` on `addr` (plain
/// HTTP/1.1, one request per connection; anything else is 404).
pub async fn serve(addr: SocketAddr) -> anyhow::Result<MetricsServer> {
    let handle = install()?;
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the metrics listener {addr}"))?;
    let addr = listener.local_addr().context("the metrics address")?;
    let serving = tokio::spawn(async move {
        let mut upkeep = tokio::time::interval(Duration::from_secs(5));
        loop {
            tokio::select! {
                _ = upkeep.tick() => handle.run_upkeep(),
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let handle = handle.clone();
                        tokio::spawn(async move {
                            let _ = tokio::time::timeout(IO_LIMIT, answer(stream, &handle)).await;
                        });
                    }
                    Err(error) => {
                        tracing::warn!(kind = ?error.kind(), "metrics accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
            }
        }
    });
    tracing::info!(%addr, "serving metrics at /metrics");
    Ok(MetricsServer { addr, serving })
}

async fn answer(mut stream: TcpStream, handle: &PrometheusHandle) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST {
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(chunk.get(..read).unwrap_or_default());
    }
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut parts = line.split(|&b| b == b' ');
    let (method, path) = (parts.next(), parts.next());
    let (status, kind, body) = match (method, path) {
        (Some(b"GET"), Some(b"/metrics")) => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            handle.render(),
        ),
        _ => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "not found\n".into(),
        ),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(addr: SocketAddr, path: &str) -> String {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response
    }

    #[tokio::test]
    #[allow(clippy::unwrap_used, reason = "tests")]
    async fn serves_what_was_recorded_as_prometheus_text() {
        let server = serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
        metrics::counter!(names::SMTP_REFUSALS, "reason" => smtp_reason::CAPACITY).increment(2);
        metrics::histogram!(names::COMMIT_BATCH_SIZE).record(3.0);
        let response = get(server.addr, "/metrics").await;
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        assert!(
            response.contains("sealpost_smtp_refusals_total{reason=\"capacity\"} 2"),
            "{response}"
        );
        assert!(
            response.contains("sealpost_ingest_commit_batch_size_bucket{le=\"4\"} 1"),
            "{response}"
        );
        assert!(
            response.contains("# HELP sealpost_smtp_refusals_total"),
            "{response}"
        );
        let other = get(server.addr, "/").await;
        assert!(other.starts_with("HTTP/1.1 404 "), "{other}");
        // A second install in the process hands back the same recorder.
        assert!(install().is_ok());
    }
}
