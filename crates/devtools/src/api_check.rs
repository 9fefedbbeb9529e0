//! `cargo xtask api-check`: Schemathesis against the live OpenAPI document.
//!
//! Builds `sealpost-api` (debug), starts it on a fresh database (dropped at
//! the end), makes a full account through the SDK (`seed`: the Scale plan
//! through the sandbox, addresses, a paired agent, mail, a webhook), installs
//! Schemathesis at [`SCHEMATHESIS`] into a virtual environment under
//! `target/api-check/`, and runs it with every phase (stateful included),
//! every check, a fixed seed and a bounded number of examples against
//! `/openapi.json` with the account's session. Any failure or 5xx fails the
//! command (what it accepts beyond Schemathesis' defaults is set out in
//! `crates/devtools/api-check.toml`). Changing the plan and the operations that end
//! the session (sign-out, revoking sessions, erasing the account) run last,
//! one pass each with a fresh session, so they do not cut the main pass
//! short.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::runtime::Runtime;

use crate::harness::{Service, drop_database, drop_leftover_databases, free_addr};
use crate::{postgres, seed};
use sealpost_devprocess::cargo;

/// The Schemathesis release the check is pinned to.
const SCHEMATHESIS: &str = "4.32.5";
/// Fixed, so a failure reproduces.
const SEED: &str = "20261123";
/// Examples per operation and phase.
const MAX_EXAMPLES: &str = "25";
const DB_PREFIX: &str = "sealpost_apicheck_";

/// Operations run after the main pass, one pass each with a fresh session:
/// the plan change (a downgrade would leave the main pass without webhooks)
/// and those that end the session or the account.
const SESSION_ENDING: [&str; 5] = [
    "POST /subscription/plan",
    "POST /accounts/signout",
    "DELETE /accounts/sessions",
    "DELETE /accounts/sessions/{id}",
    "DELETE /accounts/me",
];

pub fn run(runtime: &Runtime) -> Result<ExitCode> {
    let root = postgres::workspace_root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let dir = target.join("api-check");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let started = Instant::now();

    let schemathesis = install_schemathesis(&dir)?;

    eprintln!("xtask api-check: building sealpost-api");
    let built = cargo(&root)
        .args(["build", "-p", "sealpost-api"])
        .status()
        .context("running cargo build")?;
    if !built.success() {
        bail!("cargo build failed ({built})");
    }

    let server = postgres::ensure_server()?;
    let name = format!("{DB_PREFIX}{}", std::process::id());
    let url = format!("{server}/{name}");
    runtime.block_on(async {
        drop_leftover_databases(&server, DB_PREFIX).await;
        sealpost_store_pg::create_database_if_missing(&url)
            .await
            .context("creating the api-check database")?;
        sealpost_store_pg::migrate(&url)
            .await
            .context("migrating the api-check database")
    })?;
    let blob_dir = dir.join(format!("blobs-{}", std::process::id()));

    let outcome = check(
        runtime,
        &target.join("debug").join("sealpost-api"),
        &url,
        &blob_dir,
        &dir,
        &schemathesis,
    );

    let dropped = runtime.block_on(drop_database(&server, &name));
    let _ = fs::remove_dir_all(&blob_dir);
    let passed = outcome?;
    dropped?;
    eprintln!(
        "xtask api-check: {} in {:.0?}",
        if passed { "passed" } else { "FAILED" },
        started.elapsed()
    );
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `target/api-check/venv` with Schemathesis at the pinned version; returns
/// the `st` program.
fn install_schemathesis(dir: &Path) -> Result<PathBuf> {
    let venv = dir.join("venv");
    let python = venv.join("bin").join("python");
    let st = venv.join("bin").join("st");
    let installed = Command::new(&python)
        .args(["-m", "pip", "show", "schemathesis"])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|shown| {
            String::from_utf8_lossy(&shown.stdout)
                .lines()
                .any(|line| line == format!("Version: {SCHEMATHESIS}"))
        });
    if installed && st.exists() {
        return Ok(st);
    }
    eprintln!(
        "xtask api-check: installing schemathesis {SCHEMATHESIS} into {}",
        venv.display()
    );
    if !python.exists() {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .context("running python3 -m venv (is Python 3 installed?)")?;
        if !made.success() {
            bail!("python3 -m venv failed ({made})");
        }
    }
    let pip = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet"])
        .arg(format!("schemathesis=={SCHEMATHESIS}"))
        .status()
        .context("running pip")?;
    if !pip.success() {
        bail!("pip install schemathesis=={SCHEMATHESIS} failed ({pip})");
    }
    Ok(st)
}

