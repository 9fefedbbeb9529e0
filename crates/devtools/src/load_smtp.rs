//! `cargo xtask bench smtp-load`: the SMTP ingest under hostile load
//! (issue 15's load test), bounded in count and time, on loopback.
//!
//! A stack from the test kit's launcher (`sealpost-stack`: a fresh
//! database, the API and a release `sealpost-smtp`; `--debug`: the debug
//! build) with a DATA budget of [`DATA_MEMORY_MIB`] MiB and the default
//! spool threshold. Then, at once:
//! - [`TRICKLERS`] sessions that open DATA and trickle a line a second for
//!   [`TRICKLE_FOR`], then end their message;
//! - [`LARGE_SENDERS`] sessions that each send a [`LARGE_MIB`] MB message
//!   (a 30 MB attachment: over the 20 MB storage limit, so it is parsed
//!   and listed but not stored) as fast as loopback takes it;
//! - one normal sender sending a 4 KB message every [`NORMAL_EVERY`] on a
//!   fresh connection, timing each end of DATA to its reply.
//!
//! Before the load the normal sender's usual time is measured alone. The
//! run prints the replies each group got, the normal sender's p50/p99/max
//! alone and under load, and the ingest's peak memory (`VmHWM` from
//! `/proc/<pid>/status`) against the bound the configuration sets: four
//! times the DATA budget (`docs/configuration.md`). It fails when a normal
//! message is not answered 250, when the peak passes the bound, or when a
//! spool file is left behind. Connections come from several loopback
//! addresses (127.0.1.x, 127.0.2.x) so the per-client caps admit them (and
//! the harness lifts the per-/24 cap: the tricklers share one /24).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpSocket;
use tokio::runtime::Runtime;

use crate::harness::percentile;

use crate::harness::{
    Launched, Profile, StackOptions, bench_settings, build_stack, command, expect,
    leftover_of_dead_run, mebibytes, message, peak_memory, register_enterprise, reply, wait_smtp,
};
use crate::postgres;

const TRICKLERS: usize = 300;
const LARGE_SENDERS: usize = 50;
const LARGE_MIB: usize = 40;
const DATA_MEMORY_MIB: u64 = 128;
/// How long each trickling session keeps its DATA open.
const TRICKLE_FOR: Duration = Duration::from_secs(60);
const NORMAL_EVERY: Duration = Duration::from_millis(200);
/// Normal messages timed alone, before the load.
const BASELINE_MESSAGES: usize = 20;
/// The whole load phase is stopped after this.
const LOAD_LIMIT: Duration = Duration::from_secs(10 * 60);
const NORMAL_ADDRESS: &str = "ibx_loadnormal";
const BULK_ADDRESS: &str = "ibx_loadbulk";
const SENDER: &str = "load@example.com";

