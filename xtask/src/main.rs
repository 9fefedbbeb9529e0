#![allow(clippy::print_stdout, reason = "a command-line tool reports on stdout")]

//! `cargo xtask`: developer tasks for the Sealpost workspace.
//!
//! xtask itself links none of the server's crates, so `cargo xtask --help`
//! and `cargo xtask fuzz` build in seconds. The tasks that need the store,
//! the HTTP layer or the test kit run `sealpost-devtools` (crates/devtools)
//! through cargo; `stack` runs the test kit's `sealpost-stack`.

mod fuzz;
mod web;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use sealpost_devprocess::{cargo, exit_code, run_child, target_dir};
use tokio::runtime::Runtime;

const ENV_HELP: &str = "\
Environment:
  DATABASE_URL                      use this PostgreSQL server/database instead of finding one
  SEALPOST_XTASK_SKIP_DEFAULT_PG=1  ignore a server on 127.0.0.1:5432 and use the private
                                    cluster in target/pg/ (port 55432); to test that path
  SEALPOST_HTTP_ADDR                address the API listens on in `dev` (default 127.0.0.1:8080)
  SEALPOST_SMTP_ADDR                address the SMTP ingest listens on in `dev` (default 127.0.0.1:2525)
  SEALPOST_DNS_ADDR                 address `sealpost-dns` answers on in `dev`, UDP and TCP
                                    (default 127.0.0.1:5353)

PostgreSQL is found in this order: DATABASE_URL, a server on 127.0.0.1:5432 (user
postgres, trust auth), else a private cluster started from the local binaries in target/pg/.
Stop that cluster with `pg_ctl -D target/pg/data stop` (through `runuser -u postgres --` as root).";

#[derive(Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", about = "Sealpost developer tasks", after_help = ENV_HELP)]
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
    /// A whole stack as processes on free loopback ports (API, jobs, SMTP
    /// ingest, own domains' DNS, and the tests' stand-ins: public DNS, SMTP
    /// relay, webhook receiver, APNs, FCM) on a fresh database; prints their
    /// addresses as one JSON line and runs until Ctrl-C (`sealpost-stack`).
    Stack,
    /// Make a demo account on a running stack: a phrase (printed), the Scale
    /// plan through the sandbox, addresses, a paired agent, sealed mail with
    /// attachments and a webhook.
    Seed {
        /// The API to seed.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        api_url: String,
    },
    /// Drop leftover test databases, then run the workspace tests against PostgreSQL.
    Test {
        /// Passed on to `cargo nextest run` (or `cargo test`), after `--`.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// `cargo fmt --check`, `cargo clippy -D warnings`, then the tests; stops at the first failure.
    Ci,
    /// Write the API's OpenAPI document to docs/openapi.json (a test keeps the
    /// two equal), then regenerate the SDK's TypeScript types from it (`npm run gen` in web/).
    Openapi,
    /// Schemathesis (pinned, in target/api-check/venv) against a fresh stack's
    /// /openapi.json with a seeded account: fails on any failure or 5xx (docs/api.md).
    ApiCheck,
    /// Run one cargo-fuzz target on the nightly toolchain from its committed
    /// seeds (docs/fuzzing.md): smtp_session, mime_content, box_open, json_bodies.
    Fuzz {
        target: String,
        /// How long to run.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
    },
    /// Many processes on one database and one object store (2 APIs, 2 SMTP
    /// ingests, 2 job processes): mail stored once, events delivered once,
    /// then one of each killed with SIGKILL mid-load: nothing acknowledged
    /// lost, every event delivered (docs/operations.md).
    ScaleCheck,
    /// Back up a stack with mail (database dump, blobs, server key), restore
    /// it into a fresh database and store, and read the mail with the CLI and
    /// the recovery phrase (docs/operations.md).
    RestoreDrill,
    /// Benchmarks on a fresh database (dropped at the end); see docs/benchmarks.md.
    Bench {
        #[command(subcommand)]
        what: Bench,
    },
}

