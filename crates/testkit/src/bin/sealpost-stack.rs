//! `sealpost-stack`: a whole Sealpost stack as processes on free loopback
//! ports, for the tests and tools that need one from outside Rust (the
//! SDK's and the browser's tests, manual checks):
//!
//! - a fresh PostgreSQL database on the test server (dropped at the end);
//! - `sealpost-api --no-jobs`, `sealpost-api --jobs-only`, `sealpost-smtp`
//!   and `sealpost-dns`, started from the binaries beside this one;
//! - the loopback stand-ins of the tests, in this process: the public DNS
//!   (`SEALPOST_DNS_RESOLVER`), an SMTP relay that accepts everything
//!   (`SEALPOST_SMTP_RELAY`), an HTTPS webhook receiver at `hooks.test`
//!   (`SEALPOST_WEBHOOK_RESOLVE`), APNs and FCM (`SEALPOST_APNS_*`,
//!   `SEALPOST_FCM_*`), all trusted through one test CA; and the payment
//!   providers' APIs, Stripe (`SEALPOST_STRIPE_*`) and BTCPay
//!   (`SEALPOST_BTCPAY_*`), on plain loopback HTTP, their notice secrets
//!   those of `sealpost_testkit::payments`.
//!
//! When every part answers, it prints one JSON line on stdout with their
//! addresses (`api`, `smtp`, `dns`, `publicDns`, `relay`, `webhookReceiver`,
//! `apns`, `fcm`, `stripe`, `btcpay`, `database`, `databaseUrl`, `s3`) and the processes' ids
//! (`pids`), and with `--env FILE` writes the addresses as `KEY=value`
//! lines. Every message the relay accepts is also written to the directory
//! `relayDir` (`SEALPOST_STACK_RELAY_DIR`): `000001.eml` with its envelope
//! in `000001.json` (`{mailFrom, recipients}`), and so on. The public
//! DNS's records are edited over its control port (`dnsControl`,
//! `SEALPOST_STACK_DNS_CONTROL`; one command a line, see
//! `sealpost_testkit::dns::DnsControl`), and `mxHost`
//! (`SEALPOST_STACK_MX_HOST`) is the MX own domains must show to be live.
//! In-app support is on: the stack makes a support key pair, runs the API
//! with its public key (`SEALPOST_SUPPORT_KEY`, `supportKey`) and writes
//! the pair as a keyring `sealpost staff` reads (`staffKeyFile`,
//! `SEALPOST_STACK_STAFF_KEY_FILE`: pass it as `SEALPOST_STAFF_KEY_FILE`),
//! and, when it starts the API, makes a staff token with every role with
//! `sealpost-api staff-token create` (`staffToken`,
//! `SEALPOST_STACK_STAFF_TOKEN`: pass it as `SEALPOST_STAFF_TOKEN`).
//! `--set SEALPOST_SUPPORT_KEY=...` replaces the key (`staffKeyFile` is
//! then null: the keyring does not hold it).
//! It runs until SIGINT or SIGTERM (or, with `--until-stdin-closes`,
//! until its standard input ends), then stops every process it started and
//! drops the database.
//!
//! For the tools that measure or probe the stack (`cargo xtask api-check`,
//! the SMTP benchmarks): `--bin-dir DIR` takes the binaries from another
//! build (a release one), `--only api,jobs,smtp,dns` starts some of the
//! processes, `--set NAME=VALUE` adds to or overrides the children's
//! environment, `--logs DIR` writes each process's output to `DIR/<name>.log`
//! and `--database-query QUERY` appends `?QUERY` to their `DATABASE_URL`.
//!
//! `--count api=2,smtp=2,jobs=2` starts that many of a kind (one each by
//! default), each API and ingest on its own port and each ingest with its
//! own spool directory; all share the database, the blob store and the
//! server key. The ready line then also has `apis` and `smtps` (every
//! address) and `allPids` (every process id by kind; `pids` keeps the
//! first of each), and the logs of the second and later are
//! `<name>-<n>.log`. `--keep-going` keeps the stack up when one of its
//! processes exits (a test that kills some on purpose).
//!
//! `--blobs s3` keeps the sealed blobs in object storage instead of a
//! directory: a moto server (`sealpost_testkit::moto`) on loopback with one
//! bucket, `SEALPOST_BLOB_URL` and the `AWS_*` variables pointing at it
//! (the ready line then has `s3`, its endpoint); `--blobs dir` is the default.
//!
//! `cargo xtask stack` builds the binaries and runs it; `cargo xtask test`
//! starts one for the TypeScript tests.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool reports on stdout and stderr"
)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use sealpost_testkit::dns::{DnsControl, PublicDns};
use sealpost_testkit::moto::MotoServer;
use sealpost_testkit::payments::{self, PaymentStandIn};
use sealpost_testkit::push::{ApnsStandIn, FCM_TEST_KEY, FcmStandIn, TestCa};
use sealpost_testkit::receiver::Receiver;
use sealpost_testkit::relay::{Behaviour, TestRelay};
use sealpost_testkit::{StackDatabase, free_port};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::signal::unix::{SignalKind, signal};

