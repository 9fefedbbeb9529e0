//! The built `sealpost` binary against the real API (`TestApp`).

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "test helpers: a failed step stops the test loudly; output is shown on failure"
)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use sealpost_testkit::TestApp;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// One CLI installation: its own state directory, pointed at one service.
struct Cli {
    api_url: String,
    dir: PathBuf,
}

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Run {
            ok: output.status.success(),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }
}

impl Cli {
    fn new(app: &TestApp, dir: &Path) -> Self {
        Cli {
            api_url: app.base_url.clone(),
            dir: dir.to_owned(),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sealpost"));
        command
            .args(args)
            .env("SEALPOST_API_URL", &self.api_url)
            .env("SEALPOST_CONFIG_DIR", &self.dir)
            .env_remove("SEALPOST_PHRASE")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    async fn run(&self, args: &[&str]) -> Run {
        let run: Run = self.command(args).output().await.unwrap().into();
        // Shown when a test fails, or with --nocapture.
        println!(
            "$ sealpost {}\n{}{}",
            args.join(" "),
            run.stdout,
            run.stderr
        );
        run
    }

    async fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args).await;
        assert!(run.ok, "sealpost {args:?} failed: {}", run.stderr);
        run.stdout
    }

    async fn fails(&self, args: &[&str]) -> String {
        let run = self.run(args).await;
        assert!(!run.ok, "sealpost {args:?} succeeded: {}", run.stdout);
        assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
        run.stderr
    }

    async fn login_env(&self, phrase: &str) -> String {
        let run: Run = self
            .command(&["login"])
            .env("SEALPOST_PHRASE", phrase)
            .output()
            .await
            .unwrap()
            .into();
        assert!(run.ok, "login failed: {}", run.stderr);
        run.stdout
    }

