//! `cargo xtask bench smtp`: throughput, DATA-to-250 latency and peak memory
//! of the SMTP ingest, next to Postfix's `smtp-sink` on the same machine.
//!
//! Everything runs on loopback, with release builds of `sealpost-api` and
//! `sealpost-smtp` started by the test kit's launcher (`sealpost-stack`), a
//! stack per workload on a fresh database (dropped at its end), so each
//! workload has a fresh ingest process. Who measures what:
//! - Postfix's `smtp-source` (extracted from Debian's package into
//!   `target/bench/`, never installed) drives the throughput runs; xtask
//!   times the whole run, as smtp-source reports no rates itself.
//! - Our own client (below) repeats each workload with the same sessions,
//!   sizes and message shape, and times each end of DATA to its 250: the
//!   latency figures. Its throughput is printed too.
//! - Peak memory is the ingest's `VmHWM` from `/proc/<pid>/status`.
//! - The same smtp-source run against Postfix's `smtp-sink` (which accepts
//!   and discards), right after each run against Sealpost, gives the
//!   machine's protocol ceiling at that moment; the figure is the median of
//!   the workload's same-run ratios.
//! - CPU per message, over the smtp-source runs against Sealpost: the
//!   ingest's and the API's from `/proc/<pid>/stat`, PostgreSQL's summed
//!   over every process of the server (`cpu.rs`). So that no other work
//!   shows in it, the bench uses its own private cluster under `target/pg/`
//!   (or `DATABASE_URL`'s server when that is set), never the machine's
//!   shared server.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use diesel::QueryableByName;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_seal::b64;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

use crate::harness::{
    Launched, Profile, SENDER, Service, StackOptions, bench_settings, build_stack, command, expect,
    free_addr, mebibytes, message, peak_memory, percentile, register_enterprise,
    remove_leftover_blob_dirs, reply, wait_smtp,
};
use crate::{cpu, postgres};

/// One load shape: `messages` of `size` payload bytes over `sessions`
/// parallel SMTP sessions, driven `rounds` times against Sealpost and
/// smtp-sink alternately.
struct Workload {
    label: &'static str,
    address: &'static str,
    messages: usize,
    size: usize,
    sessions: usize,
    /// Same-run pairs (Sealpost, then smtp-sink); their median ratio is the
    /// figure, so one noisy moment on the shared machine does not decide it.
    rounds: usize,
    /// The target for Sealpost's rate as a share of smtp-sink's, if any.
    target_ratio: Option<f64>,
    /// The target for the end of DATA to 250 at the 99th percentile.
    target_p99: Option<Duration>,
}

const WORKLOADS: [Workload; 3] = [
    Workload {
        label: "4 KB",
        address: "ibx_bench4k",
        messages: 5_000,
        size: 4 * 1024,
        sessions: 20,
        rounds: 3,
        target_ratio: Some(0.30),
        target_p99: Some(Duration::from_millis(50)),
    },
    Workload {
        label: "100 KB",
        address: "ibx_bench100k",
        messages: 2_000,
        size: 100 * 1024,
        sessions: 20,
        rounds: 1,
        target_ratio: Some(0.20),
        target_p99: None,
    },
    Workload {
        label: "1 KB",
        address: "ibx_bench1k",
        messages: 20_000,
        size: 1024,
        sessions: 50,
        rounds: 1,
        target_ratio: None,
        target_p99: None,
    },
];

/// The memory target for the ingest.
const PEAK_TARGET_BYTES: u64 = 150 * 1024 * 1024;
/// Longest any single run may take before it is stopped (bounded runs only).
const RUN_LIMIT: Duration = Duration::from_secs(15 * 60);

/// What one run measured.
struct Run {
    /// Who drove it and against what, e.g. `smtp-source -> sealpost`.
    name: String,
    elapsed: Duration,
    /// Messages answered 250 (the sender's view).
    accepted: usize,
    failed: usize,
    /// Sorted DATA-to-250 times; empty when the tool does not report them.
    latencies: Vec<Duration>,
    /// Rows that landed in the address (Sealpost only): the store's view.
    committed: Option<i64>,
    first_error: Option<String>,
}

