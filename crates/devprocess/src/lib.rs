//! Running cargo and other programs from the developer tools (`xtask`,
//! `sealpost-devtools`): a nested cargo without the variables `cargo run`
//! hands down, a child that shares the terminal, and its exit code passed on.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus};

use anyhow::{Context, Result};
use tokio::runtime::Runtime;

/// Cargo's target directory for the workspace at `root`:
/// `CARGO_TARGET_DIR`, or `root/target`.
pub fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

/// A nested cargo. `cargo xtask` runs under `cargo run`, which sets
/// `CARGO_MANIFEST_DIR`, `CARGO_PKG_*` and the like for xtask; handed down,
/// they change build-script inputs and make every nested build recompile
/// ring, rustls and their dependents. Only the variables a person sets to
/// steer cargo are kept.
pub fn cargo(root: &Path) -> Command {
    const KEPT: &[&str] = &[
        "CARGO_HOME",
        "CARGO_TARGET_DIR",
        "CARGO_INCREMENTAL",
        "CARGO_TERM_COLOR",
        "CARGO_TERM_VERBOSE",
        "CARGO_TERM_PROGRESS_WHEN",
        "CARGO_NET_OFFLINE",
        "CARGO_BUILD_JOBS",
    ];
    const KEPT_PREFIXES: &[&str] = &["CARGO_REGISTRIES_", "CARGO_HTTP_", "CARGO_PROFILE_"];
    let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(program);
    command.current_dir(root);
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        let inherited = name.starts_with("CARGO_")
            && !KEPT.contains(&name)
            && !KEPT_PREFIXES.iter().any(|prefix| name.starts_with(prefix));
        if inherited || name == "CARGO" {
            command.env_remove(name);
        }
    }
    command
}

/// Runs a child that inherits the terminal and waits for it. Ctrl-C reaches
/// the child through the terminal; xtask itself keeps waiting for it.
pub fn run_child(runtime: &Runtime, command: &mut Command) -> Result<ExitStatus> {
    #[cfg(unix)]
    let _sigint = {
        let _guard = runtime.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
            .context("cannot handle SIGINT")?
    };
    #[cfg(not(unix))]
    let _ = runtime;
    command
        .status()
        .with_context(|| format!("cannot run {:?}", command.get_program()))
}

pub fn exit_code(status: ExitStatus) -> ExitCode {
    if let Some(code) = status.code() {
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return ExitCode::from(u8::try_from(128 + signal).unwrap_or(1));
        }
    }
    ExitCode::FAILURE
}
