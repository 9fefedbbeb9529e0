#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

//! Crash recovery with real processes: the built `sealpost-smtp` binary under
//! concurrent load of messages with attachments is killed with SIGKILL while
//! deliveries are in flight, then started again. Recovery at start-up must
//! leave every message that got its 250 whole and readable, and nothing else
//! behind: no pending rows, no blob without its row, no row without its blob,
//! no temporary file of the dead process.

mod support;

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use reqwest::StatusCode;
use sealpost_blobs_fs::FsBlobStore;
use sealpost_kernel::{Clock, StoreError, SystemClock};
use sealpost_messages::ingest::{Ingest, IngestError};
use sealpost_messages::recovery::BlobRecovery;
use sealpost_messages::store::{BlobError, BlobStore, MessageRepository};
use sealpost_seal::{AccountKeys, SealedBox, b64, context, open_binary};
use sealpost_store_pg::PgStore;
use sealpost_testkit::TestApp;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use support::{IngestProcess, Smtp};

const ADDRESSES: [&str; 2] = ["ibx_crash1", "ibx_crash2"];
/// Concurrent SMTP sessions.
const CLIENTS: usize = 8;
const ATTACHMENT_BYTES: usize = 50 * 1024;
/// 250s to collect in a round before the crash.
const ACCEPTED_BEFORE_CRASH: usize = 40;
/// Rounds until one crash hits deliveries in flight (nearly always the first).
const MAX_ROUNDS: usize = 3;

/// A message that got its 250.
#[derive(Clone, Debug)]
struct Accepted {
    token: String,
    address: &'static str,
}

/// The attachment of the message with this token: 50 KB that only it has.
fn attachment(token: &str) -> Vec<u8> {
    let mut state = token.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    (0..ATTACHMENT_BYTES)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

fn mail(to: &str, token: &str) -> String {
    let encoded = data_encoding::BASE64_MIME.encode(&attachment(token));
    format!(
        "From: Load <load@example.com>\r\nTo: {to}\r\nSubject: crash {token}\r\n\
         Message-ID: <{token}@example.com>\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=sep\r\n\r\n\
         --sep\r\nContent-Type: text/plain\r\n\r\nbody of {token}\r\n\
         --sep\r\nContent-Type: application/octet-stream\r\n\
         Content-Disposition: attachment; filename=data.bin\r\n\
         Content-Transfer-Encoding: base64\r\n\r\n{encoded}\r\n--sep--\r\n"
    )
}

/// One session sending until the server goes away (or `stop`).
async fn client(
    addr: SocketAddr,
    name: String,
    addresses: Arc<Vec<(&'static str, String)>>,
    accepted: Arc<Mutex<Vec<Accepted>>>,
    stop: Arc<AtomicBool>,
) {
    let Ok(mut smtp) = Smtp::connect(addr).await else {
        return;
    };
    if !matches!(smtp.command("EHLO load.example").await, Ok(250)) {
        return;
    }
    for n in 0.. {
        if stop.load(Ordering::Relaxed) {
            let _ = smtp.command("QUIT").await;
            return;
        }
        let (address_id, address) = &addresses[n % addresses.len()];
        let token = format!("{name}n{n}");
        match smtp.try_send(address, &mail(address, &token)).await {
            Ok(250) => accepted.lock().unwrap().push(Accepted {
                token,
                address: address_id,
            }),
            Ok(code) => panic!("unexpected reply {code} before the crash"),
            // The server was killed.
            Err(_) => return,
        }
    }
}

async fn count(conn: &mut diesel_async::AsyncPgConnection, table: &str) -> i64 {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    diesel::sql_query(format!("SELECT count(*) AS n FROM {table}"))
        .get_result::<Count>(conn)
        .await
        .unwrap()
        .n
}

async fn attachment_keys(app: &TestApp) -> BTreeSet<String> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Key {
        #[diesel(sql_type = diesel::sql_types::Text)]
        blob_key: String,
    }
    let mut conn = app.db.connect().await;
    diesel::sql_query("SELECT blob_key FROM attachments WHERE blob_key IS NOT NULL")
        .load::<Key>(&mut conn)
        .await
        .unwrap()
        .into_iter()
        .map(|key| key.blob_key)
        .collect()
}

/// Every file and directory under `dir`, recursively.
fn walk(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut files, mut dirs) = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            let (inner_files, inner_dirs) = walk(&path);
            files.extend(inner_files);
            dirs.extend(inner_dirs);
            dirs.push(path);
        } else {
            files.push(path);
        }
    }
    (files, dirs)
}

