use std::sync::Arc;

use chrono::TimeDelta;
use reqwest::StatusCode;
use sealpost_seal::{AccountKeys, b64, context, open_binary};
use sealpost_testkit::TestApp;
use serde_json::{Value, json};

use crate::support::{Api, SignedIn, SmtpClient, captured_logs, new_keys};

/// An account with one address that takes mail; returns (api, owner, keys, address).
async fn mailbox() -> (Api, SignedIn, AccountKeys, String) {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let address = api.keyed_address(&owner, &keys, "ibx_mail01", "test").await;
    (api, owner, keys, address)
}

/// `POST /messages`: a small message into `mailbox()`'s address.
async fn post_to_mailbox(api: &Api, owner: &SignedIn) -> crate::support::Reply {
    api.post(
        "/messages",
        Some(&owner.token),
        json!({ "inboxId": "ibx_mail01", "raw": b64::encode(b"Subject: x\r\n\r\nhi") }),
    )
    .await
}

fn mail(to: &str, marker: &str) -> String {
    format!(
        "From: Sender <sender@example.com>\r\nTo: {to}\r\nSubject: Code {marker}\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=sep\r\n\r\n--sep\r\nContent-Type: text/plain\r\n\r\n\
         Your code is 482913. {marker}\r\n.leading dot line\r\n--sep\r\nContent-Type: text/plain; name=notes.txt\r\n\
         Content-Disposition: attachment; filename=notes.txt\r\n\r\nattachment {marker}\r\n--sep--\r\n"
    )
}

fn open_content(keys: &AccountKeys, message: &Value) -> Value {
    let sealed: sealpost_seal::SealedBox =
        serde_json::from_value(message["content"].clone()).unwrap();
    let address = message["inboxId"].as_str().unwrap();
    let id = message["id"].as_str().unwrap();
    let plain = sealed
        .open(
            &keys.address_secret(address, 0),
            &context::message(address, id),
        )
        .unwrap();
    serde_json::from_slice(&plain).unwrap()
}

pub(crate) async fn everything_in_the_database(api: &Api) -> String {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Text {
        #[diesel(sql_type = diesel::sql_types::Text)]
        text: String,
    }
    let mut conn = api.app.db.connect().await;
    let tables: Vec<Text> = diesel::sql_query(
        "SELECT table_name::text AS text FROM information_schema.tables WHERE table_schema = 'public'",
    )
    .load(&mut conn)
    .await
    .unwrap();
    let mut all = String::new();
    for table in tables {
        let rows: Vec<Text> =
            diesel::sql_query(format!("SELECT t::text AS text FROM \"{}\" t", table.text))
                .load(&mut conn)
                .await
                .unwrap();
        rows.into_iter().for_each(|row| all.push_str(&row.text));
    }
    all
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                found.extend(files_under(&path));
            } else {
                found.push(path);
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn smtp_mail_is_sealed_on_arrival_and_nothing_of_it_is_kept_in_the_clear() {
    let logs = captured_logs();
    let (mut api, owner, keys, address) = mailbox().await;
    let smtp = api.app.spawn_smtp().await;
    let marker = "MARKER7f3a9c";

    let (mut client, greeting) = SmtpClient::connect(smtp).await;
    assert_eq!(greeting, 220);
    assert_eq!(client.command("EHLO client.example").await, 250);
    assert_eq!(client.command("MAIL FROM:<sender@example.com>").await, 250);
    assert_eq!(
        client.command("RCPT TO:<nobody@mail.localhost>").await,
        550,
        "unknown address"
    );
    assert_eq!(
        client
            .command(&format!("RCPT TO:<{}>", address.to_uppercase()))
            .await,
        250
    );
    assert_eq!(client.data(&mail(&address, marker)).await, 250);
    assert_eq!(client.command("QUIT").await, 221);

    // Committed before 250: it is listed at once.
    let listed = api
        .get("/inboxes/ibx_mail01/messages", Some(&owner.token))
        .await;
    assert_eq!(listed.status, StatusCode::OK);
    let messages = listed.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    let content = open_content(&keys, &messages[0]);
    assert_eq!(content["subject"], format!("Code {marker}"));
    assert!(content["text"].as_str().unwrap().contains("482913"));
    assert!(
        content["text"]
            .as_str()
            .unwrap()
            .contains("\n.leading dot line")
    );
    assert_eq!(content["attachments"][0]["filename"], "notes.txt");
    assert_eq!(content["attachments"][0]["stored"], true);

    let id = messages[0]["id"].as_str().unwrap();
    let response = reqwest::Client::new()
        .get(api.app.url(&format!("/messages/{id}/attachments/0")))
        .bearer_auth(&owner.token)
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["content-type"],
        "application/octet-stream"
    );
    let sealed = response.bytes().await.unwrap();
    let opened = open_binary(
        &keys.address_secret("ibx_mail01", 0),
        &context::attachment(id, 0),
        &sealed,
    )
    .unwrap();
    assert!(String::from_utf8(opened).unwrap().contains(marker));

    let kinds: Vec<Value> = api.get("/activity", Some(&owner.token)).await.body["activity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["kind"].clone())
        .collect();
    assert_eq!(kinds[0], "mail.received");
    assert!(
        api.event_types(&owner.account_id)
            .await
            .contains(&"message.received".to_owned())
    );

    // Nothing of the subject, body or attachment in the clear: database, blobs, logs.
    let database = everything_in_the_database(&api).await;
    assert!(database.contains("ibx_mail01"), "the scan sees the rows");
    assert!(!database.contains(marker), "marker in the database");
    assert!(!database.contains("482913"), "body in the database");
    let blob_files = files_under(&api.app.config.blob_dir);
    assert!(!blob_files.is_empty());
    for file in blob_files {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !bytes.windows(marker.len()).any(|w| w == marker.as_bytes()),
            "marker in {file:?}"
        );
    }
    let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(!logs.contains(marker), "marker in the logs");
    assert!(!logs.contains("sender@example.com"), "sender in the logs");
}

