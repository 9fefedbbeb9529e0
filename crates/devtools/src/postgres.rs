//! Finding (or starting) a PostgreSQL server for development and tests.
//!
//! Order: `DATABASE_URL`, then a server on 127.0.0.1:5432 (trust auth, user
//! `postgres`), then a private cluster under `target/pg/` started from the
//! local PostgreSQL binaries.

use std::fs;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use sealpost_store_pg::DatabaseUrl;

/// Set to `1` to ignore a server on 127.0.0.1:5432 (tests the private-cluster path).
pub const SKIP_DEFAULT_ENV: &str = "SEALPOST_XTASK_SKIP_DEFAULT_PG";

const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432";
const DEFAULT_PORT: u16 = 5432;
const PRIVATE_PORT: u16 = 55432;
const PG_USER: &str = "postgres";

/// Returns a server URL without a database name, e.g.
/// `postgres://postgres@127.0.0.1:5432`, starting a private cluster if needed.
///
/// Synchronous; safe to call from inside or outside a tokio runtime (the
/// connection check runs on its own thread).
pub fn ensure_server() -> Result<String> {
    if let Some(url) = database_url_env() {
        return server_part(&url);
    }
    if skip_default() {
        eprintln!("xtask: {SKIP_DEFAULT_ENV}=1, not looking at 127.0.0.1:{DEFAULT_PORT}");
    } else if port_answers(DEFAULT_PORT) {
        match check_server(DEFAULT_URL) {
            Ok(()) => return Ok(DEFAULT_URL.to_owned()),
            Err(error) => eprintln!(
                "xtask: something answers on 127.0.0.1:{DEFAULT_PORT} but `{DEFAULT_URL}/postgres` \
                 does not work ({error:#}); using a private cluster instead"
            ),
        }
    }
    start_private_cluster()
}

/// `DATABASE_URL`'s server when it is set, else the private cluster under
/// `target/pg/` (started if needed), never the machine's shared server:
/// benchmarks count every process of the server they use, so other work on
/// it must not show in their figures.
pub fn private_server() -> Result<String> {
    if let Some(url) = database_url_env() {
        return server_part(&url);
    }
    start_private_cluster()
}

/// `DATABASE_URL` when set and not empty.
pub fn database_url_env() -> Option<String> {
    std::env::var("DATABASE_URL")
        .ok()
        .map(|url| url.trim().to_owned())
        .filter(|url| !url.is_empty())
}

/// `postgres://u@h:p/name?x` -> `postgres://u@h:p`.
pub fn server_part(url: &str) -> Result<String> {
    Ok(DatabaseUrl::parse(url)
        .with_context(|| format!("DATABASE_URL is not a postgres:// URL: {url}"))?
        .server())
}

fn skip_default() -> bool {
    std::env::var(SKIP_DEFAULT_ENV).is_ok_and(|value| value == "1")
}

/// The workspace root (two levels above `crates/devtools`).
pub fn workspace_root() -> PathBuf {
    // This crate is crates/devtools.
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .ancestors()
        .nth(2)
        .unwrap_or(manifest_dir)
        .to_path_buf()
}

fn port_answers(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
}

/// A real check: connects to `<server>/postgres` with diesel-async (through
/// `create_database_if_missing`, which only reads when `postgres` exists).
fn check_server(server_url: &str) -> Result<()> {
    let url = format!("{server_url}/postgres");
    let handle = std::thread::spawn(move || -> Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot build a tokio runtime")?;
        runtime.block_on(async {
            tokio::time::timeout(
                Duration::from_secs(5),
                sealpost_store_pg::create_database_if_missing(&url),
            )
            .await
            .map_err(|_| anyhow!("timed out connecting"))?
            .map_err(anyhow::Error::from)?;
            Ok(())
        })
    });
    handle
        .join()
        .map_err(|_| anyhow!("the connection check panicked"))?
}

struct Cluster {
    bindir: PathBuf,
    dir: PathBuf,
    data: PathBuf,
    sock: PathBuf,
    log: PathBuf,
    as_root: bool,
}

impl Cluster {
    /// A PostgreSQL tool, run through `runuser -u postgres --` as root, with
    /// the cluster directory as working directory (the caller's may not be
    /// readable by `postgres`).
    fn tool(&self, name: &str) -> Command {
        let program = self.bindir.join(name);
        let mut command = if self.as_root {
            let mut command = Command::new("runuser");
            command.args(["-u", PG_USER, "--"]).arg(program);
            command
        } else {
            Command::new(program)
        };
        command.current_dir(&self.dir);
        command
    }

    fn is_running(&self) -> bool {
        self.data.join("PG_VERSION").is_file()
            && self
                .tool("pg_ctl")
                .arg("-D")
                .arg(&self.data)
                .arg("status")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
    }
}

