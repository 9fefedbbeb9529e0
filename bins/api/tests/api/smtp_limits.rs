//! The SMTP ingest's hardening through the real wiring (`sealpost_wiring::smtp`
//! over TCP, the real store and blob directory): the configured connection
//! caps, hostile MIME structure refused with 552, and a delivery failing
//! after its blobs were written leaving none behind.

use std::path::{Path, PathBuf};

use reqwest::StatusCode;
use sealpost_seal::b64;
use sealpost_testkit::TestApp;
use serde_json::json;

use crate::support::{Api, SignedIn, SmtpClient, new_keys};

/// An account with one address that takes mail.
async fn mailbox(app: TestApp) -> (Api, SignedIn, String) {
    let api = Api::with(app);
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let address = api
        .keyed_address(&owner, &keys, "ibx_limit1", "limits")
        .await;
    (api, owner, address)
}

/// A message nesting multiparts `levels` deep.
fn nested(to: &str, levels: usize) -> String {
    let mut text =
        format!("From: s@example.com\r\nTo: {to}\r\nSubject: deep\r\nMIME-Version: 1.0\r\n");
    for level in 0..levels {
        text.push_str(&format!(
            "Content-Type: multipart/mixed; boundary=\"b{level}\"\r\n\r\n--b{level}\r\n"
        ));
    }
    text.push_str("Content-Type: text/plain\r\n\r\ninnermost\r\n");
    for level in (0..levels).rev() {
        text.push_str(&format!("--b{level}--\r\n"));
    }
    text
}

fn with_attachment(to: &str) -> String {
    format!(
        "From: s@example.com\r\nTo: {to}\r\nSubject: blobs\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=sep\r\n\r\n--sep\r\nContent-Type: text/plain\r\n\r\nhi\r\n\
         --sep\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=a.bin\r\n\r\n\
         first\r\n--sep\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=b.bin\r\n\r\n\
         second\r\n--sep--\r\n"
    )
}