/// How long the processes get to answer.
const START_TIMEOUT: Duration = Duration::from_secs(60);

const USAGE: &str = "usage: sealpost-stack [--bin-dir DIR] [--env FILE] [--until-stdin-closes] \
     [--only api,jobs,smtp,dns] [--set NAME=VALUE]... [--logs DIR] [--database-query QUERY] \
     [--blobs dir|s3] [--count api=N,smtp=N,jobs=N] [--keep-going]";

/// The processes a stack may run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Process {
    /// `sealpost-api --no-jobs`.
    Api,
    /// `sealpost-api --jobs-only`.
    Jobs,
    /// `sealpost-smtp`.
    Smtp,
    /// `sealpost-dns`.
    Dns,
}

impl Process {
    const ALL: [Process; 4] = [Process::Api, Process::Jobs, Process::Smtp, Process::Dns];

    fn name(self) -> &'static str {
        match self {
            Process::Api => "api",
            Process::Jobs => "jobs",
            Process::Smtp => "smtp",
            Process::Dns => "dns",
        }
    }

    fn program(self) -> (&'static str, &'static [&'static str]) {
        match self {
            Process::Api => ("sealpost-api", &["--no-jobs"]),
            Process::Jobs => ("sealpost-api", &["--jobs-only"]),
            Process::Smtp => ("sealpost-smtp", &[]),
            Process::Dns => ("sealpost-dns", &[]),
        }
    }

    fn parse(name: &str) -> Result<Process, String> {
        Process::ALL
            .into_iter()
            .find(|process| process.name() == name)
            .ok_or_else(|| format!("unknown process {name} (api, jobs, smtp, dns)"))
    }
}

struct Options {
    bin_dir: PathBuf,
    env_file: Option<PathBuf>,
    until_stdin_closes: bool,
    processes: Vec<Process>,
    /// Added to the children's environment after the stack's own settings.
    set: Vec<(String, String)>,
    logs: Option<PathBuf>,
    database_query: Option<String>,
    /// Blobs in a moto S3 bucket rather than a directory.
    s3_blobs: bool,
    /// How many of each process (1 unless given).
    counts: Vec<(Process, usize)>,
    /// A process exiting does not stop the stack.
    keep_going: bool,
}

impl Options {
    fn count(&self, process: Process) -> usize {
        self.counts
            .iter()
            .find(|(counted, _)| *counted == process)
            .map_or(1, |(_, count)| *count)
    }
}