fn subdirectories(dir: &Path) -> BTreeSet<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect()
}

struct Owner {
    http: reqwest::Client,
    token: String,
    keys: AccountKeys,
}

impl Owner {
    async fn get(&self, app: &TestApp, path: &str) -> reqwest::Response {
        self.http
            .get(app.url(path))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap()
    }

    /// Token (from the decrypted subject) -> message id, for one address.
    async fn delivered(&self, app: &TestApp, address: &str) -> HashMap<String, String> {
        let mut found = HashMap::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut path = format!("/inboxes/{address}/messages?limit=200");
            if let Some(cursor) = &cursor {
                path.push_str(&format!("&cursor={cursor}"));
            }
            let response = self.get(app, &path).await;
            assert_eq!(response.status(), StatusCode::OK);
            let page: Value = response.json().await.unwrap();
            for message in page["messages"].as_array().unwrap() {
                let id = message["id"].as_str().unwrap();
                let sealed: SealedBox = serde_json::from_value(message["content"].clone()).unwrap();
                let plain = sealed
                    .open(
                        &self.keys.address_secret(address, 0),
                        &context::message(address, id),
                    )
                    .expect("the content opens with the address key");
                let content: Value = serde_json::from_slice(&plain).unwrap();
                let subject = content["subject"].as_str().unwrap();
                let token = subject.strip_prefix("crash ").unwrap().to_owned();
                assert!(
                    found.insert(token, id.to_owned()).is_none(),
                    "one copy each"
                );
            }
            match page["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return found,
            }
        }
    }
}