async fn listed(api: &Api, owner: &SignedIn) -> usize {
    let page = api
        .get("/inboxes/ibx_limit1/messages", Some(&owner.token))
        .await;
    assert_eq!(page.status, StatusCode::OK);
    page.body["messages"].as_array().unwrap().len()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_ingest_caps_sessions_per_client_and_refuses_hostile_structure_with_552() {
    let app = TestApp::spawn_with(|config| {
        config.smtp_max_sessions_per_ip = 2;
        config.smtp_connect_rate = 0;
    })
    .await;
    let (mut api, owner, address) = mailbox(app).await;
    let smtp = api.app.spawn_smtp().await;

    let (mut first, greeting) = SmtpClient::connect(smtp).await;
    assert_eq!(greeting, 220);
    let (_second, greeting) = SmtpClient::connect(smtp).await;
    assert_eq!(greeting, 220);
    let (_third, greeting) = SmtpClient::connect(smtp).await;
    assert_eq!(greeting, 421, "a third session from one client");

    assert_eq!(first.command("EHLO client.example").await, 250);
    assert_eq!(first.command("MAIL FROM:<s@example.com>").await, 250);
    assert_eq!(first.command(&format!("RCPT TO:<{address}>")).await, 250);
    assert_eq!(first.data(&nested(&address, 30)).await, 552);
    // Refused for good, and the session goes on: nesting within the limit passes.
    assert_eq!(first.command("MAIL FROM:<s@example.com>").await, 250);
    assert_eq!(first.command(&format!("RCPT TO:<{address}>")).await, 250);
    assert_eq!(first.data(&nested(&address, 5)).await, 250);
    assert_eq!(listed(&api, &owner).await, 1);

    // The owner's own upload meets the same limits.
    let posted = api
        .post(
            "/messages",
            Some(&owner.token),
            json!({ "inboxId": "ibx_limit1", "raw": b64::encode(nested(&address, 30).as_bytes()) }),
        )
        .await;
    assert_eq!(
        (posted.status, posted.code()),
        (StatusCode::BAD_REQUEST, "invalid_field")
    );
    assert!(
        posted.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("levels deep")
    );
    assert_eq!(listed(&api, &owner).await, 1);
}

/// Files under the blob directory, the stores' scratch space (`tmp/`) aside.
fn blob_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name == "tmp") && path.parent() == Some(dir) {
                continue;
            }
            found.extend(blob_files(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delivery_failing_after_its_blobs_were_written_leaves_none_behind() {
    use diesel_async::RunQueryDsl;
    let (mut api, owner, address) = mailbox(TestApp::spawn().await).await;
    let smtp = api.app.spawn_smtp().await;
    let blob_dir = api.app.config.blob_dir.clone();

    // The commit fails: the messages row is refused inside its transaction,
    // after both attachments were sealed and written.
    let mut conn = api.app.db.connect().await;
    for statement in [
        "CREATE FUNCTION refuse_mail() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$",
        "CREATE TRIGGER refuse_mail BEFORE INSERT ON messages \
         FOR EACH ROW EXECUTE FUNCTION refuse_mail()",
    ] {
        diesel::sql_query(statement)
            .execute(&mut conn)
            .await
            .unwrap();
    }

    let (mut client, _) = SmtpClient::connect(smtp).await;
    assert_eq!(client.command("EHLO client.example").await, 250);
    assert_eq!(client.command("MAIL FROM:<s@example.com>").await, 250);
    assert_eq!(client.command(&format!("RCPT TO:<{address}>")).await, 250);
    assert_eq!(client.data(&with_attachment(&address)).await, 451);

    // At once, not at the next recovery: no blob, no pending row.
    assert_eq!(blob_files(&blob_dir), Vec::<PathBuf>::new());
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    let pending = diesel::sql_query("SELECT count(*) AS count FROM pending_blobs")
        .get_result::<Count>(&mut conn)
        .await
        .unwrap();
    assert_eq!(pending.count, 0);

    // Once the database takes mail again, the retry is stored whole.
    diesel::sql_query("DROP TRIGGER refuse_mail ON messages")
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(client.command("MAIL FROM:<s@example.com>").await, 250);
    assert_eq!(client.command(&format!("RCPT TO:<{address}>")).await, 250);
    assert_eq!(client.data(&with_attachment(&address)).await, 250);
    assert_eq!(listed(&api, &owner).await, 1);
    assert_eq!(blob_files(&blob_dir).len(), 2);
}

/// Sends one message to `address` on a session of its own; the final reply.
async fn deliver_one(smtp: std::net::SocketAddr, address: String, body: String) -> u16 {
    let (mut client, greeting) = SmtpClient::connect(smtp).await;
    assert_eq!(greeting, 220);
    assert_eq!(client.command("EHLO client.example").await, 250);
    assert_eq!(client.command("MAIL FROM:<s@example.com>").await, 250);
    assert_eq!(client.command(&format!("RCPT TO:<{address}>")).await, 250);
    client.data(&body).await
}

async fn count(api: &Api, query: &str) -> i64 {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    let mut conn = api.app.db.connect().await;
    diesel::sql_query(query)
        .get_result::<Count>(&mut conn)
        .await
        .unwrap()
        .count
}

async fn execute(api: &Api, statements: &[&str]) {
    use diesel_async::RunQueryDsl;
    let mut conn = api.app.db.connect().await;
    for statement in statements {
        diesel::sql_query(*statement)
            .execute(&mut conn)
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn deliveries_finishing_together_are_committed_in_one_transaction_each_answered_250() {
    let (mut api, owner, address) = mailbox(TestApp::spawn().await).await;
    let smtp = api.app.spawn_smtp().await;
    // Each message row takes 0.2 s to insert: commits pile up behind the
    // busy ones and are then written together.
    execute(
        &api,
        &[
            "CREATE FUNCTION slow_mail() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM pg_sleep(0.2); RETURN NEW; END $$",
            "CREATE TRIGGER slow_mail BEFORE INSERT ON messages \
             FOR EACH ROW EXECUTE FUNCTION slow_mail()",
        ],
    )
    .await;
    const SESSIONS: usize = 12;
    let sending: Vec<_> = (0..SESSIONS)
        .map(|_| {
            tokio::spawn(deliver_one(
                smtp,
                address.clone(),
                with_attachment(&address),
            ))
        })
        .collect();
    for sent in sending {
        assert_eq!(sent.await.unwrap(), 250);
    }
    assert_eq!(listed(&api, &owner).await, SESSIONS);
    assert_eq!(
        count(&api, "SELECT COALESCE(SUM(used), 0)::bigint AS count FROM usage_counters WHERE counter = 'received'").await,
        SESSIONS as i64
    );
    assert_eq!(
        count(&api, "SELECT count(*) AS count FROM pending_blobs").await,
        0
    );
    // One commit number per batch transaction.
    let transactions = count(
        &api,
        "SELECT count(DISTINCT commit_seq) AS count FROM messages",
    )
    .await;
    assert!(
        transactions < SESSIONS as i64,
        "{SESSIONS} messages in {transactions} transactions"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_batch_answers_451_and_no_250_is_ever_given_for_what_was_not_stored() {
    let (mut api, owner, address) = mailbox(TestApp::spawn().await).await;
    let smtp = api.app.spawn_smtp().await;
    let blob_dir = api.app.config.blob_dir.clone();
    // Slow inserts batch the commits; the one message with a size no other
    // has fails its whole transaction.
    let poisoned = format!(
        "{}X-Poison: yes\r\n\r\npoison\r\n",
        with_attachment(&address)
    );
    let poisoned_size = poisoned.len() + 2;
    let trigger = format!(
        "CREATE FUNCTION poison_mail() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN PERFORM pg_sleep(0.2); \
         IF NEW.size_bytes = {poisoned_size} THEN RAISE EXCEPTION 'poisoned'; END IF; \
         RETURN NEW; END $$"
    );
    execute(
        &api,
        &[
            &trigger,
            "CREATE TRIGGER poison_mail BEFORE INSERT ON messages \
             FOR EACH ROW EXECUTE FUNCTION poison_mail()",
        ],
    )
    .await;
    let mut sending = Vec::new();
    for i in 0..10 {
        let body = if i == 3 {
            poisoned.clone()
        } else {
            with_attachment(&address)
        };
        sending.push(tokio::spawn(deliver_one(smtp, address.clone(), body)));
    }
    let mut replies = Vec::new();
    for sent in sending {
        replies.push(sent.await.unwrap());
    }
    assert_eq!(replies[3], 451, "{replies:?}");
    assert!(
        replies.iter().all(|code| *code == 250 || *code == 451),
        "{replies:?}"
    );
    let accepted = replies.iter().filter(|code| **code == 250).count();
    // Every 250 is stored, nothing else is, and no blob of the refused stays.
    assert_eq!(listed(&api, &owner).await, accepted);
    assert_eq!(
        count(&api, "SELECT count(*) AS count FROM pending_blobs").await,
        0
    );
    assert_eq!(blob_files(&blob_dir).len(), 2 * accepted);
}

/// Issue 15: an address deleted after its RCPT was accepted, while its
/// delivery is under way (here: while its blobs are being registered).
/// Its sender gets 550 5.1.1 at the end of DATA, nothing of it stays, and
/// a message to another address delivered at the same time is stored and
/// answered 250. Before, the foreign key failed the whole commit batch and
/// every message in it was answered 451.
#[tokio::test(flavor = "multi_thread")]
async fn an_address_deleted_mid_delivery_refuses_its_message_with_550_and_spares_the_rest() {
    let mut api = Api::with(TestApp::spawn().await);
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let doomed = api
        .keyed_address(&owner, &keys, "ibx_limit1", "doomed")
        .await;
    let kept = api.keyed_address(&owner, &keys, "ibx_limit2", "kept").await;
    let smtp = api.app.spawn_smtp().await;
    let blob_dir = api.app.config.blob_dir.clone();
    execute(
        &api,
        &[
            "CREATE FUNCTION slow_blobs() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM pg_sleep(1); RETURN NEW; END $$",
            "CREATE TRIGGER slow_blobs BEFORE INSERT ON pending_blobs \
             FOR EACH STATEMENT EXECUTE FUNCTION slow_blobs()",
        ],
    )
    .await;
    let mut sessions = Vec::new();
    for to in [&doomed, &kept] {
        let (mut client, greeting) = SmtpClient::connect(smtp).await;
        assert_eq!(greeting, 220);
        assert_eq!(client.command("EHLO client.example").await, 250);
        assert_eq!(client.command("MAIL FROM:<s@example.com>").await, 250);
        assert_eq!(client.command(&format!("RCPT TO:<{to}>")).await, 250);
        sessions.push(client);
    }
    let sending: Vec<_> = sessions
        .into_iter()
        .zip([doomed.clone(), kept.clone()])
        .map(|(mut client, to)| {
            tokio::spawn(async move {
                let code = client.data(&with_attachment(&to)).await;
                (code, client.last_reply)
            })
        })
        .collect();
    // Both are registering their blobs now; the first address goes.
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let deleted = api.delete("/inboxes/ibx_limit1", Some(&owner.token)).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.body);
    let mut replies = Vec::new();
    for sent in sending {
        replies.push(sent.await.unwrap());
    }
    assert_eq!(replies[0].0, 550, "{replies:?}");
    assert!(replies[0].1.starts_with("550 5.1.1"), "{replies:?}");
    assert_eq!(replies[1].0, 250, "{replies:?}");

    let page = api
        .get("/inboxes/ibx_limit2/messages", Some(&owner.token))
        .await;
    assert_eq!(page.body["messages"].as_array().unwrap().len(), 1);
    assert_eq!(
        count(&api, "SELECT count(*) AS count FROM messages").await,
        1
    );
    assert_eq!(
        count(&api, "SELECT count(*) AS count FROM pending_blobs").await,
        0
    );
    assert_eq!(blob_files(&blob_dir).len(), 2, "the stored message's only");
}

/// Issue 15, item 6, through the real ingest: a message past the spool
/// threshold arrives into an encrypted temporary file (whose bytes hold no
/// plaintext), is stored and opens with the address's key, and the spool
/// file is gone once the client was answered.
#[tokio::test(flavor = "multi_thread")]
async fn a_large_message_goes_through_the_encrypted_spool_and_is_stored_and_openable() {
    use sealpost_seal::{context, open_binary};
    use tokio::io::AsyncWriteExt;

    const MARKER: &str = "SPOOLED-PLAINTEXT-MARKER";
    let app = TestApp::spawn_with(|config| config.smtp_spool_threshold = 64 * 1024).await;
    let mut api = Api::with(app);
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let address = api
        .keyed_address(&owner, &keys, "ibx_limit1", "spooled")
        .await;
    let smtp = api.app.spawn_smtp().await;
    let spool_dir = api.app.config.smtp_spool_dir.clone();
    let spool_files = || -> Vec<PathBuf> {
        std::fs::read_dir(&spool_dir)
            .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
            .unwrap_or_default()
    };

    let mut attachment = String::new();
    for n in 0.. {
        if attachment.len() >= 2 * 1024 * 1024 {
            break;
        }
        attachment.push_str(&format!("{MARKER} line {n:08}\r\n"));
    }
    let message = format!(
        "From: s@example.com\r\nTo: {address}\r\nSubject: large {MARKER}\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=sep\r\n\r\n--sep\r\nContent-Type: text/plain\r\n\r\n\
         text {MARKER}\r\n--sep\r\nContent-Type: application/octet-stream\r\n\
         Content-Disposition: attachment; filename=large.bin\r\n\r\n\
         {attachment}--sep--\r\n.\r\n"
    );
    let stream = tokio::net::TcpStream::connect(smtp).await.unwrap();
    let (read, mut write) = stream.into_split();
    let mut reader = tokio::io::BufReader::new(read);
    let mut reply = async || {
        use tokio::io::AsyncBufReadExt;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).await.unwrap();
            if line.as_bytes().get(3) == Some(&b' ') {
                return line;
            }
        }
    };
    assert!(reply().await.starts_with("220"));
    for (command, code) in [
        ("EHLO client.example".to_owned(), "250"),
        ("MAIL FROM:<s@example.com>".to_owned(), "250"),
        (format!("RCPT TO:<{address}>"), "250"),
        ("DATA".to_owned(), "354"),
    ] {
        write
            .write_all(format!("{command}\r\n").as_bytes())
            .await
            .unwrap();
        let answer = reply().await;
        assert!(answer.starts_with(code), "{command}: {answer}");
    }
    // Most of it, then a look at the spool while it is still arriving.
    let (first, rest) = message.split_at(message.len() - 4096);
    write.write_all(first.as_bytes()).await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let on_disk = loop {
        let files = spool_files();
        let bytes: Vec<u8> = files
            .iter()
            .flat_map(|path| std::fs::read(path).unwrap_or_default())
            .collect();
        if files.len() == 1 && bytes.len() >= first.len() - 128 * 1024 {
            break bytes;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the message never reached the spool ({} files)",
            files.len()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert!(
        !on_disk
            .windows(MARKER.len())
            .any(|window| window == MARKER.as_bytes()),
        "plaintext in the spool file"
    );
    write.write_all(rest.as_bytes()).await.unwrap();
    let answer = reply().await;
    assert!(answer.starts_with("250 2.0.0"), "{answer}");
    assert_eq!(
        spool_files(),
        Vec::<PathBuf>::new(),
        "the spool file is gone"
    );

    let page = api
        .get("/inboxes/ibx_limit1/messages", Some(&owner.token))
        .await;
    let listed = page.body["messages"].as_array().unwrap();
    assert_eq!(listed.len(), 1);
    let id = listed[0]["id"].as_str().unwrap();
    let sealed: sealpost_seal::SealedBox =
        serde_json::from_value(listed[0]["content"].clone()).unwrap();
    let content: serde_json::Value = serde_json::from_slice(
        &sealed
            .open(
                &keys.address_secret("ibx_limit1", 0),
                &context::message("ibx_limit1", id),
            )
            .unwrap(),
    )
    .unwrap();
    assert_eq!(content["subject"], format!("large {MARKER}"));
    let response = reqwest::Client::new()
        .get(api.app.url(&format!("/messages/{id}/attachments/0")))
        .bearer_auth(&owner.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let opened = open_binary(
        &keys.address_secret("ibx_limit1", 0),
        &context::attachment(id, 0),
        &response.bytes().await.unwrap(),
    )
    .unwrap();
    // The CRLF before the boundary belongs to the boundary.
    assert!(
        opened.len() + 2 == attachment.len() && attachment.as_bytes().starts_with(&opened),
        "the attachment opens whole ({} of {} octets)",
        opened.len(),
        attachment.len()
    );
}

/// `SEALPOST_SMTP_TLS_CERT` and `_KEY` turn STARTTLS on in the ingest.
/// (Reloading on change: `crates/smtp-session/tests/starttls.rs`.)
#[tokio::test(flavor = "multi_thread")]
async fn the_smtp_certificate_files_turn_starttls_on() {
    let dir = std::env::temp_dir().join(format!(
        "sealpost-smtp-tls-{}",
        sealpost_seal::b64::encode(&sealpost_seal::random_bytes::<6>())
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["mail.localhost".into()]).unwrap();
    let files = sealpost_config::TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    std::fs::write(&files.cert, certified.cert.pem()).unwrap();
    std::fs::write(&files.key, certified.signing_key.serialize_pem()).unwrap();
    let plain = {
        let mut app = TestApp::spawn().await;
        let smtp = app.spawn_smtp().await;
        let (mut client, _) = SmtpClient::connect(smtp).await;
        assert_eq!(client.command("EHLO client.example").await, 250);
        client.command("STARTTLS").await
    };
    assert_eq!(plain, 502, "no STARTTLS without the files");
    let mut app = TestApp::spawn_with(|config| config.smtp_tls = Some(files)).await;
    let smtp = app.spawn_smtp().await;
    let (mut client, _) = SmtpClient::connect(smtp).await;
    assert_eq!(client.command("EHLO client.example").await, 250);
    assert_eq!(client.last_reply, "250 STARTTLS");
    assert_eq!(client.command("STARTTLS").await, 220);
    let _ = std::fs::remove_dir_all(&dir);
}