#[derive(Subcommand)]
enum Bench {
    /// The SMTP ingest under Postfix's smtp-source and our own client, next to
    /// Postfix's smtp-sink: msg/s, DATA-to-250 p50/p99, peak memory.
    Smtp {
        /// Run only these workloads (`4kb`, `100kb`, `1kb`; repeatable).
        #[arg(long)]
        only: Vec<String>,
        /// Also print PostgreSQL's costliest statements per workload
        /// (pg_stat_statements on the private cluster).
        #[arg(long)]
        statements: bool,
    },
    /// Issue 15's load test: 300 sessions trickling DATA and 50 sending 40 MB
    /// while a normal sender's messages must keep getting 250; prints the
    /// ingest's peak memory against its configured bound.
    SmtpLoad {
        /// Use the debug builds (quicker to build; slower to run).
        #[arg(long)]
        debug: bool,
    },
    /// 10,000 events to 10 local HTTPS receivers through the API's sender:
    /// deliveries/s and event-to-delivery latency, also with two failing receivers.
    Webhooks,
    /// A bounded loopback load on the API (wrk): a page of 50 messages, one
    /// message, usage, sign-in: req/s and p50/p99, the page as a ratio to
    /// pgbench running its queries in the same run, and other clients'
    /// p99 under a flood from one address.
    Api,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.task) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("xtask: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(task: Task) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot build the tokio runtime")?;
    let root = workspace_root();
    match task {
        Task::Postgres => devtools(&runtime, &["postgres"]),
        Task::Migrate => devtools(&runtime, &["migrate"]),
        Task::Dev { seed } => {
            // The API embeds the web client: build it first (npm skips what is current).
            if web::ready(&root)? {
                web::install_and_build(&root)?;
            }
            devtools(&runtime, if seed { &["dev", "--seed"] } else { &["dev"] })
        }
        Task::Stack => stack(&runtime),
        Task::Seed { api_url } => devtools(&runtime, &["seed", "--api-url", &api_url]),
        Task::Openapi => {
            // One command updates the document and the SDK's types generated from it.
            let status = run_child(&runtime, &mut devtools_command(&["openapi"])?)?;
            if status.success() && web::ready(&root)? {
                web::generate_types(&root)?;
            }
            Ok(exit_code(status))
        }
        Task::ApiCheck => devtools(&runtime, &["api-check"]),
        Task::ScaleCheck => devtools(&runtime, &["scale-check"]),
        Task::RestoreDrill => devtools(&runtime, &["restore-drill"]),
        Task::Fuzz { target, seconds } => fuzz::run(&target, seconds),
        Task::Test { args } => test(&runtime, &args),
        Task::Ci => ci(&runtime),
        Task::Bench { what } => {
            let args = bench_args(what);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            devtools(&runtime, &args)
        }
    }
}

/// The devtools arguments of `cargo xtask bench ...`.
fn bench_args(what: Bench) -> Vec<String> {
    let mut args = vec!["bench".to_owned()];
    match what {
        Bench::Smtp { only, statements } => {
            args.push("smtp".to_owned());
            for workload in only {
                args.extend(["--only".to_owned(), workload]);
            }
            if statements {
                args.push("--statements".to_owned());
            }
        }
        Bench::SmtpLoad { debug } => {
            args.push("smtp-load".to_owned());
            if debug {
                args.push("--debug".to_owned());
            }
        }
        Bench::Webhooks => args.push("webhooks".to_owned()),
        Bench::Api => args.push("api".to_owned()),
    }
    args
}

/// The workspace root (the parent of `xtask/`).
pub fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// `sealpost-devtools args`, its exit code answered.
fn devtools(runtime: &Runtime, args: &[&str]) -> Result<ExitCode> {
    Ok(exit_code(run_child(runtime, &mut devtools_command(args)?)?))
}

/// `sealpost-devtools args`, built first with the workspace's binaries
/// ([`build_workspace_bins`]).
fn devtools_command(args: &[&str]) -> Result<Command> {
    let root = workspace_root();
    let built = build_workspace_bins(&root)?;
    if !built.success() {
        bail!("cargo build failed ({built})");
    }
    let mut command = Command::new(target_dir(&root).join("debug").join("sealpost-devtools"));
    command.current_dir(&root).args(args);
    Ok(command)
}

