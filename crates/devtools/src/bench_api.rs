//! `cargo xtask bench api`: a bounded loopback load on the API's busiest
//! reads, sign-in, and the edge limiter under a flood.
//!
//! The API runs in this process as the test kit starts it (the production
//! wiring, two workers, a database of its own), on the release build. One
//! account on Enterprise holds one address with 50 sealed messages.
//!
//! - Reads (`GET /inboxes/:id/messages?limit=50`, `GET /messages/:id`,
//!   `GET /usage`, and `GET /plans`, a static answer with no database, as
//!   the HTTP reference) are driven by `wrk`, a maintained load generator,
//!   for `LOAD_SECONDS` each at 32 and at 8 keep-alive connections.
//!   wrk's percentiles include its correction for coordinated omission:
//!   a request that took `t` adds samples at `t - i`, `t - 2i`, ... for
//!   the requests a connection would have sent meanwhile (`i` its mean
//!   interval), so one stall of half a second moves a 10 s load's p99 to
//!   a few hundred ms. The table therefore also gives the longest request
//!   (wrk's max, uncorrected) and the CPU time the hypervisor took from
//!   the machine during the load (`steal`), to tell such a stall from a
//!   slow tail.
//! - In the same run `pgbench` runs, at the same 32 connections, the three
//!   statements one page request costs (the session, the address's
//!   access check, the page), so the page's rate is also given as a ratio to
//!   what PostgreSQL itself gives for its queries.
//! - Sign-in (challenge, then the proof) needs the client's keys for every
//!   answer, so our own client drives it: `SIGN_INS` sign-ins from
//!   `LOW` tasks.
//! - The flood: a second API with the edge limit on and loopback trusted as
//!   a proxy, so `X-Forwarded-For` names each client. Eight accounts, each
//!   from its own address, read a page at a steady 4 a second (well under
//!   the limit) while `wrk` floods from one other address; their p99 with
//!   the flood is compared with their p99 without it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use diesel_async::RunQueryDsl;
use sealpost_client::Client;
use sealpost_kernel::{AccountId, AddressId, Clock, PageRequest};
use sealpost_messages::store::Reader;
use sealpost_seal::{AccountKeys, b64};
use sealpost_testkit::TestApp;
use serde_json::json;

use crate::harness::{percentile, register_enterprise};

/// Connections for throughput, the same for `wrk` and `pgbench`.
const HIGH: usize = 32;
/// Connections for latency (the p99 target is set at this concurrency).
const LOW: usize = 8;
const LOAD_SECONDS: u64 = 10;
const SIGN_INS: usize = 1_000;
/// Sign-in still running then is reported as incomplete, never hidden.
const SIGN_IN_LIMIT: Duration = Duration::from_secs(60);
const ADDRESS: &str = "ibx_benchapi";
const MESSAGES: usize = 50;
const PAGE_TARGET_VS_PGBENCH: f64 = 0.5;
const P99_TARGET_MS: f64 = 50.0;
const FLOOD_TARGET: f64 = 2.0;
/// The flood case: steady readers, each its own account and address.
const READERS: usize = 8;
const READER_INTERVAL: Duration = Duration::from_millis(250);
const READER_SECONDS: u64 = 15;
const FLOODER: &str = "198.51.100.7";

/// What one load did.
struct Figures {
    label: String,
    connections: usize,
    requests: u64,
    errors: u64,
    rate: f64,
    p50_ms: f64,
    p99_ms: f64,
    /// The longest any one request took.
    max_ms: f64,
    /// CPU time the hypervisor took from this machine during the load
    /// (`None` where not measured).
    stolen_ms: Option<f64>,
}

