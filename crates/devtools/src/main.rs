#![allow(clippy::print_stdout, reason = "a command-line tool reports on stdout")]

//! `sealpost-devtools`: the developer tasks that link the server's crates
//! (store, HTTP layer, wiring, test kit), kept out of `cargo xtask` so that
//! xtask itself builds in seconds. `cargo xtask` runs this binary for
//! `postgres`, `migrate`, `dev`, `seed`, `openapi`, `api-check`, `bench`
//! and the test-database clean-up before `test`.

mod api_check;
mod bench;
mod bench_api;
mod bench_webhooks;
mod cpu;
mod harness;
mod load_smtp;
mod postgres;
mod restore_drill;
mod scale_check;
mod seed;

use std::process::{Command, ExitCode};

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use sealpost_devprocess::{cargo, exit_code, run_child};
use tokio::runtime::Runtime;

#[derive(Parser)]
#[command(
    name = "sealpost-devtools",
    about = "Sealpost developer tasks that need the server's crates (run through `cargo xtask`)"
)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Find (or start) a PostgreSQL server and print its URL, without a database name.
    Postgres,
    /// Create the dev database (`sealpost_dev` or DATABASE_URL) if missing and run migrations.
    Migrate,
    /// Migrate the dev database, then run the API, the SMTP ingest and the
    /// own domains' DNS server.
    Dev {
        /// Once the API answers, fill it with a demo account (see `seed`).
        #[arg(long)]
        seed: bool,
    },
    /// Make a demo account on a running stack.
    Seed {
        /// The API to seed.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        api_url: String,
    },
    /// Write the API's OpenAPI document to docs/openapi.json.
    Openapi,
    /// Schemathesis against a fresh stack's /openapi.json with a seeded account.
    ApiCheck,
    /// Drop test databases and templates left by earlier test runs on `server`.
    DropTestDatabases { server: String },
    /// 2 APIs, 2 SMTP ingests and 2 job processes on one database and one
    /// object store, then one of each killed mid-load.
    ScaleCheck,
    /// Back up a stack with mail, restore it elsewhere and read the mail.
    RestoreDrill,
    /// Benchmarks on a fresh database (dropped at the end); see docs/benchmarks.md.
    Bench {
        #[command(subcommand)]
        what: Bench,
    },
}

#[derive(Subcommand)]
enum Bench {
    /// The SMTP ingest next to Postfix's smtp-sink.
    Smtp {
        /// Run only these workloads (`4kb`, `100kb`, `1kb`; repeatable).
        #[arg(long)]
        only: Vec<String>,
        /// Also print PostgreSQL's costliest statements per workload.
        #[arg(long)]
        statements: bool,
    },
    /// Slow and large senders while a normal sender must keep getting 250.
    SmtpLoad {
        /// Use the debug builds (quicker to build; slower to run).
        #[arg(long)]
        debug: bool,
    },
    /// Events to local HTTPS receivers through the API's sender.
    Webhooks,
    /// A bounded loopback load on the API (wrk) beside pgbench.
    Api,
}