/// The PostgreSQL server's URL (found or started by `sealpost-devtools postgres`).
fn ensure_server() -> Result<String> {
    let output = devtools_command(&["postgres"])?
        .stderr(Stdio::inherit())
        .output()
        .context("running sealpost-devtools postgres")?;
    if !output.status.success() {
        bail!("no PostgreSQL server could be found or started");
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn test(runtime: &Runtime, extra: &[String]) -> Result<ExitCode> {
    let status = run_tests(runtime, extra)?;
    Ok(exit_code(status))
}

fn run_tests(runtime: &Runtime, extra: &[String]) -> Result<ExitStatus> {
    let server = ensure_server()?;
    let dropped = run_child(
        runtime,
        &mut devtools_command(&["drop-test-databases", &server])?,
    )?;
    if !dropped.success() {
        return Ok(dropped);
    }
    let root = workspace_root();
    // The whole suite (no arguments) includes web/: built first, since the
    // API embeds the web client, and tested last against a stack.
    let with_web = extra.is_empty() && web::ready(&root)?;
    if with_web {
        web::install_and_build(&root)?;
    }
    let nextest = cargo(&root)
        .args(["nextest", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    let mut args: Vec<&str> = if nextest {
        vec!["nextest", "run"]
    } else {
        eprintln!("xtask: cargo-nextest not found, using cargo test");
        vec!["test"]
    };
    // `--workspace` would override a `-p` given by the caller.
    if !selects_packages(extra) {
        args.push("--workspace");
    }
    if nextest {
        args.push("--no-fail-fast");
    }
    args.extend(extra.iter().map(String::as_str));
    eprintln!("xtask: running `cargo {}`", args.join(" "));
    let mut command = cargo(&root);
    command
        .args(&args)
        .env("SEALPOST_TEST_DATABASE_URL", &server);
    if with_web {
        // The API tests then check the embedded client, not its absence.
        command.env("SEALPOST_EXPECT_WEB_BUILD", "1");
    }
    let mut status = run_child(runtime, &mut command)?;
    if status.success() && nextest && extra.is_empty() {
        // nextest does not run documentation examples; cargo test does.
        eprintln!("xtask: running `cargo test --workspace --doc`");
        status = run_child(
            runtime,
            cargo(&root).args(["test", "--workspace", "--doc", "--quiet"]),
        )?;
    }
    if !status.success() || !with_web {
        return Ok(status);
    }
    eprintln!("xtask: building the stack's processes");
    let built = build_workspace_bins(&root)?;
    if !built.success() {
        return Ok(built);
    }
    let stack = web::Stack::start(&target_dir(&root), &server)?;
    web::test(&root, &stack)
}

/// Builds every binary of the workspace (the stack's processes, the
/// launcher, the CLI, the developer tools), debug. Always the whole
/// workspace: cargo resolves features for the packages a command names, so
/// `-p` builds of a few packages would compile many dependencies a second
/// time, with other features, beside the test build's. Once per xtask run:
/// a task that runs several tools (`test` asks devtools twice before the
/// tests) reuses the first build's outcome.
fn build_workspace_bins(root: &Path) -> Result<ExitStatus> {
    static BUILT: std::sync::OnceLock<ExitStatus> = std::sync::OnceLock::new();
    if let Some(built) = BUILT.get() {
        return Ok(*built);
    }
    let built = cargo(root)
        .args(["build", "--workspace", "--bins"])
        .status()
        .context("running cargo build")?;
    Ok(*BUILT.get_or_init(|| built))
}

fn stack(runtime: &Runtime) -> Result<ExitCode> {
    let server = ensure_server()?;
    let root = workspace_root();
    if web::ready(&root)? {
        web::install_and_build(&root)?;
    }
    let built = build_workspace_bins(&root)?;
    if !built.success() {
        return Ok(exit_code(built));
    }
    let mut command = Command::new(target_dir(&root).join("debug").join("sealpost-stack"));
    command.env("SEALPOST_TEST_DATABASE_URL", &server);
    Ok(exit_code(run_child(runtime, &mut command)?))
}

/// Whether cargo's own arguments (before any `--`) pick packages.
fn selects_packages(extra: &[String]) -> bool {
    extra.iter().take_while(|arg| *arg != "--").any(|arg| {
        arg == "-p" || arg == "--package" || arg.starts_with("--package=") || arg.starts_with("-p")
    })
}

fn ci(runtime: &Runtime) -> Result<ExitCode> {
    let root = workspace_root();
    let steps: [(&str, &[&str]); 2] = [
        (
            "cargo fmt --all -- --check",
            &["fmt", "--all", "--", "--check"],
        ),
        (
            "cargo clippy --workspace --all-targets -- -D warnings",
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
        ),
    ];
    for (name, args) in steps {
        eprintln!("xtask ci: running `{name}`");
        let status = run_child(runtime, cargo(&root).args(args))
            .with_context(|| format!("ci step `{name}`"))?;
        if !status.success() {
            eprintln!("xtask ci: step `{name}` FAILED ({status})");
            return Ok(exit_code(status));
        }
    }
    eprintln!("xtask ci: running the tests");
    let status = run_tests(runtime, &[]).context("ci step `test`")?;
    if !status.success() {
        eprintln!("xtask ci: step `test` FAILED ({status})");
        return Ok(exit_code(status));
    }
    eprintln!("xtask ci: all steps passed");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spots_package_selection() {
        let args = |list: &[&str]| list.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>();
        assert!(selects_packages(&args(&["-p", "sealpost-seal"])));
        assert!(selects_packages(&args(&["--package=x"])));
        assert!(!selects_packages(&args(&["--", "-p"])));
        assert!(!selects_packages(&args(&["--lib"])));
    }

    #[test]
    fn cli_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