pub async fn run() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let wrk = Wrk::find()?;
    let pgbench = crate::postgres::find_bindir()?.join("pgbench");
    ensure!(
        pgbench.is_file(),
        "pgbench is not in {} (Debian: postgresql-contrib or the server package)",
        pgbench.display()
    );
    println!(
        "API benchmark on loopback: the API in this process with 2 workers; wrk for {LOAD_SECONDS} s \
         per load; pgbench with the same connections; one address with {MESSAGES} messages"
    );
    let app = TestApp::spawn_with(|config| config.edge_rate_per_minute = u32::MAX).await;
    let result = throughput(&app, &wrk, &pgbench).await;
    app.stop().await;
    let mut all = result?;

    // The edge limit as production has it by default.
    let edge_rate =
        sealpost_config::Config::from_vars(&std::collections::HashMap::new())?.edge_rate_per_minute;
    let app = TestApp::spawn_with(|config| {
        config.edge_rate_per_minute = edge_rate;
        config.trusted_proxies = vec![std::net::IpAddr::from(std::net::Ipv4Addr::LOCALHOST).into()];
    })
    .await;
    let flood = flood(&app, &wrk).await;
    app.stop().await;
    let Flood {
        without,
        with,
        flooder,
    } = flood?;
    let verdict = format!(
        "flood: the readers' p99 {:.1} ms with it, {:.1} ms without: {:.2}x (target at most {FLOOD_TARGET}x); \
         the flooder got {} answers, {} of them 429",
        with.p99_ms,
        without.p99_ms,
        with.p99_ms / without.p99_ms,
        flooder.requests,
        flooder.errors,
    );
    all.extend([without, with]);
    print_table(&all);
    println!();
    println!("{verdict}");
    Ok(())
}

async fn throughput(app: &TestApp, wrk: &Wrk, pgbench: &Path) -> Result<Vec<Figures>> {
    let base = app.base_url.clone();
    let (keys, token) = register_enterprise(&base, &app.db.url).await?;
    create_address(&base, &token, &keys, ADDRESS, "127.0.0.1").await?;
    let http = reqwest::Client::new();
    for n in 0..MESSAGES {
        let raw = format!("From: a@example.com\r\nSubject: bench {n}\r\n\r\nmessage {n}\r\n");
        http.post(format!("{base}/messages"))
            .bearer_auth(&token)
            .json(&json!({ "inboxId": ADDRESS, "raw": b64::encode(raw.as_bytes()) }))
            .send()
            .await?
            .error_for_status()
            .context("storing a bench message")?;
    }
    let one_message = first_message(app).await?;
    let bearer = format!("Authorization: Bearer {token}");
    let page = format!("/inboxes/{ADDRESS}/messages?limit=50");
    let reads = [
        ("GET /plans (HTTP reference)", "/plans".to_owned()),
        ("GET /inboxes/:id/messages?limit=50", page.clone()),
        ("GET /messages/:id", format!("/messages/{one_message}")),
        ("GET /usage", "/usage".to_owned()),
    ];
    let mut all = Vec::new();
    for (label, path) in &reads {
        for connections in [HIGH, LOW] {
            let url = format!("{base}{path}");
            all.push(wrk.load(label, &url, connections, LOAD_SECONDS, &[&bearer])?);
        }
    }
    let queries = PageQueries::of(app, &keys, &token).await?;
    let pg = queries.pgbench(pgbench, &app.db.url, HIGH, "prepared")?;
    // The same statements parsed and planned every time: what they cost
    // the server when the client does not keep them prepared.
    let pg_unprepared = queries.pgbench(pgbench, &app.db.url, HIGH, "extended")?;
    all.push(sign_ins(&base, &keys).await?);

    let page_high = all
        .iter()
        .find(|figures| figures.label == reads[1].0 && figures.connections == HIGH)
        .ok_or_else(|| anyhow!("the page load is missing"))?;
    println!(
        "page of 50 at {HIGH} connections: {:.0} req/s; pgbench, the same three statements at {HIGH} \
         connections: {pg:.0} transactions/s; ratio {:.2} (target {PAGE_TARGET_VS_PGBENCH} or more)",
        page_high.rate,
        page_high.rate / pg,
    );
    println!(
        "  (pgbench with the statements parsed and planned each time, `--protocol=extended`: \
         {pg_unprepared:.0} transactions/s; the page's ratio to it {:.2})",
        page_high.rate / pg_unprepared,
    );
    for figures in all.iter().filter(|figures| figures.connections == LOW) {
        println!(
            "{} at {LOW}: p99 {:.1} ms, the longest {:.1} ms ({}; target under {P99_TARGET_MS} ms)",
            figures.label,
            figures.p99_ms,
            figures.max_ms,
            if figures.p99_ms < P99_TARGET_MS {
                "met"
            } else {
                "MISSED"
            },
        );
    }
    Ok(all)
}

