//! Raw SQL that each connection prepares once.
//!
//! diesel never caches a statement that holds raw SQL (`sql_query`, or a
//! `dsl::sql` fragment in a query built with the query builder): it cannot
//! know the text is the same each time. diesel-async then prepares such a
//! statement anew on every call: a round trip of its own (Parse, Describe)
//! before the one that runs it, and a parse and plan on the server each
//! time. For text fixed at compile time that is pure waste, and on the hot
//! paths (the ingest's commit batch, RCPT's recipient lookup, `GET /usage`)
//! it was most of the statements' cost (docs/benchmarks.md).
//!
//! [`Prepared`] marks such a statement safe to cache: the connection's
//! statement cache keys it by its SQL text and bind types, so it is
//! prepared on first use and then only bound and run. Use it only where the
//! SQL text is fixed (a `&'static str`, or a query builder expression whose
//! shape never varies): every distinct text is kept for the connection's
//! lifetime.
//!
//! Statements sent together on a shared connection (pipelined) reach
//! PostgreSQL in the order they are first polled only if each goes through
//! the statement cache: its lock, granted in request order, is held through
//! a statement's prepare and let go as the statement is sent. A statement
//! in the simple query protocol (`batch_execute`) takes no such turn and
//! overtakes one still being prepared; where the order matters (the group
//! commit's `BEGIN` and `COMMIT`), send it prepared too.

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::result::QueryResult;

/// A statement of fixed SQL text, cached as a prepared statement per
/// connection (see the module comment).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prepared<Q>(Q);

/// `.prepared()` on a statement whose SQL text never varies.
pub(crate) trait PrepareOnce: Sized {
    fn prepared(self) -> Prepared<Self> {
        Prepared(self)
    }
}

impl<Q: QueryFragment<Pg>> PrepareOnce for Q {}

impl<Q: QueryFragment<Pg>> QueryFragment<Pg> for Prepared<Q> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    /// The text is fixed (the caller's promise), whatever raw SQL it holds.
    fn is_safe_to_cache_prepared(&self, _backend: &Pg) -> QueryResult<bool> {
        Ok(true)
    }
}

impl<Q> QueryId for Prepared<Q> {
    /// No static id: the cache keys the statement by its SQL text.
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: Query> Query for Prepared<Q> {
    type SqlType = Q::SqlType;
}

#[cfg(test)]
mod tests {
    use diesel::QueryableByName;
    use diesel::sql_types::{BigInt, Text};
    use diesel_async::RunQueryDsl;

    use super::*;
    use crate::test_db::{drop_database, fresh_store};

    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        count: i64,
    }

