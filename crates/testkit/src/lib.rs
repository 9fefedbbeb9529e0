//! Test support. Each test gets its own database, cloned from a template that
//! was migrated once per migration set, so tests run in parallel and never see
//! each other's rows. `TestApp` starts the real API wiring on port 0, as
//! `sealpost-api` does (`sealpost_api_server::start`).
//!
//! The PostgreSQL server comes from `SEALPOST_TEST_DATABASE_URL` (set by
//! `cargo xtask test`), else 127.0.0.1:5432.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test support: a failed set-up should stop the test loudly"
)]

pub mod databases;
pub mod dns;
pub mod metrics;
pub mod moto;
pub mod payments;
pub mod push;
pub mod receiver;
pub mod relay;

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::Arc;

use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_api_server::{Running, StartOptions};
use sealpost_config::Config;
use sealpost_kernel::{TestClock, Timestamp};
use sealpost_store_pg::{MIGRATIONS_FINGERPRINT, migrate, quote_ident};

use crate::databases::{TEMPLATE_LOCK, drop_database, test_database_name};
use sealpost_wiring::Services;
use sealpost_wiring::smtp::SmtpServer;

pub use sealpost_store_pg::test_server::server_url;

/// A database of its own, dropped when this value is.
pub struct TestDb {
    pub url: String,
    name: String,
    server: String,
}

impl TestDb {
    pub async fn create() -> TestDb {
        let server = server_url();
        let template = ensure_template(&server).await;
        let name = test_database_name();
        let mut admin = admin_connection(&server).await;
        diesel::sql_query(format!(
            "CREATE DATABASE {} TEMPLATE {}",
            quote_ident(&name),
            quote_ident(&template)
        ))
        .execute(&mut admin)
        .await
        .expect("creating the test database from the template");
        TestDb {
            url: format!("{server}/{name}"),
            name,
            server,
        }
    }

    /// A plain connection, for tests that inspect tables directly.
    pub async fn connect(&self) -> AsyncPgConnection {
        AsyncPgConnection::establish(&self.url)
            .await
            .expect("connecting to the test database")
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // Drop cannot await; a short-lived thread with its own runtime can.
        let (server, name) = (self.server.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(drop_database(&server, &name)).ok()
        });
        // Leftovers are harmless: `cargo xtask test` drops them before each run.
        let _ = dropped.join();
    }
}

/// An empty database of its own on the test server for a stack of
/// processes (`sealpost-stack`): the API migrates it at start. Named like
/// [`TestDb`]'s, so `cargo xtask test` drops it if it is ever left behind.
pub struct StackDatabase {
    pub url: String,
    pub name: String,
    server: String,
}

impl StackDatabase {
    pub async fn create() -> StackDatabase {
        let server = server_url();
        let name = test_database_name();
        let mut admin = admin_connection(&server).await;
        diesel::sql_query(format!("CREATE DATABASE {}", quote_ident(&name)))
            .execute(&mut admin)
            .await
            .expect("creating the stack's database");
        StackDatabase {
            url: format!("{server}/{name}"),
            name,
            server,
        }
    }

    /// Drops it, closing the connections of processes still attached.
    pub async fn drop_now(&self) {
        let _ = drop_database(&self.server, &self.name).await;
    }
}

/// A loopback TCP port free at the time of asking, for a process that
/// must be told its port before it starts.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("binding a free loopback port")
        .port()
}

async fn admin_connection(server: &str) -> AsyncPgConnection {
    sealpost_store_pg::test_server::admin(server)
        .await
        .unwrap_or_else(|error| {
            panic!(
                "cannot reach PostgreSQL at {server} ({error}); run the tests with `cargo xtask test`"
            )
        })
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// The migrated template for the current migrations, made once under a lock.
async fn ensure_template(server: &str) -> String {
    let template = format!("sealpost_tpl_{MIGRATIONS_FINGERPRINT}");
    let mut admin = admin_connection(server).await;
    diesel::sql_query(format!("SELECT pg_advisory_lock({TEMPLATE_LOCK})"))
        .execute(&mut admin)
        .await
        .expect("taking the template lock");
    let exists: Count =
        diesel::sql_query("SELECT count(*) AS n FROM pg_database WHERE datname = $1")
            .bind::<diesel::sql_types::Text, _>(&template)
            .get_result(&mut admin)
            .await
            .expect("looking for the template");
    if exists.n == 0 {
        // Build under another name and rename when complete, so no test ever
        // copies a half-migrated template.
        let building = format!("{template}_building");
        for statement in [
            format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                quote_ident(&building)
            ),
            format!("CREATE DATABASE {}", quote_ident(&building)),
        ] {
            diesel::sql_query(statement)
                .execute(&mut admin)
                .await
                .expect("preparing the template");
        }
        migrate(&format!("{server}/{building}"))
            .await
            .expect("migrating the template");
        diesel::sql_query(format!(
            "ALTER DATABASE {} RENAME TO {}",
            quote_ident(&building),
            quote_ident(&template)
        ))
        .execute(&mut admin)
        .await
        .expect("publishing the template");
    }
    diesel::sql_query(format!("SELECT pg_advisory_unlock({TEMPLATE_LOCK})"))
        .execute(&mut admin)
        .await
        .expect("releasing the template lock");
    template
}