/// A new address `id` of the account, with its epoch-0 key, asked for from
/// `client` (as `X-Forwarded-For` names it where loopback is a trusted proxy).
async fn create_address(
    base: &str,
    token: &str,
    keys: &AccountKeys,
    id: &str,
    client: &str,
) -> Result<()> {
    reqwest::Client::new()
        .post(format!("{base}/inboxes"))
        .bearer_auth(token)
        .header("x-forwarded-for", client)
        .json(
            &json!({ "id": id, "domain": "mail.localhost", "prefix": "bench",
                       "publicKey": b64::encode(&keys.address_public_key(id, 0)) }),
        )
        .send()
        .await?
        .error_for_status()
        .with_context(|| format!("creating the bench address {id}"))?;
    Ok(())
}

async fn first_message(app: &TestApp) -> Result<String> {
    #[derive(diesel::QueryableByName)]
    struct Id {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
    }
    let mut conn = app.db.connect().await;
    let row: Id = diesel::sql_query("SELECT id FROM messages ORDER BY received_at LIMIT 1")
        .get_result(&mut conn)
        .await
        .context("reading a bench message id")?;
    Ok(row.id)
}

/// The statements `GET /inboxes/:id/messages` sends, taken from
/// `sealpost-store-pg` itself (its `debug_query` text: the store's own SQL
/// with this run's session, address and instant as parameters), so the
/// reference cannot drift from the API's queries: the session's bearer,
/// then the access check and the page pipelined (one round trip).
struct PageQueries {
    script: String,
    /// pgbench's `--define`s: each statement's parameters, by name.
    values: Vec<(String, String)>,
}

impl PageQueries {
    async fn of(app: &TestApp, keys: &AccountKeys, token: &str) -> Result<Self> {
        #[derive(diesel::QueryableByName)]
        struct Count {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let token_hash = sealpost_seal::sha256(token.as_bytes());
        let mut conn = app.db.connect().await;
        // The session's account: the one the keys name, registered with
        // it. The runs below check that the session is there and that this
        // account reads the address.
        let reader = Reader {
            account: AccountId::from_trusted(keys.account_id()),
            device: None,
        };
        let page = PageRequest {
            limit: u32::try_from(MESSAGES)?,
            after: None,
        };
        // The instant the service reads the cutoff at: the test clock's now.
        let statements = sealpost_store_pg::statements::page_statements(
            &token_hash,
            &reader,
            &AddressId::from_trusted(ADDRESS.to_owned()),
            app.clock.now(),
            &page,
        );
        let mut values = Vec::new();
        let mut lines = Vec::new();
        // Each statement's rows, read once with its values inlined: the
        // reference must do the page's work (one session, one readable
        // address, every message), not fail to match and run cheaper.
        for (name, debug, rows) in [
            ("bearer", &statements.bearer, 1),
            ("check", &statements.check, 1),
            ("page", &statements.page, MESSAGES),
        ] {
            let (line, named) = pgbench_statement(debug, name)?;
            let counted: Count = diesel::sql_query(format!(
                "SELECT count(*) AS n FROM ({}) AS statement",
                inline_values(&line, &named)
            ))
            .get_result(&mut conn)
            .await
            .with_context(|| format!("running the reference's {name} statement once"))?;
            ensure!(
                counted.n == i64::try_from(rows)?,
                "the reference's {name} statement reads {} rows, not {rows}: {line}",
                counted.n
            );
            lines.push(line);
            values.extend(named);
        }
        let [bearer, check, page] =
            <[String; 3]>::try_from(lines).map_err(|_| anyhow!("three statements expected"))?;
        let script = format!("{bearer};\n\\startpipeline\n{check};\n{page};\n\\endpipeline\n");
        Ok(Self { script, values })
    }

    /// Transactions a second (one transaction: the three statements) that
    /// `pgbench` gets from `clients` connections with `protocol` (`prepared`:
    /// each statement parsed once per connection; `extended`: every time).
    fn pgbench(
        &self,
        pgbench: &Path,
        database_url: &str,
        clients: usize,
        protocol: &str,
    ) -> Result<f64> {
        let script =
            std::env::temp_dir().join(format!("sealpost-bench-api-{}.sql", std::process::id()));
        std::fs::write(&script, &self.script).context("writing the pgbench script")?;
        let output = Command::new(pgbench)
            .args(
                self.values
                    .iter()
                    .map(|(name, value)| format!("--define={name}={value}")),
            )
            .arg("--no-vacuum")
            .arg(format!("--protocol={protocol}"))
            .arg(format!("--client={clients}"))
            .arg("--jobs=2")
            .arg(format!("--time={LOAD_SECONDS}"))
            .arg(format!("--file={}", script.display()))
            .arg(database_url)
            .output()
            .context("running pgbench")?;
        let _ = std::fs::remove_file(&script);
        let stdout = String::from_utf8_lossy(&output.stdout);
        ensure!(
            output.status.success(),
            "pgbench failed: {}{}",
            stdout,
            String::from_utf8_lossy(&output.stderr)
        );
        let failed = stdout
            .lines()
            .find_map(|line| line.strip_prefix("number of failed transactions: "))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or("0");
        ensure!(failed == "0", "pgbench had failed transactions:\n{stdout}");
        stdout
            .lines()
            .find_map(|line| line.strip_prefix("tps = "))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|tps| tps.parse().ok())
            .ok_or_else(|| anyhow!("no tps in pgbench's output:\n{stdout}"))
    }
}

