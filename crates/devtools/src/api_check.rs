//! `cargo xtask api-check`: Schemathesis against the live OpenAPI document.
//!
//! Builds the stack (debug), starts the API and the jobs through the test
//! kit's launcher (`sealpost-stack`: a fresh database, dropped at the end,
//! and the loopback stand-ins), makes a full account through the SDK (`seed`: the Scale plan
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
use std::time::Instant;

use anyhow::{Context, Result, bail};
use tokio::runtime::Runtime;

use crate::harness::{Launched, Profile, StackOptions, build_stack};
use crate::{postgres, seed};

/// The Schemathesis release the check is pinned to.
const SCHEMATHESIS: &str = "4.32.5";
/// Fixed, so a failure reproduces.
const SEED: &str = "20261123";
/// Examples per operation and phase.
const MAX_EXAMPLES: &str = "25";

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
    let target = sealpost_devprocess::target_dir(&root);
    let dir = target.join("api-check");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let started = Instant::now();

    let schemathesis = install_schemathesis(&dir)?;
    build_stack(&root, Profile::Debug)?;
    let server = postgres::ensure_server()?;
    let passed = check(runtime, &target, &server, &dir, &schemathesis)?;
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

fn check(runtime: &Runtime, target: &Path, server: &str, dir: &Path, st: &Path) -> Result<bool> {
    let server_key = sealpost_seal::ServerKeys::generate_text();
    let settings = vec![
        ("SEALPOST_DOMAINS".to_owned(), "mail.localhost".to_owned()),
        // Support on, so its writes are checked past 503
        // `support_unavailable`; no ticket is ever opened here, so any
        // 32 bytes serve as the support team's public key.
        (
            "SEALPOST_SUPPORT_KEY".to_owned(),
            sealpost_seal::b64::encode(&[9u8; 32]),
        ),
        // Known here too, for the `staff-token` command below. The launcher
        // raises the edge limit: thousands of requests from one address in
        // a few minutes would otherwise hide the rest behind its 429.
        ("SEALPOST_SERVER_KEY".to_owned(), server_key.clone()),
    ];
    let logs = dir.join("logs");
    let stack = Launched::start(
        target,
        server,
        &StackOptions {
            launcher_args: &[],
            profile: Profile::Debug,
            processes: &["api", "jobs"],
            env: settings.clone(),
            logs: logs.clone(),
            database_query: None,
        },
    )?;
    let base = stack.api()?.to_owned();

    let seeded = runtime.block_on(async {
        let seeded = seed::seed(&base).await.context("making the account")?;
        eprintln!(
            "xtask api-check: account {} on {}, addresses {}",
            seeded.account_id,
            seeded.plan,
            seeded.addresses.join(", ")
        );
        anyhow::Ok(seeded)
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
    let mut create = Command::new(target.join("debug").join("sealpost-api"));
    create
        .env("DATABASE_URL", stack.database_url()?)
        .envs(settings)
        .env_remove("SEALPOST_LOG");
    let staff_token = staff_token(create.args([
        "staff-token",
        "create",
        "api-check",
        "--roles",
        "read,reply,moderate,rotate",
    ]))?;
    let only = ["--include-path-regex".to_owned(), "^/staff/".to_owned()];
    passed &= schemathesis(st, &config, &base, &staff_token, "staff API", &only)?;
    stack.stop();
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
