#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

//! Sealed blobs in object storage (`SEALPOST_BLOB_URL`), against a real
//! S3-compatible server on loopback (moto, `sealpost_testkit::moto`): mail
//! with attachments through the built `sealpost-smtp` binary, read back
//! through the API (another process's store, one bucket); retention, address
//! and account deletion reaching the bucket; a delivery that fails after
//! writing its blob deleting it; and recovery of pending blobs, in a sweep
//! and at the ingest's start-up.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::TimeDelta;
use reqwest::StatusCode;
use sealpost_blobs_object::{ObjectBlobStore, S3Location};
use sealpost_kernel::{Clock, StoreError, SystemClock};
use sealpost_messages::ingest::{Ingest, IngestError};
use sealpost_messages::recovery::BlobRecovery;
use sealpost_messages::store::{BlobError, BlobStore, MessageRepository};
use sealpost_seal::{AccountKeys, b64, context, open_binary};
use sealpost_store_pg::PgStore;
use sealpost_testkit::TestApp;
use sealpost_testkit::moto::MotoServer;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use support::{IngestProcess, Smtp};

const ADDRESS: &str = "ibx_bucket1";

/// The API in this process, its blobs in `prefix` of the moto bucket.
async fn app_on(moto: &MotoServer, prefix: &str) -> TestApp {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let app = TestApp::spawn_with(|config| moto.configure(config, prefix)).await;
    // The ingest binary runs on the system clock.
    app.clock.set(SystemClock.now());
    app
}

/// The bucket as a test sees it: the keys under `prefix`.
fn bucket(moto: &MotoServer, prefix: &str) -> ObjectBlobStore {
    let settings = moto.bucket(prefix);
    ObjectBlobStore::s3(&S3Location {
        bucket: settings.bucket,
        prefix: settings.prefix,
        endpoint: settings.endpoint,
        region: settings.region,
        credentials: settings
            .credentials
            .map(|(id, secret)| (id, secret.expose().to_owned())),
    })
    .unwrap()
}

async fn keys(bucket: &ObjectBlobStore) -> BTreeSet<String> {
    bucket.keys().await.unwrap().into_iter().collect()
}

/// `sealpost-smtp` on the bucket, configured through its environment only.
async fn ingest_on(app: &TestApp, moto: &MotoServer, prefix: &str) -> IngestProcess {
    let env = moto.env(prefix);
    let env: Vec<(&str, String)> = env
        .iter()
        .map(|(name, value)| (name.as_str(), value.clone()))
        .collect();
    IngestProcess::start(app, &env).await
}

