//! Races the store settles under its locks, made to happen deterministically:
//! a test transaction holds a row the operation needs, the test changes the
//! world while the operation waits, then lets it go.
//!
//! - Deleting mail (the retention sweep, an address's deletion) queues the
//!   blobs of exactly the messages it deleted: none of a message kept, none
//!   left behind by a message committed meanwhile.
//! - Address creation and device claims check the plan the account holds
//!   under its lock, not the one read when the request arrived.

use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use reqwest::StatusCode;
use sealpost_seal::b64;
use serde_json::json;

use crate::support::{Api, SignedIn, new_keys, profile_box};

#[derive(QueryableByName)]
struct Key {
    #[diesel(sql_type = diesel::sql_types::Text)]
    key: String,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    count: i64,
}

async fn keys(api: &Api, sql: &str) -> Vec<String> {
    let mut conn = api.app.db.connect().await;
    let rows: Vec<Key> = diesel::sql_query(sql).load(&mut conn).await.unwrap();
    let mut keys: Vec<String> = rows.into_iter().map(|row| row.key).collect();
    keys.sort();
    keys
}

/// Blob keys of stored attachments, and of the blobs queued for deletion.
async fn attached_and_queued(api: &Api) -> (Vec<String>, Vec<String>) {
    (
        keys(
            api,
            "SELECT blob_key AS key FROM attachments WHERE blob_key IS NOT NULL",
        )
        .await,
        keys(api, "SELECT blob_key AS key FROM blob_garbage").await,
    )
}

/// Holds `key` in `blob_garbage` uncommitted: an operation queuing that key
/// waits for this transaction (the primary key), which the test ends.
async fn hold_blob_key(api: &Api, key: &str) -> AsyncPgConnection {
    let mut conn = api.app.db.connect().await;
    conn.batch_execute("BEGIN").await.unwrap();
    diesel::sql_query("INSERT INTO blob_garbage (blob_key, queued_at) VALUES ($1, now())")
        .bind::<diesel::sql_types::Text, _>(key)
        .execute(&mut conn)
        .await
        .unwrap();
    conn
}

/// Holds the account row locked, as a plan change or a claim would.
async fn hold_account(api: &Api, account: &str) -> AsyncPgConnection {
    let mut conn = api.app.db.connect().await;
    conn.batch_execute("BEGIN").await.unwrap();
    diesel::sql_query("SELECT id AS key FROM accounts WHERE id = $1 FOR UPDATE")
        .bind::<diesel::sql_types::Text, _>(account)
        .load::<Key>(&mut conn)
        .await
        .unwrap();
    conn
}