impl Run {
    fn per_second(&self) -> f64 {
        self.accepted as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: usize) -> Option<Duration> {
        percentile(&self.latencies, p)
    }
}

/// One smtp-source run against Sealpost and the same run against
/// smtp-sink right after it.
struct Pair {
    sealpost: Run,
    sink: Run,
}

impl Pair {
    fn ratio(&self) -> f64 {
        self.sealpost.per_second() / self.sink.per_second()
    }
}

/// CPU time (user + system) spent during the smtp-source runs against
/// Sealpost, per process kind; `None` where `/proc` could not be read.
#[derive(Default)]
struct CpuUse {
    postgres: Option<Duration>,
    ingest: Option<Duration>,
    api: Option<Duration>,
    /// smtp-source, read once it has been waited for.
    client: Option<Duration>,
    /// Every process and the kernel.
    machine: Option<Duration>,
}

/// The processes whose CPU a workload counts.
struct Watched {
    postmaster: Option<u32>,
    ingest: u32,
    api: u32,
}

impl Watched {
    fn sample(&self) -> CpuUse {
        CpuUse {
            postgres: self.postmaster.and_then(cpu::of_postgres),
            ingest: cpu::of_process(self.ingest),
            api: cpu::of_process(self.api),
            client: cpu::of_reaped_children(),
            machine: cpu::machine_busy(),
        }
    }
}

impl CpuUse {
    /// Adds what was spent between `before` and `after`.
    fn add(&mut self, before: &CpuUse, after: &CpuUse) {
        let spent = |total: Option<Duration>, from: Option<Duration>, to: Option<Duration>| {
            Some(total.unwrap_or_default() + to?.checked_sub(from?)?)
        };
        self.postgres = spent(self.postgres, before.postgres, after.postgres);
        self.ingest = spent(self.ingest, before.ingest, after.ingest);
        self.api = spent(self.api, before.api, after.api);
        self.client = spent(self.client, before.client, after.client);
        self.machine = spent(self.machine, before.machine, after.machine);
    }
}

struct Report {
    workload: &'static Workload,
    pairs: Vec<Pair>,
    /// Our own client against Sealpost, then against smtp-sink.
    own: Vec<Run>,
    peak_bytes: Option<u64>,
    /// Over the smtp-source runs against Sealpost.
    cpu: CpuUse,
    /// Over the smtp-source runs against smtp-sink (smtp-source and the
    /// machine only).
    sink_cpu: CpuUse,
    /// One-minute load average before and after the workload: the machine is
    /// shared, and other work running meanwhile shows here.
    load: (String, String),
    /// PostgreSQL's costliest statements over the smtp-source runs against
    /// Sealpost, when asked for (`--statements`).
    statements: Option<Vec<StatementCost>>,
}

/// `cargo xtask bench smtp [--only 4kb]... [--statements]`.
pub fn smtp(runtime: &Runtime, only: &[String], statements: bool) -> Result<ExitCode> {
    let workloads = chosen_workloads(only)?;
    // reqwest is built without a default TLS provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let root = postgres::workspace_root();
    let target = sealpost_devprocess::target_dir(&root);
    let bench_dir = target.join("bench");
    fs::create_dir_all(&bench_dir).with_context(|| format!("creating {}", bench_dir.display()))?;
    let postfix = Postfix::extract(&bench_dir)?;
    build_stack(&root, Profile::Release)?;
    let server = postgres::private_server()?;
    remove_leftover_blob_dirs(&bench_dir);
    let blob_dir = bench_dir.join(format!("blobs-{}", std::process::id()));
    let outcome = run_all(
        runtime,
        &workloads,
        statements,
        &Paths {
            target: &target,
            server: &server,
            bench_dir: &bench_dir,
            blob_dir: &blob_dir,
        },
        &postfix,
    );
    // Always cleaned up, whatever happened above (the launcher drops its
    // database itself).
    let _ = fs::remove_dir_all(&blob_dir);
    let reports = outcome?;
    print_table(&reports);
    Ok(ExitCode::SUCCESS)
}

