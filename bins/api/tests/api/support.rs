use std::sync::{Arc, Mutex, OnceLock};

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use sealpost_seal::{AccountKeys, RecoveryPhrase, b64};
use sealpost_testkit::TestApp;
use serde_json::{Value, json};

pub struct Api {
    pub app: TestApp,
    http: reqwest::Client,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Reply {
    /// The `error.code` of an error body.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("<none>")
    }
}

pub struct SignedIn {
    pub token: String,
    pub account_id: String,
}

impl Api {
    pub async fn spawn() -> Api {
        Self::with(TestApp::spawn().await)
    }

    pub fn with(app: TestApp) -> Api {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Api {
            app,
            http: reqwest::Client::new(),
        }
    }

    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<reqwest::Body>,
    ) -> Reply {
        let mut request = self.http.request(method, self.app.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body);
        }
        let response = request.send().await.expect("request sent");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.expect("body read");
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                panic!(
                    "non-JSON answer {status}: {}",
                    String::from_utf8_lossy(&bytes)
                )
            })
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Reply {
        self.send(reqwest::Method::GET, path, token, None).await
    }

    pub async fn delete(&self, path: &str, token: Option<&str>) -> Reply {
        self.send(reqwest::Method::DELETE, path, token, None).await
    }

    pub async fn post(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        self.send(
            reqwest::Method::POST,
            path,
            token,
            Some(body.to_string().into()),
        )
        .await
    }

    /// Creates the address `id` on `mail.localhost` with its epoch-0 key,
    /// so it takes mail; answers its email address.
    pub async fn keyed_address(
        &self,
        owner: &SignedIn,
        keys: &AccountKeys,
        id: &str,
        prefix: &str,
    ) -> String {
        let created = self
            .post(
                "/inboxes",
                Some(&owner.token),
                json!({ "id": id, "domain": "mail.localhost", "prefix": prefix,
                        "publicKey": b64::encode(&keys.address_public_key(id, 0)) }),
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        created.body["inbox"]["emailAddress"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    pub async fn register(&self, keys: &AccountKeys) -> SignedIn {
        let reply = self
            .post(
                "/accounts",
                None,
                json!({
                    "accountId": keys.account_id(),
                    "authVerifier": b64::encode(&keys.auth_verifier()),
                    "authPublicKey": b64::encode(&keys.auth_public_key()),
                }),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        SignedIn {
            token: reply.body["token"].as_str().unwrap().to_owned(),
            account_id: reply.body["account"]["id"].as_str().unwrap().to_owned(),
        }
    }

    pub async fn challenge(&self, account_id: &str) -> (String, [u8; 32]) {
        let reply = self
            .post(
                "/accounts/challenge",
                None,
                json!({ "accountId": account_id }),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        let nonce = reply.body["nonce"].as_str().unwrap().to_owned();
        let key = b64::decode_32(reply.body["challengeKey"].as_str().unwrap()).unwrap();
        (nonce, key)
    }

    pub async fn verify(&self, account_id: &str, nonce: &str, proof: &[u8]) -> Reply {
        self.post(
            "/accounts/verify",
            None,
            json!({ "accountId": account_id, "nonce": nonce, "proof": b64::encode(proof) }),
        )
        .await
    }

    /// The full handshake; returns the new session token.
    pub async fn sign_in(&self, keys: &AccountKeys) -> String {
        let account_id = keys.account_id();
        let (nonce, challenge_key) = self.challenge(&account_id).await;
        let proof = keys.handshake_proof(&challenge_key, &nonce, &account_id);
        let reply = self.verify(&account_id, &nonce, &proof).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        reply.body["token"].as_str().unwrap().to_owned()
    }
}

pub fn new_keys() -> (RecoveryPhrase, AccountKeys) {
    let phrase = RecoveryPhrase::generate();
    let keys = phrase.keys();
    (phrase, keys)
}

/// A paired device as the tests hold it.
pub struct Paired {
    pub credential: String,
}

impl Api {
    pub async fn patch(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        self.send(
            reqwest::Method::PATCH,
            path,
            token,
            Some(body.to_string().into()),
        )
        .await
    }

    /// Moves an account to a plan directly in the database (billing is another issue).
    pub async fn set_plan(&self, account_id: &str, plan: &str) {
        use diesel_async::RunQueryDsl;
        let mut conn = self.app.db.connect().await;
        diesel::sql_query("UPDATE accounts SET plan_id = $1 WHERE id = $2")
            .bind::<diesel::sql_types::Text, _>(plan)
            .bind::<diesel::sql_types::Text, _>(account_id)
            .execute(&mut conn)
            .await
            .unwrap();
    }

    /// Opens a pairing session as a device would; returns (token, code).
    pub async fn open_pairing(&self) -> (String, String) {
        let reply = self
            .post(
                "/workers/pairing-session",
                None,
                json!({ "platform": "android", "deviceName": "Test phone", "publicKey": b64::encode(&[7u8; 32]) }),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        (
            reply.body["token"].as_str().unwrap().to_owned(),
            reply.body["code"].as_str().unwrap().to_owned(),
        )
    }

    /// The whole pairing flow for `owner`, claiming as `worker_id`.
    pub async fn pair(&self, owner: &str, device_id: &str) -> Paired {
        let (token, code) = self.open_pairing().await;
        self.claim_pairing(owner, device_id, &token, &code).await
    }

    /// [`Api::pair`] for an agent (the account's plan must allow agents).
    pub async fn pair_agent(&self, owner: &str, device_id: &str) -> Paired {
        let reply = self
            .post(
                "/workers/pairing-session",
                None,
                json!({ "platform": "unknown", "kind": "agent", "deviceName": "CI runner", "publicKey": b64::encode(&[8u8; 32]) }),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        let token = reply.body["token"].as_str().unwrap();
        let code = reply.body["code"].as_str().unwrap();
        self.claim_pairing(owner, device_id, token, code).await
    }

    /// Looks `code` up as `owner`, claims it as `device_id`, and collects
    /// the credential with the session's `token`.
    async fn claim_pairing(&self, owner: &str, device_id: &str, token: &str, code: &str) -> Paired {
        let looked_up = self
            .post("/workers/pair/lookup", Some(owner), json!({ "code": code }))
            .await;
        assert_eq!(looked_up.status, StatusCode::OK, "{}", looked_up.body);
        let session_id = looked_up.body["session"]["id"].as_str().unwrap();
        let claimed = self
            .post(
                "/workers/pair",
                Some(owner),
                json!({ "sessionId": session_id, "workerId": device_id, "profile": profile_box(device_id) }),
            )
            .await;
        assert_eq!(claimed.status, StatusCode::CREATED, "{}", claimed.body);
        let polled = self
            .get(&format!("/workers/pairing-session/{token}"), None)
            .await;
        assert_eq!(polled.body["workerId"], device_id);
        Paired {
            credential: polled.body["credential"].as_str().unwrap().to_owned(),
        }
    }

    /// Creates an address on the default shared domain; returns its JSON.
    pub async fn create_address(&self, owner: &str, id: &str) -> Value {
        let reply = self
            .post(
                "/inboxes",
                Some(owner),
                json!({ "id": id, "domain": "mail.localhost", "prefix": "test" }),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        reply.body["inbox"].clone()
    }

    /// Delivers one plain message to `inbox` through `POST /messages`; returns its id.
    pub async fn deliver(&self, owner: &SignedIn, address: &str) -> String {
        let raw = b"From: a@example.com\r\nSubject: test\r\n\r\nhello";
        let posted = self
            .post(
                "/messages",
                Some(&owner.token),
                json!({ "inboxId": address, "raw": b64::encode(raw) }),
            )
            .await;
        assert_eq!(posted.status, StatusCode::CREATED, "{}", posted.body);
        posted.body["messageId"].as_str().unwrap().to_owned()
    }

    /// The hourly sweeps, as `sealpost-api` runs them, over the API's
    /// services, under the test clock.
    pub fn sweeps(&self) -> sealpost_jobs::Sweeps {
        sealpost_jobs::Sweeps::new(self.app.services())
    }

    /// The account's outbox events of `kind`, oldest first: payload and
    /// creation time (`YYYY-MM-DDTHH:MM:SS`, UTC).
    pub async fn events(&self, account_id: &str, kind: &str) -> Vec<(Value, String)> {
        use diesel_async::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Jsonb)]
            payload: Value,
            #[diesel(sql_type = diesel::sql_types::Text)]
            at: String,
        }
        let mut conn = self.app.db.connect().await;
        let rows: Vec<Row> = diesel::sql_query(
            "SELECT payload, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS') AS at \
             FROM events WHERE account_id = $1 AND type = $2 ORDER BY seq",
        )
        .bind::<diesel::sql_types::Text, _>(account_id)
        .bind::<diesel::sql_types::Text, _>(kind)
        .load(&mut conn)
        .await
        .unwrap();
        rows.into_iter().map(|row| (row.payload, row.at)).collect()
    }

    /// The payloads of [`Api::events`].
    pub async fn event_payloads(&self, account_id: &str, kind: &str) -> Vec<Value> {
        let events = self.events(account_id, kind).await;
        events.into_iter().map(|(payload, _)| payload).collect()
    }

    /// The kinds of the account's activity entries, newest first.
    pub async fn activity_kinds(&self, owner: &SignedIn) -> Vec<String> {
        let activity = self.get("/activity?limit=200", Some(&owner.token)).await;
        activity.body["activity"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| entry["kind"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Event types in the outbox for an account, oldest first.
    pub async fn event_types(&self, account_id: &str) -> Vec<String> {
        use diesel_async::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Text)]
            kind: String,
        }
        let mut conn = self.app.db.connect().await;
        let rows: Vec<Row> =
            diesel::sql_query("SELECT type AS kind FROM events WHERE account_id = $1 ORDER BY seq")
                .bind::<diesel::sql_types::Text, _>(account_id)
                .load(&mut conn)
                .await
                .unwrap();
        rows.into_iter().map(|row| row.kind).collect()
    }
}

/// A well-formed sealed profile for a device (sealed to a throwaway key).
pub fn profile_box(device_id: &str) -> Value {
    serde_json::to_value(sealpost_seal::SealedBox::seal(
        &[3u8; 32],
        &sealpost_seal::context::device_profile(device_id),
        br#"{"name":"phone"}"#,
    ))
    .unwrap()
}

/// A minimal SMTP client over real TCP, answering each step's reply code.
pub struct SmtpClient {
    reader: tokio::io::BufReader<tokio::net::tcp::OwnedReadHalf>,
    writer: tokio::net::tcp::OwnedWriteHalf,
    /// The last line of the last reply, code included.
    pub last_reply: String,
}

impl SmtpClient {
    pub async fn connect(addr: std::net::SocketAddr) -> (SmtpClient, u16) {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (read, writer) = stream.into_split();
        let mut client = SmtpClient {
            reader: tokio::io::BufReader::new(read),
            writer,
            last_reply: String::new(),
        };
        let greeting = client.reply().await;
        (client, greeting)
    }

    /// Reads one (possibly multi-line) reply; returns its code.
    pub async fn reply(&mut self) -> u16 {
        use tokio::io::AsyncBufReadExt;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).await.unwrap();
            assert!(line.len() >= 4, "short reply {line:?}");
            if line.as_bytes()[3] == b' ' {
                let code = line[..3].parse().unwrap();
                self.last_reply = line.trim_end().to_owned();
                return code;
            }
        }
    }

    pub async fn command(&mut self, line: &str) -> u16 {
        use tokio::io::AsyncWriteExt;
        self.writer
            .write_all(format!("{line}\r\n").as_bytes())
            .await
            .unwrap();
        self.reply().await
    }

    /// DATA, the message (dot-stuffed here), and the final reply.
    pub async fn data(&mut self, message: &str) -> u16 {
        use tokio::io::AsyncWriteExt;
        assert_eq!(self.command("DATA").await, 354);
        let mut body = String::new();
        for line in message.split("\r\n") {
            if line.starts_with('.') {
                body.push('.');
            }
            body.push_str(line);
            body.push_str("\r\n");
        }
        body.push_str(".\r\n");
        self.writer.write_all(body.as_bytes()).await.unwrap();
        self.reply().await
    }
}

/// Log lines of every test in this process, to search for content.
pub fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || LogWriter(sink.clone()))
            .finish();
        // Another test binary set-up may have installed one first; then this test
        // sees fewer lines, never wrong ones.
        let _ = tracing::subscriber::set_global_default(subscriber);
        logs
    })
    .clone()
}

pub struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A staff token holding every role, made on the server as an operator would.
pub(crate) async fn staff_token(api: &Api, name: &str) -> String {
    let (_, token) = api
        .app
        .services()
        .staff
        .create_token(name, sealpost_support::Roles::all(), None)
        .await
        .unwrap();
    token
}

/// A client speaking with a staff token.
pub(crate) fn staff_client(api: &Api, token: &str) -> sealpost_client::Client {
    sealpost_client::Client::new(api.app.base_url.clone())
        .unwrap()
        .with_token(token.to_owned())
}
