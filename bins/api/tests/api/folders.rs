//! The mailbox across addresses: folders, stars, moves, deletion, the trash.

use chrono::TimeDelta;
use reqwest::StatusCode;
use sealpost_seal::b64;
use serde_json::{Value, json};

use crate::support::{Api, SignedIn, new_keys};

const WITH_ATTACHMENT: &str = "From: a@example.com\r\nSubject: files\r\nMIME-Version: 1.0\r\n\
    Content-Type: multipart/mixed; boundary=sep\r\n\r\n--sep\r\nContent-Type: text/plain\r\n\r\nsee file\r\n\
    --sep\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=a.bin\r\n\r\n\
    BYTES\r\n--sep--\r\n";

/// An account with two addresses that take mail.
async fn account() -> (Api, SignedIn) {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    for address in ["ibx_first1", "ibx_second"] {
        let created = api
            .post(
                "/inboxes",
                Some(&owner.token),
                json!({ "id": address, "domain": "mail.localhost",
                        "publicKey": b64::encode(&keys.address_public_key(address, 0)) }),
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    }
    (api, owner)
}

async fn deliver_raw(api: &Api, owner: &SignedIn, address: &str, raw: &str) -> String {
    let posted = api
        .post(
            "/messages",
            Some(&owner.token),
            json!({ "inboxId": address, "raw": b64::encode(raw.as_bytes()) }),
        )
        .await;
    assert_eq!(posted.status, StatusCode::CREATED, "{}", posted.body);
    posted.body["messageId"].as_str().unwrap().to_owned()
}

/// The ids `GET /messages<query>` lists, newest first.
async fn listed(api: &Api, token: &str, query: &str) -> Vec<String> {
    let reply = api.get(&format!("/messages{query}"), Some(token)).await;
    assert_eq!(reply.status, StatusCode::OK, "{query}: {}", reply.body);
    reply.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["id"].as_str().unwrap().to_owned())
        .collect()
}

fn blob_files(api: &Api) -> usize {
    fn count(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .flatten()
                .map(|entry| {
                    let path = entry.path();
                    if path.is_dir() { count(&path) } else { 1 }
                })
                .sum()
        })
    }
    count(&api.app.config.blob_dir.join("blobs"))
}