/// The workloads `--only` names (by label without spaces, any case), or all.
fn chosen_workloads(only: &[String]) -> Result<Vec<&'static Workload>> {
    let key = |workload: &Workload| workload.label.replace(' ', "").to_ascii_lowercase();
    if only.is_empty() {
        return Ok(WORKLOADS.iter().collect());
    }
    only.iter()
        .map(|name| {
            WORKLOADS
                .iter()
                .find(|workload| key(workload) == name.to_ascii_lowercase())
                .ok_or_else(|| {
                    let known: Vec<String> = WORKLOADS.iter().map(key).collect();
                    anyhow!("no workload {name}; the workloads: {}", known.join(", "))
                })
        })
        .collect()
}

/// Where the bench's runs live.
struct Paths<'a> {
    target: &'a Path,
    server: &'a str,
    bench_dir: &'a Path,
    blob_dir: &'a Path,
}

fn run_all(
    runtime: &Runtime,
    workloads: &[&'static Workload],
    statements: bool,
    paths: &Paths<'_>,
    postfix: &Postfix,
) -> Result<Vec<Report>> {
    let Paths {
        target,
        server,
        bench_dir,
        blob_dir,
    } = *paths;
    let mut reports = Vec::new();
    for &workload in workloads {
        eprintln!(
            "xtask bench: {} x {} over {} sessions, {} round(s)",
            workload.label, workload.messages, workload.sessions, workload.rounds
        );
        let load_before = load_average();
        let sink_addr = free_addr()?;
        let sink = postfix.sink(sink_addr)?;
        runtime.block_on(wait_smtp(sink_addr))?;

        // Sealpost: a stack per workload, so the ingest's peak memory is
        // the workload's own.
        let stack = Launched::start(
            target,
            server,
            &StackOptions {
                launcher_args: &[],
                profile: Profile::Release,
                processes: &["api", "smtp"],
                env: bench_settings(blob_dir),
                logs: bench_dir
                    .join("logs")
                    .join(workload.address.trim_start_matches("ibx_")),
                // No TLS to the local PostgreSQL (the default is `prefer`):
                // the figures in docs/benchmarks.md's history were measured
                // without it.
                database_query: Some("sslmode=disable"),
            },
        )?;
        let url = stack.database_url()?.to_owned();
        let recipient = runtime.block_on(set_up_account(stack.api()?, &url, workload))?;
        let recipient = recipient.as_str();
        let smtp_addr = stack.smtp()?;
        runtime.block_on(wait_smtp(smtp_addr))?;
        let watched = Watched {
            postmaster: runtime
                .block_on(data_directory(&url))
                .ok()
                .and_then(|dir| cpu::postmaster_of(&dir)),
            ingest: stack.pid("smtp")?,
            api: stack.pid("api")?,
        };

        if statements {
            runtime.block_on(reset_statements(&url))?;
        }
        let mut pairs = Vec::new();
        let mut cpu = CpuUse::default();
        let mut sink_cpu = CpuUse::default();
        for round in 1..=workload.rounds {
            let before = watched.sample();
            let mut sealpost = postfix.source(
                workload,
                recipient,
                smtp_addr,
                &format!("smtp-source -> sealpost #{round}"),
            )?;
            cpu.add(&before, &watched.sample());
            sealpost.committed = Some(runtime.block_on(committed(&url, workload.address))?);
            let before = watched.sample();
            let sink_run = postfix.source(
                workload,
                recipient,
                sink_addr,
                &format!("smtp-source -> smtp-sink #{round}"),
            )?;
            sink_cpu.add(&before, &watched.sample());
            pairs.push(Pair {
                sealpost,
                sink: sink_run,
            });
        }
        // Read before our own client adds its runs: the smtp-source runs only.
        let costs = if statements {
            Some(runtime.block_on(costliest_statements(&url))?)
        } else {
            None
        };
        let mut own = runtime.block_on(drive(
            workload,
            recipient,
            smtp_addr,
            "own client -> sealpost",
        ));
        own.committed = Some(runtime.block_on(committed(&url, workload.address))?);
        let peak_bytes = peak_memory(watched.ingest);
        stack.stop();
        let own_sink = runtime.block_on(drive(
            workload,
            recipient,
            sink_addr,
            "own client -> smtp-sink",
        ));
        sink.stop();

        reports.push(Report {
            workload,
            pairs,
            own: vec![own, own_sink],
            peak_bytes,
            cpu,
            sink_cpu,
            load: (load_before, load_average()),
            statements: costs,
        });
    }
    Ok(reports)
}

#[derive(QueryableByName)]
struct DataDirectory {
    #[diesel(sql_type = diesel::sql_types::Text)]
    data_directory: String,
}

/// Where the server keeps its data, and so its `postmaster.pid`.
async fn data_directory(database_url: &str) -> Result<PathBuf> {
    let mut conn = AsyncPgConnection::establish(database_url).await?;
    let row: DataDirectory =
        diesel::sql_query("SELECT current_setting('data_directory') AS data_directory")
            .get_result(&mut conn)
            .await?;
    Ok(PathBuf::from(row.data_directory))
}

/// Postfix's test tools, extracted from Debian's package (never installed).
struct Postfix {
    root: PathBuf,
    as_root: bool,
}

impl Postfix {
    fn extract(bench_dir: &Path) -> Result<Postfix> {
        let root = bench_dir.join("postfix");
        let as_root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0");
        let postfix = Postfix { root, as_root };
        if postfix.tool("smtp-source").exists() && postfix.tool("smtp-sink").exists() {
            return Ok(postfix);
        }
        let download = || {
            Command::new("apt-get")
                .args(["download", "postfix"])
                .current_dir(bench_dir)
                .stdout(std::io::stderr())
                .status()
                .context("running apt-get download postfix")
        };
        eprintln!("xtask bench: fetching Postfix's smtp-source and smtp-sink (apt-get download)");
        if !download()?.success() {
            eprintln!("xtask bench: apt-get download failed; running apt-get update once");
            let updated = Command::new("apt-get")
                .arg("update")
                .stdout(std::io::stderr())
                .status()
                .context("running apt-get update")?;
            if !updated.success() || !download()?.success() {
                bail!("cannot download Debian's postfix package with apt-get");
            }
        }
        let deb = fs::read_dir(bench_dir)?
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| {
                path.file_name()
                    .and_then(|name| name.to_str())
                    .is_some_and(|name| name.starts_with("postfix_") && name.ends_with(".deb"))
            })
            .max()
            .ok_or_else(|| anyhow!("no postfix_*.deb in {}", bench_dir.display()))?;
        let extracted = Command::new("dpkg")
            .arg("-x")
            .arg(&deb)
            .arg(&postfix.root)
            .status()
            .context("running dpkg -x")?;
        if !extracted.success() || !postfix.tool("smtp-source").exists() {
            bail!("extracting {} failed", deb.display());
        }
        Ok(postfix)
    }

    fn tool(&self, name: &str) -> PathBuf {
        self.root.join("usr/sbin").join(name)
    }

    fn command(&self, name: &str) -> Command {
        let mut command = Command::new(self.tool(name));
        command.env("LD_LIBRARY_PATH", self.root.join("usr/lib/postfix"));
        command
    }

    /// One timed smtp-source run; it aborts at the first unexpected reply.
    fn source(
        &self,
        workload: &Workload,
        recipient: &str,
        addr: SocketAddr,
        name: &str,
    ) -> Result<Run> {
        let mut command = self.command("smtp-source");
        command
            .arg("-s")
            .arg(workload.sessions.to_string())
            .arg("-m")
            .arg(workload.messages.to_string())
            .arg("-l")
            .arg(workload.size.to_string())
            .arg("-t")
            .arg(recipient)
            .arg("-f")
            .arg(SENDER)
            .arg(addr.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = command.spawn().context("starting smtp-source")?;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if started.elapsed() > RUN_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                bail!("smtp-source ran past {RUN_LIMIT:?}; stopped");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let elapsed = started.elapsed();
        let mut stderr = String::new();
        if let Some(mut pipe) = child.stderr.take() {
            use std::io::Read;
            let _ = pipe.read_to_string(&mut stderr);
        }
        let ok = status.success();
        Ok(Run {
            name: name.to_owned(),
            elapsed,
            accepted: if ok { workload.messages } else { 0 },
            failed: if ok { 0 } else { workload.messages },
            latencies: Vec::new(),
            committed: None,
            first_error: (!ok).then(|| format!("smtp-source {status}: {}", stderr.trim())),
        })
    }

    fn sink(&self, addr: SocketAddr) -> Result<Service> {
        let mut command = self.command("smtp-sink");
        if self.as_root {
            command.args(["-u", "nobody"]);
        }
        command
            .arg(addr.to_string())
            .arg("1024")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Service::start("smtp-sink", &mut command)
    }
}

/// An Enterprise account with the workload's address, with a key;
/// returns the address.
async fn set_up_account(base: &str, database_url: &str, workload: &Workload) -> Result<String> {
    let (keys, token) = register_enterprise(base, database_url).await?;
    let created: Value = reqwest::Client::new()
        .post(format!("{base}/inboxes"))
        .bearer_auth(&token)
        .json(&json!({
            "id": workload.address,
            "domain": "mail.localhost",
            "prefix": "bench",
            "publicKey": b64::encode(&keys.address_public_key(workload.address, 0)),
        }))
        .send()
        .await?
        .error_for_status()
        .context("creating a bench address")?
        .json()
        .await?;
    let address = created["inbox"]["emailAddress"]
        .as_str()
        .ok_or_else(|| anyhow!("no emailAddress in {created}"))?;
    Ok(address.to_owned())
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// Messages committed in the address so far.
/// One statement's cost in `pg_stat_statements`.
#[derive(QueryableByName)]
struct StatementCost {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    calls: i64,
    #[diesel(sql_type = diesel::sql_types::Double)]
    total_ms: f64,
    #[diesel(sql_type = diesel::sql_types::Double)]
    mean_ms: f64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    rows: i64,
    #[diesel(sql_type = diesel::sql_types::Text)]
    query: String,
}

/// How many statements `--statements` prints per workload.
const STATEMENTS_SHOWN: i64 = 15;

/// Starts counting statements from zero (the private cluster preloads
/// `pg_stat_statements`; `postgres.rs`).
async fn reset_statements(database_url: &str) -> Result<()> {
    let mut conn = AsyncPgConnection::establish(database_url).await?;
    diesel::sql_query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .execute(&mut conn)
        .await
        .context("pg_stat_statements is not available: is the server the bench's private cluster, started with it preloaded?")?;
    diesel::sql_query("SELECT pg_stat_statements_reset()")
        .execute(&mut conn)
        .await?;
    Ok(())
}

/// The statements of the bench's database that took the most execution
/// time since [`reset_statements`].
async fn costliest_statements(database_url: &str) -> Result<Vec<StatementCost>> {
    let mut conn = AsyncPgConnection::establish(database_url).await?;
    Ok(diesel::sql_query(
        "SELECT calls, total_exec_time AS total_ms, mean_exec_time AS mean_ms, rows, \
                regexp_replace(query, '\\s+', ' ', 'g') AS query \
         FROM pg_stat_statements \
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         ORDER BY total_exec_time DESC LIMIT $1",
    )
    .bind::<diesel::sql_types::BigInt, _>(STATEMENTS_SHOWN)
    .load(&mut conn)
    .await?)
}

async fn committed(database_url: &str, address: &str) -> Result<i64> {
    let mut conn = AsyncPgConnection::establish(database_url).await?;
    let count: Count = diesel::sql_query("SELECT count(*) AS n FROM messages WHERE inbox_id = $1")
        .bind::<diesel::sql_types::Text, _>(address)
        .get_result(&mut conn)
        .await?;
    Ok(count.n)
}

/// The one-minute load average, as text.
fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

/// Our own load: `sessions` tasks sharing `messages`, a connection per
/// message as smtp-source does, timing each end of DATA to its reply.
async fn drive(workload: &Workload, recipient: &str, addr: SocketAddr, name: &str) -> Run {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..workload.sessions)
        .map(|_| {
            let next = next.clone();
            let recipient = recipient.to_owned();
            let (messages, size) = (workload.messages, workload.size);
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut errors = Vec::new();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= messages {
                        break;
                    }
                    let body = message(&recipient, n, size);
                    match tokio::time::timeout(RUN_LIMIT, send_one(addr, &recipient, &body)).await {
                        Ok(Ok(latency)) => latencies.push(latency),
                        Ok(Err(error)) => errors.push(format!("{error:#}")),
                        Err(_) => errors.push("timed out".to_owned()),
                    }
                }
                (latencies, errors)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut errors = Vec::new();
    for task in tasks {
        match task.await {
            Ok((mut done, mut failed)) => {
                latencies.append(&mut done);
                errors.append(&mut failed);
            }
            Err(error) => errors.push(error.to_string()),
        }
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    Run {
        name: name.to_owned(),
        elapsed,
        accepted: latencies.len(),
        failed: errors.len(),
        latencies,
        committed: None,
        first_error: errors.into_iter().next(),
    }
}

/// One session, one message; the time from the end of DATA (the last byte
/// handed to the kernel) to the 250.
async fn send_one(addr: SocketAddr, recipient: &str, body: &[u8]) -> Result<Duration> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    expect(reply(&mut read).await?, 220, "greeting")?;
    for (line, code) in [
        ("EHLO bench.example".to_owned(), 250),
        (format!("MAIL FROM:<{SENDER}>"), 250),
        (format!("RCPT TO:<{recipient}>"), 250),
        ("DATA".to_owned(), 354),
    ] {
        expect(command(&mut write, &mut read, &line).await?, code, &line)?;
    }
    write.write_all(body).await?;
    let end_of_data = Instant::now();
    let code = reply(&mut read).await?;
    let latency = end_of_data.elapsed();
    expect(code, 250, "end of DATA")?;
    let _ = command(&mut write, &mut read, "QUIT").await;
    Ok(latency)
}

fn millis(duration: Option<Duration>) -> String {
    duration.map_or_else(
        || "-".to_owned(),
        |d| format!("{:.1} ms", d.as_secs_f64() * 1000.0),
    )
}

fn print_table(reports: &[Report]) {
    println!();
    println!("SMTP ingest benchmark (loopback; client, ingest and PostgreSQL share this machine)");
    println!(
        "msg/s: messages answered 250 / wall time of the run. p50/p99: end of DATA -> 250,\n\
         measured by our own client only (smtp-source reports no latencies). Peak RSS: the\n\
         ingest's VmHWM after every Sealpost run of the workload (fresh process per workload).\n\
         #n: the n-th same-run pair (Sealpost, then smtp-sink right after)."
    );
    println!();
    println!(
        "{:<28} {:<30} {:>9} {:>10} {:>10} {:>11} {:>15}",
        "workload", "run", "msg/s", "p50", "p99", "peak RSS", "250s/committed"
    );
    for report in reports {
        print_workload(report);
    }
    let peak = reports.iter().filter_map(|report| report.peak_bytes).max();
    if let Some(peak) = peak {
        println!(
            "\npeak ingest memory {}: target under {} {}",
            mebibytes(peak),
            mebibytes(PEAK_TARGET_BYTES),
            met(peak < PEAK_TARGET_BYTES)
        );
    }
    println!(
        "committed: rows in the workload's address after the run (cumulative over the workload's runs)"
    );
    for report in reports {
        if let Some(statements) = &report.statements {
            print_statements(report.workload, statements);
        }
    }
}

fn print_statements(workload: &Workload, statements: &[StatementCost]) {
    println!(
        "\n{}: PostgreSQL's costliest statements over the smtp-source runs against Sealpost",
        workload.label
    );
    println!(
        "{:>8} {:>10} {:>9} {:>8}  statement",
        "calls", "total ms", "mean ms", "rows"
    );
    for statement in statements {
        let query: String = statement.query.chars().take(150).collect();
        println!(
            "{:>8} {:>10.0} {:>9.3} {:>8}  {query}",
            statement.calls, statement.total_ms, statement.mean_ms, statement.rows
        );
    }
}

fn print_workload(report: &Report) {
    let workload = report.workload;
    let label = format!(
        "{} x {} / {} sessions",
        workload.label, workload.messages, workload.sessions
    );
    let runs = report
        .pairs
        .iter()
        .flat_map(|pair| [&pair.sealpost, &pair.sink])
        .chain(&report.own);
    for (i, run) in runs.enumerate() {
        let peak = (run.name == "own client -> sealpost")
            .then_some(report.peak_bytes)
            .flatten()
            .map_or_else(|| "-".to_owned(), mebibytes);
        let outcome = match run.committed {
            Some(committed) => format!("{}/{}", run.accepted, committed),
            None => format!("{}", run.accepted),
        };
        println!(
            "{:<28} {:<30} {:>9.1} {:>10} {:>10} {:>11} {:>15}",
            if i == 0 { label.as_str() } else { "" },
            run.name,
            run.per_second(),
            millis(run.percentile(50)),
            millis(run.percentile(99)),
            peak,
            outcome
        );
        if let Some(error) = &run.first_error {
            println!("{:<28}   {} failed; first: {error}", "", run.failed);
        }
    }
    let mut ratios: Vec<f64> = report.pairs.iter().map(Pair::ratio).collect();
    ratios.sort_by(f64::total_cmp);
    if let Some(median) = ratios.get(ratios.len() / 2) {
        let each: Vec<String> = report
            .pairs
            .iter()
            .map(|pair| format!("{:.3}", pair.ratio()))
            .collect();
        let target = workload.target_ratio.map_or_else(String::new, |target| {
            format!("; target {target:.2} {}", met(*median >= target))
        });
        println!(
            "{:<28} sealpost / smtp-sink (smtp-source): {} -> median {median:.3}{target}",
            "",
            each.join(", ")
        );
    }
    if let (Some(target), Some(p99)) = (
        workload.target_p99,
        report
            .own
            .as_slice()
            .first()
            .and_then(|run| run.percentile(99)),
    ) {
        println!(
            "{:<28} end of DATA -> 250 p99 {}: target under {} {}",
            "",
            millis(Some(p99)),
            millis(Some(target)),
            met(p99 < target)
        );
    }
    let per_message = |cpu: Option<Duration>| {
        let sent = workload.messages * report.pairs.len();
        cpu.map_or_else(
            || "-".to_owned(),
            |cpu| format!("{:.2} ms", cpu.as_secs_f64() * 1000.0 / sent as f64),
        )
    };
    println!(
        "{:<28} CPU per message (smtp-source runs against Sealpost, user+system): \
         PostgreSQL {}, ingest {}, API {}",
        "",
        per_message(report.cpu.postgres),
        per_message(report.cpu.ingest),
        per_message(report.cpu.api)
    );
    println!(
        "{:<28} CPU per message, the whole machine (every process and the kernel): \
         {} against Sealpost (smtp-source {}), {} against smtp-sink (smtp-source {})",
        "",
        per_message(report.cpu.machine),
        per_message(report.cpu.client),
        per_message(report.sink_cpu.machine),
        per_message(report.sink_cpu.client)
    );
    println!(
        "{:<28} load average {} before, {} after",
        "", report.load.0, report.load.1
    );
}

fn met(yes: bool) -> &'static str {
    if yes { "met" } else { "NOT met" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let run = Run {
            name: String::new(),
            elapsed: Duration::from_secs(1),
            accepted: 100,
            failed: 0,
            latencies: (1..=100).map(Duration::from_millis).collect(),
            committed: None,
            first_error: None,
        };
        assert_eq!(run.percentile(50), Some(Duration::from_millis(50)));
        assert_eq!(run.percentile(99), Some(Duration::from_millis(99)));
        assert_eq!(run.per_second(), 100.0);
    }
}
