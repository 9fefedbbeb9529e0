//! What the ingest's tests share: the built `sealpost-smtp` as a child
//! process, a raw SMTP client, and an account with one address made through
//! the API.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    dead_code,
    reason = "tests fail loudly; each test file uses part of this"
)]

use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use sealpost_seal::{AccountKeys, RecoveryPhrase, b64};
use sealpost_testkit::TestApp;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// The ingest process.
pub struct IngestProcess {
    pub child: Child,
    pub addr: SocketAddr,
}

impl IngestProcess {
    /// Starts `sealpost-smtp` with `env` on top of the test's settings and
    /// waits until it greets (recovery runs before). Blobs go to the test's
    /// directory unless `env` names a bucket (`SEALPOST_BLOB_URL`).
    pub async fn start(app: &TestApp, env: &[(&str, String)]) -> IngestProcess {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_sealpost-smtp"));
        command
            .env("DATABASE_URL", &app.db.url)
            .env("SEALPOST_SMTP_ADDR", addr.to_string())
            .env("SEALPOST_SMTP_SPOOL_DIR", &app.config.smtp_spool_dir)
            .env("SEALPOST_DOMAINS", "mail.localhost")
            .env("SEALPOST_LOG", "warn");
        if !env.iter().any(|(name, _)| *name == "SEALPOST_BLOB_URL") {
            command.env("SEALPOST_BLOB_DIR", &app.config.blob_dir);
        }
        for (name, value) in env {
            command.env(name, value);
        }
        let child = command
            .stdout(Stdio::null())
            .spawn()
            .expect("starting sealpost-smtp");
        let mut ingest = IngestProcess { child, addr };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = ingest.child.try_wait().unwrap() {
                panic!("sealpost-smtp exited at start-up: {status}");
            }
            if let Ok(mut smtp) = Smtp::connect(addr).await {
                let _ = smtp.command("QUIT").await;
                return ingest;
            }
            assert!(Instant::now() < deadline, "sealpost-smtp never answered");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -TERM");
    }

    /// Waits (at most `within`) for the process to end by itself.
    pub async fn exited(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("sealpost-smtp still running {within:?} after SIGTERM");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `kill -9`.
    pub fn crash(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for IngestProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw SMTP session.
pub struct Smtp {
    pub reader: BufReader<OwnedReadHalf>,
    pub writer: OwnedWriteHalf,
}

impl Smtp {
    pub async fn connect(addr: SocketAddr) -> std::io::Result<Smtp> {
        let (read, writer) = TcpStream::connect(addr).await?.into_split();
        let mut smtp = Smtp {
            reader: BufReader::new(read),
            writer,
        };
        match smtp.reply().await? {
            (220, _) => Ok(smtp),
            (code, _) => Err(std::io::Error::other(format!("greeting {code}"))),
        }
    }

    /// One (possibly multi-line) reply: its code and its last line.
    pub async fn reply(&mut self) -> std::io::Result<(u16, String)> {
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let code = line
                .get(..3)
                .and_then(|code| code.parse().ok())
                .ok_or_else(|| std::io::Error::other(format!("bad reply {line:?}")))?;
            if line.as_bytes().get(3) != Some(&b'-') {
                return Ok((code, line.trim_end().to_owned()));
            }
        }
    }

    pub async fn command(&mut self, line: &str) -> std::io::Result<u16> {
        self.writer
            .write_all(format!("{line}\r\n").as_bytes())
            .await?;
        Ok(self.reply().await?.0)
    }

    /// EHLO, MAIL, RCPT and DATA, each expecting its usual reply.
    pub async fn start_data(&mut self, to: &str) {
        for (line, expected) in [
            ("EHLO client.example".to_owned(), 250),
            ("MAIL FROM:<sender@example.com>".to_owned(), 250),
            (format!("RCPT TO:<{to}>"), 250),
            ("DATA".to_owned(), 354),
        ] {
            assert_eq!(self.command(&line).await.unwrap(), expected, "{line}");
        }
    }

    /// One message in a session past EHLO: the code answering the end of
    /// DATA, or the first refusal.
    pub async fn try_send(&mut self, to: &str, message: &str) -> std::io::Result<u16> {
        for (line, expected) in [
            ("MAIL FROM:<sender@example.com>".to_owned(), 250),
            (format!("RCPT TO:<{to}>"), 250),
            ("DATA".to_owned(), 354),
        ] {
            let code = self.command(&line).await?;
            if code != expected {
                return Ok(code);
            }
        }
        // The tests' messages have no line starting with a dot: nothing to stuff.
        self.writer.write_all(message.as_bytes()).await?;
        self.writer.write_all(b".\r\n").await?;
        Ok(self.reply().await?.0)
    }

    /// EHLO and one message; the code answering the end of DATA.
    pub async fn send(&mut self, to: &str, message: &str) -> u16 {
        self.start_data(to).await;
        self.writer.write_all(message.as_bytes()).await.unwrap();
        self.writer.write_all(b".\r\n").await.unwrap();
        self.reply().await.unwrap().0
    }
}

/// A small message whose subject carries `token`.
pub fn mail(to: &str, token: &str) -> String {
    format!(
        "From: Sender <sender@example.com>\r\nTo: {to}\r\nSubject: secret {token}\r\n\
         Message-ID: <{token}@example.com>\r\n\r\nbody of {token}\r\n"
    )
}

/// A new account, keys from a fresh phrase; its keys and session token.
pub async fn register(app: &TestApp) -> (AccountKeys, String) {
    let keys = RecoveryPhrase::generate().keys();
    let registered: Value = reqwest::Client::new()
        .post(app.url("/accounts"))
        .json(&json!({
            "accountId": keys.account_id(),
            "authVerifier": b64::encode(&keys.auth_verifier()),
            "authPublicKey": b64::encode(&keys.auth_public_key()),
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = registered["token"].as_str().unwrap().to_owned();
    (keys, token)
}

/// An account (keys from a fresh phrase) with one address; its session
/// token and the address's email address.
pub async fn mailbox(app: &TestApp, id: &str) -> (String, String) {
    let (keys, token) = register(app).await;
    let http = reqwest::Client::new();
    let response = http
        .post(app.url("/inboxes"))
        .bearer_auth(&token)
        .json(&json!({
            "id": id, "domain": "mail.localhost", "prefix": "drain",
            "publicKey": b64::encode(&keys.address_public_key(id, 0)),
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let body: Value = response.json().await.unwrap();
    let address = body["inbox"]["emailAddress"].as_str().unwrap().to_owned();
    (token, address)
}

/// Rows in `table`.
pub async fn count(app: &TestApp, table: &str) -> i64 {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = app.db.connect().await;
    diesel::sql_query(format!("SELECT count(*) AS n FROM {table}"))
        .get_result::<Count>(&mut conn)
        .await
        .unwrap()
        .n
}
