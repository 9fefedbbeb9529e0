//! The npm workspace `web/` (the TypeScript SDK and the web client) in
//! `cargo xtask test` and `dev`: install and build it before the Rust build
//! (the API embeds the built client), then run its tests against a stack of
//! processes (`sealpost-stack`).
//!
//! Without Node the Rust work goes on and these steps are skipped with a
//! note, except under `CI=true`, where a missing Node fails the run.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

use anyhow::{Context, Result, bail};

/// Whether the web steps must run (CI) rather than be skipped when Node is missing.
fn required() -> bool {
    std::env::var("CI").is_ok_and(|value| value == "true")
}

fn web_dir(root: &Path) -> PathBuf {
    root.join("web")
}

/// `npm` answers: Node and npm are installed.
fn npm_available() -> bool {
    Command::new("npm")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Whether to run the web steps; an error under CI when Node is missing.
pub fn ready(root: &Path) -> Result<bool> {
    if !web_dir(root).join("package.json").is_file() {
        return Ok(false);
    }
    if npm_available() {
        return Ok(true);
    }
    if required() {
        bail!("Node and npm are needed for web/ (CI=true): install Node 20 or later");
    }
    eprintln!("xtask: npm not found: skipping web/ (the SDK and the web client)");
    Ok(false)
}

fn npm(root: &Path, args: &[&str]) -> Result<ExitStatus> {
    eprintln!("xtask: running `npm {}` in web/", args.join(" "));
    Command::new("npm")
        .args(args)
        .current_dir(web_dir(root))
        // Playwright must use Debian's chromium; its own download fails here.
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .status()
        .with_context(|| format!("running npm {}", args.join(" ")))
}

fn npm_ok(root: &Path, args: &[&str]) -> Result<()> {
    let status = npm(root, args)?;
    if !status.success() {
        bail!("`npm {}` in web/ failed ({status})", args.join(" "));
    }
    Ok(())
}

/// Installs the locked dependencies when `node_modules` is missing or older
/// than the lock file, then builds the SDK and the web client.
pub fn install_and_build(root: &Path) -> Result<()> {
    install(root)?;
    npm_ok(root, &["run", "build"])
}

/// Regenerates the SDK's TypeScript types from docs/openapi.json
/// (`npm run gen`), installing the locked dependencies first if needed.
pub fn generate_types(root: &Path) -> Result<()> {
    install(root)?;
    npm_ok(root, &["run", "gen"])
}

/// `npm ci` when `node_modules` is missing or older than the lock file.
fn install(root: &Path) -> Result<()> {
    let web = web_dir(root);
    let modified = |path: PathBuf| {
        std::fs::metadata(path)
            .and_then(|meta| meta.modified())
            .ok()
    };
    let installed = modified(web.join("node_modules").join(".package-lock.json"));
    let locked = modified(web.join("package-lock.json"));
    if installed.is_none() || installed < locked {
        npm_ok(root, &["ci", "--no-audit", "--no-fund"])?;
    }
    Ok(())
}

/// A running `sealpost-stack`, stopped (standard input closed) when dropped.
pub struct Stack {
    child: Child,
    /// `KEY=value` pairs for the tests: `SEALPOST_API_URL`, `SEALPOST_SMTP_ADDR`, ...
    pub env: Vec<(String, String)>,
}

impl Stack {
    /// Starts the stack from the debug binaries under `target` (built by the
    /// caller) on the PostgreSQL server `server`, and waits until it is ready.
    pub fn start(target: &Path, server: &str) -> Result<Stack> {
        let env_file =
            std::env::temp_dir().join(format!("sealpost-stack-{}.env", std::process::id()));
        let mut child = Command::new(target.join("debug").join("sealpost-stack"))
            .args(["--until-stdin-closes", "--env"])
            .arg(&env_file)
            .env("SEALPOST_TEST_DATABASE_URL", server)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting sealpost-stack")?;
        let stdout = child.stdout.take().context("the stack's stdout")?;
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .context("reading the stack's ready line")?;
        if !first.contains("\"ready\":true") {
            let _ = child.kill();
            let _ = child.wait();
            bail!("sealpost-stack did not start (see its output above)");
        }
        let text = std::fs::read_to_string(&env_file)
            .with_context(|| format!("reading {}", env_file.display()))?;
        let _ = std::fs::remove_file(&env_file);
        let mut env: Vec<(String, String)> = text
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect();
        // The browser tests approve the browser's pairing with the CLI.
        env.push((
            "SEALPOST_CLI".to_owned(),
            target.join("debug").join("sealpost").display().to_string(),
        ));
        Ok(Stack { child, env })
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // Closing its standard input stops it; it then drops its database.
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// `npm test` (the SDK, with its end-to-end test, and the web client's
/// unit tests), then the browser tests when the workspace has them, all
/// against `stack`.
pub fn test(root: &Path, stack: &Stack) -> Result<ExitStatus> {
    let run = |args: &[&str]| -> Result<ExitStatus> {
        eprintln!(
            "xtask: running `npm {}` in web/ against the stack",
            args.join(" ")
        );
        Command::new("npm")
            .args(args)
            .current_dir(web_dir(root))
            .envs(stack.env.iter().map(|(name, value)| (name, value)))
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
            .status()
            .with_context(|| format!("running npm {}", args.join(" ")))
    };
    let status = run(&["test"])?;
    if !status.success() || !has_script(root, "test:browser") {
        return Ok(status);
    }
    run(&["run", "test:browser"])
}

fn has_script(root: &Path, name: &str) -> bool {
    std::fs::read_to_string(web_dir(root).join("package.json"))
        .is_ok_and(|text| text.contains(&format!("\"{name}\"")))
}