/// The allocator `sealpost-api` runs on: `bench api` serves the API from
/// this process, so its figures are the allocator's too.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.task) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("sealpost-devtools: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(task: Task) -> Result<ExitCode> {
    // Multi-thread: the migration harness blocks in place.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot build the tokio runtime")?;
    match task {
        Task::Postgres => {
            println!("{}", postgres::ensure_server()?);
            Ok(ExitCode::SUCCESS)
        }
        Task::Migrate => {
            migrate_dev_database(&runtime)?;
            Ok(ExitCode::SUCCESS)
        }
        Task::Dev { seed } => dev(&runtime, seed),
        Task::Seed { api_url } => {
            let seeded = runtime.block_on(seed::seed(&api_url))?;
            seed::print(&seeded, &api_url);
            Ok(ExitCode::SUCCESS)
        }
        Task::Openapi => {
            let path = postgres::workspace_root().join("docs/openapi.json");
            std::fs::write(&path, sealpost_http_api::openapi_json() + "\n")
                .with_context(|| format!("writing {}", path.display()))?;
            println!("wrote docs/openapi.json");
            Ok(ExitCode::SUCCESS)
        }
        Task::ApiCheck => api_check::run(&runtime),
        Task::DropTestDatabases { server } => {
            drop_test_databases(&runtime, &server)?;
            Ok(ExitCode::SUCCESS)
        }
        Task::ScaleCheck => scale_check::run(&runtime),
        Task::RestoreDrill => restore_drill::run(&runtime),
        Task::Bench {
            what: Bench::Smtp { only, statements },
        } => bench::smtp(&runtime, &only, statements),
        Task::Bench {
            what: Bench::SmtpLoad { debug },
        } => load_smtp::run(&runtime, debug),
        Task::Bench {
            what: Bench::Webhooks,
        } => {
            if let Some(code) = in_release(&["bench", "webhooks"], &[])? {
                return Ok(code);
            }
            let server = postgres::ensure_server()?;
            runtime.block_on(bench_webhooks::run(&server))?;
            Ok(ExitCode::SUCCESS)
        }
        Task::Bench { what: Bench::Api } => {
            // The test kit makes the bench's database on this server.
            let server = postgres::ensure_server()?;
            let server = server.trim_end_matches('/');
            if let Some(code) =
                in_release(&["bench", "api"], &[("SEALPOST_TEST_DATABASE_URL", server)])?
            {
                return Ok(code);
            }
            anyhow::ensure!(
                sealpost_testkit::server_url() == server,
                "set SEALPOST_TEST_DATABASE_URL={server} (the test kit makes the bench database there)"
            );
            runtime.block_on(bench_api::run())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A benchmark that runs the service in this process measures an optimised
/// build: from a debug build, runs `task` again in release mode and answers
/// its exit code (`env` added to its environment); `None` when this is the
/// release build.
fn in_release(task: &[&str], env: &[(&str, &str)]) -> Result<Option<ExitCode>> {
    if !cfg!(debug_assertions) {
        return Ok(None);
    }
    eprintln!(
        "xtask: building and running `{}` in release mode",
        task.join(" ")
    );
    let root = postgres::workspace_root();
    // The workspace's binaries, as every build here (features resolve alike).
    harness::build_stack(&root, harness::Profile::Release)?;
    let target = sealpost_devprocess::target_dir(&root);
    let status = std::process::Command::new(target.join("release").join("sealpost-devtools"))
        .current_dir(&root)
        .args(task)
        .envs(env.iter().copied())
        .status()
        .context("running the release build")?;
    Ok(Some(exit_code(status)))
}

/// Creates and migrates `DATABASE_URL` or `<server>/sealpost_dev`; returns its URL.
fn migrate_dev_database(runtime: &Runtime) -> Result<String> {
    let url = match postgres::database_url_env() {
        Some(url) => url,
        None => format!("{}/sealpost_dev", postgres::ensure_server()?),
    };
    let shown = redact(&url);
    let (created, applied) = runtime.block_on(async {
        let created = sealpost_store_pg::create_database_if_missing(&url)
            .await
            .with_context(|| {
                format!("cannot create the database {shown} (DATABASE_URL must name a database)")
            })?;
        let applied = sealpost_store_pg::migrate(&url)
            .await
            .with_context(|| format!("migrating {shown} failed"))?;
        anyhow::Ok((created, applied))
    })?;
    if created {
        println!("created database {shown}");
    }
    println!("{applied} migration(s) applied to {shown}");
    Ok(url)
}

fn dev(runtime: &Runtime, with_seed: bool) -> Result<ExitCode> {
    eprintln!("xtask: finding PostgreSQL and migrating the dev database");
    let url = migrate_dev_database(runtime)?;
    let root = postgres::workspace_root();
    eprintln!(
        "xtask: building the API, the SMTP ingest, the DNS server and the CLI (a first build takes a few minutes; later starts take seconds)"
    );
    let built = cargo(&root)
        // The whole workspace, like every other build here (features
        // resolve alike, so nothing is compiled twice).
        .args(["build", "--workspace", "--bins"])
        .status()
        .context("running cargo build")?;
    if !built.success() {
        return Ok(exit_code(built));
    }
    let target = sealpost_devprocess::target_dir(&root);
    let server_key = dev_server_key(&root.join("target").join("dev"))?;
    let configure = |command: &mut Command| {
        command.env("DATABASE_URL", &url);
        if std::env::var_os("SEALPOST_BILLING_SANDBOX").is_none() {
            command.env("SEALPOST_BILLING_SANDBOX", "true");
        }
        // With a bucket (SEALPOST_BLOB_URL) no directory: only one may be set.
        if std::env::var_os("SEALPOST_BLOB_DIR").is_none()
            && std::env::var_os("SEALPOST_BLOB_URL").is_none()
        {
            command.env(
                "SEALPOST_BLOB_DIR",
                root.join("target").join("dev").join("blobs"),
            );
        }
        if std::env::var_os("SEALPOST_SERVER_KEY").is_none() {
            command.env("SEALPOST_SERVER_KEY", &server_key);
        }
    };
    // The SMTP ingest and the DNS server run beside the API and stop with it.
    let mut smtp = Command::new(target.join("debug").join("sealpost-smtp"));
    configure(&mut smtp);
    if std::env::var_os("SEALPOST_SMTP_TLS_CERT").is_none()
        && std::env::var_os("SEALPOST_SMTP_TLS_KEY").is_none()
    {
        let (cert, key) = dev_smtp_certificate(&root.join("target").join("dev"))?;
        smtp.env("SEALPOST_SMTP_TLS_CERT", cert);
        smtp.env("SEALPOST_SMTP_TLS_KEY", key);
    }
    let mut smtp = smtp.spawn().context("starting sealpost-smtp")?;
    let mut dns = Command::new(target.join("debug").join("sealpost-dns"));
    configure(&mut dns);
    let mut dns = match dns.spawn().context("starting sealpost-dns") {
        Ok(dns) => dns,
        Err(err) => {
            let _ = smtp.kill();
            let _ = smtp.wait();
            return Err(err);
        }
    };
    let mut api = Command::new(target.join("debug").join("sealpost-api"));
    configure(&mut api);
    let addr = dev_setting("SEALPOST_HTTP_ADDR");
    let smtp_addr = dev_setting("SEALPOST_SMTP_ADDR");
    let dns_addr = dev_setting("SEALPOST_DNS_ADDR");
    let cli = target.join("debug").join("sealpost");
    println!(
        "Sealpost API on http://{addr} (the web client at http://{addr}/app/), SMTP on {smtp_addr}, own domains' DNS on {dns_addr} (UDP and TCP;\n\
         try `dig @{dns_host} -p {dns_port} <domain> SOA`); Ctrl-C stops them all.\n\
         The CLI is built at {cli}: run `{cli} init` in another terminal,\n\
         or install it with `cargo install --path bins/cli` and run `sealpost init`.",
        cli = cli.display(),
        dns_host = dns_addr
            .rsplit_once(':')
            .map_or(dns_addr.as_str(), |(host, _)| host),
        dns_port = dns_addr.rsplit_once(':').map_or("53", |(_, port)| port),
    );
    if with_seed {
        let api_url = format!("http://{addr}");
        std::thread::spawn(move || seed::when_up(&api_url));
    }
    let status = run_child(runtime, &mut api);
    for child in [&mut smtp, &mut dns] {
        let _ = child.kill();
        let _ = child.wait();
    }
    Ok(exit_code(status?))
}

/// A dev stack setting: the environment's value, else the default the
/// services themselves apply (`sealpost_config::VARIABLES`).
fn dev_setting(name: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|value| !value.is_empty())
        .or_else(|| {
            sealpost_config::VARIABLES
                .iter()
                .find(|variable| variable.name == name)
                .map(|variable| variable.default.to_owned())
        })
        .unwrap_or_default()
}

/// Drops test databases and templates left by earlier runs
/// (`sealpost_testkit::databases`), saying what it did.
fn drop_test_databases(runtime: &Runtime, server: &str) -> Result<()> {
    let cleanup = runtime
        .block_on(sealpost_testkit::databases::drop_test_leftovers(server))
        .map_err(|error| anyhow::anyhow!(error))
        .with_context(|| format!("cleaning up test databases on {}", redact(server)))?;
    if cleanup.dropped > 0 {
        eprintln!(
            "xtask: dropped {} leftover test database(s) and template(s)",
            cleanup.dropped
        );
    }
    if cleanup.kept > 0 {
        eprintln!(
            "xtask: kept {} test database(s) of test processes still running",
            cleanup.kept
        );
    }
    if !cleanup.templates_dropped {
        eprintln!("xtask: kept the test templates: another test run is using them");
    }
    Ok(())
}

/// The URL with its password masked.
fn redact(url: &str) -> String {
    sealpost_store_pg::DatabaseUrl::parse(url).map_or_else(|_| url.to_owned(), |url| url.redacted())
}

/// The development server key: generated once and kept under `target/dev`,
/// so what it sealed stays readable across restarts of the dev stack.
fn dev_server_key(dev_dir: &std::path::Path) -> Result<String> {
    let path = dev_dir.join("server-key");
    if let Ok(key) = std::fs::read_to_string(&path) {
        return Ok(key.trim().to_owned());
    }
    std::fs::create_dir_all(dev_dir).with_context(|| format!("creating {}", dev_dir.display()))?;
    let key = sealpost_seal::ServerKeys::generate_text();
    std::fs::write(&path, &key).with_context(|| format!("writing {}", path.display()))?;
    Ok(key)
}

/// STARTTLS for the dev ingest: a self-signed certificate for `localhost`
/// and `mail.localhost`, generated once and kept under `target/dev`
/// (`smtp-cert.pem`, `smtp-key.pem`). Replace the files to try a renewal:
/// the ingest picks them up without a restart.
fn dev_smtp_certificate(
    dev_dir: &std::path::Path,
) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
    let cert = dev_dir.join("smtp-cert.pem");
    let key = dev_dir.join("smtp-key.pem");
    if cert.is_file() && key.is_file() {
        return Ok((cert, key));
    }
    std::fs::create_dir_all(dev_dir).with_context(|| format!("creating {}", dev_dir.display()))?;
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "mail.localhost".into()])
            .context("generating the dev SMTP certificate")?;
    std::fs::write(&key, certified.signing_key.serialize_pem())
        .with_context(|| format!("writing {}", key.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("restricting {}", key.display()))?;
    }
    std::fs::write(&cert, certified.cert.pem())
        .with_context(|| format!("writing {}", cert.display()))?;
    Ok((cert, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(
            redact("postgres://postgres@h:5432/db"),
            "postgres://postgres@h:5432/db"
        );
    }

    #[test]
    fn cli_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
