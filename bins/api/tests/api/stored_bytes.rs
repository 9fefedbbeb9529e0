//! The stored-mail quota: `GET /usage` `storedBytes` counts the sealed bytes
//! held (content boxes as JSON, sealed attachment blobs), moves exactly with
//! every insert and deletion, and at the plan's quota mail is refused: 452
//! at RCPT, 409 `limit_reached` on `POST /messages`.

use diesel_async::RunQueryDsl;
use reqwest::StatusCode;
use sealpost_seal::b64;
use serde_json::json;

use crate::support::{Api, SignedIn, SmtpClient, new_keys};

const ADDRESS: &str = "ibx_stored01";

const WITH_ATTACHMENT: &[u8] = b"From: s@example.com\r\nSubject: blobs\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/mixed; boundary=sep\r\n\r\n--sep\r\nContent-Type: text/plain\r\n\r\nhi\r\n\
--sep\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=a.bin\r\n\r\n\
0123456789abcdef0123456789abcdef\r\n--sep--\r\n";

async fn post_raw(api: &Api, owner: &SignedIn, raw: &[u8]) -> crate::support::Reply {
    api.post(
        "/messages",
        Some(&owner.token),
        json!({ "inboxId": ADDRESS, "raw": b64::encode(raw) }),
    )
    .await
}

async fn stored_usage(api: &Api, owner: &SignedIn) -> (u64, u64) {
    let usage = api.get("/usage", Some(&owner.token)).await;
    assert_eq!(usage.status, StatusCode::OK, "{}", usage.body);
    let stored = &usage.body["storedBytes"];
    (
        stored["used"].as_u64().unwrap(),
        stored["limit"].as_u64().unwrap(),
    )
}

/// What the account holds as the API serves it: each message's content box
/// in its binary layout (as stored) plus its sealed attachments as
/// downloaded.
async fn served_bytes(api: &Api, owner: &SignedIn) -> u64 {
    let mut total = 0;
    for folder in ["inbox", "trash"] {
        let page = api
            .get(&format!("/messages?folder={folder}"), Some(&owner.token))
            .await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        for message in page.body["messages"].as_array().unwrap() {
            let sealed: sealpost_seal::SealedBox =
                serde_json::from_value(message["content"].clone()).unwrap();
            total += sealed.to_binary().unwrap().len() as u64;
            let id = message["id"].as_str().unwrap();
            for index in 0.. {
                let blob = reqwest::Client::new()
                    .get(api.app.url(&format!("/messages/{id}/attachments/{index}")))
                    .bearer_auth(&owner.token)
                    .send()
                    .await
                    .unwrap();
                if blob.status() != StatusCode::OK {
                    break;
                }
                total += blob.bytes().await.unwrap().len() as u64;
            }
        }
    }
    total
}

/// The counter as the rows have it: the sum of the messages' own sizes.
async fn rows_bytes(api: &Api, owner: &SignedIn) -> u64 {
    #[derive(diesel::QueryableByName)]
    struct Sum {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        bytes: i64,
    }
    let mut conn = api.app.db.connect().await;
    let sum: Sum = diesel::sql_query(
        "SELECT COALESCE(sum(stored_bytes), 0)::bigint AS bytes FROM messages WHERE account_id = $1",
    )
    .bind::<diesel::sql_types::Text, _>(&owner.account_id)
    .get_result(&mut conn)
    .await
    .unwrap();
    sum.bytes as u64
}

async fn account_with_address(api: &Api) -> (SignedIn, String) {
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let address = api.keyed_address(&owner, &keys, ADDRESS, "stored").await;
    (owner, address)
}