    async fn login_stdin(&self, input: &str) -> Run {
        let mut child = self
            .command(&["login"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).await.unwrap();
        drop(stdin);
        child.wait_with_output().await.unwrap().into()
    }

    fn session_file(&self) -> PathBuf {
        self.dir.join("session.json")
    }

    fn session(&self) -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(self.session_file()).unwrap()).unwrap()
    }

    /// The other sessions' ids, from `sealpost sessions`.
    async fn other_session_ids(&self) -> Vec<String> {
        self.ok(&["sessions"])
            .await
            .lines()
            .filter(|line| !line.contains("(current)"))
            .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
            .collect()
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The 12-word phrase `init` printed, on its own indented line.
fn printed_phrase(stdout: &str) -> String {
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("    ") && line.split_whitespace().count() == 12)
        .collect();
    assert_eq!(lines.len(), 1, "one phrase line expected in:\n{stdout}");
    lines[0].trim().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn account_and_session_lifecycle() {
    let app = TestApp::spawn().await;
    let tmp = tempfile::tempdir().unwrap();
    let laptop = Cli::new(&app, &tmp.path().join("laptop"));
    let phone = Cli::new(&app, &tmp.path().join("phone"));

    // Not signed in yet.
    assert!(laptop.fails(&["whoami"]).await.contains("not signed in"));

    // init: phrase shown once, session stored privately, phrase never stored.
    let out = laptop.ok(&["init"]).await;
    let phrase = printed_phrase(&out);
    assert!(out.contains("Write it down"), "{out}");
    let session = laptop.session();
    let account_id = session["accountId"].as_str().unwrap().to_owned();
    assert!(out.contains(&account_id));
    assert_eq!(session["apiUrl"], app.base_url.as_str());
    assert!(session["token"].as_str().is_some_and(|t| !t.is_empty()));
    assert!(session["expiresAt"].as_str().is_some());
    assert_eq!(mode(&laptop.session_file()), 0o600);
    assert_eq!(mode(&laptop.dir), 0o700);
    let stored = std::fs::read_to_string(laptop.session_file()).unwrap();
    let first_word = phrase.split(' ').next().unwrap();
    assert!(!stored.contains(&phrase) && !stored.contains(first_word));
    assert!(laptop.fails(&["init"]).await.contains("already signed in"));

    // whoami.
    let out = laptop.ok(&["whoami"]).await;
    assert!(out.contains(&account_id), "{out}");
    assert!(out.contains("Free"), "{out}");
    assert!(out.contains("expires"), "{out}");

    // logout deletes the session file; the token no longer works.
    let token = session["token"].as_str().unwrap().to_owned();
    assert!(laptop.ok(&["logout"]).await.contains("Signed out"));
    assert!(!laptop.session_file().exists());
    let old = sealpost_client::Client::new(&app.base_url)
        .unwrap()
        .with_token(token);
    assert_eq!(old.me().await.unwrap_err().status(), Some(401));
    assert!(laptop.ok(&["logout"]).await.contains("Not signed in"));

    // login with SEALPOST_PHRASE.
    let out = laptop.login_env(&phrase).await;
    assert!(out.contains(&account_id), "{out}");
    assert_eq!(mode(&laptop.session_file()), 0o600);
    assert_eq!(laptop.session()["accountId"], account_id.as_str());

    // login from a piped stdin, on a second installation.
    let run = phone
        .login_stdin(&format!("{}\n", phrase.to_uppercase()))
        .await;
    assert!(run.ok, "{}", run.stderr);
    assert_eq!(phone.session()["accountId"], account_id.as_str());

    // A wrong phrase is refused, without a `login` hint, and the stored
    // session stays.
    let wrong = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";
    let run = phone.login_stdin(wrong).await;
    assert!(!run.ok);
    assert!(run.stderr.contains("(unauthenticated)"), "{}", run.stderr);
    assert!(!run.stderr.contains("hint"), "{}", run.stderr);
    assert!(!run.stderr.contains("abandon"), "{}", run.stderr);
    let run = phone.login_stdin("not a phrase").await;
    assert!(!run.ok && run.stderr.contains("stdin"), "{}", run.stderr);
    phone.ok(&["whoami"]).await;

    // sessions: two, the current one marked.
    let out = laptop.ok(&["sessions"]).await;
    assert_eq!(out.lines().count(), 2, "{out}");
    assert_eq!(out.matches("(current)").count(), 1, "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with('*') && l.contains("(current)"))
    );

    // sessions --others ends the phone's session; the phone is told to log in.
    assert!(
        laptop
            .ok(&["sessions", "--others"])
            .await
            .contains("Revoked 1 other session.")
    );
    let err = phone.fails(&["whoami"]).await;
    assert!(err.contains("(unauthenticated)"), "{err}");
    assert!(err.contains("sealpost login"), "{err}");
    assert!(phone.ok(&["logout"]).await.contains("already ended"));
    assert!(!phone.session_file().exists());

    // sessions revoke ID.
    phone.login_env(&phrase).await;
    let others = laptop.other_session_ids().await;
    assert_eq!(others.len(), 1, "{others:?}");
    let out = laptop.ok(&["sessions", "revoke", &others[0]]).await;
    assert!(out.contains(&others[0]), "{out}");
    assert!(phone.fails(&["sessions"]).await.contains("sealpost login"));
    assert!(laptop.other_session_ids().await.is_empty());
    let err = laptop.fails(&["sessions", "revoke", "nonsense"]).await;
    assert!(err.contains("not a session id"), "{err}");
    let err = laptop.fails(&["sessions", "revoke", &others[0]]).await;
    assert!(err.contains("(not_found)"), "{err}");

    // The token is only ever sent to the service that issued it.
    let err = laptop
        .fails(&["whoami", "--api-url", "http://127.0.0.1:9"])
        .await;
    assert!(err.contains("stored session is for"), "{err}");

    app.stop().await;
}

#[tokio::test]
async fn unreachable_service_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let run: Run = Command::new(env!("CARGO_BIN_EXE_sealpost"))
        .arg("init")
        .env("SEALPOST_API_URL", "http://127.0.0.1:9")
        .env("SEALPOST_CONFIG_DIR", tmp.path())
        .output()
        .await
        .unwrap()
        .into();
    assert!(!run.ok);
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    assert!(run.stderr.contains("(transport)"), "{}", run.stderr);
    // Nothing was registered, so no phrase was shown and nothing stored.
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(!tmp.path().join("session.json").exists());
}