/// `wrk` on the path, with the latency distribution it prints.
struct Wrk {
    program: PathBuf,
}

impl Wrk {
    fn find() -> Result<Self> {
        let found = std::env::var_os("PATH")
            .into_iter()
            .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
            .map(|dir| dir.join("wrk"))
            .find(|candidate| candidate.is_file());
        found.map(|program| Self { program }).ok_or_else(|| {
            anyhow!(
                "`bench api` drives the API with wrk; install it (Debian: `apt-get install wrk`)"
            )
        })
    }

    fn command(&self, url: &str, connections: usize, seconds: u64, headers: &[&str]) -> Command {
        let mut command = Command::new(&self.program);
        command
            .arg("--latency")
            .arg(format!("--threads={}", connections.min(2)))
            .arg(format!("--connections={connections}"))
            .arg(format!("--duration={seconds}s"))
            .arg("--timeout=10s");
        for header in headers {
            command.arg(format!("--header={header}"));
        }
        command.arg(url);
        command
    }

    /// Runs one load to its end; any answer but 2xx or 3xx and any socket
    /// error count as errors.
    fn load(
        &self,
        label: &str,
        url: &str,
        connections: usize,
        seconds: u64,
        headers: &[&str],
    ) -> Result<Figures> {
        let stolen_before = crate::cpu::stolen();
        let output = self
            .command(url, connections, seconds, headers)
            .output()
            .context("running wrk")?;
        let stolen = crate::cpu::stolen()
            .zip(stolen_before)
            .map(|(after, before)| after.saturating_sub(before).as_secs_f64() * 1000.0);
        let stdout = String::from_utf8_lossy(&output.stdout);
        ensure!(
            output.status.success(),
            "wrk failed: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut figures = parse_wrk(label, connections, &stdout)?;
        figures.stolen_ms = stolen;
        Ok(figures)
    }
}

fn parse_wrk(label: &str, connections: usize, out: &str) -> Result<Figures> {
    let field = |prefix: &str| {
        out.lines()
            .map(str::trim)
            .find_map(|line| line.strip_prefix(prefix))
            .map(str::trim)
    };
    let latency = |percent: &str| -> Result<f64> {
        let text = field(percent)
            .ok_or_else(|| anyhow!("no {percent} latency in wrk's output:\n{out}"))?;
        wrk_duration_ms(text)
    };
    let requests: u64 = out
        .lines()
        .find(|line| line.contains(" requests in "))
        .and_then(|line| line.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| anyhow!("no request count in wrk's output:\n{out}"))?;
    let non_2xx: u64 = field("Non-2xx or 3xx responses:")
        .map(str::parse)
        .transpose()?
        .unwrap_or(0);
    let socket_errors: u64 = field("Socket errors:")
        .map(|rest| {
            rest.split(',')
                .filter_map(|part| part.split_whitespace().last()?.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0);
    // `Latency  avg  stdev  max  +/-stdev` (not `Latency Distribution`).
    let max_ms = out
        .lines()
        .filter_map(|line| line.trim().strip_prefix("Latency"))
        .map(|rest| rest.split_whitespace().collect::<Vec<_>>())
        .find(|columns| columns.len() == 4)
        .ok_or_else(|| anyhow!("no latency summary in wrk's output:\n{out}"))
        .and_then(|columns| wrk_duration_ms(columns[2]))?;
    let rate: f64 = field("Requests/sec:")
        .ok_or_else(|| anyhow!("no rate in wrk's output:\n{out}"))?
        .parse()?;
    Ok(Figures {
        label: label.to_owned(),
        connections,
        requests,
        errors: non_2xx + socket_errors,
        rate,
        p50_ms: latency("50%")?,
        p99_ms: latency("99%")?,
        max_ms,
        stolen_ms: None,
    })
}

/// wrk prints latencies as `812.00us`, `1.25ms` or `1.02s`.
fn wrk_duration_ms(text: &str) -> Result<f64> {
    let (number, scale) = if let Some(us) = text.strip_suffix("us") {
        (us, 0.001)
    } else if let Some(ms) = text.strip_suffix("ms") {
        (ms, 1.0)
    } else if let Some(s) = text.strip_suffix('s') {
        (s, 1000.0)
    } else if let Some(m) = text.strip_suffix('m') {
        (m, 60_000.0)
    } else {
        bail!("a wrk latency without a unit: {text}")
    };
    Ok(number.parse::<f64>()? * scale)
}

/// `SIGN_INS` sign-ins (challenge and proof, a new session each) from
/// `LOW` tasks, each on its own keep-alive client.
async fn sign_ins(base: &str, keys: &AccountKeys) -> Result<Figures> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let keys = Arc::new(keys.clone());
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(LOW);
    for _ in 0..LOW {
        let client = Client::new(base)?;
        let next = next.clone();
        let keys = keys.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0u64;
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < SIGN_INS
                && started.elapsed() < SIGN_IN_LIMIT
            {
                let sent = Instant::now();
                if client.sign_in(&keys).await.is_err() {
                    errors += 1;
                }
                latencies.push(sent.elapsed());
            }
            (latencies, errors)
        }));
    }
    let (latencies, errors) = joined(tasks).await?;
    let seconds = started.elapsed().as_secs_f64();
    let label = if latencies.len() < SIGN_INS {
        "sign-in: challenge + proof (INCOMPLETE: time limit)"
    } else {
        "sign-in: challenge + proof"
    };
    summarize(label, LOW, latencies, errors, seconds)
}