/// `api=2,smtp=2`: a count of at least one per kind.
fn parse_counts(value: &str) -> Result<Vec<(Process, usize)>, String> {
    value
        .split(',')
        .map(|part| {
            let (name, count) = part
                .split_once('=')
                .ok_or_else(|| format!("--count {part}: not NAME=N"))?;
            let count: usize = count
                .parse()
                .ok()
                .filter(|count| (1..=16).contains(count))
                .ok_or_else(|| format!("--count {part}: N is 1 to 16"))?;
            Ok((Process::parse(name)?, count))
        })
        .collect()
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        bin_dir: std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_path_buf))
            .ok_or("cannot find this program's directory")?,
        env_file: None,
        until_stdin_closes: false,
        processes: Process::ALL.to_vec(),
        set: Vec::new(),
        logs: None,
        database_query: None,
        s3_blobs: false,
        counts: Vec::new(),
        keep_going: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bin-dir" => options.bin_dir = args.next().ok_or("--bin-dir needs a value")?.into(),
            "--env" => options.env_file = Some(args.next().ok_or("--env needs a value")?.into()),
            "--until-stdin-closes" => options.until_stdin_closes = true,
            "--only" => {
                options.processes = args
                    .next()
                    .ok_or("--only needs a value")?
                    .split(',')
                    .map(Process::parse)
                    .collect::<Result<_, _>>()?;
            }
            "--set" => {
                let value = args.next().ok_or("--set needs NAME=VALUE")?;
                let (name, value) = value
                    .split_once('=')
                    .ok_or_else(|| format!("--set {value}: not NAME=VALUE"))?;
                options.set.push((name.to_owned(), value.to_owned()));
            }
            "--logs" => options.logs = Some(args.next().ok_or("--logs needs a value")?.into()),
            "--database-query" => {
                options.database_query = Some(args.next().ok_or("--database-query needs a value")?);
            }
            "--blobs" => {
                options.s3_blobs = match args.next().as_deref() {
                    Some("s3") => true,
                    Some("dir") => false,
                    _ => return Err("--blobs needs dir or s3".to_owned()),
                };
            }
            "--count" => {
                options.counts = parse_counts(&args.next().ok_or("--count needs a value")?)?;
            }
            "--keep-going" => options.keep_going = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(options)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    let options = match options() {
        Ok(options) => options,
        Err(error) => {
            eprintln!("sealpost-stack: {error}");
            return std::process::ExitCode::from(2);
        }
    };
    let database = StackDatabase::create().await;
    let outcome = run(&options, &database).await;
    database.drop_now().await;
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sealpost-stack: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(options: &Options, database: &StackDatabase) -> Result<(), String> {
    let work = std::env::temp_dir().join(format!("sealpost-stack-{}", std::process::id()));
    std::fs::create_dir_all(&work)
        .map_err(|error| format!("creating {}: {error}", work.display()))?;

    // The stand-ins, trusted through one CA.
    let public_dns = PublicDns::start(&[]).await;
    // Its records, editable from outside (the web client's own-domain test).
    let dns_control = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|error| format!("the DNS control port: {error}"))?;
    let dns_control_addr = dns_control
        .local_addr()
        .map_err(|error| error.to_string())?;
    tokio::spawn(serve_dns_control(dns_control, public_dns.control()));
    let relay = TestRelay::start(Behaviour::Accept).await;
    // What the relay accepts, as files a test in another process can read.
    let relay_dir = work.join("relayed");
    std::fs::create_dir_all(&relay_dir)
        .map_err(|error| format!("creating {}: {error}", relay_dir.display()))?;
    let relay_mirror = relay.mirror_to(relay_dir.clone());
    let receiver = Receiver::start(200).await;
    let ca = TestCa::new();
    let apns = ApnsStandIn::start(&ca).await;
    let fcm = FcmStandIn::start(&ca).await;
    let stripe = PaymentStandIn::stripe().await;
    let btcpay = PaymentStandIn::btcpay().await;
    let push_ca = write(&work, "push-ca.pem", &ca.ca_pem)?;
    let webhook_ca = write(&work, "webhook-ca.pem", &receiver.ca_pem)?;
    let apns_key = rcgen::KeyPair::generate().map_err(|error| error.to_string())?;
    let apns_key_file = write(&work, "AuthKey_STACK00001.p8", &apns_key.serialize_pem())?;
    let fcm_credentials = write(
        &work,
        "fcm-service-account.json",
        &serde_json::json!({
            "type": "service_account",
            "project_id": "sealpost-stack",
            "private_key_id": "key-1",
            "private_key": FCM_TEST_KEY,
            "client_email": "push@sealpost-stack.iam.gserviceaccount.com",
            "token_uri": fcm.token_url(),
        })
        .to_string(),
    )?;

    // The support team's key pair, in a keyring `sealpost staff` reads
    // (`--key-file` / `SEALPOST_STAFF_KEY_FILE`): the API runs with its
    // public key as `SEALPOST_SUPPORT_KEY`, so in-app support is on.
    let (stack_support_key, keyring_path) = support_keyring(&work)?;

    let moto = if options.s3_blobs {
        Some(MotoServer::start().await)
    } else {
        None
    };
    let apis: Vec<SocketAddr> = (0..options.count(Process::Api))
        .map(|_| SocketAddr::from(([127, 0, 0, 1], free_port())))
        .collect();
    let smtps: Vec<SocketAddr> = (0..options.count(Process::Smtp))
        .map(|_| SocketAddr::from(([127, 0, 0, 1], free_port())))
        .collect();
    let (api, smtp) = (apis[0], smtps[0]);
    let dns = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let database_url = match &options.database_query {
        Some(query) => format!("{}?{query}", database.url),
        None => database.url.clone(),
    };
    let mut env: Vec<(String, String)> = [
        ("DATABASE_URL", database_url.clone()),
        ("SEALPOST_HTTP_ADDR", api.to_string()),
        ("SEALPOST_PUBLIC_URL", format!("http://{api}")),
        ("SEALPOST_SMTP_ADDR", smtp.to_string()),
        ("SEALPOST_DNS_ADDR", dns.to_string()),
        (
            "SEALPOST_SERVER_KEY",
            sealpost_seal::ServerKeys::generate_text(),
        ),
        ("SEALPOST_BILLING_SANDBOX", "true".to_owned()),
        ("SEALPOST_SUPPORT_KEY", stack_support_key),
        ("SEALPOST_EDGE_RATE", "100000".to_owned()),
        // Browser tests register and send from fresh accounts on loopback.
        ("SEALPOST_REGISTRATIONS_PER_NETWORK", "100000".to_owned()),
        ("SEALPOST_NEW_ACCOUNT_SENDS", "100000".to_owned()),
        (
            "SEALPOST_BLOB_DIR",
            work.join("blobs").display().to_string(),
        ),
        (
            "SEALPOST_SMTP_SPOOL_DIR",
            work.join("spool").display().to_string(),
        ),
        ("SEALPOST_DNS_RESOLVER", public_dns.addr().to_string()),
        ("SEALPOST_SMTP_RELAY", relay.url()),
        (
            "SEALPOST_WEBHOOK_RESOLVE",
            format!("hooks.test={}", receiver.addr),
        ),
        ("SEALPOST_WEBHOOK_CA_FILE", webhook_ca.display().to_string()),
        (
            "SEALPOST_APNS_KEY_FILE",
            apns_key_file.display().to_string(),
        ),
        ("SEALPOST_APNS_KEY_ID", "STACK00001".to_owned()),
        ("SEALPOST_APNS_TEAM_ID", "STACKTEAM1".to_owned()),
        ("SEALPOST_APNS_TOPIC", "app.sealpost.stack".to_owned()),
        ("SEALPOST_APNS_URL", apns.url()),
        (
            "SEALPOST_FCM_CREDENTIALS_FILE",
            fcm_credentials.display().to_string(),
        ),
        ("SEALPOST_FCM_URL", fcm.url()),
        ("SEALPOST_FCM_TOKEN_URL", fcm.token_url()),
        ("SEALPOST_PUSH_CA_FILE", push_ca.display().to_string()),
        ("SEALPOST_STRIPE_API_URL", stripe.url()),
        (
            "SEALPOST_STRIPE_SECRET_KEY",
            payments::STRIPE_SECRET_KEY.to_owned(),
        ),
        (
            "SEALPOST_STRIPE_WEBHOOK_SECRET",
            payments::STRIPE_WEBHOOK_SECRET.to_owned(),
        ),
        ("SEALPOST_BTCPAY_URL", btcpay.url()),
        (
            "SEALPOST_BTCPAY_API_KEY",
            payments::BTCPAY_API_KEY.to_owned(),
        ),
        (
            "SEALPOST_BTCPAY_STORE_ID",
            payments::BTCPAY_STORE_ID.to_owned(),
        ),
        (
            "SEALPOST_BTCPAY_WEBHOOK_SECRET",
            payments::BTCPAY_WEBHOOK_SECRET.to_owned(),
        ),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect();
    if let Some(moto) = &moto {
        // One of the two only: the bucket replaces the directory.
        env.retain(|(name, _)| name != "SEALPOST_BLOB_DIR");
        env.extend(moto.env(""));
    }
    for (name, value) in &options.set {
        env.retain(|(set, _)| set != name);
        // A bucket given by hand replaces the stack's own directory.
        if name == "SEALPOST_BLOB_URL" {
            env.retain(|(set, _)| set != "SEALPOST_BLOB_DIR");
        }
        env.push((name.clone(), value.clone()));
    }

    // Migrated here, so any selection of processes finds its tables.
    sealpost_store_pg::migrate(&database_url)
        .await
        .map_err(|error| format!("migrating {}: {error}", database.name))?;
    // A staff token for `sealpost staff` (every role: a test may rotate
    // the support key), made as an operator makes one.
    let staff_token = if options.processes.contains(&Process::Api) {
        Some(make_staff_token(options, &env).await?)
    } else {
        None
    };
    let mut children = Vec::new();
    let mut pids = serde_json::Map::new();
    let mut all_pids = serde_json::Map::new();
    for process in &options.processes {
        let mut of_kind = Vec::new();
        for n in 0..options.count(*process) {
            let own = own_settings(*process, n, &apis, &smtps, &work);
            let child = spawn(options, *process, n, &env, &own)?;
            of_kind.push(serde_json::Value::from(child.id()));
            children.push(child);
        }
        pids.insert(process.name().to_owned(), of_kind[0].clone());
        all_pids.insert(process.name().to_owned(), of_kind.into());
    }
    let started = |process| options.processes.contains(&process);
    if started(Process::Api) {
        for api in &apis {
            wait_for_http(*api).await?;
        }
    }
    if started(Process::Smtp) {
        for smtp in &smtps {
            wait_for_tcp(*smtp).await?;
        }
    }
    if started(Process::Dns) {
        wait_for_tcp(dns).await?;
    }

    // The host own domains' MX must name to be live (what the API reads).
    let setting = |name: &str| {
        env.iter()
            .rev()
            .find(|(set, _)| set == name)
            .map(|(_, value)| value.clone())
    };
    let mx_host = setting("SEALPOST_MX_HOST")
        .or_else(|| {
            setting("SEALPOST_DOMAINS")
                .and_then(|list| list.split(',').next().map(|d| d.trim().to_owned()))
        })
        .unwrap_or_else(|| "mail.localhost".to_owned());
    // The keyring holds the key the API runs with unless `--set` replaced it.
    let support_key = setting("SEALPOST_SUPPORT_KEY").unwrap_or_default();
    let staff_key_file = support_key_matches(&keyring_path, &support_key)
        .then(|| keyring_path.display().to_string());
    let address = |process, addr: String| started(process).then_some(addr);
    let ready = serde_json::json!({
        "ready": true,
        "api": address(Process::Api, format!("http://{api}")),
        "smtp": address(Process::Smtp, smtp.to_string()),
        "dns": address(Process::Dns, dns.to_string()),
        "publicDns": public_dns.addr().to_string(),
        "dnsControl": dns_control_addr.to_string(),
        "mxHost": mx_host.clone(),
        "relay": relay.addr.to_string(),
        "relayDir": relay_dir.display().to_string(),
        "webhookReceiver": receiver.addr.to_string(),
        "webhookHost": "hooks.test",
        "apns": apns.url(),
        "fcm": fcm.url(),
        "stripe": stripe.url(),
        "btcpay": btcpay.url(),
        "database": database.name,
        "databaseUrl": database_url,
        "s3": moto.as_ref().map(MotoServer::endpoint),
        "supportKey": support_key,
        "staffKeyFile": staff_key_file,
        "staffToken": staff_token,
        "pids": pids,
        "apis": started(Process::Api)
            .then(|| apis.iter().map(|api| format!("http://{api}")).collect::<Vec<_>>()),
        "smtps": started(Process::Smtp)
            .then(|| smtps.iter().map(ToString::to_string).collect::<Vec<_>>()),
        "allPids": all_pids,
    });
    if let Some(path) = &options.env_file {
        let mut lines = vec![
            format!("SEALPOST_API_URL=http://{api}\n"),
            format!("SEALPOST_SMTP_ADDR={smtp}\n"),
            format!("SEALPOST_DNS_ADDR={dns}\n"),
            format!("SEALPOST_STACK_PUBLIC_DNS={}\n", public_dns.addr()),
            format!("SEALPOST_STACK_DNS_CONTROL={dns_control_addr}\n"),
            format!("SEALPOST_STACK_MX_HOST={mx_host}\n"),
            format!("SEALPOST_STACK_RELAY={}\n", relay.addr),
            format!("SEALPOST_STACK_RELAY_DIR={}\n", relay_dir.display()),
            format!("SEALPOST_STACK_SUPPORT_KEY={support_key}\n"),
        ];
        if let Some(file) = &staff_key_file {
            lines.push(format!("SEALPOST_STACK_STAFF_KEY_FILE={file}\n"));
        }
        if let Some(token) = &staff_token {
            lines.push(format!("SEALPOST_STACK_STAFF_TOKEN={token}\n"));
        }
        std::fs::write(path, lines.concat())
            .map_err(|error| format!("writing {}: {error}", path.display()))?;
    }
    println!("{ready}");
    eprintln!(
        "sealpost-stack: API http://{api}/ (web client at /app/), SMTP {smtp}, DNS {dns}; \
         SIGINT or SIGTERM stops it"
    );

    let stopped = wait_for_stop(options, &mut children).await;
    for child in &mut children {
        stop(child).await;
    }
    public_dns.stop().await;
    relay_mirror.abort();
    let _ = std::fs::remove_dir_all(&work);
    stopped
}

