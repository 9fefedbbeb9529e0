//! The background jobs in processes of their own (`sealpost-api
//! --jobs-only`): a sweep pass runs in one process at a time, and several
//! senders send each webhook delivery once.

use std::time::{Duration, Instant};

use chrono::TimeDelta;
use reqwest::StatusCode;
use sealpost_jobs::Pass;
use sealpost_kernel::Clock;
use sealpost_store_pg::{Job, PgStore};
use sealpost_testkit::TestApp;
use sealpost_testkit::receiver::Receiver;
use serde_json::json;

use crate::billing::{buy, keyed_address};
use crate::support::{Api, SignedIn, new_keys};

/// Mail that a delivery racing a release leaves: stored held although its
/// address is not paused. The next sweep pass lists it with one
/// `message.received`. Returns the message id.
async fn straggler(api: &Api, owner: &SignedIn, address: &str) -> String {
    let (_, keys) = new_keys();
    keyed_address(api, owner, &keys, address).await;
    let message = api.deliver(owner, address).await;
    use diesel_async::RunQueryDsl;
    let mut conn = api.app.db.connect().await;
    diesel::sql_query("UPDATE messages SET held = true WHERE id = $1")
        .bind::<diesel::sql_types::Text, _>(&message)
        .execute(&mut conn)
        .await
        .unwrap();
    message
}

/// How many `message.received` events name `message`.
async fn received_events(api: &Api, owner: &SignedIn, message: &str) -> usize {
    api.event_payloads(&owner.account_id, "message.received")
        .await
        .iter()
        .filter(|payload| payload["messageId"] == message)
        .count()
}