#[tokio::test(flavor = "multi_thread")]
async fn rcpt_refuses_keyless_addresses_and_accounts_over_their_allowance() {
    let (mut api, owner, _, address) = mailbox().await;
    api.post(
        "/inboxes",
        Some(&owner.token),
        json!({ "id": "ibx_nokey1", "domain": "mail.localhost", "prefix": "nokey" }),
    )
    .await;
    let keyless = api.get("/inboxes", Some(&owner.token)).await.body["inboxes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|address| address["id"] == "ibx_nokey1")
        .unwrap()["emailAddress"]
        .as_str()
        .unwrap()
        .to_owned();
    let smtp = api.app.spawn_smtp().await;
    let (mut client, _) = SmtpClient::connect(smtp).await;
    client.command("EHLO client.example").await;
    client.command("MAIL FROM:<sender@example.com>").await;
    assert_eq!(client.command(&format!("RCPT TO:<{keyless}>")).await, 550);
    assert_eq!(
        client.command("RCPT TO:<someone@gmail.com>").await,
        550,
        "not a served domain"
    );

    // Use up the Free plan's 3,000 a window.
    {
        use diesel_async::RunQueryDsl;
        let mut conn = api.app.db.connect().await;
        diesel::sql_query(
            "INSERT INTO usage_counters (account_id, counter, window_start, used) \
             SELECT id, 'received', created_at, 3000 FROM accounts WHERE id = $1",
        )
        .bind::<diesel::sql_types::Text, _>(&owner.account_id)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    assert_eq!(client.command(&format!("RCPT TO:<{address}>")).await, 452);
    let inbound = post_to_mailbox(&api, &owner).await;
    assert_eq!(
        (inbound.status, inbound.code()),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    assert!(inbound.headers.get("retry-after").is_some());
}

/// An address stored with a low-order key (before the API refused them)
/// would get boxes anyone can open: the ingest refuses its mail at the end
/// of DATA, over SMTP and through `POST /messages` alike, and stores none.
#[tokio::test(flavor = "multi_thread")]
async fn mail_for_an_address_with_a_low_order_key_is_refused_and_not_stored() {
    let (mut api, owner, _, address) = mailbox().await;
    {
        use diesel_async::RunQueryDsl;
        let mut conn = api.app.db.connect().await;
        diesel::sql_query("UPDATE addresses SET public_key = $1 WHERE id = 'ibx_mail01'")
            .bind::<diesel::sql_types::Bytea, _>(vec![0u8; 32])
            .execute(&mut conn)
            .await
            .unwrap();
    }
    let smtp = api.app.spawn_smtp().await;
    let (mut client, _) = SmtpClient::connect(smtp).await;
    client.command("EHLO client.example").await;
    client.command("MAIL FROM:<sender@example.com>").await;
    assert_eq!(client.command(&format!("RCPT TO:<{address}>")).await, 250);
    assert_eq!(client.data(&mail(&address, "MARKER-low-order")).await, 550);

    let inbound = post_to_mailbox(&api, &owner).await;
    assert_eq!(
        (inbound.status, inbound.code()),
        (StatusCode::BAD_REQUEST, "invalid_key"),
        "{}",
        inbound.body
    );
    let listed = api
        .get("/inboxes/ibx_mail01/messages", Some(&owner.token))
        .await;
    assert_eq!(listed.body["messages"], json!([]));
}

/// A new transaction on `client` (the last one reset) with one RCPT for
/// `address`: its reply code.
async fn rcpt_in_new_transaction(client: &mut SmtpClient, address: &str) -> u16 {
    client.command("RSET").await;
    client.command("MAIL FROM:<sender@example.com>").await;
    client.command(&format!("RCPT TO:<{address}>")).await
}

/// The last reply was the one refusal of an address that exists.
fn assert_refused_for_good(client: &SmtpClient) {
    assert!(
        client.last_reply.trim_end() == "550 5.7.1 this address does not accept mail",
        "{}",
        client.last_reply
    );
}

/// Suspended, the account's mail is refused: within the second after the
/// ingest last accepted the address, RCPT may still answer from that
/// reading, and DATA then refuses it (nothing stored); after it, RCPT
/// refuses it.
#[tokio::test(flavor = "multi_thread")]
async fn a_suspended_account_s_mail_is_refused_at_rcpt_and_through_the_api() {
    let (mut api, owner, _, address) = mailbox().await;
    let staff = crate::support::staff_client(&api, &crate::support::staff_token(&api, "ada").await);
    let smtp = api.app.spawn_smtp().await;
    let (mut client, _) = SmtpClient::connect(smtp).await;
    client.command("EHLO client.example").await;
    assert_eq!(rcpt_in_new_transaction(&mut client, &address).await, 250);

    staff
        .set_suspended(&owner.account_id, true, "spam run")
        .await
        .unwrap();
    assert_eq!(
        rcpt_in_new_transaction(&mut client, &address).await,
        250,
        "answered from the reading of a moment ago"
    );
    assert_eq!(client.data(&mail(&address, "MARKER-suspended")).await, 550);
    assert_refused_for_good(&client);
    api.app.clock.advance(TimeDelta::seconds(1));
    assert_eq!(rcpt_in_new_transaction(&mut client, &address).await, 550);
    assert_refused_for_good(&client);

    // RCPT alone: the reading of a moment ago answers within the second
    // and no longer.
    staff
        .set_suspended(&owner.account_id, false, "appeal granted")
        .await
        .unwrap();
    assert_eq!(rcpt_in_new_transaction(&mut client, &address).await, 250);
    staff
        .set_suspended(&owner.account_id, true, "spam run again")
        .await
        .unwrap();
    assert_eq!(
        rcpt_in_new_transaction(&mut client, &address).await,
        250,
        "within the second"
    );
    api.app.clock.advance(TimeDelta::seconds(1));
    assert_eq!(rcpt_in_new_transaction(&mut client, &address).await, 550);
    assert_refused_for_good(&client);
    let inbound = post_to_mailbox(&api, &owner).await;
    assert_eq!(
        (inbound.status, inbound.code()),
        (StatusCode::FORBIDDEN, "account_suspended")
    );

    staff
        .set_suspended(&owner.account_id, false, "appeal granted")
        .await
        .unwrap();
    assert_eq!(rcpt_in_new_transaction(&mut client, &address).await, 250);
}

#[tokio::test(flavor = "multi_thread")]
async fn inbound_api_reads_marks_and_the_hourly_read_allowance() {
    let (api, owner, keys, _) = mailbox().await;
    let raw = b"From: a@example.com\r\nSubject: via api\r\n\r\nhello";
    let posted = api
        .post(
            "/messages",
            Some(&owner.token),
            json!({ "inboxId": "ibx_mail01", "raw": b64::encode(raw) }),
        )
        .await;
    assert_eq!(posted.status, StatusCode::CREATED, "{}", posted.body);
    let id = posted.body["messageId"].as_str().unwrap().to_owned();
    let activity = api.get("/activity", Some(&owner.token)).await;
    assert_eq!(activity.body["activity"][0]["kind"], "message.received");

    let one = api
        .get(&format!("/messages/{id}"), Some(&owner.token))
        .await;
    assert_eq!(one.body["message"]["read"], false);
    assert_eq!(
        open_content(&keys, &one.body["message"])["subject"],
        "via api"
    );
    assert_eq!(
        api.post(
            &format!("/messages/{id}/read"),
            Some(&owner.token),
            json!({})
        )
        .await
        .status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        api.get(&format!("/messages/{id}"), Some(&owner.token))
            .await
            .body["message"]["read"],
        true
    );
    api.post(
        &format!("/messages/{id}/read"),
        Some(&owner.token),
        json!({ "read": false }),
    )
    .await;
    assert_eq!(
        api.get(&format!("/messages/{id}"), Some(&owner.token))
            .await
            .body["message"]["read"],
        false
    );

    // Mail for another account's address, or a made-up one: 404.
    let (_, other_keys) = new_keys();
    let stranger = api.register(&other_keys).await;
    assert_eq!(
        api.get(&format!("/messages/{id}"), Some(&stranger.token))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.get("/inboxes/ibx_mail01/messages", Some(&stranger.token))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let foreign = api
        .post(
            "/messages",
            Some(&stranger.token),
            json!({ "inboxId": "ibx_mail01", "raw": b64::encode(raw) }),
        )
        .await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);

    // The Free plan reads 1,000 objects an hour; the 1,001st waits for the next hour.
    {
        use diesel_async::RunQueryDsl;
        let mut conn = api.app.db.connect().await;
        diesel::sql_query("UPDATE usage_counters SET used = 1000 WHERE counter = 'object_reads'")
            .execute(&mut conn)
            .await
            .unwrap();
    }
    let limited = api
        .get(&format!("/messages/{id}"), Some(&owner.token))
        .await;
    assert_eq!(
        (limited.status, limited.code()),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    assert_eq!(
        limited.headers["retry-after"], "3600",
        "the test clock stands at 12:00:00"
    );
    api.app.clock.advance(TimeDelta::hours(1));
    assert_eq!(
        api.get(&format!("/messages/{id}"), Some(&owner.token))
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn mail_past_retention_is_never_returned_and_is_swept_with_its_blobs() {
    let (api, owner, _, _) = mailbox().await;
    let raw = mail("x@mail.localhost", "RETENTION");
    let posted = api
        .post(
            "/messages",
            Some(&owner.token),
            json!({ "inboxId": "ibx_mail01", "raw": b64::encode(raw.as_bytes()) }),
        )
        .await;
    let id = posted.body["messageId"].as_str().unwrap().to_owned();
    assert_eq!(files_under(&api.app.config.blob_dir.join("blobs")).len(), 1);

    api.app.clock.advance(TimeDelta::days(7));
    assert_eq!(
        api.get("/inboxes/ibx_mail01/messages", Some(&owner.token))
            .await
            .body["messages"],
        json!([])
    );
    assert_eq!(
        api.get(&format!("/messages/{id}"), Some(&owner.token))
            .await
            .status,
        StatusCode::NOT_FOUND
    );

    api.sweeps().run_once().await;
    assert_eq!(
        files_under(&api.app.config.blob_dir.join("blobs")),
        Vec::<std::path::PathBuf>::new()
    );
    let listed_rows = {
        use diesel_async::RunQueryDsl;
        let mut conn = api.app.db.connect().await;
        diesel::sql_query("SELECT id FROM messages WHERE id = $1")
            .bind::<diesel::sql_types::Text, _>(&id)
            .execute(&mut conn)
            .await
            .unwrap()
    };
    assert_eq!(listed_rows, 0, "the message row is gone");
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_an_address_or_the_account_deletes_its_blobs() {
    let (api, owner, _, _) = mailbox().await;
    let raw = mail("x@mail.localhost", "DELETE");
    api.post(
        "/messages",
        Some(&owner.token),
        json!({ "inboxId": "ibx_mail01", "raw": b64::encode(raw.as_bytes()) }),
    )
    .await;
    assert_eq!(files_under(&api.app.config.blob_dir.join("blobs")).len(), 1);
    api.delete("/inboxes/ibx_mail01", Some(&owner.token)).await;
    assert!(files_under(&api.app.config.blob_dir.join("blobs")).is_empty());

    let created = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": "ibx_mail02", "domain": "mail.localhost",
               "publicKey": b64::encode(&[9; 32]) }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    api.post(
        "/messages",
        Some(&owner.token),
        json!({ "inboxId": "ibx_mail02", "raw": b64::encode(raw.as_bytes()) }),
    )
    .await;
    assert_eq!(files_under(&api.app.config.blob_dir.join("blobs")).len(), 1);
    api.delete("/accounts/me", Some(&owner.token)).await;
    assert!(files_under(&api.app.config.blob_dir.join("blobs")).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_answers_when_mail_lands_or_204_at_the_timeout() {
    let (api, owner, _, _) = mailbox().await;
    let empty = api
        .get(
            "/inboxes/ibx_mail01/messages/wait?timeout=1",
            Some(&owner.token),
        )
        .await;
    assert_eq!(empty.status, StatusCode::NO_CONTENT);
    let bad = api
        .get(
            "/inboxes/ibx_mail01/messages/wait?timeout=61",
            Some(&owner.token),
        )
        .await;
    assert_eq!(bad.code(), "invalid_field");

    let api = Arc::new(api);
    let waiter = {
        let api = api.clone();
        let token = owner.token.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let reply = api
                .get("/inboxes/ibx_mail01/messages/wait?timeout=30", Some(&token))
                .await;
            (reply, started.elapsed())
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    api.post(
        "/messages",
        Some(&owner.token),
        json!({ "inboxId": "ibx_mail01", "raw": b64::encode(b"Subject: a\r\n\r\nx") }),
    )
    .await;
    let (reply, waited) = waiter.await.unwrap();
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["messages"].as_array().unwrap().len(), 1);
    assert!(
        waited < std::time::Duration::from_secs(10),
        "woken by the notification, not the timeout"
    );

    // After the returned cursor, nothing new yet: the next wait times out.
    let cursor = reply.body["cursor"].as_str().unwrap();
    let next = api
        .get(
            &format!("/inboxes/ibx_mail01/messages/wait?timeout=1&after={cursor}"),
            Some(&owner.token),
        )
        .await;
    assert_eq!(next.status, StatusCode::NO_CONTENT);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_device_reads_only_the_mail_of_its_addresses() {
    let app = TestApp::spawn().await;
    let api = Api::with(app);
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    let phone = api.pair(&owner.token, "wkr_phone01").await;
    let tablet = api.pair(&owner.token, "wkr_tablet1").await;
    for (address, device) in [("ibx_phone1", "wkr_phone01"), ("ibx_tablet", "wkr_tablet1")] {
        api.post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": address, "domain": "mail.localhost",
                 "publicKey": b64::encode(&keys.address_public_key(address, 0)) }),
        )
        .await;
        api.post(
            &format!("/workers/{device}/inboxes"),
            Some(&owner.token),
            json!({ "inboxId": address }),
        )
        .await;
        api.post(
            "/messages",
            Some(&owner.token),
            json!({ "inboxId": address, "raw": b64::encode(b"Subject: s\r\n\r\nb") }),
        )
        .await;
    }
    let mine = api.get("/workers/messages", Some(&phone.credential)).await;
    let addresses: Vec<Value> = mine.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["inboxId"].clone())
        .collect();
    assert_eq!(addresses, vec![json!("ibx_phone1")]);
    let other = api
        .get("/inboxes/ibx_tablet/messages", Some(&phone.credential))
        .await;
    assert_eq!(other.status, StatusCode::NOT_FOUND);
    let tablet_id = api
        .get("/inboxes/ibx_tablet/messages", Some(&tablet.credential))
        .await
        .body["messages"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        api.get(&format!("/messages/{tablet_id}"), Some(&phone.credential))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.get("/workers/messages", Some(&owner.token))
            .await
            .status,
        StatusCode::FORBIDDEN
    );
}