/// A new support key pair written as the keyring of `sealpost staff`
/// (`{"keys": [{publicKey, secretKey, createdAt}]}`, 0600): its public key
/// (base64url) and the file.
fn support_keyring(work: &Path) -> Result<(String, PathBuf), String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;

    use sealpost_kernel::Clock as _;
    use sealpost_seal::{PublicKey, StaticSecret, b64, random_bytes};

    let secret = random_bytes::<32>();
    let public = b64::encode(&PublicKey::from(&StaticSecret::from(secret)).to_bytes());
    let keyring = serde_json::json!({
        "keys": [{
            "publicKey": public,
            "secretKey": b64::encode(&secret),
            "createdAt": sealpost_kernel::SystemClock.now().to_string(),
        }],
    });
    let path = work.join("staff-keys.json");
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut file| file.write_all(keyring.to_string().as_bytes()))
        .map_err(|error| format!("writing {}: {error}", path.display()))?;
    Ok((public, path))
}

/// Whether the keyring at `file` holds `support_key` (its public key).
fn support_key_matches(file: &Path, support_key: &str) -> bool {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|keyring| {
            keyring["keys"]
                .as_array()
                .is_some_and(|keys| keys.iter().any(|pair| pair["publicKey"] == support_key))
        })
}

/// `sealpost-api staff-token create stack` with every role, on the stack's
/// database and settings: the token it prints.
async fn make_staff_token(options: &Options, env: &[(String, String)]) -> Result<String, String> {
    let path = options.bin_dir.join("sealpost-api");
    let output = Command::new(&path)
        .args([
            "staff-token",
            "create",
            "stack",
            "--roles",
            "read,reply,moderate,rotate",
        ])
        .envs(env.iter().map(|(name, value)| (name, value)))
        .env_remove("SEALPOST_LOG")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .await
        .map_err(|error| format!("running {} staff-token create: {error}", path.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} staff-token create failed ({})",
            path.display(),
            output.status
        ));
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("token (shown once): "))
        .map(str::to_owned)
        .ok_or_else(|| "sealpost-api staff-token create printed no token".to_owned())
}