/// Waits until `done` answers true, for at most `limit`.
async fn eventually<F, Fut>(limit: Duration, what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !done().await {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sweep_pass_is_skipped_while_another_process_holds_the_sweep_lock() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let message = straggler(&api, &owner, "ibx_lock01").await;

    let store = PgStore::connect(&api.app.db.url, 2).unwrap();
    let other_process = store.try_job_lock(Job::Sweeps).await.unwrap().unwrap();
    assert!(
        store.try_job_lock(Job::Sweeps).await.unwrap().is_none(),
        "one holder at a time"
    );
    assert_eq!(api.sweeps().run_once().await, Pass::Skipped);
    assert_eq!(
        received_events(&api, &owner, &message).await,
        1,
        "not swept"
    );

    // Released when its holder goes (its session closes).
    drop(other_process);
    let sweeps = api.sweeps();
    eventually(Duration::from_secs(5), "the lock is free again", || async {
        sweeps.run_once().await == Pass::Ran
    })
    .await;
    assert_eq!(received_events(&api, &owner, &message).await, 2, "swept");
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn two_job_processes_at_once_sweep_once_and_send_each_delivery_once() {
    let receiver = Receiver::start(200).await;
    let ca_file =
        std::env::temp_dir().join(format!("sealpost-test-ca-{}.pem", receiver.addr.port()));
    std::fs::write(&ca_file, &receiver.ca_pem).unwrap();
    let port = receiver.addr.port();
    let app = TestApp::spawn_with(move |config| {
        config.webhook_resolve = Some(format!("hooks.test=127.0.0.1:{port}"));
        config.webhook_ca_file = Some(ca_file);
    })
    .await;
    let api = Api::with(app);

    // An unpaid pause that reached its deletesAt.
    let (_, lapsed_keys) = new_keys();
    let lapsed = api.register(&lapsed_keys).await;
    buy(&api, &lapsed, "operator").await;
    api.create_address(&lapsed.token, "ibx_expire1").await;
    api.app.clock.advance(TimeDelta::days(30));
    assert_eq!(api.sweeps().run_once().await, Pass::Ran);
    api.app.clock.advance(TimeDelta::days(21));

    // A webhook, held mail for the sweep to release, and 200 more events.
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    let created = api
        .post(
            "/webhook-endpoints",
            Some(&owner.token),
            json!({ "id": "whk_jobs01", "url": format!("https://hooks.test:{port}/hook"),
                    "events": ["inbox.created", "message.received"] }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let message = straggler(&api, &owner, "ibx_strag01").await;
    {
        use diesel_async::RunQueryDsl;
        let mut conn = api.app.db.connect().await;
        diesel::sql_query(
            "INSERT INTO events (id, account_id, type, payload, created_at) \
             SELECT 'evt_' || lpad(g::text, 26, '0'), $1, 'inbox.created', \
                    jsonb_build_object('inboxId', 'ibx_many' || g), $2 \
             FROM generate_series(1, 200) g",
        )
        .bind::<diesel::sql_types::Text, _>(&owner.account_id)
        .bind::<diesel::sql_types::Timestamptz, _>(api.app.clock.now().as_datetime())
        .execute(&mut conn)
        .await
        .unwrap();
    }
    // inbox.created and message.received of the held mail, its release by
    // the sweep, and the 200.
    let expected = 203;

    let (one, two) = tokio::join!(api.app.spawn_jobs(), api.app.spawn_jobs());
    // Events every consumer has passed are pruned by the sweep, so its
    // effects are read from the address table and the webhook receiver.
    let expired_left = || async {
        use diesel_async::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Count {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let mut conn = api.app.db.connect().await;
        let row: Count =
            diesel::sql_query("SELECT count(*) AS n FROM addresses WHERE id = 'ibx_expire1'")
                .get_result(&mut conn)
                .await
                .unwrap();
        row.n
    };
    eventually(Duration::from_secs(20), "the sweep pass", || async {
        expired_left().await == 0
    })
    .await;
    let succeeded = || async {
        use diesel_async::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Count {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let mut conn = api.app.db.connect().await;
        let row: Count = diesel::sql_query(
            "SELECT count(*) AS n FROM webhook_deliveries \
             WHERE webhook_id = 'whk_jobs01' AND status = 'succeeded'",
        )
        .get_result(&mut conn)
        .await
        .unwrap();
        row.n
    };
    eventually(Duration::from_secs(30), "every delivery", || async {
        succeeded().await == expected
    })
    .await;
    // Both keep running a while: nothing more goes out.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let requests = receiver.requests();
    let mut delivery_ids: Vec<&str> = requests
        .iter()
        .map(|request| request.header("Service-Delivery-Id").unwrap())
        .collect();
    delivery_ids.sort_unstable();
    delivery_ids.dedup();
    assert_eq!(
        (requests.len(), delivery_ids.len()),
        (expected as usize, expected as usize),
        "each delivery sent once"
    );
    assert_eq!(succeeded().await, expected);
    // One sweep's effects: one release (the held mail's two
    // `message.received`, at arrival and at release), one deletion.
    let received_for_message = requests
        .iter()
        .filter(|request| {
            let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
            body["type"] == "message.received" && body["payload"]["messageId"] == message.as_str()
        })
        .count();
    assert_eq!(received_for_message, 2);
    assert_eq!(expired_left().await, 0);
    one.stop().await;
    two.stop().await;
    api.app.stop().await;
}

#[derive(diesel::QueryableByName)]
struct Left {
    #[diesel(sql_type = diesel::sql_types::Text)]
    name: String,
}

async fn left(api: &Api, query: &str) -> Vec<String> {
    let mut conn = api.app.db.connect().await;
    let mut names: Vec<String> =
        diesel_async::RunQueryDsl::load::<Left>(diesel::sql_query(query), &mut conn)
            .await
            .unwrap()
            .into_iter()
            .map(|row| row.name)
            .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sweep_prunes_passed_outbox_rows_and_ended_usage_windows() {
    let api = Api::spawn().await;
    let owner = api.register(&new_keys().1).await;
    let mut conn = api.app.db.connect().await;
    // Now is 2026-11-22T12:00Z (the test clock).
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(
            "INSERT INTO events (id, account_id, type, payload, created_at, fanned_out, pushed) VALUES \
             ('evt_both', $1, 'inbox.created', '{}', '2026-11-21T11:00:00Z', true, true), \
             ('evt_both_within_a_day', $1, 'inbox.created', '{}', '2026-11-21T13:00:00Z', true, true), \
             ('evt_webhooks_only', $1, 'inbox.created', '{}', '2026-11-21T11:00:00Z', true, false), \
             ('evt_push_only', $1, 'inbox.created', '{}', '2026-11-21T11:00:00Z', false, true), \
             ('evt_neither', $1, 'inbox.created', '{}', '2026-11-21T11:00:00Z', false, false)",
        )
        .bind::<diesel::sql_types::Text, _>(&owner.account_id),
        &mut conn,
    )
    .await
    .unwrap();
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(
            "INSERT INTO usage_counters (account_id, counter, window_start, used, shard) VALUES \
             ($1, 'received', '2026-10-20T00:00:00Z', 1, 0), \
             ($1, 'received', '2026-10-25T00:00:00Z', 1, 0), \
             ($1, 'object_reads', '2026-11-22T10:00:00Z', 1, 0), \
             ($1, 'object_reads', '2026-11-22T12:00:00Z', 1, 0), \
             ($1, 'sent_hour', '2026-11-22T11:00:00Z', 1, 0), \
             ($1, 'sent_day', '2026-11-21T00:00:00Z', 1, 0), \
             ($1, 'sent_day', '2026-11-22T00:00:00Z', 1, 0), \
             ($1, 'future_counter', '2026-10-01T00:00:00Z', 1, 0), \
             ($1, 'future_counter', '2026-11-01T00:00:00Z', 1, 0)",
        )
        .bind::<diesel::sql_types::Text, _>(&owner.account_id),
        &mut conn,
    )
    .await
    .unwrap();

    assert_eq!(api.sweeps().run_once().await, Pass::Ran);

    assert_eq!(
        left(
            &api,
            "SELECT id AS name FROM events WHERE id LIKE 'evt\\_%' AND payload = '{}'"
        )
        .await,
        [
            "evt_both_within_a_day",
            "evt_neither",
            "evt_push_only",
            "evt_webhooks_only"
        ],
        "only rows every consumer passed are pruned, a day after they were written"
    );
    assert_eq!(
        left(
            &api,
            "SELECT counter || ' ' || to_char(window_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24') AS name \
             FROM usage_counters"
        )
        .await,
        [
            "future_counter 2026-11-01 00",
            "object_reads 2026-11-22 12",
            "received 2026-10-25 00",
            "sent_day 2026-11-22 00",
        ],
        "only windows that ended are pruned"
    );
}