/// What each client task measured: its latencies and its errors.
type Measured = (Vec<Duration>, u64);

/// Every task's latencies and errors, together.
async fn joined(tasks: Vec<tokio::task::JoinHandle<Measured>>) -> Result<Measured> {
    let mut latencies = Vec::new();
    let mut errors = 0;
    for task in tasks {
        let (mut own, own_errors) = task.await?;
        latencies.append(&mut own);
        errors += own_errors;
    }
    Ok((latencies, errors))
}

fn summarize(
    label: &str,
    connections: usize,
    mut latencies: Vec<Duration>,
    errors: u64,
    seconds: f64,
) -> Result<Figures> {
    latencies.sort();
    let ms = |p| {
        percentile(&latencies, p)
            .map(|latency| latency.as_secs_f64() * 1000.0)
            .ok_or_else(|| anyhow!("{label}: no request finished"))
    };
    Ok(Figures {
        label: label.to_owned(),
        connections,
        requests: latencies.len() as u64,
        errors,
        rate: latencies.len() as f64 / seconds,
        p50_ms: ms(50)?,
        p99_ms: ms(99)?,
        max_ms: ms(100)?,
        stolen_ms: None,
    })
}

struct Flood {
    without: Figures,
    with: Figures,
    flooder: Figures,
}

