//! `cargo xtask fuzz TARGET [--seconds N]`: one cargo-fuzz target on the
//! nightly toolchain (the build itself stays on the pinned stable one).
//!
//! The targets live in `fuzz/`, a workspace of its own. Each starts from
//! its committed seeds (`fuzz/seeds/TARGET`, read only) and keeps what it
//! finds in `target/fuzz-corpus/TARGET`, so runs build on each other
//! without touching the checkout; a crash lands in `fuzz/artifacts/TARGET`.

use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, Result, bail};

use crate::workspace_root;

/// The targets in `fuzz/Cargo.toml`.
pub const TARGETS: [&str; 4] = ["smtp_session", "mime_content", "box_open", "json_bodies"];

/// cargo-fuzz's version line (DEPENDENCIES.md: 0.13 works with the installed nightly).
const CARGO_FUZZ: &str = "^0.13";

pub fn run(target: &str, seconds: u64) -> Result<ExitCode> {
    if !TARGETS.contains(&target) {
        bail!(
            "no fuzz target `{target}`; the targets: {}",
            TARGETS.join(", ")
        );
    }
    ensure_cargo_fuzz()?;
    let root = workspace_root();
    let corpus = root.join("target").join("fuzz-corpus").join(target);
    std::fs::create_dir_all(&corpus).with_context(|| format!("creating {}", corpus.display()))?;
    let seeds = root.join("fuzz").join("seeds").join(target);
    println!(
        "fuzzing `{target}` for {seconds} s (new inputs in {})",
        corpus.display()
    );
    let status = nightly_cargo()
        .args(["fuzz", "run", target])
        .arg(&corpus)
        .arg(&seeds)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        // A single input taking seconds is a hang worth a report.
        .arg("-timeout=10")
        .arg("-rss_limit_mb=2048")
        .current_dir(&root)
        .status()
        .context("running cargo fuzz")?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `cargo` of the nightly toolchain, through rustup, so neither the pinned
/// toolchain file nor the variables of the `cargo xtask` that runs this
/// choose it.
fn nightly_cargo() -> Command {
    let mut command = Command::new("rustup");
    command
        .args(["run", "nightly", "cargo"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC")
        .env_remove("CARGO");
    command
}

fn ensure_cargo_fuzz() -> Result<()> {
    let installed = nightly_cargo()
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if installed {
        return Ok(());
    }
    println!("installing cargo-fuzz {CARGO_FUZZ} (once)");
    let status = nightly_cargo()
        .args(["install", "--locked", "cargo-fuzz", "--version", CARGO_FUZZ])
        .status()
        .context("installing cargo-fuzz (is the nightly toolchain installed? `rustup toolchain install nightly`)")?;
    if !status.success() {
        bail!("installing cargo-fuzz failed");
    }
    Ok(())
}
