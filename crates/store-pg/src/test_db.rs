//! Databases of the store's own tests, on the server `sealpost-testkit` uses.

use chrono::{DateTime, TimeDelta, Utc};
use diesel::sql_types::Text;
use diesel::{ExpressionMethods, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::Timestamp;

use crate::PgStore;
use crate::database::{create_database_if_missing, migrate};
use crate::schema::{accounts, addresses};
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

/// Runs each of `statements` on `conn`.
pub(crate) async fn run_all(conn: &mut AsyncPgConnection, statements: &[&str]) {
    for statement in statements {
        diesel::sql_query(*statement)
            .execute(&mut *conn)
            .await
            .unwrap();
    }
}

#[derive(QueryableByName)]
struct PlanLine {
    #[diesel(sql_type = Text, column_name = "QUERY PLAN")]
    line: String,
}

/// The plan PostgreSQL keeps for `statement` once it plans it generically,
/// as a prepared statement does (forced here, not left to its choice), run
/// with `arguments` (SQL literals, comma-separated): `EXPLAIN`'s lines.
pub(crate) async fn generic_plan(
    conn: &mut AsyncPgConnection,
    statement: &str,
    arguments: &str,
) -> String {
    run_all(
        conn,
        &[
            "SET plan_cache_mode = force_generic_plan",
            &format!("PREPARE probed AS {statement}"),
        ],
    )
    .await;
    let plan: Vec<String> = diesel::sql_query(format!("EXPLAIN EXECUTE probed({arguments})"))
        .load::<PlanLine>(&mut *conn)
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.line)
        .collect();
    run_all(conn, &["DEALLOCATE probed", "RESET plan_cache_mode"]).await;
    plan.join("\n")
}

/// The account of [`store_with_address`].
pub(crate) const TEST_ACCOUNT: &str = "acct_batches1";
/// The address of [`store_with_address`], `batches@mail.localhost`.
pub(crate) const TEST_ADDRESS: &str = "ibx_batches1";

/// `seconds` after the instant [`store_with_address`] creates its rows at.
pub(crate) fn test_instant(seconds: i64) -> Timestamp {
    Timestamp::from_datetime(
        DateTime::<Utc>::UNIX_EPOCH + TimeDelta::days(20_000) + TimeDelta::seconds(seconds),
    )
}

/// A fresh store whose database holds one account ([`TEST_ACCOUNT`]) with
/// one address ([`TEST_ADDRESS`]) that takes mail.
pub(crate) async fn store_with_address(database: &str) -> PgStore {
    let store = fresh_store(database).await;
    let mut conn = store.conn().await.unwrap();
    let created = test_instant(0).as_datetime();
    diesel::insert_into(accounts::table)
        .values((
            accounts::id.eq(TEST_ACCOUNT),
            accounts::auth_public_key.eq(vec![0_u8; 32]),
            accounts::auth_verifier_hash.eq(vec![0_u8; 32]),
            accounts::created_at.eq(created),
        ))
        .execute(&mut conn)
        .await
        .unwrap();
    diesel::insert_into(addresses::table)
        .values((
            addresses::id.eq(TEST_ADDRESS),
            addresses::account_id.eq(TEST_ACCOUNT),
            addresses::email_address.eq("batches@mail.localhost"),
            addresses::domain.eq("mail.localhost"),
            addresses::retention_days.eq(30_i16),
            addresses::public_key.eq(Some(vec![7_u8; 32])),
            addresses::created_at.eq(created),
        ))
        .execute(&mut conn)
        .await
        .unwrap();
    drop(conn);
    store
}
