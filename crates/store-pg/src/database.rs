//! Creating databases and running the embedded migrations: one `migrate()`
//! used by `cargo xtask migrate`, by `sealpost-api` at start-up and by tests.

use diesel_async::{AsyncConnection, AsyncMigrationHarness, AsyncPgConnection, RunQueryDsl};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations");

/// Any fixed number: serialises concurrent migrators (several API processes
/// starting at once, parallel test binaries).
const MIGRATION_LOCK: i64 = 0x5ea1_9057;

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("cannot connect to the database")]
    Connect(#[from] diesel::ConnectionError),
    #[error("database query failed")]
    Query(#[from] diesel::result::Error),
    #[error("migration failed: {0}")]
    Migration(String),
    #[error("malformed database url")]
    Url,
}

/// Applies every pending migration; returns how many ran. Needs the
/// multi-thread tokio runtime (the harness blocks in place).
pub async fn migrate(database_url: &str) -> Result<usize, MigrateError> {
    let mut conn = AsyncPgConnection::establish(database_url).await?;
    diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))
        .execute(&mut conn)
        .await?;
    let mut harness = AsyncMigrationHarness::new(conn);
    let applied = harness
        .run_pending_migrations(MIGRATIONS)
        .map_err(|error| MigrateError::Migration(error.to_string()))?
        .len();
    // Closing the connection releases the advisory lock.
    drop(harness);
    Ok(applied)
}

/// Creates the database named in `database_url` when it does not exist yet,
/// connecting to the server's `postgres` database to do so.
pub async fn create_database_if_missing(database_url: &str) -> Result<bool, MigrateError> {
    let (server_url, name) = split_database_url(database_url)?;
    let mut conn = AsyncPgConnection::establish(&format!("{server_url}/postgres")).await?;
    #[derive(diesel::QueryableByName)]
    struct Exists {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        exists: bool,
    }
    let found: Exists =
        diesel::sql_query("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS exists")
            .bind::<diesel::sql_types::Text, _>(&name)
            .get_result(&mut conn)
            .await?;
    if found.exists {
        return Ok(false);
    }
    diesel::sql_query(format!("CREATE DATABASE {}", quote_ident(&name)))
        .execute(&mut conn)
        .await?;
    Ok(true)
}

/// `postgres://u@h:p/name?x` -> (`postgres://u@h:p`, `name`).
pub fn split_database_url(database_url: &str) -> Result<(String, String), MigrateError> {
    let without_query = database_url.split('?').next().unwrap_or(database_url);
    let (server, name) = without_query.rsplit_once('/').ok_or(MigrateError::Url)?;
    if name.is_empty() || !server.contains("://") || server.ends_with('/') {
        return Err(MigrateError::Url);
    }
    Ok((server.to_owned(), name.to_owned()))
}

pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_server_and_name() {
        let (server, name) =
            split_database_url("postgres://postgres@127.0.0.1:5432/sealpost?sslmode=disable")
                .unwrap();
        assert_eq!(server, "postgres://postgres@127.0.0.1:5432");
        assert_eq!(name, "sealpost");
        assert!(split_database_url("postgres://postgres@127.0.0.1:5432").is_err());
    }
}
