//! The PostgreSQL store: implements the domain crates' repository traits with
//! diesel-async over a deadpool pool, and owns the embedded migrations.
//!
//! Row structs stay private to this crate; domains only see their own types.

mod access;
mod accounts;
mod activity;
mod addresses;
mod api_keys;
mod billing;
mod billing_cards;
mod billing_pending;
mod billing_reminders;
mod connect;
mod database;
mod devices;
mod domains;
mod event_stream;
mod group_commit;
mod jobs;
mod messages;
mod notifications;
mod notify;
mod outbox;
mod prepared;
mod pruning;
mod push;
mod records;
mod schema;
mod sending;
mod staff;
pub mod statements;
mod subscriptions;
mod support;
mod teams;
#[cfg(test)]
mod test_db;
#[cfg(any(test, feature = "test-support"))]
pub mod test_server;
mod webhooks;

use std::time::Duration;

use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::deadpool::{Object, Pool, PoolError};
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};
use futures_util::FutureExt;
use sealpost_kernel::StoreError;

pub use connect::{PgConnector, SslMode, WeakTls, connect};
pub use database::{DatabaseUrl, MigrateError, create_database_if_missing, migrate, quote_ident};
pub use domains::DomainZone;
pub use jobs::{Job, JobLock};
pub use messages::InstanceLock;
pub use notify::MailNotifier;

/// How long a request waits for a pooled connection before the store reports
/// itself unavailable (503) instead of queueing without bound.
const POOL_WAIT: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub struct PgStore {
    pool: Pool<AsyncPgConnection>,
    /// Message commits waiting to be written together (group_commit.rs).
    batcher: std::sync::Arc<group_commit::Batcher>,
}

impl PgStore {
    /// A pool whose connections are opened by [`connect`]'s rules (TLS per
    /// `sslmode`); a malformed URL or unreadable `sslrootcert` fails here.
    /// Logs a warning (host and mode, never the password) when the database
    /// is on another host and `sslmode` is below `verify-full`
    /// ([`PgConnector::weak_tls`]).
    pub fn connect(database_url: &str, max_connections: usize) -> Result<Self, StoreError> {
        let connector = PgConnector::new(database_url).map_err(StoreError::failed)?;
        if let Some(weak) = connector.weak_tls() {
            tracing::warn!(
                host = %weak.host,
                sslmode = ?weak.mode,
                "DATABASE_URL reaches a database on another host without sslmode=verify-full: \
                 the connection can be read or altered on the way; set \
                 sslmode=verify-full (and sslrootcert) in DATABASE_URL"
            );
        }
        let mut config = ManagerConfig::default();
        // No `SELECT 1` round trip on every checkout (the default): a
        // connection that broke is still never handed out (its client
        // notices the closed socket), and one that breaks later fails its
        // query as it would after the check anyway.
        config.recycling_method = RecyclingMethod::Fast;
        config.custom_setup = Box::new(move |_url| {
            let connector = connector.clone();
            async move { connector.connect().await }.boxed()
        });
        let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(
            database_url,
            config,
        );
        let pool = Pool::builder(manager)
            .max_size(max_connections)
            .wait_timeout(Some(POOL_WAIT))
            .create_timeout(Some(POOL_WAIT))
            .runtime(deadpool::Runtime::Tokio1)
            .build()
            .map_err(StoreError::failed)?;
        Ok(Self {
            pool,
            batcher: std::sync::Arc::default(),
        })
    }

    async fn conn(&self) -> Result<Object<AsyncPgConnection>, StoreError> {
        self.pool.get().await.map_err(pool_error)
    }

    /// Sets the pool gauges (`sealpost_db_pool_*`) to the pool's state now.
    pub fn record_pool_metrics(&self) {
        use sealpost_metrics::names;
        let status = self.pool.status();
        let idle = status.available;
        let in_use = status.size.saturating_sub(idle);
        metrics::gauge!(names::DB_POOL_CONNECTIONS, "state" => "in_use").set(in_use as f64);
        metrics::gauge!(names::DB_POOL_CONNECTIONS, "state" => "idle").set(idle as f64);
        metrics::gauge!(names::DB_POOL_MAX).set(status.max_size as f64);
        metrics::gauge!(names::DB_POOL_WAITING).set(status.waiting as f64);
    }

    /// [`PgStore::record_pool_metrics`] every few seconds, for ever.
    pub async fn record_pool_metrics_forever(self) {
        let mut every = tokio::time::interval(Duration::from_secs(5));
        loop {
            every.tick().await;
            self.record_pool_metrics();
        }
    }

    /// For `/readyz`: a round trip to the database.
    pub async fn ping(&self) -> Result<(), StoreError> {
        use diesel_async::RunQueryDsl;
        let mut conn = self.conn().await?;
        diesel::sql_query("SELECT 1")
            .execute(&mut conn)
            .await
            .map(|_| ())
            .map_err(db_error)
    }
}

fn pool_error(error: PoolError) -> StoreError {
    match error {
        PoolError::Backend(error) => StoreError::Unavailable(error.to_string()),
        other => StoreError::Unavailable(other.to_string()),
    }
}

fn db_error(error: diesel::result::Error) -> StoreError {
    StoreError::failed(error)
}

/// Our own stored bytes back into a fixed array; a wrong length means a corrupt row.
fn bytes32(bytes: Vec<u8>) -> Result<[u8; 32], StoreError> {
    bytes
        .try_into()
        .map_err(|_| StoreError::Failed("stored value is not 32 bytes".into()))
}

/// A fingerprint of every migration file: names template databases in tests.
pub const MIGRATIONS_FINGERPRINT: &str = env!("SEALPOST_MIGRATIONS_FINGERPRINT");
