//! Creating databases and running the embedded migrations: one `migrate()`
//! used by `cargo xtask migrate`, by `sealpost-api` at start-up and by tests.

use diesel_async::{AsyncMigrationHarness, RunQueryDsl};
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
    let mut conn = crate::connect(database_url).await?;
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
    let url = DatabaseUrl::parse(database_url)?;
    let name = url.database().ok_or(MigrateError::Url)?.to_owned();
    let mut conn = crate::connect(&url.with_database("postgres")).await?;
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

/// A PostgreSQL connection URL, read once with the `url` crate: the one
/// parser for database URLs in the workspace (the store, xtask, testkit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseUrl(url::Url);

impl DatabaseUrl {
    /// `postgres://` or `postgresql://` with a host.
    pub fn parse(text: &str) -> Result<Self, MigrateError> {
        let url = url::Url::parse(text.trim()).map_err(|_| MigrateError::Url)?;
        if !matches!(url.scheme(), "postgres" | "postgresql") || !url.has_host() {
            return Err(MigrateError::Url);
        }
        Ok(Self(url))
    }

    /// The database named by the path (the first segment), if any.
    pub fn database(&self) -> Option<&str> {
        self.0
            .path_segments()
            .and_then(|mut segments| segments.next())
            .filter(|name| !name.is_empty())
    }

    /// The server alone: scheme, user, password, host and port, without a
    /// database, a query or a trailing slash (`postgres://u@h:5432`).
    pub fn server(&self) -> String {
        let mut server = self.0.clone();
        server.set_path("");
        server.set_query(None);
        server.set_fragment(None);
        server.as_str().trim_end_matches('/').to_owned()
    }

    /// The same server and options with another database.
    pub fn with_database(&self, name: &str) -> String {
        let mut other = self.0.clone();
        other.set_path(&format!("/{name}"));
        other.into()
    }

    /// The URL with its password masked, for messages and logs.
    pub fn redacted(&self) -> String {
        let mut shown = self.0.clone();
        if shown.password().is_some() {
            // Cannot fail: the URL has a host (checked in `parse`).
            let _ = shown.set_password(Some("***"));
        }
        shown.into()
    }
}

/// Quotes an SQL identifier (a database name): the one place it is done.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls_are_read_by_one_parser() {
        let url = DatabaseUrl::parse("postgres://u:secret@db:5433/app?sslmode=require").unwrap();
        assert_eq!(url.database(), Some("app"));
        assert_eq!(url.server(), "postgres://u:secret@db:5433");
        assert_eq!(
            url.with_database("postgres"),
            "postgres://u:secret@db:5433/postgres?sslmode=require"
        );
        assert_eq!(
            url.redacted(),
            "postgres://u:***@db:5433/app?sslmode=require"
        );
        let bare = DatabaseUrl::parse("postgresql://postgres@127.0.0.1:5432/").unwrap();
        assert_eq!(bare.database(), None);
        assert_eq!(bare.server(), "postgresql://postgres@127.0.0.1:5432");
        assert_eq!(bare.redacted(), "postgresql://postgres@127.0.0.1:5432/");
        assert!(DatabaseUrl::parse("mysql://h/db").is_err());
        assert!(DatabaseUrl::parse("not a url").is_err());
        assert_eq!(quote_ident(r#"a"b"#), r#""a""b""#);
    }
}