/// The steady readers' latency without and then with a flood from one
/// address (see the module comment).
async fn flood(app: &TestApp, wrk: &Wrk) -> Result<Flood> {
    let base = app.base_url.clone();
    let mut readers = Vec::with_capacity(READERS);
    for n in 0..READERS {
        let (keys, token) = register_enterprise(&base, &app.db.url).await?;
        let address = format!("ibx_reader{n}");
        create_address(&base, &token, &keys, &address, &reader_address(n)).await?;
        readers.push((token, address));
    }
    let readers = Arc::new(readers);
    let without = steady_readers(&base, &readers, "readers, no flood").await?;

    let (_, flooder_token) = register_enterprise(&base, &app.db.url).await?;
    let flood_url = format!("{base}/usage");
    let flood_seconds = READER_SECONDS + 2;
    let flooder = wrk
        .command(
            &flood_url,
            HIGH,
            flood_seconds,
            &[
                &format!("Authorization: Bearer {flooder_token}"),
                &format!("X-Forwarded-For: {FLOODER}"),
            ],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("starting the flood")?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let with = steady_readers(&base, &readers, "readers, one address flooding").await;
    let output = tokio::task::spawn_blocking(move || flooder.wait_with_output())
        .await?
        .context("waiting for the flood")?;
    let with = with?;
    let out = String::from_utf8_lossy(&output.stdout);
    let flooder = parse_wrk("the flooder: GET /usage from one address", HIGH, &out)?;
    Ok(Flood {
        without,
        with,
        flooder,
    })
}

fn reader_address(n: usize) -> String {
    format!("203.0.113.{}", n + 1)
}

/// Each reader reads its page every `READER_INTERVAL` for
/// `READER_SECONDS` from its own address; any answer but 2xx is an error.
async fn steady_readers(
    base: &str,
    readers: &Arc<Vec<(String, String)>>,
    label: &str,
) -> Result<Figures> {
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(readers.len());
    for n in 0..readers.len() {
        let readers = readers.clone();
        let url = format!("{base}/inboxes/{}/messages?limit=50", readers[n].1);
        tasks.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut ticks = tokio::time::interval(READER_INTERVAL);
            let mut latencies = Vec::new();
            let mut errors = 0u64;
            while started.elapsed() < Duration::from_secs(READER_SECONDS) {
                ticks.tick().await;
                let sent = Instant::now();
                let answer = http
                    .get(&url)
                    .bearer_auth(&readers[n].0)
                    .header("x-forwarded-for", reader_address(n))
                    .send()
                    .await;
                match answer {
                    Ok(response) if response.status().is_success() => {
                        if response.bytes().await.is_err() {
                            errors += 1;
                        }
                    }
                    _ => errors += 1,
                }
                latencies.push(sent.elapsed());
            }
            (latencies, errors)
        }));
    }
    let (latencies, errors) = joined(tasks).await?;
    summarize(
        &format!(
            "{label}: a page every {} ms each",
            READER_INTERVAL.as_millis()
        ),
        readers.len(),
        latencies,
        errors,
        started.elapsed().as_secs_f64(),
    )
}

fn print_table(all: &[Figures]) {
    let reference = all.iter().find(|figures| figures.connections == HIGH);
    println!(
        "| load | connections | requests | errors | req/s | p50 ms | p99 ms | max ms | CPU stolen, ms | req/s vs GET /plans at {HIGH} |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for figures in all {
        println!(
            "| {} | {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.1} | {} | {} |",
            figures.label,
            figures.connections,
            figures.requests,
            figures.errors,
            figures.rate,
            figures.p50_ms,
            figures.p99_ms,
            figures.max_ms,
            figures
                .stolen_ms
                .map_or_else(|| "-".to_owned(), |ms| format!("{ms:.0}")),
            reference.map_or_else(String::new, |reference| format!(
                "{:.2}",
                figures.rate / reference.rate
            )),
        );
    }
}

/// One statement of diesel's `debug_query` text (`SQL -- binds: [...]`) as
/// a pgbench script line: each `$n` becomes the variable `{name}_n`, cast
/// to the type its value has (diesel sends each parameter's type; pgbench
/// sends none), and its value is returned for `--define`.
fn pgbench_statement(debug: &str, name: &str) -> Result<(String, Vec<(String, String)>)> {
    let (sql, binds) = debug
        .rsplit_once(" -- binds: ")
        .ok_or_else(|| anyhow!("no binds in {debug}"))?;
    let values = split_debug_list(binds)?
        .into_iter()
        .map(|value| pgbench_value(&value))
        .collect::<Result<Vec<_>>>()?;
    let mut script = String::with_capacity(sql.len());
    let mut rest = sql;
    while let Some(dollar) = rest.find('$') {
        script.push_str(&rest[..dollar]);
        let digits = rest[dollar + 1..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - dollar - 1);
        let number: usize = rest[dollar + 1..dollar + 1 + digits]
            .parse()
            .with_context(|| format!("a `$` not a parameter in {sql}"))?;
        let (_, cast) = number
            .checked_sub(1)
            .and_then(|index| values.get(index))
            .ok_or_else(|| anyhow!("${number} has no value in {debug}"))?;
        script.push_str(&format!(":{name}_{number}::{cast}"));
        rest = &rest[dollar + 1 + digits..];
    }
    script.push_str(rest);
    let named = values
        .into_iter()
        .enumerate()
        .map(|(index, (value, _))| (format!("{name}_{}", index + 1), value))
        .collect();
    Ok((script, named))
}

