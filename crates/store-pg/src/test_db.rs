//! Databases of the store's own tests, on the server `sealpost-testkit` uses.

use crate::PgStore;
use crate::database::{create_database_if_missing, migrate};
use crate::test_server::server_url;

pub(crate) async fn drop_database(name: &str) {
    crate::test_server::drop_database(&server_url(), name)
        .await
        .expect("PostgreSQL for the store tests");
}

pub(crate) fn database_url(name: &str) -> String {
    format!("{}/{name}", server_url())
}

/// A freshly migrated database of this test's own.
pub(crate) async fn fresh_store(name: &str) -> PgStore {
    drop_database(name).await;
    let url = database_url(name);
    create_database_if_missing(&url).await.unwrap();
    migrate(&url).await.unwrap();
    PgStore::connect(&url, 8).unwrap()
}
