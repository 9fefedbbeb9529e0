//! `cargo xtask scale-check`: several of each process on one database and
//! one object store, bounded and on loopback (docs/operations.md "Running
//! several of each").
//!
//! The test kit's launcher starts 2 APIs (`--no-jobs`), 2 SMTP ingests
//! (each with its own spool directory) and 2 job processes
//! (`sealpost-api --jobs-only`) on a fresh database, with the blobs in a
//! moto bucket. This command runs the HTTPS webhook receiver itself (the
//! stack's `hooks.test` points at it) so it can count event ids.
//!
//! 1. An Enterprise account, an address, a webhook for every event and an
//!    iOS push token (the APNs stand-in is this command's too).
//! 2. A long-poll wait on API #1 wakes for a message sent through ingest #2.
//! 3. [`PHASE_ONE`] small messages (every tenth with an attachment) from
//!    [`CLIENTS`] concurrent SMTP clients split over both ingests: each is
//!    stored exactly once (the list, read through API #2 and opened with the
//!    address's key, holds each subject once), an attachment reads back
//!    through both APIs, each `message.received` event reaches the
//!    receiver exactly once, and the pushes' counts (bursts are coalesced
//!    into one push a minute) add up to each message once.
//! 4. [`PHASE_TWO`] more while one API, one ingest and one job process are
//!    killed with SIGKILL a third of the way in; clients of the dead ingest
//!    carry on at the other. Every message answered 250 is stored (read
//!    through the surviving API), and every stored message's event reaches
//!    the receiver at least once (a dead sender's lease runs out after 60
//!    seconds and the survivor sends it).
//!
//! Prints each step; fails on the first broken promise.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use sealpost_client::Client;
use sealpost_client::notifications::PushPlatform;
use sealpost_client::sealing::{self, AddressKeys};
use sealpost_client::types::{CreateAddressRequest, PageParams};
use sealpost_kernel::AddressId;
use sealpost_seal::{AccountKeys, SealedBox, context};
use sealpost_testkit::push::{ApnsStandIn, TestCa};
use sealpost_testkit::receiver::Receiver;
use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

use crate::harness::{
    Launched, Profile, StackOptions, build_stack, command, leftover_of_dead_run,
    register_enterprise, reply, wait_smtp,
};
use crate::postgres;

const PHASE_ONE: usize = 2_000;
const PHASE_TWO: usize = 1_000;
const CLIENTS: usize = 8;
/// Messages per SMTP session before a client reconnects.
const PER_SESSION: usize = 25;
/// How long the events may take to reach the receiver (beyond a lease).
const DELIVERY_LIMIT: Duration = Duration::from_secs(300);
const SENDER: &str = "scale@example.com";
const PUSH_TOKEN: &str = "scale-check-phone";