/// The API, started through the same wiring as `sealpost-api`, on port 0.
pub struct TestApp {
    pub base_url: String,
    pub clock: Arc<TestClock>,
    pub config: Config,
    pub db: TestDb,
    running: Option<Running>,
    smtp: Vec<SmtpServer>,
}

impl TestApp {
    pub async fn spawn() -> TestApp {
        Self::spawn_with(|_| {}).await
    }

    /// Starts with the test defaults, adjusted by `adjust`.
    pub async fn spawn_with(adjust: impl FnOnce(&mut Config)) -> TestApp {
        let db = TestDb::create().await;
        let mut config = Config::from_vars(&HashMap::new()).expect("default configuration");
        config.database_url = db.url.clone().into();
        config.http_addr = "127.0.0.1:0".to_owned();
        config.edge_rate_per_minute = 100_000;
        // Tests register many accounts from loopback and send from accounts
        // made moments ago; the tests of these limits set them low.
        config.registrations_per_network = u32::MAX;
        config.new_account_sends = u32::MAX;
        config.blob_dir =
            std::env::temp_dir().join(format!("sealpost-blobs-{}", uuid::Uuid::new_v4().simple()));
        // Each app its own spool: an ingest clears its directory at start.
        config.smtp_spool_dir =
            std::env::temp_dir().join(format!("sealpost-spool-{}", uuid::Uuid::new_v4().simple()));
        // The development payment provider, as `cargo xtask dev` runs it.
        config.billing_sandbox = true;
        config.server_keys = Some(sealpost_seal::ServerKeys::new(
            sealpost_seal::random_bytes::<32>(),
            [],
        ));
        adjust(&mut config);
        let clock = Arc::new(TestClock::at(
            Timestamp::parse("2026-11-22T12:00:00Z").expect("a valid start time"),
        ));
        let listener = TcpListener::bind(&config.http_addr).expect("binding port 0");
        let addr = listener.local_addr().expect("the bound address");
        // Checkout pages must point at the port actually bound.
        if config.public_url == "http://127.0.0.1:8080" {
            config.public_url = format!("http://{addr}");
        }
        // Tests drive sweeps and the webhook sender themselves, under the test clock.
        let options = StartOptions {
            http_threads: 2,
            background_jobs: false,
        };
        let running = sealpost_api_server::start(&config, clock.clone(), Some(listener), options)
            .await
            .expect("starting the API");
        TestApp {
            base_url: format!("http://{addr}"),
            clock,
            config,
            db,
            running: Some(running),
            smtp: Vec::new(),
        }
    }

    /// Starts `sealpost-smtp`'s wiring on port 0 against the same database,
    /// blob directory and clock; returns its address.
    pub async fn spawn_smtp(&mut self) -> std::net::SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding port 0");
        let running = sealpost_wiring::smtp::start(&self.config, self.clock.clone(), listener)
            .await
            .expect("starting the SMTP ingest");
        let addr = running.addr;
        self.smtp.push(running);
        addr
    }

    /// Where the API's `/metrics` answers, when the test set
    /// `config.operations.metrics_addr`.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.running.as_ref().and_then(Running::metrics_addr)
    }

    /// The services the API wired (sweeps in tests run over them).
    pub fn services(&self) -> &Services {
        self.running
            .as_ref()
            .expect("the API is running")
            .services()
    }

    /// Starts the background jobs alone against the same database, blob
    /// directory and clock, as `sealpost-api --jobs-only` runs them.
    pub async fn spawn_jobs(&self) -> Running {
        let options = StartOptions {
            http_threads: 1,
            background_jobs: true,
        };
        sealpost_api_server::start(&self.config, self.clock.clone(), None, options)
            .await
            .expect("starting the background jobs")
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }

    pub async fn stop(mut self) {
        for smtp in self.smtp.drain(..) {
            smtp.stop();
        }
        if let Some(running) = self.running.take() {
            running.stop().await;
        }
    }
}