/// A pgbench line with its variables' values written in as SQL literals
/// (`:page_1::text` to `'ibx_a'::text`), in one pass: a value is never read
/// again for names, and `page_1` never takes the start of `page_10`.
fn inline_values(line: &str, values: &[(String, String)]) -> String {
    let mut sql = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(colon) = rest.find(':') {
        sql.push_str(&rest[..colon]);
        let after = &rest[colon + 1..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        match values.iter().find(|(name, _)| name == &after[..name_len]) {
            Some((_, value)) => {
                sql.push_str(&format!("'{}'", value.replace('\'', "''")));
                rest = &after[name_len..];
            }
            None => {
                sql.push(':');
                rest = after;
            }
        }
    }
    sql.push_str(rest);
    sql
}

/// A parameter's `Debug` text as PostgreSQL's text form, with its type:
/// bytes (`[1, 2]`) as `bytea` hex, strings as `text`, lists of strings as
/// a `text[]` literal, integers as `int8` (every integer these statements
/// bind is a `BigInt`; an `Integer` would fail loudly in PostgreSQL), instants
/// as `timestamptz`. Anything else (an empty list, `None`, a boolean) is an
/// error: the bench learns a new kind before it guesses one.
fn pgbench_value(debug: &str) -> Result<(String, &'static str)> {
    if debug.starts_with('[') {
        let items = split_debug_list(debug)?;
        ensure!(
            !items.is_empty(),
            "an empty list has no type to read: {debug}"
        );
        if items.iter().all(|item| item.starts_with('"')) {
            let quoted = items
                .iter()
                .map(|item| {
                    let text = debug_string(item)?;
                    Ok(format!(
                        "\"{}\"",
                        text.replace('\\', "\\\\").replace('"', "\\\"")
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            return Ok((format!("{{{}}}", quoted.join(",")), "text[]"));
        }
        let hex = items
            .iter()
            .map(|item| item.parse::<u8>().map(|byte| format!("{byte:02x}")))
            .collect::<Result<String, _>>()
            .with_context(|| format!("neither bytes nor strings: {debug}"))?;
        return Ok((format!("\\x{hex}"), "bytea"));
    }
    if debug.starts_with('"') {
        return Ok((debug_string(debug)?, "text"));
    }
    if debug.parse::<i64>().is_ok() {
        return Ok((debug.to_owned(), "int8"));
    }
    if debug.parse::<chrono::DateTime<chrono::Utc>>().is_ok() {
        return Ok((debug.to_owned(), "timestamptz"));
    }
    bail!("a parameter of a kind the bench does not know: {debug}")
}

/// The items of a `Debug` list (`[a, "b, c", [1, 2]]`), split at its own
/// commas: not inside a string or a nested list.
fn split_debug_list(debug: &str) -> Result<Vec<String>> {
    let inner = debug
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .ok_or_else(|| anyhow!("not a list: {debug}"))?;
    let mut items = Vec::new();
    let (mut depth, mut in_string, mut escaped) = (0_usize, false, false);
    let mut start = 0;
    for (at, c) in inner.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '[' if !in_string => depth += 1,
            ']' if !in_string => depth = depth.saturating_sub(1),
            ',' if !in_string && depth == 0 => {
                items.push(inner[start..at].trim().to_owned());
                start = at + 1;
            }
            _ => {}
        }
    }
    ensure!(
        !in_string && depth == 0,
        "an unclosed list or string: {debug}"
    );
    let last = inner[start..].trim();
    if !last.is_empty() {
        items.push(last.to_owned());
    }
    Ok(items)
}

/// A string's `Debug` text (`"a\"b"`) as the string.
fn debug_string(debug: &str) -> Result<String> {
    let inner = debug
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .ok_or_else(|| anyhow!("not a string: {debug}"))?;
    let mut text = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(escaped @ ('"' | '\\' | '\'')) => text.push(escaped),
                other => bail!("an escape the bench does not read ({other:?}) in {debug}"),
            }
        } else {
            text.push(c);
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WRK_OUTPUT: &str = "\
Running 10s test @ http://127.0.0.1:4000/plans
  2 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.10ms  502.11us  12.30ms   80.00%
    Req/Sec    14.70k     1.10k   17.00k    70.00%
  Latency Distribution
     50%  812.00us
     75%    1.30ms
     90%    1.80ms
     99%    2.50ms
  292612 requests in 10.00s, 50.00MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 7
Requests/sec:  29261.20
Transfer/sec:      5.00MB
";

    #[test]
    fn wrk_output_is_read_with_its_units_and_errors() {
        let figures = parse_wrk("plans", 32, WRK_OUTPUT).unwrap();
        assert_eq!(figures.requests, 292_612);
        assert_eq!(figures.errors, 10);
        assert!((figures.rate - 29_261.2).abs() < 1e-6);
        assert!((figures.p50_ms - 0.812).abs() < 1e-9);
        assert!((figures.p99_ms - 2.5).abs() < 1e-9);
        assert!((figures.max_ms - 12.3).abs() < 1e-9);
    }

    #[test]
    fn wrk_latencies_in_seconds_and_minutes_are_milliseconds() {
        assert!((wrk_duration_ms("1.02s").unwrap() - 1020.0).abs() < 1e-9);
        assert!((wrk_duration_ms("2.00m").unwrap() - 120_000.0).abs() < 1e-9);
        assert!(wrk_duration_ms("12").is_err());
    }

    #[test]
    fn a_debug_query_becomes_a_pgbench_statement_with_typed_variables() {
        let debug = "SELECT \"a\".\"id\" FROM \"a\" WHERE \"a\".\"id\" = $1 AND \"a\".\"hash\" = $2 \
                     AND \"a\".\"kind\" = ANY($3) AND $4 - \"a\".\"days\" < now() LIMIT $5 OFFSET $10 \
                     -- binds: [\"ibx_a,b\", [0, 171, 255], [\"read\", \"se\\\"nd\"], \
                     2026-11-28T21:00:00.5Z, 51, 1, 2, 3, 4, 5]";
        let (sql, values) = pgbench_statement(debug, "page").unwrap();
        assert_eq!(
            sql,
            "SELECT \"a\".\"id\" FROM \"a\" WHERE \"a\".\"id\" = :page_1::text AND \
             \"a\".\"hash\" = :page_2::bytea AND \"a\".\"kind\" = ANY(:page_3::text[]) AND \
             :page_4::timestamptz - \"a\".\"days\" < now() LIMIT :page_5::int8 OFFSET :page_10::int8"
        );
        let value = |name: &str| {
            values
                .iter()
                .find(|(named, _)| named == name)
                .map(|(_, value)| value.as_str())
        };
        assert_eq!(values.len(), 10);
        assert_eq!(value("page_1"), Some("ibx_a,b"));
        assert_eq!(value("page_2"), Some("\\x00abff"));
        assert_eq!(value("page_3"), Some("{\"read\",\"se\\\"nd\"}"));
        assert_eq!(value("page_4"), Some("2026-11-28T21:00:00.5Z"));
        assert_eq!(value("page_5"), Some("51"));
        assert_eq!(value("page_10"), Some("5"));
    }

    #[test]
    fn a_parameter_the_bench_cannot_read_is_an_error_not_a_guess() {
        assert!(pgbench_statement("SELECT $1 -- binds: [Some(1)]", "s").is_err());
        assert!(pgbench_statement("SELECT $2 -- binds: [1]", "s").is_err());
        assert!(pgbench_statement("SELECT 1", "s").is_err());
        assert!(split_debug_list("[\"open]").is_err());
        assert!(pgbench_statement("SELECT $1 -- binds: [[]]", "s").is_err());
        assert!(pgbench_statement("SELECT $0 -- binds: [1]", "s").is_err());
    }

    #[test]
    fn inlined_values_are_quoted_literals_matched_by_whole_names() {
        let values = [
            ("s_1".to_owned(), "it's :s_10".to_owned()),
            ("s_10".to_owned(), "ten".to_owned()),
        ];
        assert_eq!(
            inline_values("SELECT :s_1::text, :s_10::text, :other", &values),
            "SELECT 'it''s :s_10'::text, 'ten'::text, :other"
        );
    }
}