fn check(
    runtime: &Runtime,
    api_binary: &Path,
    url: &str,
    blob_dir: &Path,
    dir: &Path,
    st: &Path,
) -> Result<bool> {
    let addr = free_addr()?;
    let log_path = dir.join("api.log");
    let log =
        fs::File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
    let server_key = sealpost_seal::ServerKeys::generate_text();
    // The same configuration for the server and its `staff-token` command.
    let configure = |command: &mut Command| {
        command
            .env("DATABASE_URL", url)
            .env("SEALPOST_HTTP_ADDR", addr.to_string())
            .env("SEALPOST_BLOB_DIR", blob_dir)
            .env("SEALPOST_DOMAINS", "mail.localhost")
            .env("SEALPOST_BILLING_SANDBOX", "true")
            // Thousands of requests from one address in a few minutes: the
            // edge limit's 429 is declared everywhere, but it would hide the rest.
            .env("SEALPOST_EDGE_RATE", "100000")
            .env("SEALPOST_SERVER_KEY", &server_key)
            // Support on, so its writes are checked past 503
            // `support_unavailable`; no ticket is ever opened here, so any
            // 32 bytes serve as the support team's public key.
            .env(
                "SEALPOST_SUPPORT_KEY",
                sealpost_seal::b64::encode(&[9u8; 32]),
            )
            .env_remove("SEALPOST_LOG");
    };
    let mut command = Command::new(api_binary);
    configure(&mut command);
    command.stdout(Stdio::null()).stderr(log);
    let api = Service::start("sealpost-api", &mut command)?;
    let base = format!("http://{addr}");

    let seeded = runtime.block_on(async {
        let client = sealpost_client::Client::new(&base)?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while client.health().await.is_err() {
            if Instant::now() > deadline {
                bail!("sealpost-api did not answer (see {})", log_path.display());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let seeded = seed::seed(&base).await.context("making the account")?;
        eprintln!(
            "xtask api-check: account {} on {}, addresses {}",
            seeded.account_id,
            seeded.plan,
            seeded.addresses.join(", ")
        );
        Ok(seeded)
    })?;
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("api-check.toml");

    let mut passed = schemathesis(st, &config, &base, &seeded.token, "main", &selection())?;
    for operation in SESSION_ENDING {
        let keys = seeded.phrase.keys();
        let token = runtime.block_on(async {
            let client = sealpost_client::Client::new(&base)?;
            anyhow::Ok(client.sign_in(&keys).await?.token)
        })?;
        let only = ["--include-name".to_owned(), operation.to_owned()];
        passed &= schemathesis(st, &config, &base, &token, operation, &only)?;
    }
    // Last, as it may switch support off or rotate the support key: the
    // staff API with a staff token, which no account session can use.
    let mut create = Command::new(api_binary);
    configure(&mut create);
    let staff_token = staff_token(create.args([
        "staff-token",
        "create",
        "api-check",
        "--roles",
        "read,reply,moderate,rotate",
    ]))?;
    let only = ["--include-path-regex".to_owned(), "^/staff/".to_owned()];
    passed &= schemathesis(st, &config, &base, &staff_token, "staff API", &only)?;
    drop(api);
    Ok(passed)
}

/// Runs `sealpost-api staff-token create` and returns the token it prints.
fn staff_token(command: &mut Command) -> Result<String> {
    let output = command
        .stderr(Stdio::inherit())
        .output()
        .context("running sealpost-api staff-token create")?;
    if !output.status.success() {
        bail!("sealpost-api staff-token create failed ({})", output.status);
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("token (shown once): "))
        .map(str::to_owned)
        .context("sealpost-api staff-token create printed no token")
}

/// `--exclude-name` for each session-ending operation.
fn selection() -> Vec<String> {
    SESSION_ENDING
        .iter()
        .flat_map(|operation| ["--exclude-name".to_owned(), (*operation).to_owned()])
        .collect()
}

/// Runs `st` in `target/api-check` (its `.hypothesis` and reports stay there).
fn schemathesis(
    st: &Path,
    config: &Path,
    base: &str,
    token: &str,
    pass: &str,
    selection: &[String],
) -> Result<bool> {
    eprintln!("xtask api-check: schemathesis, {pass}");
    let status = Command::new(st)
        .arg("--config-file")
        .arg(config)
        .arg("run")
        .arg(format!("{base}/openapi.json"))
        .args(["--url", base])
        .args(["--header", &format!("Authorization: Bearer {token}")])
        .args(["--phases", "examples,coverage,fuzzing,stateful"])
        .args(["--checks", "all"])
        .args(["--seed", SEED])
        .args(["--max-examples", MAX_EXAMPLES])
        .args(["--workers", "1"])
        .arg("--no-color")
        .args(selection)
        .current_dir(st.ancestors().nth(3).unwrap_or(Path::new(".")))
        .status()
        .context("running schemathesis")?;
    Ok(status.success())
}
