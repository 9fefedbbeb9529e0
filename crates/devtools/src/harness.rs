//! What the benchmarks and `api-check` share: release processes of the
//! service started and stopped (`Service`, `Stack`), free loopback
//! addresses, waiting for HTTP and SMTP to answer, an Enterprise account
//! registered over HTTP, a bare SMTP client's steps, messages of a given
//! size, peak memory, percentiles, and the clean-up of earlier runs.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_seal::{RecoveryPhrase, b64};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;

pub(crate) use sealpost_testkit::databases::drop_run_leftovers as drop_leftover_databases;

/// Drops a benchmark's (or api-check's) database at the end of its run.
pub(crate) async fn drop_database(server: &str, name: &str) -> Result<()> {
    sealpost_testkit::databases::drop_database(server, name)
        .await
        .map_err(|error| anyhow!(error))
        .with_context(|| format!("dropping the database {name}"))
}

/// The sender of every benchmark message.
pub(crate) const SENDER: &str = "bench@example.com";

/// The `p`th percentile of `sorted` by nearest rank; `None` when empty.
/// Every benchmark here reads its latencies with it.
pub fn percentile(sorted: &[Duration], p: usize) -> Option<Duration> {
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

/// Whether `<pid>`, the suffix of a name this command made, is a dead
/// process. Anything else (another tool's name sharing the prefix, a live
/// run) is not ours to remove.
pub(crate) fn leftover_of_dead_run(pid: &str) -> bool {
    pid.parse::<u32>()
        .is_ok_and(|pid| !sealpost_testkit::databases::process_alive(pid))
}

/// `target/bench/blobs-<pid>` of earlier runs that did not finish.
pub(crate) fn remove_leftover_blob_dirs(bench_dir: &Path) {
    for entry in fs::read_dir(bench_dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let leftover = name
            .to_str()
            .and_then(|name| name.strip_prefix("blobs-"))
            .is_some_and(leftover_of_dead_run);
        if leftover {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Where the release binaries are and how they are configured.
pub(crate) struct Stack {
    pub(crate) release: PathBuf,
    pub(crate) url: String,
    pub(crate) blob_dir: PathBuf,
    pub(crate) logs: PathBuf,
    pub(crate) server_key: String,
}

impl Stack {
    pub(crate) fn command(&self, binary: &str, log: &str) -> Result<Command> {
        fs::create_dir_all(&self.logs)?;
        let log_path = self.logs.join(log);
        let log = fs::File::create(&log_path)
            .with_context(|| format!("creating {}", log_path.display()))?;
        let mut command = Command::new(self.release.join(binary));
        command
            .env("DATABASE_URL", &self.url)
            .env("SEALPOST_BLOB_DIR", &self.blob_dir)
            .env("SEALPOST_DOMAINS", "mail.localhost")
            .env("SEALPOST_BILLING_SANDBOX", "true")
            .env("SEALPOST_EDGE_RATE", "100000")
            // smtp-source opens a connection per message, all from loopback,
            // and closing ones still count for a moment; the load test's 300
            // tricklers share one /24: no per-client or per-network caps.
            .env("SEALPOST_SMTP_CONNECT_RATE", "0")
            .env("SEALPOST_SMTP_MAX_SESSIONS_PER_IP", "1000")
            .env("SEALPOST_SMTP_MAX_SESSIONS_PER_IPV4_24", "1000")
            .env("SEALPOST_SERVER_KEY", &self.server_key)
            // The default log level (info), as in production, into a file.
            .env_remove("SEALPOST_LOG")
            .stdout(Stdio::null())
            .stderr(log);
        Ok(command)
    }
}

/// A child process stopped (SIGTERM, then SIGKILL) when dropped.
pub(crate) struct Service {
    name: &'static str,
    child: Child,
}

impl Service {
    pub(crate) fn start(name: &'static str, command: &mut Command) -> Result<Service> {
        let child = command
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        Ok(Service { name, child })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn stop(self) {
        // Drop does the work.
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!(
            "xtask bench: {} did not stop on SIGTERM; killing it",
            self.name
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free right now on loopback.
pub(crate) fn free_addr() -> Result<SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?)
}

pub(crate) async fn wait_http(base: &str) -> Result<()> {
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(response) = client.get(format!("{base}/readyz")).send().await
            && response.status().is_success()
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("sealpost-api did not become ready (see target/bench/logs/api.log)");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn wait_smtp(addr: SocketAddr) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(stream) = TcpStream::connect(addr).await {
            let (read, mut write) = stream.into_split();
            let mut read = BufReader::new(read);
            if reply(&mut read).await.is_ok_and(|code| code == 220) {
                let _ = write.write_all(b"QUIT\r\n").await;
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            bail!("nothing greets on {addr}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Registers an account over HTTP and moves it to Enterprise (enough
/// allowance); returns its keys and session token.
pub async fn register_enterprise(
    base: &str,
    database_url: &str,
) -> Result<(sealpost_seal::AccountKeys, String)> {
    let keys = RecoveryPhrase::generate().keys();
    let registered: Value = reqwest::Client::new()
        .post(format!("{base}/accounts"))
        .json(&json!({
            "accountId": keys.account_id(),
            "authVerifier": b64::encode(&keys.auth_verifier()),
            "authPublicKey": b64::encode(&keys.auth_public_key()),
        }))
        .send()
        .await?
        .error_for_status()
        .context("registering the bench account")?
        .json()
        .await?;
    let token = registered["token"]
        .as_str()
        .ok_or_else(|| anyhow!("no token in {registered}"))?
        .to_owned();
    let mut conn = AsyncPgConnection::establish(database_url).await?;
    diesel::sql_query("UPDATE accounts SET plan_id = 'enterprise' WHERE id = $1")
        .bind::<diesel::sql_types::Text, _>(keys.account_id())
        .execute(&mut conn)
        .await
        .context("moving the bench account to Enterprise")?;
    Ok((keys, token))
}

/// `VmHWM` (peak resident set) of a process, in bytes.
pub(crate) fn peak_memory(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The message our client sends: smtp-source's shape (four header lines,
/// then `size` payload bytes in 80-byte lines of `X`).
pub(crate) fn message(recipient: &str, n: usize, size: usize) -> Vec<u8> {
    let mut text = format!(
        "From: <{SENDER}>\r\nTo: <{recipient}>\r\nDate: Sun, 22 Nov 2026 00:00:00 +0000\r\n\
         Message-Id: <{n}.bench@example.com>\r\n\r\n"
    )
    .into_bytes();
    let mut left = size;
    while left > 0 {
        // 78 bytes and CRLF; the last line shorter (at least one byte).
        let line = left.min(80);
        text.extend(std::iter::repeat_n(b'X', line.saturating_sub(2).max(1)));
        text.extend_from_slice(b"\r\n");
        left -= line;
    }
    text.extend_from_slice(b".\r\n");
    text
}

pub(crate) fn expect(code: u16, wanted: u16, step: &str) -> Result<()> {
    if code == wanted {
        Ok(())
    } else {
        bail!("{step}: {code} (wanted {wanted})")
    }
}

pub(crate) async fn command(
    write: &mut OwnedWriteHalf,
    read: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
    line: &str,
) -> Result<u16> {
    write.write_all(format!("{line}\r\n").as_bytes()).await?;
    reply(read).await
}

/// One reply (continuation lines skipped); its code.
pub(crate) async fn reply(read: &mut BufReader<tokio::net::tcp::OwnedReadHalf>) -> Result<u16> {
    loop {
        let mut line = String::new();
        if read.read_line(&mut line).await? == 0 {
            bail!("connection closed");
        }
        let code = line
            .get(..3)
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| anyhow!("malformed reply {line:?}"))?;
        if line.as_bytes().get(3) != Some(&b'-') {
            return Ok(code);
        }
    }
}

pub(crate) fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_have_the_payload_size_and_end_data() {
        let body = message("a@mail.localhost", 7, 4096);
        let text = String::from_utf8(body).unwrap();
        let (headers, payload) = text.split_once("\r\n\r\n").unwrap();
        assert!(headers.contains("Message-Id: <7.bench@example.com>"));
        let payload = payload.strip_suffix(".\r\n").unwrap();
        assert_eq!(payload.len(), 4096, "line ends included");
        assert!(payload.lines().all(|line| line.len() <= 78));
        assert!(!payload.lines().any(|line| line.starts_with('.')));
    }

    #[test]
    fn only_our_own_dead_runs_are_cleaned_up() {
        assert!(leftover_of_dead_run("4000000000"));
        assert!(!leftover_of_dead_run(&std::process::id().to_string()));
        assert!(
            !leftover_of_dead_run("webhooks_4000000000"),
            "another tool's"
        );
        assert!(!leftover_of_dead_run(""));
    }
}