pub fn run(runtime: &Runtime, debug: bool) -> Result<ExitCode> {
    // reqwest is built without a default TLS provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let root = postgres::workspace_root();
    let target = sealpost_devprocess::target_dir(&root);
    let profile = if debug {
        Profile::Debug
    } else {
        Profile::Release
    };
    build_stack(&root, profile)?;

    let bench_dir = target.join("bench");
    std::fs::create_dir_all(&bench_dir)?;
    remove_leftover_run_dirs(&bench_dir);
    let run_dir = bench_dir.join(format!("load-{}", std::process::id()));
    let server = postgres::ensure_server()?;
    let spool_dir = run_dir.join("spool");
    let mut env = bench_settings(&run_dir.join("blobs"));
    env.extend([
        (
            "SEALPOST_SMTP_DATA_MEMORY".to_owned(),
            DATA_MEMORY_MIB.to_string(),
        ),
        (
            "SEALPOST_SMTP_SPOOL_DIR".to_owned(),
            spool_dir.display().to_string(),
        ),
    ]);
    let outcome = Launched::start(
        &target,
        &server,
        &StackOptions {
            launcher_args: &[],
            profile,
            processes: &["api", "smtp"],
            env,
            logs: bench_dir.join("logs").join("load"),
            database_query: Some("sslmode=disable"),
        },
    )
    .and_then(|stack| load(runtime, stack, &spool_dir));
    let _ = std::fs::remove_dir_all(&run_dir);
    let passed = outcome?;
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `target/bench/load-<pid>` of runs that did not finish.
fn remove_leftover_run_dirs(bench_dir: &Path) {
    for entry in std::fs::read_dir(bench_dir).into_iter().flatten().flatten() {
        let leftover = entry
            .file_name()
            .to_str()
            .and_then(|name| name.strip_prefix("load-"))
            .is_some_and(leftover_of_dead_run);
        if leftover {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Replies per group.
#[derive(Default, Debug)]
struct Tally {
    codes: std::collections::BTreeMap<String, usize>,
}

impl Tally {
    fn add(&mut self, outcome: &Result<u16>) {
        let key = match outcome {
            Ok(code) => code.to_string(),
            Err(error) => format!("error: {}", first_words(&format!("{error:#}"))),
        };
        *self.codes.entry(key).or_default() += 1;
    }

    fn show(&self) -> String {
        self.codes
            .iter()
            .map(|(code, count)| format!("{count} x {code}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn first_words(text: &str) -> String {
    text.chars().take(60).collect()
}

fn load(runtime: &Runtime, stack: Launched, spool_dir: &Path) -> Result<bool> {
    let (normal, bulk) = runtime.block_on(set_up(stack.api()?, stack.database_url()?))?;
    let smtp_addr = stack.smtp()?;
    let smtp_pid = stack.pid("smtp")?;
    runtime.block_on(wait_smtp(smtp_addr))?;
    let idle_peak = peak_memory(smtp_pid);

    let report = runtime.block_on(async {
        tokio::time::timeout(LOAD_LIMIT, drive(smtp_addr, &normal, &bulk))
            .await
            .map_err(|_| anyhow!("the load ran past {LOAD_LIMIT:?}"))?
    })?;
    let peak = peak_memory(smtp_pid);
    let spool_left = std::fs::read_dir(spool_dir).map_or(0, |entries| entries.count());
    stack.stop();

    let bound = 4 * DATA_MEMORY_MIB * 1024 * 1024;
    let normal_ok = report
        .normal_under_load
        .codes
        .keys()
        .all(|code| code == "250")
        && report
            .normal_baseline
            .codes
            .keys()
            .all(|code| code == "250");
    println!();
    println!(
        "SMTP ingest load test ({TRICKLERS} trickling sessions, {LARGE_SENDERS} x {LARGE_MIB} MB, \
         one normal sender; loopback; SEALPOST_SMTP_DATA_MEMORY={DATA_MEMORY_MIB} MiB)"
    );
    println!("| group | replies at the end of DATA |");
    println!("|---|---|");
    println!(
        "| normal sender, alone | {} |",
        report.normal_baseline.show()
    );
    println!(
        "| normal sender, under load | {} |",
        report.normal_under_load.show()
    );
    println!(
        "| {LARGE_SENDERS} large senders | {} |",
        report.large.show()
    );
    println!(
        "| {TRICKLERS} trickling sessions | {} |",
        report.trickle.show()
    );
    println!();
    println!(
        "normal sender, end of DATA -> reply: alone p50 {} p99 {} max {}; under load p50 {} p99 {} max {} ({} messages)",
        ms(percentile(&report.baseline_latencies, 50)),
        ms(percentile(&report.baseline_latencies, 99)),
        ms(report.baseline_latencies.last().copied()),
        ms(percentile(&report.load_latencies, 50)),
        ms(percentile(&report.load_latencies, 99)),
        ms(report.load_latencies.last().copied()),
        report.load_latencies.len(),
    );
    println!(
        "large messages: first answered after {}, last after {}",
        ms(report.large_first),
        ms(report.large_last)
    );
    println!(
        "ingest peak memory (VmHWM): {} (idle {}); bound 4 x DATA budget = {}",
        peak.map_or_else(|| "?".to_owned(), mebibytes),
        idle_peak.map_or_else(|| "?".to_owned(), mebibytes),
        mebibytes(bound),
    );
    println!("spool files left: {spool_left}");
    let peak_ok = peak.is_some_and(|peak| peak < bound);
    let passed = normal_ok && peak_ok && spool_left == 0;
    println!(
        "{}",
        if passed {
            "PASS"
        } else {
            "FAIL (a normal message not answered 250, the peak over its bound, or a spool file left)"
        }
    );
    Ok(passed)
}

/// One address for the normal sender, one for the load; Enterprise.
async fn set_up(base: &str, database_url: &str) -> Result<(String, String)> {
    let (keys, token) = register_enterprise(base, database_url).await?;
    let http = reqwest::Client::new();
    let mut addresses = Vec::new();
    for address in [NORMAL_ADDRESS, BULK_ADDRESS] {
        let created: Value = http
            .post(format!("{base}/inboxes"))
            .bearer_auth(&token)
            .json(&json!({
                "id": address,
                "domain": "mail.localhost",
                "prefix": "load",
                "publicKey": sealpost_seal::b64::encode(&keys.address_public_key(address, 0)),
            }))
            .send()
            .await?
            .error_for_status()
            .context("creating a load address")?
            .json()
            .await?;
        addresses.push(
            created["inbox"]["emailAddress"]
                .as_str()
                .ok_or_else(|| anyhow!("no emailAddress in {created}"))?
                .to_owned(),
        );
    }
    Ok((addresses.remove(0), addresses.remove(0)))
}

struct LoadReport {
    normal_baseline: Tally,
    baseline_latencies: Vec<Duration>,
    normal_under_load: Tally,
    load_latencies: Vec<Duration>,
    large: Tally,
    large_first: Option<Duration>,
    large_last: Option<Duration>,
    trickle: Tally,
}

async fn drive(addr: SocketAddr, normal: &str, bulk: &str) -> Result<LoadReport> {
    let small = Arc::new(message(normal, 0, 4 * 1024));
    let mut normal_baseline = Tally::default();
    let mut baseline_latencies = Vec::new();
    for _ in 0..BASELINE_MESSAGES {
        let sent = send(addr, from(0, 1), normal, &small).await;
        if let Ok((_, latency)) = &sent {
            baseline_latencies.push(*latency);
        }
        normal_baseline.add(&sent.map(|(code, _)| code));
    }
    baseline_latencies.sort_unstable();

    let started = Instant::now();
    let tricklers: Vec<_> = (0..TRICKLERS)
        .map(|n| {
            let bulk = bulk.to_owned();
            tokio::spawn(async move { trickle(addr, from(1, 1 + n / 10), &bulk).await })
        })
        .collect();
    let large_body = Arc::new(large_message(bulk));
    let large: Vec<_> = (0..LARGE_SENDERS)
        .map(|n| {
            let (bulk, body) = (bulk.to_owned(), large_body.clone());
            tokio::spawn(async move {
                let sent = send(addr, from(2, 1 + n / 5), &bulk, &body).await;
                (sent.map(|(code, _)| code), started.elapsed())
            })
        })
        .collect();

    // The normal sender goes on until the large ones and the tricklers are done.
    let mut normal_under_load = Tally::default();
    let mut load_latencies = Vec::new();
    let all_done = |large: &[tokio::task::JoinHandle<_>],
                    tricklers: &[tokio::task::JoinHandle<_>]| {
        large.iter().all(tokio::task::JoinHandle::is_finished)
            && tricklers.iter().all(tokio::task::JoinHandle::is_finished)
    };
    while !all_done(&large, &tricklers) {
        let next = Instant::now() + NORMAL_EVERY;
        let sent = send(addr, from(0, 1), normal, &small).await;
        if let Ok((_, latency)) = &sent {
            load_latencies.push(*latency);
        }
        normal_under_load.add(&sent.map(|(code, _)| code));
        tokio::time::sleep_until(next.into()).await;
    }
    load_latencies.sort_unstable();

    let mut large_tally = Tally::default();
    let mut times = Vec::new();
    for task in large {
        let (sent, at) = task.await?;
        if sent.is_ok() {
            times.push(at);
        }
        large_tally.add(&sent);
    }
    times.sort_unstable();
    let mut trickle = Tally::default();
    for task in tricklers {
        trickle.add(&task.await?);
    }
    Ok(LoadReport {
        normal_baseline,
        baseline_latencies,
        normal_under_load,
        load_latencies,
        large: large_tally,
        large_first: times.first().copied(),
        large_last: times.last().copied(),
        trickle,
    })
}

/// A loopback source address: 127.0.`group`.`host`.
fn from(group: u8, host: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(
        127,
        0,
        group,
        u8::try_from(host).unwrap_or(u8::MAX),
    ))
}

async fn connect(addr: SocketAddr, source: IpAddr) -> Result<tokio::net::TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(source, 0))?;
    let stream = socket.connect(addr).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// One message on its own session; the final code and the time from the
/// end of DATA to it.
async fn send(
    addr: SocketAddr,
    source: IpAddr,
    recipient: &str,
    body: &[u8],
) -> Result<(u16, Duration)> {
    let (read, mut write) = connect(addr, source).await?.into_split();
    let mut read = BufReader::new(read);
    expect(reply(&mut read).await?, 220, "greeting")?;
    for (line, code) in [
        ("EHLO load.example".to_owned(), 250),
        (format!("MAIL FROM:<{SENDER}>"), 250),
        (format!("RCPT TO:<{recipient}>"), 250),
    ] {
        expect(command(&mut write, &mut read, &line).await?, code, &line)?;
    }
    let code = command(&mut write, &mut read, "DATA").await?;
    if code != 354 {
        return Ok((code, Duration::ZERO));
    }
    write.write_all(body).await?;
    let end = Instant::now();
    let code = reply(&mut read).await?;
    let latency = end.elapsed();
    let _ = command(&mut write, &mut read, "QUIT").await;
    Ok((code, latency))
}

/// DATA opened, a line a second for [`TRICKLE_FOR`], then the end.
async fn trickle(addr: SocketAddr, source: IpAddr, recipient: &str) -> Result<u16> {
    let (read, mut write) = connect(addr, source).await?.into_split();
    let mut read = BufReader::new(read);
    expect(reply(&mut read).await?, 220, "greeting")?;
    for (line, code) in [
        ("EHLO trickle.example".to_owned(), 250),
        (format!("MAIL FROM:<{SENDER}>"), 250),
        (format!("RCPT TO:<{recipient}>"), 250),
    ] {
        expect(command(&mut write, &mut read, &line).await?, code, &line)?;
    }
    let code = command(&mut write, &mut read, "DATA").await?;
    if code != 354 {
        return Ok(code);
    }
    write
        .write_all(
            format!("From: <{SENDER}>\r\nTo: <{recipient}>\r\nSubject: slow\r\n\r\n").as_bytes(),
        )
        .await?;
    let until = Instant::now() + TRICKLE_FOR;
    while Instant::now() < until {
        write.write_all(b"a line, slowly\r\n").await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    write.write_all(b".\r\n").await?;
    let code = reply(&mut read).await?;
    let _ = command(&mut write, &mut read, "QUIT").await;
    Ok(code)
}

/// A [`LARGE_MIB`] MB message: a short text and a base64 attachment
/// (dot-terminated).
fn large_message(recipient: &str) -> Vec<u8> {
    const LINE: usize = 76;
    let mut text = format!(
        "From: <{SENDER}>\r\nTo: <{recipient}>\r\nSubject: large\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n\
         a large attachment\r\n--b\r\nContent-Type: application/octet-stream\r\n\
         Content-Disposition: attachment; filename=large.bin\r\n\
         Content-Transfer-Encoding: base64\r\n\r\n"
    )
    .into_bytes();
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let target = LARGE_MIB * 1000 * 1000;
    let mut n = 0_usize;
    while text.len() + LINE + 2 < target {
        for _ in 0..LINE {
            text.push(alphabet[n % alphabet.len()]);
            n = n.wrapping_mul(31).wrapping_add(7) % 1_000_003;
        }
        text.extend_from_slice(b"\r\n");
    }
    text.extend_from_slice(b"--b--\r\n.\r\n");
    text
}

fn ms(duration: Option<Duration>) -> String {
    duration.map_or_else(
        || "-".to_owned(),
        |d| format!("{:.1} ms", d.as_secs_f64() * 1000.0),
    )
}
