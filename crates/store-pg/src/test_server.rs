//! The PostgreSQL server of the tests and what every test database needs
//! on it: its address, an administrative connection, dropping a database.
//! Here, under the `test-support` feature, because both this crate's own
//! tests and `sealpost-testkit` (which depends on this crate) use them.

use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use crate::quote_ident;

/// A failure to reach the server or to run a statement on it.
pub type DatabaseError = Box<dyn std::error::Error + Send + Sync>;

/// The server of the tests: `SEALPOST_TEST_DATABASE_URL` (set by `cargo
/// xtask test`), else 127.0.0.1:5432; without a trailing slash.
pub fn server_url() -> String {
    std::env::var("SEALPOST_TEST_DATABASE_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432".to_owned())
        .trim_end_matches('/')
        .to_owned()
}

/// A connection to `server`'s `postgres` database, to create and drop others.
pub async fn admin(server: &str) -> Result<AsyncPgConnection, DatabaseError> {
    Ok(AsyncPgConnection::establish(&format!("{server}/postgres")).await?)
}

/// Drops `name` on `server`, closing its connections.
pub async fn drop_database(server: &str, name: &str) -> Result<(), DatabaseError> {
    let mut admin = admin(server).await?;
    diesel::sql_query(format!(
        "DROP DATABASE IF EXISTS {} WITH (FORCE)",
        quote_ident(name)
    ))
    .execute(&mut admin)
    .await?;
    Ok(())
}