fn start_private_cluster() -> Result<String> {
    let dir = workspace_root().join("target").join("pg");
    let cluster = Cluster {
        bindir: find_bindir()?,
        data: dir.join("data"),
        sock: dir.join("sock"),
        log: dir.join("log"),
        dir,
        as_root: running_as_root()?,
    };
    let url = format!("postgres://{PG_USER}@127.0.0.1:{PRIVATE_PORT}");

    if cluster.is_running() {
        check_server(&url)
            .with_context(|| {
                format!(
                    "the private cluster in {} is running",
                    cluster.dir.display()
                )
            })
            .with_context(|| format!("but `{url}/postgres` does not answer"))?;
        return Ok(url);
    }

    fs::create_dir_all(&cluster.sock)
        .with_context(|| format!("cannot create {}", cluster.sock.display()))?;
    if cluster.as_root {
        prepare_for_postgres_user(&cluster.dir)?;
    }

    if !cluster.data.join("PG_VERSION").is_file() {
        if cluster.data.exists() {
            // A half-finished initdb: initdb refuses a non-empty directory.
            fs::remove_dir_all(&cluster.data)
                .with_context(|| format!("cannot remove {}", cluster.data.display()))?;
        }
        eprintln!(
            "xtask: creating a private PostgreSQL cluster in {}",
            cluster.data.display()
        );
        let output = cluster
            .tool("initdb")
            .arg("-D")
            .arg(&cluster.data)
            .args([
                "-U",
                PG_USER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "-N",
            ])
            .output()
            .context("cannot run initdb")?;
        if !output.status.success() {
            bail!(
                "initdb failed ({}):\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }

    eprintln!("xtask: starting the private PostgreSQL cluster on 127.0.0.1:{PRIVATE_PORT}");
    // pg_stat_statements for `cargo xtask bench smtp --statements`; it
    // costs a few per cent of the server's CPU on the smallest statements.
    let options = format!(
        "-c listen_addresses=127.0.0.1 -c shared_preload_libraries=pg_stat_statements \
         -p {PRIVATE_PORT} -k {}",
        shell_quote(&cluster.sock.to_string_lossy())
    );
    let output = cluster
        .tool("pg_ctl")
        .arg("-D")
        .arg(&cluster.data)
        .arg("-w")
        .arg("-l")
        .arg(&cluster.log)
        .arg("-o")
        .arg(options)
        .arg("start")
        .output()
        .context("cannot run pg_ctl")?;
    if !output.status.success() {
        let log_tail = fs::read_to_string(&cluster.log)
            .map(|log| {
                let lines: Vec<&str> = log.lines().collect();
                lines[lines.len().saturating_sub(20)..].join("\n")
            })
            .unwrap_or_default();
        bail!(
            "pg_ctl start failed ({}):\n{}{}\nlast lines of {}:\n{log_tail}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            cluster.log.display()
        );
    }
    check_server(&url).with_context(|| {
        format!("the private cluster started but `{url}/postgres` does not answer")
    })?;
    eprintln!(
        "xtask: private cluster up; stop it with: {}{} -D {} stop",
        if cluster.as_root {
            "runuser -u postgres -- "
        } else {
            ""
        },
        cluster.bindir.join("pg_ctl").display(),
        cluster.data.display()
    );
    Ok(url)
}

/// `pg_config --bindir` when it holds `initdb`, else the newest
/// `/usr/lib/postgresql/<version>/bin`.
pub fn find_bindir() -> Result<PathBuf> {
    if let Ok(output) = Command::new("pg_config").arg("--bindir").output()
        && output.status.success()
    {
        let bindir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if bindir.join("initdb").is_file() && bindir.join("pg_ctl").is_file() {
            return Ok(bindir);
        }
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let version: Vec<u32> = name
                .split('.')
                .map(str::parse)
                .collect::<Result<_, _>>()
                .ok()?;
            let bindir = entry.path().join("bin");
            bindir.join("initdb").is_file().then_some((version, bindir))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bindir)| bindir).ok_or_else(|| {
        anyhow!(
            "no PostgreSQL server on 127.0.0.1:{DEFAULT_PORT} and no local PostgreSQL binaries \
             (neither `pg_config --bindir` nor /usr/lib/postgresql/*/bin has initdb); \
             install PostgreSQL or set DATABASE_URL"
        )
    })
}

fn running_as_root() -> Result<bool> {
    let output = Command::new("id")
        .arg("-u")
        .output()
        .context("cannot run `id -u`")?;
    Ok(String::from_utf8_lossy(&output.stdout).trim() == "0")
}

/// As root: hands `dir` to the `postgres` user and checks that user can reach it.
fn prepare_for_postgres_user(dir: &Path) -> Result<()> {
    let known = Command::new("id")
        .args(["-u", PG_USER])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !known {
        bail!(
            "running as root, and initdb/pg_ctl refuse to run as root, but there is no \
             `{PG_USER}` user to run them as; create one or set DATABASE_URL"
        );
    }
    let status = Command::new("chown")
        .args(["-R", &format!("{PG_USER}:")])
        .arg(dir)
        .status()
        .context("cannot run chown")?;
    if !status.success() {
        bail!("`chown -R {PG_USER}: {}` failed", dir.display());
    }
    // Every ancestor must be traversable by postgres.
    let ancestors: Vec<&Path> = dir.ancestors().collect();
    for ancestor in ancestors.into_iter().rev() {
        let reachable = Command::new("runuser")
            .args(["-u", PG_USER, "--", "test", "-x"])
            .arg(ancestor)
            .current_dir("/")
            .status()
            .context("cannot run runuser")?
            .success();
        if !reachable {
            bail!(
                "the `{PG_USER}` user cannot enter {} (needed to run the private cluster in {}): \
                 allow it with `chmod o+x {}`, or start PostgreSQL on 127.0.0.1:{DEFAULT_PORT}, \
                 or set DATABASE_URL",
                ancestor.display(),
                dir.display(),
                ancestor.display()
            );
        }
    }
    Ok(())
}

/// Quotes for the `/bin/sh` that `pg_ctl` runs the server through.
fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_handles_quotes() {
        assert_eq!(shell_quote("/a b/c'd"), r"'/a b/c'\''d'");
    }
}