pub fn run(runtime: &Runtime) -> Result<ExitCode> {
    // reqwest is built without a default TLS provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let root = postgres::workspace_root();
    let target = sealpost_devprocess::target_dir(&root);
    build_stack(&root, Profile::Debug)?;
    let server = postgres::ensure_server()?;
    let scale_dir = target.join("scale-check");
    std::fs::create_dir_all(&scale_dir)?;
    for entry in std::fs::read_dir(&scale_dir)?.flatten() {
        let name = entry.file_name();
        if name.to_str().is_some_and(leftover_of_dead_run) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let run_dir = scale_dir.join(std::process::id().to_string());
    std::fs::create_dir_all(&run_dir)?;
    let outcome = runtime.block_on(check(&target, &server, &run_dir));
    match outcome {
        Ok(()) => {
            let _ = std::fs::remove_dir_all(&run_dir);
            println!("scale-check: passed");
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!(
                "scale-check: FAILED: {error:#} (the processes' logs are in {})",
                run_dir.display()
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

fn step(text: &str) {
    println!("scale-check: {text}");
}

async fn check(target: &std::path::Path, server: &str, run_dir: &std::path::Path) -> Result<()> {
    let receiver = Receiver::start(200).await;
    let ca_file = run_dir.join("webhook-ca.pem");
    std::fs::write(&ca_file, &receiver.ca_pem)?;
    let push_ca = TestCa::new();
    let apns = ApnsStandIn::start(&push_ca).await;
    let push_ca_file = run_dir.join("push-ca.pem");
    std::fs::write(&push_ca_file, &push_ca.ca_pem)?;
    let env: Vec<(String, String)> = [
        ("SEALPOST_DOMAINS", "mail.localhost".to_owned()),
        ("SEALPOST_SMTP_CONNECT_RATE", "0".to_owned()),
        ("SEALPOST_SMTP_MAX_SESSIONS_PER_IP", "1000".to_owned()),
        ("SEALPOST_SMTP_MAX_SESSIONS_PER_IPV4_24", "1000".to_owned()),
        (
            "SEALPOST_WEBHOOK_RESOLVE",
            format!("hooks.test={}", receiver.addr),
        ),
        ("SEALPOST_WEBHOOK_CA_FILE", ca_file.display().to_string()),
        ("SEALPOST_APNS_URL", apns.url()),
        ("SEALPOST_PUSH_CA_FILE", push_ca_file.display().to_string()),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect();
    step("starting 2 APIs, 2 SMTP ingests and 2 job processes on one database and one moto bucket");
    let logs = run_dir.join("logs");
    let stack = tokio::task::block_in_place(|| {
        Launched::start(
            target,
            server,
            &StackOptions {
                launcher_args: &[
                    "--count",
                    "api=2,smtp=2,jobs=2",
                    "--keep-going",
                    "--blobs",
                    "s3",
                ],
                profile: Profile::Debug,
                processes: &["api", "jobs", "smtp"],
                env,
                logs,
                database_query: None,
            },
        )
    })?;
    let apis = stack.apis()?;
    let smtps = stack.smtps()?;
    ensure!(
        apis.len() == 2 && smtps.len() == 2,
        "the launcher started {} APIs and {} ingests",
        apis.len(),
        smtps.len()
    );
    for smtp in &smtps {
        wait_smtp(*smtp).await?;
    }

    let (keys, token) = register_enterprise(&apis[0], stack.database_url()?).await?;
    let one = Client::new(&apis[0])?.with_token(token.clone());
    let two = Client::new(&apis[1])?.with_token(token);
    let domain = one
        .domains()
        .await?
        .domains
        .first()
        .map(|offered| offered.domain.clone())
        .context("the service offers no domain")?;
    let id = sealing::new_address_id();
    let request = CreateAddressRequest::new(&id, domain)
        .with_meta(&sealing::seal_label(&keys, &id, "scale"))
        .with_public_key(&keys.address_public_key(id.as_str(), 0));
    let address = one.create_address(&request).await?;
    create_webhook(&one, &keys).await?;
    one.register_push_token(PUSH_TOKEN, PushPlatform::Ios)
        .await?;
    let recipient = address.email_address.clone();
    step(&format!(
        "account, address, webhook and push token made through {}",
        apis[0]
    ));

    // A wait on API #1, in flight before the mail arrives through ingest #2.
    let waiter = {
        let one = one.clone();
        let id = id.clone();
        tokio::spawn(async move { one.wait_for_messages(&id, None, 60).await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let wake = Batch::new(&recipient, "wake", 0..1);
    let acked = wake.send(smtps[1], &AtomicUsize::new(0)).await;
    ensure!(
        acked.len() == 1,
        "ingest #2 did not take the wake-up message"
    );
    let woke = waiter.await??.context("the wait on API #1 timed out")?;
    let subjects = subjects(&keys, &id, &woke.messages)?;
    ensure!(
        subjects == vec!["scale wake-0".to_owned()],
        "the wait on API #1 answered {subjects:?}"
    );
    step("a long-poll wait on API #1 woke for mail through ingest #2");

    // Phase one: no kills.
    let started = Instant::now();
    let acked = load(&recipient, "one", PHASE_ONE, &smtps, None).await?;
    ensure!(
        acked.len() == PHASE_ONE,
        "{} of {PHASE_ONE} messages answered 250 with nothing killed",
        acked.len()
    );
    step(&format!(
        "{PHASE_ONE} messages from {CLIENTS} clients over both ingests in {:.1?}",
        started.elapsed()
    ));
    let stored = list_stored(&two, &keys, &id).await?;
    for n in 0..PHASE_ONE {
        let count = stored.subjects.get(&format!("scale one-{n}")).copied();
        ensure!(count == Some(1), "message one-{n} stored {count:?} times");
    }
    step("each stored exactly once (listed through API #2)");
    read_attachment(&one, &two, &keys, &id, &stored).await?;
    step("an attachment read back from the object store through both APIs");
    let expected: BTreeSet<String> = stored.ids.iter().cloned().collect();
    let deliveries = wait_for_events(&receiver, &expected).await?;
    if let Some((event, times)) = deliveries.iter().find(|(_, times)| **times != 1) {
        bail!("event {event} delivered {times} times with nothing killed");
    }
    step(&format!(
        "{} message.received events, each delivered exactly once",
        expected.len()
    ));
    let (pushes, counted) = wait_for_pushes(&apns, expected.len()).await?;
    ensure!(
        counted == expected.len(),
        "the pushes counted {counted} new messages for {} received",
        expected.len()
    );
    step(&format!(
        "{pushes} pushes counted each of the {counted} messages once"
    ));

    // Phase two: one of each kind killed with SIGKILL mid-load.
    let victims = [
        ("api", stack.pids("api")?[1]),
        ("smtp", stack.pids("smtp")?[1]),
        ("jobs", stack.pids("jobs")?[1]),
    ];
    let acked = load(&recipient, "two", PHASE_TWO, &smtps, Some(&victims)).await?;
    step(&format!(
        "{} of {PHASE_TWO} messages answered 250 while API #2, ingest #2 and job process #2 were killed",
        acked.len()
    ));
    ensure!(
        Client::new(&apis[1])?.health().await.is_err(),
        "API #2 still answers after SIGKILL"
    );
    let stored = list_stored(&one, &keys, &id).await?;
    for n in &acked {
        ensure!(
            stored.subjects.contains_key(&format!("scale two-{n}")),
            "message two-{n} was answered 250 but is not stored"
        );
    }
    step(&format!(
        "every acknowledged message stored ({} in all, listed through API #1)",
        stored.ids.len()
    ));
    let expected: BTreeSet<String> = stored.ids.iter().cloned().collect();
    let deliveries = wait_for_events(&receiver, &expected).await?;
    let again = deliveries.values().filter(|times| **times > 1).count();
    step(&format!(
        "every event delivered at least once ({again} delivered again after the kill)"
    ));
    drop(stack);
    Ok(())
}

async fn create_webhook(client: &Client, keys: &AccountKeys) -> Result<()> {
    let id = sealing::new_webhook_id();
    let meta = SealedBox::seal(
        &keys.vault_public_key(),
        &context::webhook_meta(id.as_str()),
        b"Scale check receiver",
    );
    client
        .create_webhook(&id, "https://hooks.test/scale", &["*"], &meta)
        .await?;
    Ok(())
}

/// Sends `count` messages named `scale <phase>-<n>` from [`CLIENTS`]
/// clients, client `k` on ingest `k % 2`; with `victims`, kills them once
/// a third are acknowledged and moves the dead ingest's clients to the
/// other. Answers the numbers acknowledged with 250.
async fn load(
    recipient: &str,
    phase: &'static str,
    count: usize,
    smtps: &[SocketAddr],
    victims: Option<&[(&str, u32)]>,
) -> Result<BTreeSet<usize>> {
    let acked_count = Arc::new(AtomicUsize::new(0));
    let killed = Arc::new(AtomicBool::new(false));
    let killer = victims.map(|victims| {
        let victims = victims
            .iter()
            .map(|(name, pid)| (name.to_string(), *pid))
            .collect::<Vec<_>>();
        let (acked_count, killed) = (acked_count.clone(), killed.clone());
        tokio::spawn(async move {
            while acked_count.load(Ordering::Relaxed) < count / 3 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            for (name, pid) in &victims {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
                println!("scale-check: killed {name} #2 (pid {pid}) with SIGKILL");
            }
            killed.store(true, Ordering::Relaxed);
        })
    });
    let mut clients = Vec::new();
    for k in 0..CLIENTS {
        let numbers: Vec<usize> = (k..count).step_by(CLIENTS).collect();
        let (recipient, smtps) = (recipient.to_owned(), smtps.to_vec());
        let (acked_count, killed) = (acked_count.clone(), killed.clone());
        let survives = victims.is_none();
        clients.push(tokio::spawn(async move {
            let mut acked = BTreeSet::new();
            let mut at = 0;
            let mut failures = 0;
            while at < numbers.len() {
                let end = (at + PER_SESSION).min(numbers.len());
                // After the kill everyone uses ingest #1.
                let ingest = if killed.load(Ordering::Relaxed) {
                    0
                } else {
                    k % smtps.len()
                };
                let batch = Batch::new(&recipient, phase, numbers[at..end].iter().copied());
                let taken = batch.send(smtps[ingest], &acked_count).await;
                let sent = taken.len();
                acked.extend(taken);
                // Resume after the last acknowledged; the one cut short is
                // sent again (it may then be stored twice: allowed).
                at += sent;
                if at < end {
                    failures += 1;
                    if survives || failures > 50 {
                        return Err(anyhow!(
                            "client {k}: ingest {} refused or dropped message {}",
                            ingest + 1,
                            numbers[at]
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            Ok(acked)
        }));
    }
    let mut acked = BTreeSet::new();
    for client in clients {
        acked.extend(client.await??);
    }
    if let Some(killer) = killer {
        killer.await?;
    }
    Ok(acked)
}

/// Messages for one SMTP session.
struct Batch {
    recipient: String,
    messages: Vec<(usize, Vec<u8>)>,
}

impl Batch {
    fn new(recipient: &str, phase: &str, numbers: impl Iterator<Item = usize>) -> Batch {
        Batch {
            recipient: recipient.to_owned(),
            messages: numbers.map(|n| (n, message(recipient, phase, n))).collect(),
        }
    }

    /// The numbers acknowledged with 250, in order, until the first
    /// failure.
    async fn send(&self, smtp: SocketAddr, acked_count: &AtomicUsize) -> Vec<usize> {
        let mut acked = Vec::new();
        let _ = self.try_send(smtp, acked_count, &mut acked).await;
        acked
    }

    async fn try_send(
        &self,
        smtp: SocketAddr,
        acked_count: &AtomicUsize,
        acked: &mut Vec<usize>,
    ) -> Result<()> {
        let (read, mut write) = TcpStream::connect(smtp).await?.into_split();
        let mut read = BufReader::new(read);
        ensure!(reply(&mut read).await? == 220, "no greeting");
        ensure!(
            command(&mut write, &mut read, "EHLO scale.example").await? == 250,
            "EHLO"
        );
        for (n, raw) in &self.messages {
            ensure!(
                command(&mut write, &mut read, &format!("MAIL FROM:<{SENDER}>")).await? == 250,
                "MAIL"
            );
            ensure!(
                command(
                    &mut write,
                    &mut read,
                    &format!("RCPT TO:<{}>", self.recipient)
                )
                .await?
                    == 250,
                "RCPT"
            );
            ensure!(command(&mut write, &mut read, "DATA").await? == 354, "DATA");
            write.write_all(raw).await?;
            ensure!(reply(&mut read).await? == 250, "end of data");
            acked.push(*n);
            acked_count.fetch_add(1, Ordering::Relaxed);
        }
        let _ = command(&mut write, &mut read, "QUIT").await;
        Ok(())
    }
}

/// A small message `scale <phase>-<n>`; every tenth carries a small text
/// attachment, so the object store holds some.
fn message(recipient: &str, phase: &str, n: usize) -> Vec<u8> {
    let headers = format!(
        "From: <{SENDER}>\r\nTo: <{recipient}>\r\nSubject: scale {phase}-{n}\r\n\
         Date: Fri, 27 Nov 2026 00:00:00 +0000\r\nMessage-ID: <{phase}-{n}@scale.example>\r\n\
         MIME-Version: 1.0\r\n"
    );
    let text = if n.is_multiple_of(10) {
        format!(
            "{headers}Content-Type: multipart/mixed; boundary=\"b\"\r\n\r\n--b\r\n\
             Content-Type: text/plain\r\n\r\nMessage {n}.\r\n--b\r\n\
             Content-Type: text/plain; name=\"n.txt\"\r\n\
             Content-Disposition: attachment; filename=\"n.txt\"\r\n\r\n{}\r\n--b--\r\n",
            attachment(phase, n)
        )
    } else {
        format!("{headers}Content-Type: text/plain\r\n\r\nMessage {n}.\r\n")
    };
    format!("{text}.\r\n").into_bytes()
}

fn attachment(phase: &str, n: usize) -> String {
    format!("attachment of {phase}-{n}")
}

/// What an address holds: how many times each subject, and every id.
struct Stored {
    subjects: BTreeMap<String, usize>,
    ids: Vec<String>,
    /// (id, subject) of the messages, for picking one with an attachment.
    messages: Vec<(sealpost_client::types::Message, String)>,
}

async fn list_stored(client: &Client, keys: &AccountKeys, id: &AddressId) -> Result<Stored> {
    let mut found = Stored {
        subjects: BTreeMap::new(),
        ids: Vec::new(),
        messages: Vec::new(),
    };
    let mut page = PageParams::first(200);
    loop {
        let listed = client.list_messages(id, &page).await?;
        let opened = subjects(keys, id, &listed.messages)?;
        for (message, subject) in listed.messages.into_iter().zip(opened) {
            *found.subjects.entry(subject.clone()).or_default() += 1;
            found.ids.push(message.id.to_string());
            found.messages.push((message, subject));
        }
        match listed.next_cursor {
            Some(cursor) => page.cursor = Some(cursor),
            None => return Ok(found),
        }
    }
}

fn subjects(
    keys: &AccountKeys,
    id: &AddressId,
    messages: &[sealpost_client::types::Message],
) -> Result<Vec<String>> {
    let address_keys = AddressKeys::derive(keys, id);
    messages
        .iter()
        .map(|message| {
            let content = sealing::open_message(&address_keys, message)
                .map_err(|error| anyhow!("opening {}: {error}", message.id))?;
            Ok(content.subject.unwrap_or_default())
        })
        .collect()
}

/// Message `scale one-0` read through API #1 and its attachment through
/// API #2, opened and compared.
async fn read_attachment(
    one: &Client,
    two: &Client,
    keys: &AccountKeys,
    id: &AddressId,
    stored: &Stored,
) -> Result<()> {
    let (listed, _) = stored
        .messages
        .iter()
        .find(|(_, subject)| subject == "scale one-0")
        .context("scale one-0 is not listed")?;
    let message = one.get_message(&listed.id).await?;
    let address_keys = AddressKeys::derive(keys, id);
    let content = sealing::open_message(&address_keys, &message)
        .map_err(|error| anyhow!("opening one-0: {error}"))?;
    let info = content
        .attachments
        .first()
        .context("one-0 lists no attachment")?;
    let sealed = two.get_attachment(&message.id, info.index).await?;
    let bytes = sealing::open_attachment(&address_keys, &message, info.index, &sealed)
        .map_err(|error| anyhow!("opening one-0's attachment: {error}"))?;
    ensure!(
        bytes == attachment("one", 0).as_bytes(),
        "one-0's attachment reads back as {} bytes of something else",
        bytes.len()
    );
    Ok(())
}

/// Until every message in `expected` has had its `message.received` event
/// delivered; answers how many times each event id came.
async fn wait_for_events(
    receiver: &Receiver,
    expected: &BTreeSet<String>,
) -> Result<BTreeMap<String, usize>> {
    let deadline = Instant::now() + DELIVERY_LIMIT;
    loop {
        let (times, messages) = events(receiver)?;
        let missing = expected.difference(&messages).count();
        if missing == 0 {
            return Ok(times);
        }
        if Instant::now() > deadline {
            bail!(
                "{missing} of {} message.received events never arrived within {DELIVERY_LIMIT:?}",
                expected.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// How many times each event id arrived, and the message ids they named.
fn events(receiver: &Receiver) -> Result<(BTreeMap<String, usize>, BTreeSet<String>)> {
    let received = receiver
        .received
        .lock()
        .map_err(|_| anyhow!("the receiver's log is poisoned"))?
        .clone();
    let mut times = BTreeMap::new();
    let mut messages = BTreeSet::new();
    for request in received {
        let event: Value = serde_json::from_slice(&request.body).context("an event body")?;
        let id = event["id"].as_str().context("an event without id")?;
        *times.entry(id.to_owned()).or_default() += 1;
        if event["type"] == "message.received" {
            let message = event["payload"]["messageId"]
                .as_str()
                .context("message.received without messageId")?;
            messages.insert(message.to_owned());
        }
    }
    Ok((times, messages))
}

/// Until the pushes to [`PUSH_TOKEN`] count `expected` new messages (or
/// more); answers how many pushes and the sum of their counts.
async fn wait_for_pushes(apns: &ApnsStandIn, expected: usize) -> Result<(usize, usize)> {
    // A burst's push leaves a minute after its first message.
    let deadline = Instant::now() + DELIVERY_LIMIT;
    loop {
        let pushes: Vec<Value> = apns
            .requests()
            .iter()
            .filter(|request| request.path.ends_with(PUSH_TOKEN))
            .map(|request| request.json())
            .filter(|push| push["kind"] == "newMail")
            .collect();
        let counted: usize = pushes
            .iter()
            .map(|push| push["count"].as_u64().map_or(0, |count| count as usize))
            .sum();
        if counted >= expected {
            return Ok((pushes.len(), counted));
        }
        if Instant::now() > deadline {
            bail!("the pushes counted {counted} of {expected} messages within {DELIVERY_LIMIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