/// Attachment `part` of the message `token`: bytes only it has.
fn attachment(token: &str, part: usize) -> Vec<u8> {
    let mut state = token
        .bytes()
        .chain([part as u8])
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
    (0..20 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// A message with two attachments.
fn mail(to: &str, token: &str) -> String {
    let part = |n: usize| {
        format!(
            "--sep\r\nContent-Type: application/octet-stream\r\n\
             Content-Disposition: attachment; filename=part{n}.bin\r\n\
             Content-Transfer-Encoding: base64\r\n\r\n{}\r\n",
            data_encoding::BASE64_MIME.encode(&attachment(token, n))
        )
    };
    format!(
        "From: S3 <s3@example.com>\r\nTo: {to}\r\nSubject: s3 {token}\r\n\
         Message-ID: <{token}@example.com>\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=sep\r\n\r\n\
         --sep\r\nContent-Type: text/plain\r\n\r\nbody of {token}\r\n{}{}--sep--\r\n",
        part(0),
        part(1)
    )
}

struct Owner {
    http: reqwest::Client,
    token: String,
    keys: AccountKeys,
    /// The address's email address.
    email: String,
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

    async fn delete(&self, app: &TestApp, path: &str) -> StatusCode {
        self.http
            .delete(app.url(path))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap()
            .status()
    }

    /// The address's messages: id and decrypted subject.
    async fn messages(&self, app: &TestApp, address: &str) -> Vec<(String, String)> {
        let response = self.get(app, &format!("/inboxes/{address}/messages")).await;
        assert_eq!(response.status(), StatusCode::OK);
        let page: Value = response.json().await.unwrap();
        page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|message| {
                let id = message["id"].as_str().unwrap().to_owned();
                let sealed: sealpost_seal::SealedBox =
                    serde_json::from_value(message["content"].clone()).unwrap();
                let plain = sealed
                    .open(
                        &self.keys.address_secret(address, 0),
                        &context::message(address, &id),
                    )
                    .expect("the content opens with the address key");
                let content: Value = serde_json::from_slice(&plain).unwrap();
                (id, content["subject"].as_str().unwrap().to_owned())
            })
            .collect()
    }

    /// The attachment read through the API, opened with the address key.
    async fn attachment(&self, app: &TestApp, address: &str, id: &str, part: u32) -> Vec<u8> {
        let response = self
            .get(app, &format!("/messages/{id}/attachments/{part}"))
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        let sealed = response.bytes().await.unwrap();
        open_binary(
            &self.keys.address_secret(address, 0),
            &context::attachment(id, part),
            &sealed,
        )
        .expect("the attachment opens with the address key")
    }

    async fn create_address(&self, app: &TestApp, address: &str) -> String {
        let response = self
            .http
            .post(app.url("/inboxes"))
            .bearer_auth(&self.token)
            .json(&json!({
                "id": address, "domain": "mail.localhost", "prefix": "bucket",
                "publicKey": b64::encode(&self.keys.address_public_key(address, 0)),
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
        let body: Value = response.json().await.unwrap();
        body["inbox"]["emailAddress"].as_str().unwrap().to_owned()
    }

    /// `POST /messages`: the API's own ingest.
    async fn post_mail(&self, app: &TestApp, address: &str, token: &str) {
        let response = self
            .http
            .post(app.url("/messages"))
            .bearer_auth(&self.token)
            .json(&json!({
                "inboxId": address,
                "raw": b64::encode(mail("x@mail.localhost", token).as_bytes()),
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::CREATED, "POST /messages");
    }
}

/// An account with [`ADDRESS`].
async fn owner(app: &TestApp) -> Owner {
    let (keys, token) = support::register(app).await;
    let http = reqwest::Client::new();
    let mut owner = Owner {
        http,
        token,
        keys,
        email: String::new(),
    };
    owner.email = owner.create_address(app, ADDRESS).await;
    owner
}

async fn attachment_rows(app: &TestApp) -> BTreeSet<String> {
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

async fn pending_rows(app: &TestApp) -> i64 {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = app.db.connect().await;
    diesel::sql_query("SELECT count(*) AS n FROM pending_blobs")
        .get_result::<Count>(&mut conn)
        .await
        .unwrap()
        .n
}

/// Mail through the SMTP binary lands in the bucket before its 250, is read
/// back through the API (another process), and retention deletes it there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smtp_mail_is_stored_in_the_bucket_read_through_the_api_and_expires_there() {
    let moto = MotoServer::start().await;
    let app = app_on(&moto, "smtp").await;
    let bucket = bucket(&moto, "smtp");
    let owner = owner(&app).await;
    let ingest = ingest_on(&app, &moto, "smtp").await;

    let mut smtp = Smtp::connect(ingest.addr).await.unwrap();
    assert_eq!(smtp.command("EHLO s3.example").await.unwrap(), 250);
    let tokens = ["first", "second", "third"];
    for token in tokens {
        assert_eq!(
            smtp.try_send(&owner.email, &mail(&owner.email, token))
                .await
                .unwrap(),
            250
        );
    }
    // Written before the 250: the bucket holds exactly the rows' blobs.
    let rows = attachment_rows(&app).await;
    assert_eq!(rows.len(), 2 * tokens.len());
    assert_eq!(
        keys(&bucket).await,
        rows,
        "every row has its object and no more"
    );
    assert!(
        !app.config.blob_dir.exists(),
        "nothing went to a local directory"
    );

    let listed = owner.messages(&app, ADDRESS).await;
    assert_eq!(listed.len(), tokens.len());
    for (id, subject) in &listed {
        let token = subject.strip_prefix("s3 ").unwrap();
        for part in 0..2 {
            assert!(
                owner.attachment(&app, ADDRESS, id, part).await == attachment(token, part as usize),
                "attachment {part} of {token} intact"
            );
        }
    }

    // Past retention, the sweep deletes the rows and their objects.
    app.clock.advance(TimeDelta::days(8));
    sealpost_jobs::Sweeps::new(app.services()).run_once().await;
    assert_eq!(attachment_rows(&app).await, BTreeSet::new());
    assert_eq!(
        keys(&bucket).await,
        BTreeSet::new(),
        "expired blobs deleted"
    );
    drop(ingest);
    app.stop().await;
}

/// Deleting an address, then the account, deletes their objects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_an_address_or_the_account_deletes_its_objects() {
    let moto = MotoServer::start().await;
    let app = app_on(&moto, "deletion").await;
    let bucket = bucket(&moto, "deletion");
    let owner = owner(&app).await;

    owner.post_mail(&app, ADDRESS, "address").await;
    assert_eq!(keys(&bucket).await.len(), 2);
    assert_eq!(
        owner.delete(&app, &format!("/inboxes/{ADDRESS}")).await,
        StatusCode::NO_CONTENT
    );
    assert_eq!(keys(&bucket).await, BTreeSet::new(), "the address's blobs");

    owner.create_address(&app, "ibx_bucket2").await;
    owner.post_mail(&app, "ibx_bucket2", "account").await;
    assert_eq!(keys(&bucket).await.len(), 2);
    assert_eq!(
        owner.delete(&app, "/accounts/me").await,
        StatusCode::NO_CONTENT
    );
    assert_eq!(keys(&bucket).await, BTreeSet::new(), "the account's blobs");
    app.stop().await;
}

/// A blob store whose writes wait for permits before writing: holds a
/// delivery between registering its blobs and writing them.
struct Gated {
    inner: Arc<dyn BlobStore>,
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

/// Recovery takes over a dead instance's delivery in flight; the blob that
/// delivery writes afterwards is deleted when its commit fails, and the
/// live instance's delivery commits. The bucket ends equal to the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_and_a_failed_commit_leave_no_object_behind() {
    let moto = MotoServer::start().await;
    let app = app_on(&moto, "recovery").await;
    let bucket: Arc<dyn BlobStore> = Arc::new(self::bucket(&moto, "recovery"));
    let listing = self::bucket(&moto, "recovery");
    let owner = owner(&app).await;

    let store = PgStore::connect(&app.db.url, 4).unwrap();
    let gate = Arc::new(Semaphore::new(0));
    let gated: Arc<dyn BlobStore> = Arc::new(Gated {
        inner: bucket.clone(),
        gate: gate.clone(),
    });
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let new_ingest = || {
        Arc::new(Ingest::new(
            Arc::new(store.clone()),
            gated.clone(),
            clock.clone(),
            vec!["mail.localhost".into()],
        ))
    };
    let live = new_ingest();
    let _live_lock = store.hold_instance_lock(live.instance()).await.unwrap();
    // Holds no instance lock: to every recovery its process has died.
    let dead = new_ingest();
    let deliver = |ingest: &Arc<Ingest>, token: &str| {
        let (ingest, to, raw) = (
            ingest.clone(),
            owner.email.clone(),
            mail(&owner.email, token),
        );
        tokio::spawn(async move { ingest.deliver(&[to], raw.as_bytes()).await })
    };
    let live_delivery = deliver(&live, "live");
    let dead_delivery = deliver(&dead, "dead");
    let deadline = Instant::now() + Duration::from_secs(10);
    while pending_rows(&app).await < 4 {
        assert!(
            Instant::now() < deadline,
            "both deliveries register their blobs"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let recoverer = BlobRecovery::new(Arc::new(store.clone()), bucket.clone(), clock.clone());
    assert_eq!(
        recoverer.run().await.unwrap(),
        2,
        "the dead instance's two blobs"
    );
    gate.add_permits(16);
    assert_eq!(
        live_delivery.await.unwrap().unwrap().len(),
        1,
        "the live delivery commits"
    );
    let late = dead_delivery.await.unwrap();
    assert!(
        matches!(late, Err(IngestError::Store(StoreError::Unavailable(_)))),
        "the dead instance's late commit fails: {late:?}"
    );
    let rows = attachment_rows(&app).await;
    assert_eq!(rows.len(), 2);
    assert_eq!(
        keys(&listing).await,
        rows,
        "the failed delivery deleted what it wrote"
    );
    assert_eq!(pending_rows(&app).await, 0);
    app.stop().await;
}

/// Blobs a killed ingest left pending in the bucket are deleted when an
/// ingest starts, before it greets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingest_starting_deletes_the_pending_objects_of_dead_ones() {
    let moto = MotoServer::start().await;
    let app = app_on(&moto, "startup").await;
    let bucket = bucket(&moto, "startup");
    let store = PgStore::connect(&app.db.url, 2).unwrap();
    // What a killed ingest leaves: its blobs written, registered as pending
    // under its instance, never committed.
    let orphans = ["msg_orphan1/0", "msg_orphan1/1"];
    store
        .register_pending_blobs(
            orphans.iter().map(|key| (*key).to_owned()).collect(),
            "ing_killed",
            SystemClock.now(),
        )
        .await
        .unwrap();
    for key in orphans {
        bucket.put(key, b"sealed".to_vec()).await.unwrap();
    }
    assert_eq!(keys(&bucket).await.len(), 2);

    let _ingest = ingest_on(&app, &moto, "startup").await;
    assert_eq!(
        pending_rows(&app).await,
        0,
        "recovery ran before the greeting"
    );
    assert_eq!(
        keys(&bucket).await,
        BTreeSet::new(),
        "the orphans are deleted"
    );
    app.stop().await;
}

/// The configuration picks the store; a bucket that cannot be listed stops
/// start-up with an error naming it, and so do both stores at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configured_bucket_is_checked_at_start_up() {
    let moto = MotoServer::start().await;
    let settings = |bucket: &str| {
        let mut vars: std::collections::HashMap<String, String> =
            moto.env("").into_iter().collect();
        vars.insert("SEALPOST_BLOB_URL".into(), format!("s3://{bucket}/start"));
        vars
    };
    let config =
        sealpost_config::Config::from_vars(&settings(sealpost_testkit::moto::BUCKET)).unwrap();
    let store = sealpost_wiring::blob_store(&config).await.unwrap();
    store.put("msg_check/0", b"sealed".to_vec()).await.unwrap();
    assert_eq!(
        keys(&bucket(&moto, "start")).await,
        BTreeSet::from(["msg_check/0".to_owned()])
    );

    let missing = sealpost_config::Config::from_vars(&settings("no-such-bucket")).unwrap();
    let error = sealpost_wiring::blob_store(&missing).await.err().unwrap();
    assert!(
        error
            .to_string()
            .contains("SEALPOST_BLOB_URL s3://no-such-bucket/start"),
        "{error:#}"
    );

    let mut both = settings(sealpost_testkit::moto::BUCKET);
    both.insert("SEALPOST_BLOB_DIR".into(), "/var/lib/sealpost/blobs".into());
    assert!(sealpost_config::Config::from_vars(&both).is_err());
}