#[tokio::test(flavor = "multi_thread")]
async fn mail_is_listed_across_addresses_filtered_starred_and_moved() {
    let (api, owner) = account().await;
    let token = owner.token.as_str();
    let first = api.deliver(&owner, "ibx_first1").await;
    api.app.clock.advance(TimeDelta::seconds(1));
    let second = api.deliver(&owner, "ibx_first1").await;
    api.app.clock.advance(TimeDelta::seconds(1));
    let third = api.deliver(&owner, "ibx_second").await;

    let all = api.get("/messages", Some(token)).await;
    let messages = all.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    for message in messages {
        assert_eq!(
            (
                &message["folder"],
                &message["starred"],
                &message["outgoing"]
            ),
            (&json!("inbox"), &json!(false), &json!(false))
        );
    }
    assert_eq!(
        listed(&api, token, "").await,
        [third.as_str(), second.as_str(), first.as_str()],
        "newest first"
    );

    // Paging with the usual cursor.
    let page = api.get("/messages?limit=2", Some(token)).await;
    let cursor = page.body["nextCursor"].as_str().unwrap();
    assert_eq!(
        listed(&api, token, &format!("?limit=2&cursor={cursor}")).await,
        [first.as_str()]
    );

    // Stars and read marks filter.
    let starred = api
        .post(&format!("/messages/{second}/star"), Some(token), json!({}))
        .await;
    assert_eq!(starred.status, StatusCode::NO_CONTENT);
    assert_eq!(
        listed(&api, token, "?starred=true").await,
        [second.as_str()]
    );
    assert_eq!(
        listed(&api, token, "?starred=false").await,
        [third.as_str(), first.as_str()]
    );
    api.post(&format!("/messages/{first}/read"), Some(token), json!({}))
        .await;
    assert_eq!(
        listed(&api, token, "?unread=true").await,
        [third.as_str(), second.as_str()]
    );
    assert_eq!(listed(&api, token, "?unread=false").await, [first.as_str()]);
    assert_eq!(
        listed(&api, token, "?inboxId=ibx_second").await,
        [third.as_str()]
    );

    // Moves.
    let moved = api
        .post(
            &format!("/messages/{first}/move"),
            Some(token),
            json!({ "folder": "archive" }),
        )
        .await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.body);
    assert_eq!(moved.body["message"]["folder"], "archive");
    assert_eq!(moved.body["message"]["id"], first.as_str());
    assert_eq!(
        listed(&api, token, "?folder=archive").await,
        [first.as_str()]
    );
    assert_eq!(
        listed(&api, token, "?folder=inbox").await,
        [third.as_str(), second.as_str()]
    );
    assert_eq!(
        listed(&api, token, "").await.len(),
        3,
        "without a folder: all but the trash"
    );
    // Received mail never goes to sent; unknown folders are refused.
    for folder in ["sent", "spam", "Inbox"] {
        let refused = api
            .post(
                &format!("/messages/{first}/move"),
                Some(token),
                json!({ "folder": folder }),
            )
            .await;
        assert_eq!(
            (refused.status, refused.code()),
            (StatusCode::BAD_REQUEST, "invalid_field"),
            "{folder}"
        );
    }
    let back = api
        .post(
            &format!("/messages/{first}/move"),
            Some(token),
            json!({ "folder": "inbox" }),
        )
        .await;
    assert_eq!(back.body["message"]["folder"], "inbox");

    // Bad query values name their field.
    for (query, field) in [
        ("?folder=spam", "folder"),
        ("?starred=yes", "starred"),
        ("?unread=1", "unread"),
        ("?limit=0", "limit"),
        ("?cursor=nonsense", "cursor"),
    ] {
        let bad = api.get(&format!("/messages{query}"), Some(token)).await;
        assert_eq!(
            (bad.status, bad.code()),
            (StatusCode::BAD_REQUEST, "invalid_field"),
            "{query}"
        );
        assert!(
            bad.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains(field),
            "{query}: {}",
            bad.body
        );
    }
    let bad_id = api.get("/messages?inboxId=nope", Some(token)).await;
    assert_eq!(bad_id.code(), "invalid_id");

    // Counts per folder.
    api.post(
        &format!("/messages/{third}/move"),
        Some(token),
        json!({ "folder": "archive" }),
    )
    .await;
    let counts = api.get("/messages/folders", Some(token)).await;
    assert_eq!(counts.status, StatusCode::OK, "{}", counts.body);
    assert_eq!(
        counts.body["folders"],
        json!({
            "inbox": { "total": 2, "unread": 1 },
            "sent": { "total": 0, "unread": 0 },
            "archive": { "total": 1, "unread": 1 },
            "trash": { "total": 0, "unread": 0 },
            "starred": { "total": 1, "unread": 1 },
        })
    );
    let one = api
        .get("/messages/folders?inboxId=ibx_second", Some(token))
        .await;
    assert_eq!(one.body["folders"]["archive"]["total"], 1);
    assert_eq!(one.body["folders"]["inbox"]["total"], 0);

    // Another account sees none of it.
    let (_, other_keys) = new_keys();
    let stranger = api.register(&other_keys).await;
    assert!(listed(&api, &stranger.token, "").await.is_empty());
    for reply in [
        api.get("/messages?inboxId=ibx_first1", Some(&stranger.token))
            .await,
        api.get(
            "/messages/folders?inboxId=ibx_first1",
            Some(&stranger.token),
        )
        .await,
        api.post(
            &format!("/messages/{first}/star"),
            Some(&stranger.token),
            json!({}),
        )
        .await,
        api.post(
            &format!("/messages/{first}/move"),
            Some(&stranger.token),
            json!({ "folder": "archive" }),
        )
        .await,
        api.delete(&format!("/messages/{first}"), Some(&stranger.token))
            .await,
    ] {
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.body);
    }
    let untouched = api.get(&format!("/messages/{first}"), Some(token)).await;
    assert_eq!(untouched.body["message"]["folder"], "inbox");
    assert_eq!(untouched.body["message"]["starred"], false);

    // Unstar.
    api.post(
        &format!("/messages/{second}/star"),
        Some(token),
        json!({ "starred": false }),
    )
    .await;
    assert!(listed(&api, token, "?starred=true").await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_trashes_then_deletes_for_good_with_the_blobs_and_the_owner_empties_the_trash() {
    let (api, owner) = account().await;
    let token = owner.token.as_str();
    let with_file = deliver_raw(&api, &owner, "ibx_first1", WITH_ATTACHMENT).await;
    let plain = api.deliver(&owner, "ibx_second").await;
    let kept = api.deliver(&owner, "ibx_second").await;
    assert_eq!(blob_files(&api), 1);

    let trashed = api
        .delete(&format!("/messages/{with_file}"), Some(token))
        .await;
    assert_eq!(trashed.status, StatusCode::OK, "{}", trashed.body);
    assert_eq!(trashed.body["result"], "trashed");
    assert!(!listed(&api, token, "").await.contains(&with_file));
    assert_eq!(
        listed(&api, token, "?folder=trash").await,
        [with_file.as_str()]
    );
    assert_eq!(blob_files(&api), 1, "still restorable");
    // Mail in every folder counts as stored.
    let usage = api.get("/usage", Some(token)).await;
    assert_eq!(usage.body["messagesStored"], 3);
    assert_eq!(
        api.get("/overview", Some(token)).await.body["messages"]["stored"],
        3
    );

    let gone = api
        .delete(&format!("/messages/{with_file}"), Some(token))
        .await;
    assert_eq!(gone.body["result"], "deleted");
    assert_eq!(blob_files(&api), 0, "the attachment went with it");
    assert_eq!(
        api.get(&format!("/messages/{with_file}"), Some(token))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.delete(&format!("/messages/{with_file}"), Some(token))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.get("/usage", Some(token)).await.body["messagesStored"],
        2
    );

    // Emptying the trash is the owner's: a device credential is refused.
    api.delete(&format!("/messages/{plain}"), Some(token)).await;
    let device = api.pair(token, "wkr_phone01").await;
    let refused = api
        .post("/messages/trash/empty", Some(&device.credential), json!({}))
        .await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::FORBIDDEN, "session_required")
    );
    let emptied = api
        .post("/messages/trash/empty", Some(token), json!({}))
        .await;
    assert_eq!(emptied.status, StatusCode::OK, "{}", emptied.body);
    assert_eq!(emptied.body["deleted"], 1);
    assert_eq!(listed(&api, token, "?folder=trash").await.len(), 0);
    assert_eq!(listed(&api, token, "").await, [kept.as_str()]);
    let again = api
        .post("/messages/trash/empty", Some(token), json!({}))
        .await;
    assert_eq!(again.body["deleted"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn mail_past_retention_leaves_every_folder() {
    let (api, owner) = account().await;
    let token = owner.token.as_str();
    let archived = api.deliver(&owner, "ibx_first1").await;
    let trashed = deliver_raw(&api, &owner, "ibx_first1", WITH_ATTACHMENT).await;
    api.post(
        &format!("/messages/{archived}/move"),
        Some(token),
        json!({ "folder": "archive" }),
    )
    .await;
    api.post(
        &format!("/messages/{archived}/star"),
        Some(token),
        json!({}),
    )
    .await;
    api.delete(&format!("/messages/{trashed}"), Some(token))
        .await;

    api.app.clock.advance(TimeDelta::days(7));
    for folder in ["archive", "trash"] {
        assert!(
            listed(&api, token, &format!("?folder={folder}"))
                .await
                .is_empty()
        );
    }
    let counts = api.get("/messages/folders", Some(token)).await;
    assert_eq!(counts.body["folders"]["starred"]["total"], 0);
    api.sweeps().run_once().await;
    assert_eq!(blob_files(&api), 0);
    assert_eq!(
        api.get("/usage", Some(token)).await.body["messagesStored"],
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_device_lists_and_files_only_the_mail_of_its_addresses() {
    let (api, owner) = account().await;
    let token = owner.token.as_str();
    let device = api.pair(token, "wkr_phone01").await;
    let assigned = api
        .post(
            "/workers/wkr_phone01/inboxes",
            Some(token),
            json!({ "inboxId": "ibx_first1" }),
        )
        .await;
    assert_eq!(assigned.status, StatusCode::OK, "{}", assigned.body);
    let its = api.deliver(&owner, "ibx_first1").await;
    let not_its = api.deliver(&owner, "ibx_second").await;
    let credential = device.credential.as_str();

    assert_eq!(listed(&api, credential, "").await, [its.as_str()]);
    assert_eq!(
        api.get("/messages?inboxId=ibx_second", Some(credential))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let counts = api.get("/messages/folders", Some(credential)).await;
    assert_eq!(counts.body["folders"]["inbox"]["total"], 1);

    for (path, body) in [
        (format!("/messages/{its}/star"), json!({})),
        (
            format!("/messages/{its}/move"),
            json!({ "folder": "archive" }),
        ),
    ] {
        let done = api.post(&path, Some(credential), body).await;
        assert!(done.status.is_success(), "{path}: {}", done.body);
    }
    let done = api
        .delete(&format!("/messages/{its}"), Some(credential))
        .await;
    assert_eq!(done.body["result"], "trashed");
    for reply in [
        api.post(
            &format!("/messages/{not_its}/star"),
            Some(credential),
            json!({}),
        )
        .await,
        api.post(
            &format!("/messages/{not_its}/move"),
            Some(credential),
            json!({ "folder": "archive" }),
        )
        .await,
        api.delete(&format!("/messages/{not_its}"), Some(credential))
            .await,
    ] {
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.body);
    }
    let owner_view: Vec<Value> = api.get("/messages", Some(token)).await.body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(owner_view.len(), 1);
    assert_eq!(owner_view[0]["id"], not_its.as_str());
    assert_eq!(owner_view[0]["folder"], "inbox");
}
