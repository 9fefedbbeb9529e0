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

thread_local! {
    /// The shard of a thread bound by [`bind_thread_to_a_shard`].
    static THREAD_SHARD: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

static NEXT_SHARD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Binds the calling thread to the next shard of every [`PgStore`] made by
/// [`PgStore::connect_sharded`] (shards taken in turn); called once by each
/// HTTP worker as it starts.
pub fn bind_thread_to_a_shard() {
    let shard = NEXT_SHARD.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    THREAD_SHARD.with(|cell| cell.set(Some(shard)));
}

/// How long a request waits for a pooled connection before the store reports
/// itself unavailable (503) instead of queueing without bound.
const POOL_WAIT: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub struct PgStore {
    /// The pool of threads not bound to a shard, then one pool per shard
    /// ([`bind_thread_to_a_shard`]).
    pools: std::sync::Arc<[Pool<AsyncPgConnection>]>,
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
        Self::connect_sharded(database_url, max_connections, 0)
    }

    /// [`PgStore::connect`], the connections split between the threads not
    /// bound to a shard and `shards` pools for threads that are (the API's
    /// HTTP workers, each bound at its start). A connection's I/O runs as a
    /// task on the runtime of the thread that opened it; a worker using
    /// another worker's connection wakes that thread for every statement,
    /// twice. Bound to its own pool, a worker opens and uses its own.
    pub fn connect_sharded(
        database_url: &str,
        max_connections: usize,
        shards: usize,
    ) -> Result<Self, StoreError> {
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
        // Split, but never below two a pool: a worker with one connection
        // would queue every request behind the one in flight.
        let pool_size = if shards == 0 {
            max_connections
        } else {
            (max_connections / (shards + 1)).max(2)
        };
        let pools = (0..=shards)
            .map(|_| {
                let connector = connector.clone();
                let mut config = ManagerConfig::default();
                // No `SELECT 1` round trip on every checkout (the default): a
                // connection that broke is still never handed out (its client
                // notices the closed socket), and one that breaks later fails
                // its query as it would after the check anyway.
                config.recycling_method = RecyclingMethod::Fast;
                config.custom_setup = Box::new(move |_url| {
                    let connector = connector.clone();
                    async move { connector.connect().await }.boxed()
                });
                let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(
                    database_url,
                    config,
                );
                Pool::builder(manager)
                    .max_size(pool_size)
                    .wait_timeout(Some(POOL_WAIT))
                    .create_timeout(Some(POOL_WAIT))
                    .runtime(deadpool::Runtime::Tokio1)
                    .build()
                    .map_err(StoreError::failed)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            pools: pools.into(),
            batcher: std::sync::Arc::default(),
        })
    }

    /// The pool of this thread's shard.
    fn pool(&self) -> &Pool<AsyncPgConnection> {
        let shards = self.pools.len() - 1;
        let index = match THREAD_SHARD.with(std::cell::Cell::get) {
            Some(shard) if shards > 0 => 1 + shard % shards,
            _ => 0,
        };
        &self.pools[index]
    }

    async fn conn(&self) -> Result<Object<AsyncPgConnection>, StoreError> {
        self.pool().get().await.map_err(pool_error)
    }

    /// Sets the pool gauges (`sealpost_db_pool_*`) to the pool's state now.
    pub fn record_pool_metrics(&self) {
        use sealpost_metrics::names;
        let (size, idle, max_size, waiting) =
            self.pools
                .iter()
                .map(Pool::status)
                .fold((0, 0, 0, 0), |sum, status| {
                    (
                        sum.0 + status.size,
                        sum.1 + status.available,
                        sum.2 + status.max_size,
                        sum.3 + status.waiting,
                    )
                });
        let in_use = size.saturating_sub(idle);
        metrics::gauge!(names::DB_POOL_CONNECTIONS, "state" => "in_use").set(in_use as f64);
        metrics::gauge!(names::DB_POOL_CONNECTIONS, "state" => "idle").set(idle as f64);
        metrics::gauge!(names::DB_POOL_MAX).set(max_size as f64);
        metrics::gauge!(names::DB_POOL_WAITING).set(waiting as f64);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_db::{database_url, drop_database, fresh_store};

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn opened(store: &PgStore) -> Vec<usize> {
        store.pools.iter().map(|pool| pool.status().size).collect()
    }

    /// Each of two threads bound to a shard (as the API's HTTP workers
    /// are) opens its connection in its own pool; a thread not bound uses
    /// the first. The connections are split between the pools.
    #[test]
    fn bound_threads_take_their_connections_from_their_own_pools() {
        const DATABASE: &str = "sealpost_store_pg_shards";
        // Migrating needs a multi-threaded runtime (`block_in_place`).
        let setup = tokio::runtime::Runtime::new().unwrap();
        setup.block_on(async { drop(fresh_store(DATABASE).await) });
        let store = PgStore::connect_sharded(&database_url(DATABASE), 6, 2).unwrap();
        let sizes: Vec<usize> = store
            .pools
            .iter()
            .map(|pool| pool.status().max_size)
            .collect();
        assert_eq!(sizes, [2, 2, 2]);

        let unbound = store.clone();
        std::thread::spawn(move || runtime().block_on(unbound.ping()))
            .join()
            .unwrap()
            .unwrap();
        assert_eq!(opened(&store), [1, 0, 0]);
        for _ in 0..2 {
            let worker = store.clone();
            std::thread::spawn(move || {
                bind_thread_to_a_shard();
                runtime().block_on(worker.ping())
            })
            .join()
            .unwrap()
            .unwrap();
        }
        assert_eq!(opened(&store), [1, 1, 1]);
        drop(store);
        setup.block_on(drop_database(DATABASE));
    }
}