/// Waits until `count` sessions of the test's database wait for a lock.
async fn lock_waiters(api: &Api, count: i64) {
    let mut conn = api.app.db.connect().await;
    for _ in 0..400 {
        let waiting: Count = diesel::sql_query(
            "SELECT count(*) AS count FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .get_result(&mut conn)
        .await
        .unwrap();
        if waiting.count >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{count} sessions never waited for a lock");
}

/// A raw message with one stored attachment.
fn raw_mail(marker: &str) -> String {
    format!(
        "From: a@example.com\r\nSubject: {marker}\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=sep\r\n\r\n--sep\r\nContent-Type: text/plain\r\n\r\n\
         body {marker}\r\n--sep\r\nContent-Type: text/plain; name=a.txt\r\n\
         Content-Disposition: attachment; filename=a.txt\r\n\r\nattachment {marker}\r\n--sep--\r\n"
    )
}

async fn post_mail(api: &Api, owner: &SignedIn, address: &str, marker: &str) -> StatusCode {
    api.post(
        "/messages",
        Some(&owner.token),
        json!({ "inboxId": address, "raw": b64::encode(raw_mail(marker).as_bytes()) }),
    )
    .await
    .status
}

/// An owner with a keyed address `ibx_race01` (retention 7 days).
async fn mailbox() -> (Arc<Api>, SignedIn) {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.keyed_address(&owner, &keys, "ibx_race01", "race").await;
    (Arc::new(api), owner)
}

/// The sweep decides which mail is past retention; meanwhile the owner
/// keeps the address's mail longer. Whatever the sweep's DELETE kept must
/// keep its blob, and whatever it deleted must have its blob queued.
#[tokio::test(flavor = "multi_thread")]
async fn the_retention_sweep_queues_only_the_blobs_of_the_mail_it_deletes() {
    let (api, owner) = mailbox().await;
    for marker in ["FIRST", "SECOND"] {
        assert_eq!(
            post_mail(&api, &owner, "ibx_race01", marker).await,
            StatusCode::CREATED
        );
    }
    let (attached, queued) = attached_and_queued(&api).await;
    assert_eq!((attached.len(), queued.len()), (2, 0));
    api.app.clock.advance(TimeDelta::days(8));

    let mut held = hold_blob_key(&api, &attached[0]).await;
    let sweep = {
        let api = api.clone();
        tokio::spawn(async move { api.app.services().mailbox.sweep().await })
    };
    lock_waiters(&api, 1).await;
    let kept_longer = api
        .patch(
            "/inboxes/ibx_race01",
            Some(&owner.token),
            json!({ "retentionDays": 30 }),
        )
        .await;
    assert_eq!(kept_longer.status, StatusCode::OK, "{}", kept_longer.body);
    held.batch_execute("ROLLBACK").await.unwrap();
    sweep.await.unwrap().unwrap();

    let (still_attached, _) = attached_and_queued(&api).await;
    let on_disk = blob_files(&api);
    for key in &attached {
        assert_eq!(
            still_attached.contains(key),
            on_disk.contains(key),
            "{key}: a kept message keeps its blob, a deleted one loses it"
        );
    }
}

/// An address is deleted while a delivery to it commits: the delivery is
/// either deleted with its blob queued, or refused; its blob never stays
/// behind with no row naming it.
#[tokio::test(flavor = "multi_thread")]
async fn deleting_an_address_leaves_no_blob_of_mail_committed_meanwhile() {
    let (api, owner) = mailbox().await;
    assert_eq!(
        post_mail(&api, &owner, "ibx_race01", "FIRST").await,
        StatusCode::CREATED
    );
    let (attached, _) = attached_and_queued(&api).await;

    let mut held = hold_blob_key(&api, &attached[0]).await;
    let deletion = {
        let api = api.clone();
        let token = owner.token.clone();
        tokio::spawn(async move { api.delete("/inboxes/ibx_race01", Some(&token)).await.status })
    };
    lock_waiters(&api, 1).await;
    // A delivery now: it commits at once, or waits for the deletion.
    let delivery = {
        let api = api.clone();
        let owner = SignedIn {
            token: owner.token.clone(),
            account_id: owner.account_id.clone(),
        };
        tokio::spawn(async move { post_mail(&api, &owner, "ibx_race01", "SECOND").await })
    };
    for _ in 0..200 {
        if delivery.is_finished() {
            break;
        }
        let mut conn = api.app.db.connect().await;
        let waiting: Count = diesel::sql_query(
            "SELECT count(*) AS count FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .get_result(&mut conn)
        .await
        .unwrap();
        if waiting.count >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    held.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(deletion.await.unwrap(), StatusCode::NO_CONTENT);
    let _ = delivery.await.unwrap();

    api.app.services().mailbox.collect_garbage().await.unwrap();
    let (attached, _) = attached_and_queued(&api).await;
    assert_eq!(attached, Vec::<String>::new(), "the address's mail is gone");
    let pending = keys(&api, "SELECT blob_key AS key FROM pending_blobs").await;
    let orphans: Vec<String> = blob_files(&api)
        .into_iter()
        .filter(|key| !pending.contains(key))
        .collect();
    assert_eq!(orphans, Vec::<String>::new(), "a blob no row names");
}

/// Blob keys of the files in the blob directory.
fn blob_files(api: &Api) -> Vec<String> {
    fn walk(dir: &std::path::Path, root: &std::path::Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, root, found);
            } else {
                let key = path.strip_prefix(root).unwrap().to_string_lossy();
                found.push(key.into_owned());
            }
        }
    }
    let root = api.app.config.blob_dir.join("blobs");
    let mut found = Vec::new();
    walk(&root, &root, &mut found);
    found.sort();
    found
}

/// The owner downgrades to Free while a request decided on Operator waits
/// for the account lock: the request is decided again on Free.
#[tokio::test(flavor = "multi_thread")]
async fn an_address_created_during_a_downgrade_counts_against_the_new_plan() {
    let api = Arc::new(Api::spawn().await);
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    for n in 0..3 {
        api.create_address(&owner.token, &format!("ibx_plan0{n}"))
            .await;
    }

    let mut held = hold_account(&api, &owner.account_id).await;
    let downgrade = {
        let api = api.clone();
        let token = owner.token.clone();
        tokio::spawn(async move {
            api.post(
                "/subscription/plan",
                Some(&token),
                json!({ "planId": "free" }),
            )
            .await
        })
    };
    lock_waiters(&api, 1).await;
    let creation = {
        let api = api.clone();
        let token = owner.token.clone();
        tokio::spawn(async move {
            api.post(
                "/inboxes",
                Some(&token),
                json!({ "id": "ibx_plan03", "domain": "mail.localhost", "prefix": "test" }),
            )
            .await
        })
    };
    lock_waiters(&api, 2).await;
    held.batch_execute("COMMIT").await.unwrap();
    let downgrade = downgrade.await.unwrap();
    let creation = creation.await.unwrap();

    let plan =
        api.get("/subscription", Some(&owner.token)).await.body["subscription"]["planId"].clone();
    let addresses = api.get("/inboxes", Some(&owner.token)).await.body["inboxes"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(downgrade.status, StatusCode::OK, "{}", downgrade.body);
    assert_eq!(plan, "free");
    assert_eq!(
        creation.status,
        StatusCode::PAYMENT_REQUIRED,
        "{}",
        creation.body
    );
    assert_eq!(creation.code(), "allocation_exhausted");
    assert_eq!(addresses, 3, "Free holds three");
}

/// The same for a device claim: Free holds one device.
#[tokio::test(flavor = "multi_thread")]
async fn a_device_claimed_during_a_downgrade_counts_against_the_new_plan() {
    let api = Arc::new(Api::spawn().await);
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    api.pair(&owner.token, "wkr_plan01").await;
    let (_, code) = api.open_pairing().await;
    let looked_up = api
        .post(
            "/workers/pair/lookup",
            Some(&owner.token),
            json!({ "code": code }),
        )
        .await;
    assert_eq!(looked_up.status, StatusCode::OK, "{}", looked_up.body);
    let session = looked_up.body["session"]["id"].as_str().unwrap().to_owned();

    let mut held = hold_account(&api, &owner.account_id).await;
    let downgrade = {
        let api = api.clone();
        let token = owner.token.clone();
        tokio::spawn(async move {
            api.post(
                "/subscription/plan",
                Some(&token),
                json!({ "planId": "free" }),
            )
            .await
        })
    };
    lock_waiters(&api, 1).await;
    let claim = {
        let api = api.clone();
        let token = owner.token.clone();
        tokio::spawn(async move {
            api.post(
                "/workers/pair",
                Some(&token),
                json!({ "sessionId": session, "workerId": "wkr_plan02",
                        "profile": profile_box("wkr_plan02") }),
            )
            .await
        })
    };
    lock_waiters(&api, 2).await;
    held.batch_execute("COMMIT").await.unwrap();
    let downgrade = downgrade.await.unwrap();
    let claim = claim.await.unwrap();

    assert_eq!(downgrade.status, StatusCode::OK, "{}", downgrade.body);
    assert_eq!(claim.status, StatusCode::PAYMENT_REQUIRED, "{}", claim.body);
    assert_eq!(claim.code(), "worker_limit_reached");
    let devices = api.get("/workers", Some(&owner.token)).await;
    assert_eq!(
        devices.body["workers"].as_array().unwrap().len(),
        1,
        "{}",
        devices.body
    );
}