    /// How many prepared statements of this connection hold `marker`.
    async fn prepared_with(conn: &mut diesel_async::AsyncPgConnection, marker: &str) -> i64 {
        diesel::sql_query(
            "SELECT count(*) AS count FROM pg_prepared_statements \
             WHERE statement LIKE '%' || $1 || '%' AND statement NOT LIKE '%pg_prepared_statements%'",
        )
        .bind::<Text, _>(marker)
        .get_result::<Count>(conn)
        .await
        .unwrap()
        .count
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_prepared_raw_statement_is_prepared_once_and_reused() {
        let store = fresh_store("prepared_once").await;
        let mut conn = store.conn().await.unwrap();
        for value in 1..=3_i64 {
            let row: Count = diesel::sql_query("SELECT $1::bigint AS count /* prepared-marker */")
                .bind::<BigInt, _>(value)
                .prepared()
                .get_result(&mut conn)
                .await
                .unwrap();
            assert_eq!(row.count, value, "each call runs with its own binds");
        }
        assert_eq!(
            prepared_with(&mut conn, "prepared-marker").await,
            1,
            "one prepared statement, kept and reused by all three calls"
        );
        // The same text without `.prepared()` is prepared per call and
        // closed after it: nothing is kept.
        let _: Count = diesel::sql_query("SELECT $1::bigint AS count /* unprepared-marker */")
            .bind::<BigInt, _>(7_i64)
            .get_result(&mut conn)
            .await
            .unwrap();
        assert_eq!(prepared_with(&mut conn, "unprepared-marker").await, 0);
        drop(conn);
        drop(store);
        drop_database("prepared_once").await;
    }

    /// A fresh database with the test address, read by its owner through a
    /// store of one connection (so every read runs on the connection a test
    /// inspects after), and a first page of 50.
    async fn one_connection_reader(
        database: &str,
    ) -> (
        crate::PgStore,
        sealpost_messages::store::Reader,
        sealpost_kernel::AddressId,
        sealpost_kernel::PageRequest,
    ) {
        use sealpost_kernel::{AccountId, AddressId, PageRequest};
        use sealpost_messages::store::Reader;

        use crate::test_db::{TEST_ACCOUNT, TEST_ADDRESS, database_url, store_with_address};

        drop(store_with_address(database).await);
        let store = crate::PgStore::connect(&database_url(database), 1).unwrap();
        let reader = Reader {
            account: AccountId::from_trusted(TEST_ACCOUNT.to_owned()),
            device: None,
        };
        let address = AddressId::from_trusted(TEST_ADDRESS.to_owned());
        let page = PageRequest {
            limit: 50,
            after: None,
        };
        (store, reader, address, page)
    }

    /// The mailbox's reads hold the retention cutoff (`messages::
    /// retention_cutoff`): read through the store, each of them is cached
    /// like any other statement, not prepared per call as with a
    /// `dsl::sql` fragment (which would leave nothing in
    /// `pg_prepared_statements`).
    #[tokio::test(flavor = "multi_thread")]
    async fn the_mailbox_reads_holding_the_retention_cutoff_stay_prepared() {
        use sealpost_kernel::MessageId;
        use sealpost_messages::store::MessageRepository;

        use crate::test_db::test_instant;

        const DATABASE: &str = "prepared_cutoff";
        let (store, reader, address, page) = one_connection_reader(DATABASE).await;
        let mut kept = Vec::new();
        for day in 1..=2 {
            let now = test_instant(day * 86_400);
            let listed = store
                .page(&reader, &address, now, &page)
                .await
                .unwrap()
                .expect("the account reads its own address");
            assert!(listed.is_empty(), "the address has no mail");
            let unknown = MessageId::from_trusted("msg_none".to_owned());
            assert!(
                store
                    .message(&reader, &unknown, now)
                    .await
                    .unwrap()
                    .is_none()
            );
            let mut conn = store.conn().await.unwrap();
            kept.push((
                prepared_with(&mut conn, "make_interval").await,
                prepared_with(&mut conn, "\"received_at\" DESC").await,
            ));
        }
        // The address's cutoff, the page (its cutoff read in a subquery)
        // and the message, all three holding the cutoff's text, each
        // prepared on the first day and reused on the second.
        assert_eq!(kept, vec![(3, 1), (3, 1)]);
        drop(store);
        drop_database(DATABASE).await;
    }

    /// `statements::page_statements`, the reference `bench api` runs in
    /// pgbench, is what the page request sends: each of its statements'
    /// text is one the session lookup and the page prepared on the
    /// connection, word for word.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_bench_s_page_statements_are_the_ones_the_page_request_prepares() {
        use sealpost_accounts::AccountRepository;
        use sealpost_messages::store::MessageRepository;

        use crate::test_db::test_instant;

        const DATABASE: &str = "prepared_page_statements";
        let (store, reader, address, page) = one_connection_reader(DATABASE).await;
        let now = test_instant(86_400);
        let token_hash = [7; 32];
        assert!(store.bearer(token_hash).await.unwrap().is_none());
        let listed = store.page(&reader, &address, now, &page).await.unwrap();
        assert_eq!(listed.map(|page| page.len()), Some(0));
        let statements =
            crate::statements::page_statements(&token_hash, &reader, &address, now, &page);
        let mut conn = store.conn().await.unwrap();
        for debug in [statements.bearer, statements.check, statements.page] {
            let (sql, _binds) = debug.rsplit_once(" -- binds: ").unwrap();
            let prepared: Count = diesel::sql_query(
                "SELECT count(*) AS count FROM pg_prepared_statements WHERE statement = $1",
            )
            .bind::<Text, _>(sql)
            .get_result(&mut conn)
            .await
            .unwrap();
            assert_eq!(prepared.count, 1, "not prepared by the request: {sql}");
        }
        drop(conn);
        drop(store);
        drop_database(DATABASE).await;
    }

    /// `held` and `outgoing` are written as `NOT held` in the statement, not
    /// compared with a bound `false`: a generic plan (what a prepared
    /// statement runs on after its first five executions) can then use the
    /// partial indexes (`WHERE NOT held`), so PostgreSQL does not fall back
    /// to planning the page and the wait afresh on every execution.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_page_and_the_wait_run_on_generic_plans() {
        use sealpost_messages::store::{MessageRepository, WaitFrom};

        use crate::test_db::test_instant;

        #[derive(diesel::QueryableByName)]
        struct Plans {
            #[diesel(sql_type = BigInt)]
            generic_plans: i64,
            #[diesel(sql_type = BigInt)]
            custom_plans: i64,
        }

        const DATABASE: &str = "prepared_generic";
        let (store, reader, address, page) = one_connection_reader(DATABASE).await;
        let now = test_instant(86_400);
        for _ in 0..10 {
            let listed = store.page(&reader, &address, now, &page).await.unwrap();
            assert_eq!(listed.map(|page| page.len()), Some(0));
            let arrived = store
                .newer_than(&reader, &address, now, WaitFrom::Start, 50)
                .await
                .unwrap();
            assert_eq!(arrived.map(|arrived| arrived.len()), Some(0));
        }
        let mut conn = store.conn().await.unwrap();
        for marker in ["\"received_at\" DESC", "\"commit_seq\" ASC"] {
            let plans: Plans = diesel::sql_query(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements \
                 WHERE statement LIKE '%' || $1 || '%' AND statement NOT LIKE '%pg_prepared_statements%'",
            )
            .bind::<Text, _>(marker)
            .get_result(&mut conn)
            .await
            .unwrap();
            assert!(
                plans.generic_plans >= 5 && plans.custom_plans <= 5,
                "{marker}: {} generic plans, {} custom",
                plans.generic_plans,
                plans.custom_plans
            );
        }
        drop(conn);
        drop(store);
        drop_database(DATABASE).await;
    }
}
