//! Databases of the store's own tests, on the server `sealpost-testkit` uses.

use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use crate::PgStore;
use crate::database::{create_database_if_missing, migrate};

/// The PostgreSQL server of the tests (as `sealpost-testkit` finds it).
fn server() -> String {
    std::env::var("SEALPOST_TEST_DATABASE_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432".to_owned())
        .trim_end_matches('/')
        .to_owned()
}

pub(crate) async fn drop_database(name: &str) {
    let mut admin = AsyncPgConnection::establish(&format!("{}/postgres", server()))
        .await
        .expect("PostgreSQL for the store tests");
    diesel::sql_query(format!(
        "DROP DATABASE IF EXISTS {} WITH (FORCE)",
        crate::quote_ident(name)
    ))
    .execute(&mut admin)
    .await
    .unwrap();
}

pub(crate) fn database_url(name: &str) -> String {
    format!("{}/{name}", server())
}

/// A freshly migrated database of this test's own.
pub(crate) async fn fresh_store(name: &str) -> PgStore {
    drop_database(name).await;
    let url = database_url(name);
    create_database_if_missing(&url).await.unwrap();
    migrate(&url).await.unwrap();
    PgStore::connect(&url, 8).unwrap()
}