fn write(dir: &Path, name: &str, content: &str) -> Result<PathBuf, String> {
    let path = dir.join(name);
    std::fs::write(&path, content)
        .map_err(|error| format!("writing {}: {error}", path.display()))?;
    Ok(path)
}

/// The settings of the `n`th process of a kind beyond the shared ones:
/// its own listening address, and an ingest's own spool directory (an
/// ingest recovers what it finds there as its own).
fn own_settings(
    process: Process,
    n: usize,
    apis: &[SocketAddr],
    smtps: &[SocketAddr],
    work: &Path,
) -> Vec<(String, String)> {
    let own = match process {
        // Every API keeps the first one's public URL: links name one service.
        Process::Api if n > 0 => vec![("SEALPOST_HTTP_ADDR", apis[n].to_string())],
        Process::Smtp if n > 0 => vec![
            ("SEALPOST_SMTP_ADDR", smtps[n].to_string()),
            (
                "SEALPOST_SMTP_SPOOL_DIR",
                work.join(format!("spool-{}", n + 1)).display().to_string(),
            ),
        ],
        Process::Api | Process::Smtp | Process::Jobs | Process::Dns => Vec::new(),
    };
    own.into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

fn spawn(
    options: &Options,
    process: Process,
    n: usize,
    env: &[(String, String)],
    own: &[(String, String)],
) -> Result<Child, String> {
    let (program, args) = process.program();
    let path = options.bin_dir.join(program);
    let mut command = Command::new(&path);
    command
        .args(args)
        .envs(env.iter().map(|(name, value)| (name, value)))
        .envs(own.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .kill_on_drop(true);
    match &options.logs {
        Some(dir) => {
            let log = match n {
                0 => dir.join(format!("{}.log", process.name())),
                _ => dir.join(format!("{}-{}.log", process.name(), n + 1)),
            };
            let file = std::fs::create_dir_all(dir)
                .and_then(|()| std::fs::File::create(&log))
                .map_err(|error| format!("creating {}: {error}", log.display()))?;
            let copy = file
                .try_clone()
                .map_err(|error| format!("opening {}: {error}", log.display()))?;
            command.stdout(copy).stderr(file);
        }
        // Standard output carries the ready line alone: the processes' own
        // output goes to standard error.
        None => {
            command.stdout(Stdio::from(std::io::stderr()));
        }
    }
    command.spawn().map_err(|error| {
        format!(
            "starting {} ({error}); build it first: cargo build -p sealpost-api -p sealpost-smtp-ingest -p sealpost-dns",
            path.display()
        )
    })
}

/// Until `GET /readyz` answers 200.
async fn wait_for_http(addr: SocketAddr) -> Result<(), String> {
    let deadline = Instant::now() + START_TIMEOUT;
    while Instant::now() < deadline {
        if let Ok(mut stream) = TcpStream::connect(addr).await {
            let request = format!("GET /readyz HTTP/1.0\r\nHost: {addr}\r\n\r\n");
            let mut answer = Vec::new();
            if stream.write_all(request.as_bytes()).await.is_ok()
                && stream.read_to_end(&mut answer).await.is_ok()
                && answer.starts_with(b"HTTP/1.0 200")
            {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!(
        "the API did not answer on {addr} within {START_TIMEOUT:?}"
    ))
}

async fn wait_for_tcp(addr: SocketAddr) -> Result<(), String> {
    let deadline = Instant::now() + START_TIMEOUT;
    while Instant::now() < deadline {
        if TcpStream::connect(addr).await.is_ok() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!(
        "nothing answered on {addr} within {START_TIMEOUT:?}"
    ))
}

/// The public DNS's control port: one command a line (`DnsControl::run`:
/// `zone APEX`, `txt NAME VALUE`, `ns DOMAIN HOST...`, `mx DOMAIN HOST...`),
/// each answered `ok` or `error: ...`.
async fn serve_dns_control(listener: TcpListener, control: DnsControl) {
    while let Ok((stream, _)) = listener.accept().await {
        let control = control.clone();
        tokio::spawn(async move {
            let (read, mut write) = stream.into_split();
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let answer = match control.run(&line) {
                    Ok(()) => "ok\n".to_owned(),
                    Err(error) => format!("error: {error}\n"),
                };
                if write.write_all(answer.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// A signal, the end of standard input (when asked), or a process of the
/// stack exiting on its own (an error, unless `--keep-going`).
async fn wait_for_stop(options: &Options, children: &mut [Child]) -> Result<(), String> {
    let until_stdin_closes = options.until_stdin_closes;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(|error| error.to_string())?;
    let mut terminate = signal(SignalKind::terminate()).map_err(|error| error.to_string())?;
    let stdin_closed = async {
        if until_stdin_closes {
            let mut lines = BufReader::new(tokio::io::stdin()).lines();
            while let Ok(Some(_)) = lines.next_line().await {}
        } else {
            std::future::pending::<()>().await;
        }
    };
    let exited = async {
        if options.keep_going {
            return std::future::pending().await;
        }
        loop {
            for child in children.iter_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return status;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    tokio::select! {
        _ = interrupt.recv() => Ok(()),
        _ = terminate.recv() => Ok(()),
        () = stdin_closed => Ok(()),
        status = exited => Err(format!("a process of the stack exited: {status}")),
    }
}

/// SIGTERM, a few seconds to drain, then SIGKILL.
async fn stop(child: &mut Child) {
    if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
        if tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .is_ok()
        {
            return;
        }
    }
    let _ = child.kill().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_name_a_kind_and_one_to_sixteen() {
        let counts = parse_counts("api=2,smtp=3,jobs=1").unwrap();
        let named: Vec<(&str, usize)> = counts
            .iter()
            .map(|(process, count)| (process.name(), *count))
            .collect();
        assert_eq!(named, [("api", 2), ("smtp", 3), ("jobs", 1)]);
        assert!(parse_counts("api=0").is_err());
        assert!(parse_counts("api=17").is_err());
        assert!(parse_counts("web=2").is_err());
        assert!(parse_counts("api").is_err());
    }

    #[test]
    fn each_further_ingest_has_its_own_port_and_spool() {
        let apis = [
            SocketAddr::from(([127, 0, 0, 1], 1)),
            SocketAddr::from(([127, 0, 0, 1], 2)),
        ];
        let smtps = [
            SocketAddr::from(([127, 0, 0, 1], 3)),
            SocketAddr::from(([127, 0, 0, 1], 4)),
        ];
        let work = Path::new("/work");
        // The first of each keeps the shared settings (and `--set`).
        assert!(own_settings(Process::Smtp, 0, &apis, &smtps, work).is_empty());
        assert!(own_settings(Process::Api, 0, &apis, &smtps, work).is_empty());
        let second = own_settings(Process::Smtp, 1, &apis, &smtps, work);
        assert!(second.contains(&("SEALPOST_SMTP_ADDR".to_owned(), "127.0.0.1:4".to_owned())));
        assert!(second.contains(&(
            "SEALPOST_SMTP_SPOOL_DIR".to_owned(),
            "/work/spool-2".to_owned()
        )));
        let api = own_settings(Process::Api, 1, &apis, &smtps, work);
        assert_eq!(
            api,
            [("SEALPOST_HTTP_ADDR".to_owned(), "127.0.0.1:2".to_owned())]
        );
        assert!(own_settings(Process::Jobs, 1, &apis, &smtps, work).is_empty());
    }
}
