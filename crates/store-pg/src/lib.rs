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
    /// The pool (an index into [`PgStore`]'s pools) of a thread bound by
    /// [`PgStore::bind_this_thread`].
    static THREAD_POOL: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// The fewest connections a pool of its own is worth: below it, an HTTP
/// thread would queue its requests behind a few slow ones while other
/// threads' connections sit idle, so the threads share one pool instead.
const MIN_THREAD_POOL: usize = 4;

/// How long a request waits for a pooled connection before the store reports
/// itself unavailable (503) instead of queueing without bound.
const POOL_WAIT: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub struct PgStore {
    /// The pool of threads not bound to one, then one pool per HTTP thread
    /// ([`PgStore::bind_this_thread`]).
    pools: std::sync::Arc<[Pool<AsyncPgConnection>]>,
    /// The threads bound so far, which takes the pools in turn.
    bound_threads: std::sync::Arc<std::sync::atomic::AtomicUsize>,
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
        Self::connect_per_http_thread(database_url, max_connections, 0)
    }

    /// [`PgStore::connect`], the connections split into a pool for each of
    /// `http_threads` (each binds itself as it starts,
    /// [`PgStore::bind_this_thread`]) and one for every other thread, when
    /// each pool still gets [`MIN_THREAD_POOL`]; else one pool for all, as
    /// [`PgStore::connect`]. A connection's I/O runs as a task on the
    /// runtime of the thread that opened it, so an HTTP thread using a
    /// connection another opened wakes that thread for every statement,
    /// twice; with a pool of its own it opens and uses its own.
    pub fn connect_per_http_thread(
        database_url: &str,
        max_connections: usize,
        http_threads: usize,
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
        let split = http_threads + 1;
        let pool_count = if http_threads > 0 && max_connections / split >= MIN_THREAD_POOL {
            split
        } else {
            1
        };
        let pool_size = max_connections / pool_count;
        let pools = (0..pool_count)
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
            bound_threads: std::sync::Arc::default(),
            batcher: std::sync::Arc::default(),
        })
    }

    /// Binds the calling thread to the next pool of its own (pools taken in
    /// turn); each HTTP thread calls it once as it starts. Nothing to bind
    /// when the store keeps one pool for all.
    pub fn bind_this_thread(&self) {
        let thread_pools = self.pools.len() - 1;
        if thread_pools == 0 {
            return;
        }
        let bound = self
            .bound_threads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        THREAD_POOL.with(|cell| cell.set(Some(1 + bound % thread_pools)));
    }

    /// The pool of this thread: its own if bound, else the first.
    fn pool(&self) -> &Pool<AsyncPgConnection> {
        let index = THREAD_POOL
            .with(std::cell::Cell::get)
            .filter(|index| *index < self.pools.len())
            .unwrap_or(0);
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

    /// Two or three HTTP threads of 16 connections get pools of their own;
    /// four would get 3 each, so they share one as other threads do.
    #[test]
    fn http_threads_share_one_pool_when_their_own_would_be_small() {
        let sizes = |http_threads| -> Vec<usize> {
            let url = "postgres://postgres@127.0.0.1:1/unused";
            PgStore::connect_per_http_thread(url, 16, http_threads)
                .unwrap()
                .pools
                .iter()
                .map(|pool| pool.status().max_size)
                .collect()
        };
        assert_eq!(sizes(0), [16]);
        assert_eq!(sizes(2), [5, 5, 5]);
        assert_eq!(sizes(3), [4, 4, 4, 4]);
        assert_eq!(sizes(4), [16]);
    }

    /// Each of two threads bound to the store (as the API's HTTP threads
    /// are) opens its connection in its own pool; a thread not bound uses
    /// the first. The connections are split between the pools.
    #[test]
    fn bound_threads_take_their_connections_from_their_own_pools() {
        const DATABASE: &str = "sealpost_store_pg_thread_pools";
        // Migrating needs a multi-threaded runtime (`block_in_place`).
        let setup = tokio::runtime::Runtime::new().unwrap();
        setup.block_on(async { drop(fresh_store(DATABASE).await) });
        let store = PgStore::connect_per_http_thread(&database_url(DATABASE), 12, 2).unwrap();
        let sizes: Vec<usize> = store
            .pools
            .iter()
            .map(|pool| pool.status().max_size)
            .collect();
        assert_eq!(sizes, [4, 4, 4]);

        let unbound = store.clone();
        std::thread::spawn(move || runtime().block_on(unbound.ping()))
            .join()
            .unwrap()
            .unwrap();
        assert_eq!(opened(&store), [1, 0, 0]);
        for _ in 0..2 {
            let http_thread = store.clone();
            std::thread::spawn(move || {
                http_thread.bind_this_thread();
                runtime().block_on(http_thread.ping())
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