#[tokio::test(flavor = "multi_thread")]
async fn stored_bytes_follow_every_insert_and_deletion_without_drift() {
    let api = Api::spawn().await;
    let (owner, _) = account_with_address(&api).await;
    assert_eq!(stored_usage(&api, &owner).await, (0, 1024 * 1024 * 1024));

    let mut ids = Vec::new();
    for raw in [
        WITH_ATTACHMENT,
        b"From: a@example.com\r\nSubject: one\r\n\r\nhello".as_slice(),
        b"From: a@example.com\r\nSubject: two\r\n\r\nhello again".as_slice(),
    ] {
        let posted = post_raw(&api, &owner, raw).await;
        assert_eq!(posted.status, StatusCode::CREATED, "{}", posted.body);
        ids.push(posted.body["messageId"].as_str().unwrap().to_owned());
    }
    let held = served_bytes(&api, &owner).await;
    assert!(held > 32 + 61, "{held}");
    assert_eq!(stored_usage(&api, &owner).await.0, held);

    // Trashed still counts; deleted from the trash, it comes off exactly.
    for _ in 0..2 {
        let deleted = api
            .delete(&format!("/messages/{}", ids[0]), Some(&owner.token))
            .await;
        assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.body);
    }
    let left = served_bytes(&api, &owner).await;
    assert!(left < held);
    assert_eq!(stored_usage(&api, &owner).await.0, left);
    assert_eq!(
        rows_bytes(&api, &owner).await,
        left,
        "no drift after delete"
    );

    // Emptying the trash, then deleting the address, brings it to zero.
    let trashed = api
        .delete(&format!("/messages/{}", ids[1]), Some(&owner.token))
        .await;
    assert_eq!(trashed.status, StatusCode::OK, "{}", trashed.body);
    let emptied = api
        .post("/messages/trash/empty", Some(&owner.token), json!({}))
        .await;
    assert_eq!(emptied.status, StatusCode::OK, "{}", emptied.body);
    assert_eq!(
        stored_usage(&api, &owner).await.0,
        served_bytes(&api, &owner).await
    );
    let gone = api
        .delete(&format!("/inboxes/{ADDRESS}"), Some(&owner.token))
        .await;
    assert!(gone.status.is_success(), "{}", gone.body);
    assert_eq!(stored_usage(&api, &owner).await.0, 0);
    assert_eq!(rows_bytes(&api, &owner).await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn retention_takes_its_bytes_off_too() {
    let api = Api::spawn().await;
    let (owner, _) = account_with_address(&api).await;
    let posted = post_raw(&api, &owner, WITH_ATTACHMENT).await;
    assert_eq!(posted.status, StatusCode::CREATED, "{}", posted.body);
    assert!(stored_usage(&api, &owner).await.0 > 0);
    // Seven days of retention by default.
    api.app.clock.advance(chrono::TimeDelta::days(8));
    api.sweeps().run_once().await;
    assert_eq!(stored_usage(&api, &owner).await.0, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn at_the_quota_mail_is_refused_by_smtp_and_the_api() {
    let mut api = Api::spawn().await;
    let smtp = api.app.spawn_smtp().await;
    let (owner, address) = account_with_address(&api).await;
    let posted = post_raw(&api, &owner, WITH_ATTACHMENT).await;
    assert_eq!(posted.status, StatusCode::CREATED, "{}", posted.body);
    let (used, limit) = stored_usage(&api, &owner).await;

    // Stand-in for a gigabyte of mail: the account one byte short of its
    // quota (a shard of its counter; the reads sum them).
    let mut conn = api.app.db.connect().await;
    diesel::sql_query("INSERT INTO stored_bytes (account_id, shard, bytes) VALUES ($1, 99, $2)")
        .bind::<diesel::sql_types::Text, _>(&owner.account_id)
        .bind::<diesel::sql_types::BigInt, _>((limit - used - 1) as i64)
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(stored_usage(&api, &owner).await.0, limit - 1);

    // Under the quota: taken, and it crosses it.
    let crossing = post_raw(&api, &owner, b"From: a@example.com\r\n\r\nlast one").await;
    assert_eq!(crossing.status, StatusCode::CREATED, "{}", crossing.body);
    assert!(stored_usage(&api, &owner).await.0 >= limit);

    let refused = post_raw(&api, &owner, b"From: a@example.com\r\n\r\none too many").await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::CONFLICT, "limit_reached"),
        "{}",
        refused.body
    );
    let (mut client, greeting) = SmtpClient::connect(smtp).await;
    assert_eq!(greeting, 220);
    assert_eq!(client.command("EHLO client.example").await, 250);
    assert_eq!(client.command("MAIL FROM:<s@example.com>").await, 250);
    assert_eq!(
        client.command(&format!("RCPT TO:<{address}>")).await,
        452,
        "temporary: insufficient storage"
    );

    // Deleting mail makes room again: trashed, then deleted.
    for reply in [&crossing, &posted] {
        let id = reply.body["messageId"].as_str().unwrap();
        for _ in 0..2 {
            let deleted = api
                .delete(&format!("/messages/{id}"), Some(&owner.token))
                .await;
            assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.body);
        }
    }
    assert_eq!(stored_usage(&api, &owner).await.0, limit - used - 1);
    assert_eq!(client.command(&format!("RCPT TO:<{address}>")).await, 250);
}
