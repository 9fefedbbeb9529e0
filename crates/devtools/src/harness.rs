//! What the benchmarks and `api-check` share: the stack started through
//! the test kit's launcher (`build_stack`, `Launched`), other child
//! processes stopped when dropped (`Service`), free loopback addresses,
//! waiting for SMTP to answer, an Enterprise account
//! registered over HTTP, a bare SMTP client's steps, messages of a given
//! size, peak memory, percentiles, and the clean-up of earlier runs.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_devprocess::cargo;
use sealpost_seal::{RecoveryPhrase, b64};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;

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

/// The build profile the launcher and the processes come from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Profile {
    Debug,
    Release,
}

impl Profile {
    fn dir(self) -> &'static str {
        match self {
            Profile::Debug => "debug",
            Profile::Release => "release",
        }
    }
}

/// Builds the workspace's binaries in `profile`: `sealpost-api`,
/// `sealpost-smtp`, `sealpost-dns`, the CLI and the test kit's launcher
/// (`sealpost-stack`) among them.
pub(crate) fn build_stack(root: &Path, profile: Profile) -> Result<()> {
    eprintln!(
        "xtask: building the stack's processes and sealpost-stack ({})",
        profile.dir()
    );
    let mut build = cargo(root);
    // The whole workspace, as the test build and xtask build it: cargo
    // resolves features for the packages a command names, so a `-p` build
    // of a few would compile many dependencies again with other features.
    build.args(["build", "--workspace", "--bins"]);
    if profile == Profile::Release {
        build.arg("--release");
    }
    let built = build.status().context("running cargo build")?;
    if !built.success() {
        bail!("cargo build failed ({built})");
    }
    Ok(())
}

/// The benchmarks' settings for the stack's processes beyond the
/// launcher's own: blobs under `target/bench/`, the benchmark's domain, and
/// no per-client SMTP caps (the load comes from loopback: smtp-source opens
/// a connection per message, and closing ones still count for a moment; the
/// load test's tricklers share one /24, so no per-network cap either).
pub(crate) fn bench_settings(blob_dir: &Path) -> Vec<(String, String)> {
    [
        ("SEALPOST_BLOB_DIR", blob_dir.display().to_string()),
        ("SEALPOST_DOMAINS", "mail.localhost".to_owned()),
        ("SEALPOST_SMTP_CONNECT_RATE", "0".to_owned()),
        ("SEALPOST_SMTP_MAX_SESSIONS_PER_IP", "1000".to_owned()),
        ("SEALPOST_SMTP_MAX_SESSIONS_PER_IPV4_24", "1000".to_owned()),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect()
}

/// What to ask the launcher for.
pub(crate) struct StackOptions<'a> {
    pub(crate) profile: Profile,
    /// `api`, `jobs`, `smtp`, `dns`.
    pub(crate) processes: &'a [&'a str],
    /// The children's environment beyond the launcher's own settings.
    pub(crate) env: Vec<(String, String)>,
    /// Where each process writes `<name>.log`.
    pub(crate) logs: PathBuf,
    /// Appended to the children's `DATABASE_URL`.
    pub(crate) database_query: Option<&'a str>,
    /// More of the launcher's arguments (`--count`, `--blobs`, ...).
    pub(crate) launcher_args: &'a [&'a str],
}

/// A stack started by the test kit's launcher (`sealpost-stack`, built by
/// [`build_stack`]) on a fresh database; stopped, and its database
/// dropped, when dropped.
pub(crate) struct Launched {
    child: Child,
    /// The launcher's ready line.
    ready: Value,
}

impl Launched {
    pub(crate) fn start(
        target: &Path,
        server: &str,
        options: &StackOptions<'_>,
    ) -> Result<Launched> {
        let launcher = target.join(options.profile.dir()).join("sealpost-stack");
        let mut command = Command::new(&launcher);
        command
            .arg("--until-stdin-closes")
            .args(["--only", &options.processes.join(",")])
            .arg("--logs")
            .arg(&options.logs)
            .env("SEALPOST_TEST_DATABASE_URL", server)
            // The default log level (info), as in production.
            .env_remove("SEALPOST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        for (name, value) in &options.env {
            command.arg("--set").arg(format!("{name}={value}"));
        }
        if let Some(query) = options.database_query {
            command.args(["--database-query", query]);
        }
        command.args(options.launcher_args);
        let mut child = command
            .spawn()
            .with_context(|| format!("starting {}", launcher.display()))?;
        let stdout = child.stdout.take().context("the launcher's stdout")?;
        let mut first = String::new();
        let read = std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut first);
        let ready = read
            .ok()
            .and_then(|_| serde_json::from_str::<Value>(&first).ok())
            .filter(|ready| ready["ready"] == true);
        let Some(ready) = ready else {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "sealpost-stack did not start (see its output above and {})",
                options.logs.display()
            );
        };
        Ok(Launched { child, ready })
    }

    fn field(&self, name: &str) -> Result<&str> {
        self.ready[name]
            .as_str()
            .ok_or_else(|| anyhow!("no {name} in the stack's ready line"))
    }

    /// `http://127.0.0.1:port`.
    pub(crate) fn api(&self) -> Result<&str> {
        self.field("api")
    }

    pub(crate) fn smtp(&self) -> Result<SocketAddr> {
        Ok(self.field("smtp")?.parse()?)
    }

    /// The children's `DATABASE_URL`.
    pub(crate) fn database_url(&self) -> Result<&str> {
        self.field("databaseUrl")
    }

    /// Every API's base URL (`--count`), the first first.
    pub(crate) fn apis(&self) -> Result<Vec<String>> {
        self.list("apis")?
            .iter()
            .map(|api| Ok(api.as_str().context("an API in apis")?.to_owned()))
            .collect()
    }

    /// Every SMTP ingest's address (`--count`), the first first.
    pub(crate) fn smtps(&self) -> Result<Vec<SocketAddr>> {
        self.list("smtps")?
            .iter()
            .map(|smtp| Ok(smtp.as_str().context("an ingest in smtps")?.parse()?))
            .collect()
    }

    /// Every process id of one kind (`api`, `smtp`, `jobs`, `dns`).
    pub(crate) fn pids(&self, process: &str) -> Result<Vec<u32>> {
        self.ready["allPids"][process]
            .as_array()
            .ok_or_else(|| anyhow!("no {process} processes in the stack"))?
            .iter()
            .map(|pid| {
                pid.as_u64()
                    .and_then(|pid| u32::try_from(pid).ok())
                    .ok_or_else(|| anyhow!("a malformed {process} process id"))
            })
            .collect()
    }

    fn list(&self, name: &str) -> Result<&Vec<Value>> {
        self.ready[name]
            .as_array()
            .ok_or_else(|| anyhow!("no {name} in the stack's ready line"))
    }

    /// The process id of `process` (`api`, `smtp`, ...).
    pub(crate) fn pid(&self, process: &str) -> Result<u32> {
        self.ready["pids"][process]
            .as_u64()
            .and_then(|pid| u32::try_from(pid).ok())
            .ok_or_else(|| anyhow!("no {process} process in the stack"))
    }

    /// Stops the stack and waits until its database is dropped.
    pub(crate) fn stop(self) {
        // Drop does the work.
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        // Closing its standard input stops it: it stops its processes
        // (SIGTERM, then SIGKILL) and drops the database.
        drop(self.child.stdin.take());
        let _ = self.child.wait();
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