/// An account with the two addresses, keys from a fresh phrase.
async fn mailbox(app: &TestApp) -> (Owner, Vec<(&'static str, String)>) {
    let (keys, token) = support::register(app).await;
    let http = reqwest::Client::new();
    let owner = Owner { http, token, keys };
    let mut addresses = Vec::new();
    for address in ADDRESSES {
        let response = owner
            .http
            .post(app.url("/inboxes"))
            .bearer_auth(&owner.token)
            .json(&json!({
                "id": address, "domain": "mail.localhost", "prefix": "crash",
                "publicKey": b64::encode(&owner.keys.address_public_key(address, 0)),
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
        let body: Value = response.json().await.unwrap();
        addresses.push((
            address,
            body["inbox"]["emailAddress"].as_str().unwrap().to_owned(),
        ));
    }
    (owner, addresses)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_ingest_recovers_at_start_up_and_loses_no_accepted_mail() {
    let started = Instant::now();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let app = TestApp::spawn().await;
    // The binary runs on the system clock: the account must not be younger.
    app.clock.set(SystemClock.now());

    let (owner, addresses) = mailbox(&app).await;
    let addresses = Arc::new(addresses);
    let tmp = app.config.blob_dir.join("tmp");
    let accepted = Arc::new(Mutex::new(Vec::<Accepted>::new()));
    let mut db = app.db.connect().await;

    let mut ingest = IngestProcess::start(&app, &[]).await;
    let mut crashed_in_flight = false;
    for round in 0..MAX_ROUNDS {
        // The API (this process) and the ingest each write in a tmp/ directory
        // of their own; the ingest's is the one the API did not have.
        let scratch_dirs = subdirectories(&tmp);

        let stop = Arc::new(AtomicBool::new(false));
        let before = accepted.lock().unwrap().len();
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                tokio::spawn(client(
                    ingest.addr,
                    format!("r{round}c{c}"),
                    addresses.clone(),
                    accepted.clone(),
                    stop.clone(),
                ))
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(15);
        while accepted.lock().unwrap().len() - before < ACCEPTED_BEFORE_CRASH {
            assert!(Instant::now() < deadline, "too few 250s before the crash");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Crash while some delivery has registered its blobs and not committed.
        let deadline = Instant::now() + Duration::from_secs(3);
        while count(&mut db, "pending_blobs").await == 0 && Instant::now() < deadline {}
        ingest.crash();
        for client in clients {
            client.await.unwrap();
        }
        let pending = count(&mut db, "pending_blobs").await;
        eprintln!(
            "round {round}: {} accepted in total, killed with {pending} pending blob(s)",
            accepted.lock().unwrap().len()
        );
        crashed_in_flight |= pending > 0;

        let restarted_at = SystemTime::now();
        ingest = IngestProcess::start(&app, &[]).await;
        // Recovery ran before the greeting.
        assert_eq!(
            count(&mut db, "pending_blobs").await,
            0,
            "recovery leaves no pending blob"
        );
        let (tmp_files, _) = walk(&tmp);
        for file in tmp_files {
            if file.file_name().is_some_and(|name| name == "lock") {
                continue;
            }
            let modified = file.metadata().unwrap().modified().unwrap();
            assert!(
                modified >= restarted_at,
                "temporary file older than the restart: {}",
                file.display()
            );
        }
        let gone = scratch_dirs.iter().filter(|dir| !dir.exists()).count();
        assert_eq!(
            (scratch_dirs.len(), gone),
            (2, 1),
            "the killed ingest's temporary directory is gone, the API's stays"
        );
        if crashed_in_flight {
            break;
        }
    }
    assert!(
        crashed_in_flight,
        "no crash hit a delivery in flight in {MAX_ROUNDS} rounds"
    );

    // The restarted ingest takes mail.
    let mut smtp = Smtp::connect(ingest.addr).await.unwrap();
    assert_eq!(smtp.command("EHLO load.example").await.unwrap(), 250);
    let (address_id, address) = &addresses[0];
    assert_eq!(
        smtp.try_send(address, &mail(address, "after"))
            .await
            .unwrap(),
        250
    );
    accepted.lock().unwrap().push(Accepted {
        token: "after".into(),
        address: address_id,
    });

    // Every 250 is listed, and its content and attachment open with the key.
    let accepted = accepted.lock().unwrap().clone();
    let mut delivered = HashMap::new();
    for address in ADDRESSES {
        delivered.insert(address, owner.delivered(&app, address).await);
    }
    for message in &accepted {
        let id = delivered[message.address]
            .get(&message.token)
            .unwrap_or_else(|| panic!("{} got 250 but is not listed", message.token));
        let response = owner
            .get(&app, &format!("/messages/{id}/attachments/0"))
            .await;
        assert_eq!(response.status(), StatusCode::OK, "{}", message.token);
        let sealed = response.bytes().await.unwrap();
        let opened = open_binary(
            &owner.keys.address_secret(message.address, 0),
            &context::attachment(id, 0),
            &sealed,
        )
        .expect("the attachment opens with the address key");
        assert!(
            opened == attachment(&message.token),
            "attachment of {} intact",
            message.token
        );
    }

    // Blobs and rows match one to one; no message directory left empty.
    let blobs = app.config.blob_dir.join("blobs");
    let (files, dirs) = walk(&blobs);
    let on_disk: BTreeSet<String> = files
        .iter()
        .map(|file| {
            file.strip_prefix(&blobs)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let rows = attachment_keys(&app).await;
    assert_eq!(
        on_disk, rows,
        "every blob has its row and every row its blob"
    );
    for dir in dirs {
        assert!(
            std::fs::read_dir(&dir).unwrap().next().is_some(),
            "empty directory left: {}",
            dir.display()
        );
    }
    let committed = count(&mut db, "messages").await;
    eprintln!(
        "{} accepted, {committed} committed, {} blobs, in {:?}",
        accepted.len(),
        rows.len(),
        started.elapsed()
    );
    assert!(committed as usize >= accepted.len());

    ingest.stop();
    let blob_dir = app.config.blob_dir.clone();
    app.stop().await;
    let _ = std::fs::remove_dir_all(blob_dir);
}

/// A blob store whose writes wait for permits: holds deliveries between
/// registering their blobs and committing.
struct Gated {
    inner: Arc<FsBlobStore>,
    gate: Arc<Semaphore>,
}

#[async_trait::async_trait]
impl BlobStore for Gated {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError> {
        let _permit = self.gate.acquire().await.unwrap();
        self.inner.put(key, bytes).await
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError> {
        self.inner.get(key).await
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        self.inner.delete(key).await
    }
}

/// Several instances on one database, in one process: an instance whose lock
/// is held is alive to every recovery; one without is dead, its deliveries in
/// flight are taken over, and their late commits keep nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_takes_over_only_dead_instances_and_their_late_commits_keep_nothing() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let app = TestApp::spawn().await;
    app.clock.set(SystemClock.now());
    let (_owner, addresses) = mailbox(&app).await;
    let address = addresses[0].1.clone();

    let store = PgStore::connect(&app.db.url, 4).unwrap();
    let blobs = Arc::new(FsBlobStore::open(&app.config.blob_dir).await.unwrap());
    let gate = Arc::new(Semaphore::new(0));
    let gated: Arc<dyn BlobStore> = Arc::new(Gated {
        inner: blobs.clone(),
        gate: gate.clone(),
    });
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let new_ingest = |blobs: Arc<dyn BlobStore>| {
        Arc::new(Ingest::new(
            Arc::new(store.clone()),
            blobs,
            clock.clone(),
            vec!["mail.localhost".into()],
        ))
    };
    let live = new_ingest(gated.clone());
    let live_lock = store.hold_instance_lock(live.instance()).await.unwrap();
    // Holds no instance lock: to everyone else its process has died.
    let dead = new_ingest(gated);
    let recoverer = BlobRecovery::new(Arc::new(store.clone()), blobs.clone(), clock.clone());

    let deliver = |ingest: &Arc<Ingest>, token: &str| {
        let (ingest, to, raw) = (ingest.clone(), address.clone(), mail(&address, token));
        tokio::spawn(async move { ingest.deliver(&[to], raw.as_bytes()).await })
    };
    let live_delivery = deliver(&live, "live");
    let dead_delivery = deliver(&dead, "dead");
    let mut db = app.db.connect().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while count(&mut db, "pending_blobs").await < 2 {
        assert!(
            Instant::now() < deadline,
            "both deliveries register their blob"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    assert_eq!(
        recoverer.run().await.unwrap(),
        1,
        "only the dead instance's delivery is taken over"
    );
    let left = store.pending_blobs().await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].owner.as_deref(), Some(live.instance()));

    gate.add_permits(16);
    let delivered = live_delivery.await.unwrap().unwrap();
    assert_eq!(delivered.len(), 1, "the live delivery commits");
    let late = dead_delivery.await.unwrap();
    assert!(
        matches!(late, Err(IngestError::Store(StoreError::Unavailable(_)))),
        "the dead instance's late commit fails: {late:?}"
    );
    assert_eq!(count(&mut db, "messages").await, 1);
    assert_eq!(count(&mut db, "pending_blobs").await, 0);
    let root = app.config.blob_dir.join("blobs");
    let on_disk: BTreeSet<String> = walk(&root)
        .0
        .iter()
        .map(|file| {
            file.strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        on_disk,
        attachment_keys(&app).await,
        "no blob of the late commit"
    );
    assert_eq!(on_disk.len(), 1);

    // Alive exactly while its lock is held: released, it is dead at once.
    store
        .register_pending_blobs(
            vec!["msg_gone/0".into()],
            live.instance(),
            SystemClock.now(),
        )
        .await
        .unwrap();
    assert_eq!(recoverer.run().await.unwrap(), 0, "still alive");
    drop(live_lock);
    let deadline = Instant::now() + Duration::from_secs(5);
    while recoverer.run().await.unwrap() == 0 {
        assert!(Instant::now() < deadline, "dead once its lock is released");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(count(&mut db, "pending_blobs").await, 0);

    drop((live, dead, recoverer, blobs, db));
    let blob_dir = app.config.blob_dir.clone();
    app.stop().await;
    let _ = std::fs::remove_dir_all(blob_dir);
}
