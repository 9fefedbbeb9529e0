//! The built `sealpost` binary against the real API (`TestApp`).

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "test helpers: a failed step stops the test loudly; output is shown on failure"
)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use sealpost_kernel::Timestamp;
use sealpost_testkit::TestApp;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// One CLI installation: its own state directory, pointed at one service.
struct Cli {
    api_url: String,
    dir: PathBuf,
    /// Sent as SEALPOST_PHRASE when set.
    phrase: Option<String>,
    /// Sent as SEALPOST_STAFF_TOKEN when set.
    staff_token: Option<String>,
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
            phrase: None,
            staff_token: None,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sealpost"));
        command
            .args(args)
            .env("SEALPOST_API_URL", &self.api_url)
            .env("SEALPOST_CONFIG_DIR", &self.dir)
            .env_remove("SEALPOST_PHRASE")
            .env_remove("SEALPOST_STAFF_TOKEN")
            .env_remove("SEALPOST_STAFF_KEY_FILE")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        if let Some(phrase) = &self.phrase {
            command.env("SEALPOST_PHRASE", phrase);
        }
        if let Some(token) = &self.staff_token {
            command.env("SEALPOST_STAFF_TOKEN", token);
        }
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

/// `sealpost agent pair` running in the background, as in a second
/// terminal: its stdout arrives line by line.
struct Background {
    child: std::process::Child,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
    seen: Vec<String>,
}

/// Long enough for a slow machine; the pairing poll runs every 2 s.
const WAIT: std::time::Duration = std::time::Duration::from_secs(60);

impl Background {
    fn agent_pair(cli: &Cli, args: &[&str]) -> Background {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sealpost"))
            .args(["agent", "pair"])
            .args(args)
            .env("SEALPOST_API_URL", &cli.api_url)
            .env("SEALPOST_CONFIG_DIR", &cli.dir)
            .env_remove("SEALPOST_PHRASE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Background {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Reads stdout until a line satisfies `wanted`; returns that line.
    async fn line_where(&mut self, wanted: impl Fn(&str) -> bool) -> String {
        loop {
            let line = tokio::time::timeout(WAIT, self.lines.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out; output so far:\n{}", self.seen.join("\n")))
                .unwrap_or_else(|| panic!("output ended:\n{}", self.seen.join("\n")));
            println!("[agent pair] {line}");
            self.seen.push(line.clone());
            if wanted(&line) {
                return line;
            }
        }
    }

    /// Waits for the process to exit; its success, remaining stdout and
    /// stderr.
    async fn exit(mut self) -> Run {
        let mut child = self.child;
        let output = tokio::time::timeout(
            WAIT,
            tokio::task::spawn_blocking(move || {
                let status = child.wait().unwrap();
                let mut stderr = String::new();
                std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr)
                    .unwrap();
                (status, stderr)
            }),
        )
        .await
        .unwrap_or_else(|_| panic!("agent pair did not exit"))
        .unwrap();
        let mut stdout = String::new();
        while let Some(line) = self.lines.recv().await {
            println!("[agent pair] {line}");
            stdout.push_str(&line);
            stdout.push('\n');
        }
        println!("[agent pair] {}", output.1);
        Run {
            ok: output.0.success(),
            stdout,
            stderr: output.1,
        }
    }

    /// The code from the `Pairing code: 1234 5678` line.
    async fn code(&mut self) -> String {
        let line = self
            .line_where(|line| line.trim_start().starts_with("Pairing code:"))
            .await;
        let code: String = line
            .trim_start()
            .trim_start_matches("Pairing code:")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        assert_eq!(code.len(), 8, "{line}");
        assert!(code.bytes().all(|b| b.is_ascii_digit()), "{line}");
        code
    }
}

/// The first whitespace-separated word of `out` starting with `prefix`.
fn word_starting(out: &str, prefix: &str) -> String {
    out.split(|c: char| c.is_whitespace() || c == ':' || c == '.' || c == '"')
        .find(|word| word.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix}... in:\n{out}"))
        .to_owned()
}

/// The 19-character fingerprint on a `Fingerprint  ...` line.
fn fingerprint(line: &str) -> String {
    let value = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("no fingerprint in {line}"));
    assert_eq!(value.len(), 19, "{line}");
    value.to_owned()
}

/// The line of `out` that mentions `id`.
fn line_of<'a>(out: &'a str, id: &str) -> &'a str {
    out.lines()
        .find(|line| line.contains(id))
        .unwrap_or_else(|| panic!("{id} not listed in:\n{out}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn two_terminals_pair_a_device_and_hand_it_an_address() {
    let app = TestApp::spawn().await;
    let tmp = tempfile::tempdir().unwrap();
    // Terminal A: the operator. Terminal B: the machine becoming a device.
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    let b = Cli::new(&app, &tmp.path().join("device"));
    let phrase = printed_phrase(&a.ok(&["init"]).await);

    // Commands that need keys ask for the phrase; a wrong one is refused.
    let err = a.fails(&["address", "list"]).await;
    assert!(err.contains("SEALPOST_PHRASE"), "{err}");
    a.phrase = Some(
        "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
            .to_owned(),
    );
    let err = a.fails(&["device", "list"]).await;
    assert!(err.contains("another account"), "{err}");
    a.phrase = Some(phrase.clone());
    assert!(a.ok(&["device", "list"]).await.contains("No devices"));
    assert!(a.ok(&["address", "list"]).await.contains("No addresses"));
    let err = b.fails(&["agent", "status"]).await;
    assert!(err.contains("not paired"), "{err}");

    // B waits for the operator in the background and shows a code.
    let mut agent = Background::agent_pair(&b, &["--name", "Build box"]);
    let code = agent.code().await;
    let shown_by_device = fingerprint(&agent.line_where(|l| l.starts_with("Fingerprint")).await);
    agent.line_where(|l| l.starts_with("Waiting")).await;

    // A pairs it: sees its name and the same fingerprint.
    let out = a.ok(&["device", "pair", &code]).await;
    assert!(out.contains("Build box (unknown)"), "{out}");
    let fingerprint_line = out.lines().find(|l| l.starts_with("Fingerprint")).unwrap();
    assert_eq!(fingerprint(fingerprint_line), shown_by_device);
    let device_id = word_starting(&out, "wkr_");

    // B stores the credential and exits.
    let run = agent.exit().await;
    assert!(run.ok, "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!("Paired as {device_id}.")),
        "{}",
        run.stdout
    );
    let device_file = b.dir.join("device.json");
    assert_eq!(mode(&device_file), 0o600);
    let device: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&device_file).unwrap()).unwrap();
    assert_eq!(device["workerId"], device_id.as_str());
    assert_eq!(device["apiUrl"], app.base_url.as_str());
    assert!(device["credential"].as_str().is_some_and(|c| !c.is_empty()));
    assert!(device["secretKey"].as_str().is_some_and(|k| k.len() == 43));
    assert!(!b.dir.join("session.json").exists());
    // Pairing again would discard the credential: only with --force.
    let err = b.fails(&["agent", "pair"]).await;
    assert!(err.contains("--force"), "{err}");

    // B: its status works; its bundle holds no address yet.
    let out = b.ok(&["agent", "status"]).await;
    assert!(out.contains(&device_id), "{out}");
    assert!(out.contains("online"), "{out}");
    let out = b.ok(&["agent", "keys"]).await;
    assert!(out.contains("Keys of 0 addresses"), "{out}");

    // A: the list shows the decrypted name; a rename re-seals it.
    let out = a.ok(&["device", "list"]).await;
    assert!(line_of(&out, &device_id).contains("Build box"), "{out}");
    a.ok(&["device", "rename", &device_id, "Builder"]).await;
    let out = a.ok(&["device", "list"]).await;
    assert!(line_of(&out, &device_id).contains("Builder"), "{out}");

    // A creates a labelled address; the list decrypts the label.
    let out = a.ok(&["address", "create", "--label", "shop"]).await;
    let address_id = word_starting(&out, "ibx_");
    let email = out
        .split_whitespace()
        .find(|w| w.contains('@'))
        .unwrap_or_else(|| panic!("no address in:\n{out}"))
        .to_owned();
    assert!(email.ends_with("@mail.localhost"), "{out}");
    let out = a.ok(&["address", "list"]).await;
    let line = line_of(&out, &address_id);
    assert!(
        line.contains(&email) && line.contains("unassigned"),
        "{line}"
    );
    assert!(line.contains("7 days") && line.ends_with("shop"), "{line}");

    // A assigns it; B can open its new key bundle.
    let out = a.ok(&["address", "assign", &address_id, &device_id]).await;
    assert!(out.contains("keys of 1 address"), "{out}");
    let out = b.ok(&["agent", "keys"]).await;
    assert!(out.contains("Keys of 1 address"), "{out}");
    let line = line_of(&out, &address_id);
    assert!(
        line.contains(&email) && !line.contains("MISMATCH"),
        "{line}"
    );
    let out = a.ok(&["address", "list"]).await;
    let line = line_of(&out, &address_id);
    assert!(
        line.contains("active") && line.contains(&device_id),
        "{line}"
    );

    // Retention and label changes show in the list.
    a.ok(&["address", "retention", &address_id, "30"]).await;
    a.ok(&["address", "label", &address_id, "shopping"]).await;
    let out = a.ok(&["address", "list"]).await;
    let line = line_of(&out, &address_id);
    assert!(
        line.contains("30 days") && line.ends_with("shopping"),
        "{line}"
    );

    // Unassigning re-sends the bundle without it; assigning again restores it.
    let out = a
        .ok(&["address", "unassign", &address_id, &device_id])
        .await;
    assert!(out.contains("keys of 0 addresses"), "{out}");
    assert!(!b.ok(&["agent", "keys"]).await.contains(&address_id));
    a.ok(&["address", "assign", &address_id, &device_id]).await;
    assert!(b.ok(&["agent", "keys"]).await.contains(&address_id));

    // Disabling the device ends B's credential.
    let out = a.ok(&["device", "disable", &device_id]).await;
    assert!(out.contains("Disabled"), "{out}");
    let out = a.ok(&["device", "list"]).await;
    assert!(line_of(&out, &device_id).contains("disabled"), "{out}");
    let err = b.fails(&["agent", "status"]).await;
    assert!(err.contains("(unauthenticated)"), "{err}");
    assert!(err.contains("agent pair --force"), "{err}");
    assert!(!err.contains("sealpost login"), "{err}");

    // Deleting the address removes it from the list.
    a.phrase = None;
    a.ok(&["address", "delete", &address_id]).await;
    a.phrase = Some(phrase);
    assert!(!a.ok(&["address", "list"]).await.contains(&address_id));
    let err = a.fails(&["address", "delete", &address_id]).await;
    assert!(err.contains("(not_found)"), "{err}");

    // Removing the device.
    a.ok(&["device", "remove", &device_id]).await;
    assert!(a.ok(&["device", "list"]).await.contains("No devices"));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_cancels_a_waiting_pairing() {
    let app = TestApp::spawn().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    let b = Cli::new(&app, &tmp.path().join("device"));
    a.phrase = Some(printed_phrase(&a.ok(&["init"]).await));

    let mut agent = Background::agent_pair(&b, &["--platform", "web"]);
    let code = agent.code().await;
    agent.line_where(|l| l.starts_with("Waiting")).await;
    let interrupted = std::process::Command::new("kill")
        .args(["-INT", &agent.child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let run = agent.exit().await;
    assert!(!run.ok);
    assert!(run.stderr.contains("pairing cancelled"), "{}", run.stderr);
    assert!(!b.dir.join("device.json").exists());

    // The session is gone: the code finds nothing.
    let err = a.fails(&["device", "pair", &code]).await;
    assert!(err.contains("no device is waiting"), "{err}");
    assert!(err.contains("(not_found)"), "{err}");
    app.stop().await;
}

/// Sends one message with Python's smtplib, as any standard client would:
/// argv is host, port, to, subject, text, html ("" for none), attachment
/// path ("" for none).
const SEND_MAIL: &str = r#"
import smtplib, sys
from email.message import EmailMessage
host, port, to, subject, text, html, attachment = sys.argv[1:8]
msg = EmailMessage()
msg["From"] = "Example Shop <noreply@example.com>"
msg["To"] = to
msg["Subject"] = subject
msg.set_content(text)
if html:
    msg.add_alternative(html, subtype="html")
if attachment:
    with open(attachment, "rb") as f:
        data = f.read()
    msg.add_attachment(data, maintype="application", subtype="octet-stream",
                       filename="report.bin")
with smtplib.SMTP(host, int(port), timeout=30) as smtp:
    smtp.send_message(msg)
"#;

/// Whether `python3` with `smtplib` is there to send mail with.
fn python_can_send() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import smtplib, email.message"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

struct Mail<'a> {
    subject: &'a str,
    text: &'a str,
    html: &'a str,
    attachment: Option<&'a Path>,
}

async fn send_by_smtp(smtp: std::net::SocketAddr, to: &str, mail: Mail<'_>) {
    let attachment = mail
        .attachment
        .map(|path| path.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let output = Command::new("python3")
        .args(["-c", SEND_MAIL])
        .args([
            &smtp.ip().to_string(),
            &smtp.port().to_string(),
            to,
            mail.subject,
            mail.text,
            mail.html,
            &attachment,
        ])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "smtplib failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The non-empty lines of `out`.
fn lines(out: &str) -> Vec<&str> {
    out.lines().filter(|line| !line.trim().is_empty()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn mail_sent_with_smtplib_is_listed_read_decoded_saved_and_waited_for() {
    if !python_can_send() {
        println!("SKIPPED: python3 with smtplib is not installed; it sends the test mail");
        return;
    }
    let mut app = TestApp::spawn().await;
    let smtp = app.spawn_smtp().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    a.phrase = Some(printed_phrase(&a.ok(&["init"]).await));
    let out = a.ok(&["address", "create", "--prefix", "signup"]).await;
    let address_id = word_starting(&out, "ibx_");
    let email = out
        .split_whitespace()
        .find(|w| w.contains('@'))
        .unwrap_or_else(|| panic!("no address in:\n{out}"))
        .to_owned();
    assert!(
        a.ok(&["mail", "list", &address_id])
            .await
            .contains("No mail")
    );

    // A signup mail with a code, a link, an HTML part and a binary attachment.
    let attachment: Vec<u8> = (0..3000u32)
        .map(|i| u8::try_from((i * 7 + i / 13) % 256).unwrap())
        .collect();
    let attachment_path = tmp.path().join("sent.bin");
    std::fs::write(&attachment_path, &attachment).unwrap();
    send_by_smtp(
        smtp,
        &email,
        Mail {
            subject: "Welcome to Example",
            text: "Hello!\n\nYour verification code is 482913.\n\
                   Or confirm here: https://example.com/confirm?token=abc123\n\nOrder ref 2026-11-22.\n",
            html: "<html><body><p>Your code is <b>482913</b>.</p>\
                   <p><a href=\"https://example.com/confirm?token=abc123&amp;src=html\">Confirm</a></p>\
                   </body></html>",
            attachment: Some(&attachment_path),
        },
    )
    .await;

    // list: decrypted sender and subject, attachment count, unread.
    let out = a.ok(&["mail", "list", &address_id]).await;
    assert_eq!(lines(&out).len(), 1, "{out}");
    let message_id = word_starting(&out, "msg_");
    let line = line_of(&out, &message_id);
    for expected in [
        "Example Shop <noreply@example.com>",
        "Welcome to Example",
        "(1 attachment)",
        "unread",
    ] {
        assert!(line.contains(expected), "{expected:?} not in {line}");
    }

    // read: headers, attachment and text body; then it is read.
    let out = a.ok(&["mail", "read", &message_id]).await;
    assert!(out.contains("Subject     Welcome to Example"), "{out}");
    assert!(out.contains(&format!("To          {email}")), "{out}");
    assert!(
        out.contains("Attachment  0  report.bin  application/octet-stream  2.9 KiB"),
        "{out}"
    );
    assert!(out.contains("Your verification code is 482913."), "{out}");
    assert!(!out.contains("<b>"), "the text body, not the HTML: {out}");
    let line = line_of(&a.ok(&["mail", "list", &address_id]).await, &message_id).to_owned();
    assert!(!line.contains("unread"), "{line}");
    let out = a.ok(&["mail", "read", &message_id, "--html"]).await;
    assert!(out.contains("<b>482913</b>"), "{out}");

    // --codes: the code first, then the links of the text and of the HTML.
    a.ok(&["mail", "mark", &message_id, "--unread"]).await;
    let out = a
        .ok(&["mail", "read", &message_id, "--codes", "--keep-unread"])
        .await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        vec![
            "482913",
            "https://example.com/confirm?token=abc123",
            "https://example.com/confirm?token=abc123&src=html",
        ]
    );
    let line = line_of(&a.ok(&["mail", "list", &address_id]).await, &message_id).to_owned();
    assert!(line.contains("unread"), "--keep-unread: {line}");
    a.ok(&["mail", "mark", &message_id, "--read"]).await;

    // attachment: the very bytes sent, under the sealed file name, in the
    // current directory; never over an existing file.
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let in_work = |args: &[&str]| {
        let mut command = a.command(args);
        command.current_dir(&work);
        command
    };
    let run: Run = in_work(&["mail", "attachment", &message_id, "0"])
        .output()
        .await
        .unwrap()
        .into();
    assert!(run.ok, "{}", run.stderr);
    assert!(run.stdout.contains("report.bin"), "{}", run.stdout);
    assert_eq!(std::fs::read(work.join("report.bin")).unwrap(), attachment);
    assert_eq!(mode(&work.join("report.bin")), 0o600);
    let run: Run = in_work(&["mail", "attachment", &message_id, "0"])
        .output()
        .await
        .unwrap()
        .into();
    assert!(
        !run.ok && run.stderr.contains("already exists"),
        "{}",
        run.stderr
    );
    let copy = tmp.path().join("copy.bin");
    a.ok(&[
        "mail",
        "attachment",
        &message_id,
        "0",
        "-o",
        copy.to_str().unwrap(),
    ])
    .await;
    assert_eq!(std::fs::read(&copy).unwrap(), attachment);
    let output = in_work(&["mail", "attachment", &message_id, "0", "-o", "-"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.stdout, attachment);
    let err = a.fails(&["mail", "attachment", &message_id, "1"]).await;
    assert!(err.contains("has no attachment 1"), "{err}");

    // wait: nothing unread, so it waits, and returns the code of the next
    // mail, sent in the background.
    let mut waiting = a.command(&["mail", "wait", &address_id, "--codes", "--timeout", "60"]);
    let started = std::time::Instant::now();
    let waiter = tokio::spawn(async move { waiting.output().await.unwrap() });
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert!(
        !waiter.is_finished(),
        "wait returned before the mail was sent"
    );
    send_by_smtp(
        smtp,
        &email,
        Mail {
            subject: "Your login code",
            text: "Use 771234 to sign in. https://example.com/login",
            html: "",
            attachment: None,
        },
    )
    .await;
    let run: Run = waiter.await.unwrap().into();
    assert!(run.ok, "{}", run.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!(run.stdout, "771234\nhttps://example.com/login\n");
    let out = a.ok(&["mail", "list", &address_id]).await;
    assert_eq!(lines(&out).len(), 2, "{out}");
    assert!(
        !out.contains("unread"),
        "wait marks what it shows read: {out}"
    );

    // The one-liner of test-mail users, in a shell: the first line is the
    // code, and the mail is marked read though `head` stops reading early.
    let mut one_liner = Command::new("bash");
    one_liner
        .args([
            "-c",
            r#"set -o pipefail; CODE=$("$0" mail wait "$1" --codes | head -1) && echo "code=$CODE""#,
            env!("CARGO_BIN_EXE_sealpost"),
            &address_id,
        ])
        .env("SEALPOST_API_URL", &a.api_url)
        .env("SEALPOST_CONFIG_DIR", &a.dir)
        .env("SEALPOST_PHRASE", a.phrase.as_deref().unwrap())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let waiter = tokio::spawn(async move { one_liner.output().await.unwrap() });
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    send_by_smtp(
        smtp,
        &email,
        Mail {
            subject: "Reset your password",
            text: "Links: https://example.com/a https://example.com/b\nCode: QX7K-29PL",
            html: "",
            attachment: None,
        },
    )
    .await;
    let run: Run = waiter.await.unwrap().into();
    assert!(run.ok, "{}", run.stderr);
    assert_eq!(run.stdout, "code=QX7K-29PL\n");
    let out = a.ok(&["mail", "list", &address_id]).await;
    assert_eq!(lines(&out).len(), 3, "{out}");
    assert!(!out.contains("unread"), "{out}");

    // Nothing new: the wait ends with an error at its timeout.
    let err = a
        .fails(&["mail", "wait", &address_id, "--timeout", "1"])
        .await;
    assert!(err.contains("no new mail"), "{err}");

    // Unread mail already there is returned at once, in full.
    a.ok(&["mail", "mark", &message_id, "--unread"]).await;
    let out = a.ok(&["mail", "wait", &address_id, "--timeout", "5"]).await;
    assert!(out.contains(&format!("Message     {message_id}")), "{out}");
    assert!(out.contains("Your verification code is 482913."), "{out}");

    // --all follows the pages.
    let out = a.ok(&["mail", "list", &address_id, "--limit", "2"]).await;
    assert_eq!(lines(&out).len(), 3, "{out}");
    assert!(out.contains("--all"), "{out}");
    let out = a
        .ok(&["mail", "list", &address_id, "--limit", "2", "--all"])
        .await;
    assert_eq!(lines(&out).len(), 3, "{out}");
    assert!(!out.contains("--all"), "{out}");

    // Not a device here: --device is refused; the phrase is checked.
    let err = a.fails(&["mail", "list", &address_id, "--device"]).await;
    assert!(err.contains("not paired"), "{err}");
    a.phrase = None;
    let err = a.fails(&["mail", "list", &address_id]).await;
    assert!(err.contains("SEALPOST_PHRASE"), "{err}");
    a.ok(&["mail", "mark", &message_id, "--read"]).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_paired_device_reads_the_mail_of_its_address_without_the_phrase() {
    let app = TestApp::spawn().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    let b = Cli::new(&app, &tmp.path().join("device"));
    let phrase = printed_phrase(&a.ok(&["init"]).await);
    a.phrase = Some(phrase.clone());

    let mut agent = Background::agent_pair(&b, &[]);
    let code = agent.code().await;
    agent.line_where(|l| l.starts_with("Waiting")).await;
    let device_id = word_starting(&a.ok(&["device", "pair", &code]).await, "wkr_");
    assert!(agent.exit().await.ok);
    let address_id = word_starting(&a.ok(&["address", "create"]).await, "ibx_");
    let err = b.fails(&["mail", "list", &address_id]).await;
    assert!(err.contains("not_found"), "not assigned yet: {err}");
    a.ok(&["address", "assign", &address_id, &device_id]).await;

    // Delivered through the API, with the operator's session.
    let keys = sealpost_seal::RecoveryPhrase::parse(&phrase)
        .unwrap()
        .keys();
    let client = sealpost_client::Client::new(&app.base_url).unwrap();
    let token = client.sign_in(&keys).await.unwrap().token;
    let address = sealpost_kernel::AddressId::parse(&address_id).unwrap();
    let message_id = client
        .with_token(token)
        .deliver_raw(
            &address,
            b"From: a@example.com\r\nSubject: For the device\r\n\r\nYour code is 5566.\r\n",
        )
        .await
        .unwrap();

    // Only device.json on B: the mail commands read as the device, with
    // the keys from its bundle and no phrase.
    assert!(!b.dir.join("session.json").exists());
    let out = b.ok(&["mail", "list", &address_id]).await;
    assert!(
        line_of(&out, message_id.as_str()).contains("For the device"),
        "{out}"
    );
    let out = b
        .ok(&["mail", "read", message_id.as_str(), "--codes"])
        .await;
    assert_eq!(out, "5566\n");
    let out = b.ok(&["mail", "list", &address_id, "--device"]).await;
    assert!(line_of(&out, message_id.as_str()).contains("read"), "{out}");

    // Taken off the device: its keys go, and so does its access.
    a.ok(&["address", "unassign", &address_id, &device_id])
        .await;
    let err = b.fails(&["mail", "read", message_id.as_str()]).await;
    assert!(err.contains("not_found"), "{err}");

    // A disabled device is pointed at pairing again.
    a.ok(&["device", "disable", &device_id]).await;
    let err = b.fails(&["mail", "list", &address_id]).await;
    assert!(err.contains("(unauthenticated)"), "{err}");
    assert!(err.contains("agent pair --force"), "{err}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn plans_usage_and_a_sandbox_upgrade_from_the_command_line() {
    let app = TestApp::spawn().await;
    // The CLI tells a running paid period by its own clock: the service's
    // starts at the same time.
    let start = Timestamp::from(chrono::Utc::now());
    app.clock.set(start);
    let paid_until = (start + chrono::TimeDelta::days(30)).to_string();
    let tmp = tempfile::tempdir().unwrap();
    let cli = Cli::new(&app, &tmp.path().join("laptop"));

    // The plan table needs no account; its columns line up (all but the
    // first are right-aligned, so every line is as long as the header).
    let plans = cli.ok(&["plan", "list"]).await;
    let scale = plans
        .lines()
        .find(|line| line.starts_with("scale"))
        .unwrap();
    assert!(
        scale.contains("$49.00") && scale.contains("1000"),
        "{plans}"
    );
    assert!(plans.contains("by contract"), "{plans}");
    let header_width = plans.lines().next().unwrap().len();
    assert!(
        plans.lines().all(|line| line.len() == header_width),
        "{plans}"
    );
    // The test service takes the sandbox only.
    let providers = cli.ok(&["billing", "providers"]).await;
    assert_eq!(lines(&providers), ["sandbox  sandbox"], "{providers}");

    cli.ok(&["init"]).await;
    let usage = cli.ok(&["usage"]).await;
    assert!(usage.contains("Plan: Free (free)"), "{usage}");
    let addresses = usage.lines().find(|l| l.starts_with("addresses")).unwrap();
    assert_eq!(
        addresses.split_whitespace().take(3).collect::<Vec<_>>(),
        ["addresses", "0", "3"],
        "{usage}"
    );
    let webhooks = usage.lines().find(|l| l.starts_with("webhooks")).unwrap();
    assert!(webhooks.contains("not on plan"), "{usage}");

    // An upgrade needs payment; the error names the command that pays, not
    // an API route.
    let refused = cli.fails(&["plan", "change", "scale"]).await;
    assert!(
        refused.contains("pay for it with `sealpost billing checkout scale`"),
        "{refused}"
    );
    assert!(refused.contains("(payment_required)"), "{refused}");
    assert!(!refused.contains("POST /"), "{refused}");

    // A provider the service does not take is refused with the list;
    // without --provider, the only one is used.
    let err = cli
        .fails(&["billing", "checkout", "scale", "--provider", "stripe"])
        .await;
    assert!(
        err.contains("does not take stripe; --provider is one of: sandbox (sandbox)"),
        "{err}"
    );
    let run = cli.run(&["billing", "checkout", "scale"]).await;
    assert!(run.ok, "{}", run.stderr);
    let url = run.stdout.trim().to_owned();
    assert!(
        url.starts_with(&format!("{}/billing/sandbox/pay_", app.base_url)),
        "{url}"
    );
    let payment_id = url.rsplit('/').next().unwrap().to_owned();
    assert!(
        cli.ok(&["billing", "payment", &payment_id])
            .await
            .contains("pending")
    );

    // Pay on the sandbox page, as a person would.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let paid = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("outcome=paid")
        .send()
        .await
        .unwrap();
    assert!(paid.status().is_success());
    assert!(
        cli.ok(&["billing", "payment", &payment_id])
            .await
            .contains("Status:   paid")
    );
    let shown = cli.ok(&["plan", "show"]).await;
    assert!(shown.contains("Plan: Scale (scale)"), "{shown}");
    assert!(
        shown.contains(&format!("Paid until: {paid_until}")),
        "{shown}"
    );
    let usage = cli.ok(&["usage"]).await;
    let addresses = usage.lines().find(|l| l.starts_with("addresses")).unwrap();
    assert!(addresses.contains(" 1000 "), "{usage}");

    // Fleet costs more than Scale: checkout again.
    let refused = cli.fails(&["plan", "change", "fleet"]).await;
    assert!(
        refused.contains("`sealpost billing checkout fleet`"),
        "{refused}"
    );

    // Back down to Free would drop the paid month: with no terminal to ask
    // on, refused, saying what would be lost and how to go ahead.
    let refused = cli.fails(&["plan", "change", "free"]).await;
    assert!(
        refused.contains(&format!("ends the Scale period paid until {paid_until}")),
        "{refused}"
    );
    assert!(refused.contains("lost"), "{refused}");
    assert!(
        refused.contains("`sealpost plan change free --yes`"),
        "{refused}"
    );
    let shown = cli.ok(&["plan", "show"]).await;
    assert!(shown.contains("Plan: Scale (scale)"), "{shown}");

    // With --yes it goes ahead.
    let moved = cli.ok(&["plan", "change", "free", "--yes"]).await;
    assert!(moved.contains("Plan: Free (free)"), "{moved}");
    assert!(moved.contains("Paid until: nothing to pay"), "{moved}");
    // Nothing paid is left to lose: no question.
    let same = cli.ok(&["plan", "change", "free"]).await;
    assert!(same.contains("Plan: Free (free)"), "{same}");
    app.stop().await;
}

/// Sends a hostile message, composed by hand so its header words, text and
/// HTML bodies and attachment name carry terminal escape sequences (CSI,
/// OSC 0 title, OSC 52 clipboard, OSC 8 links), C1 controls, a bidi
/// override, CR, DEL and NUL: argv is host, port, to.
const SEND_HOSTILE_MAIL: &str = r#"
import base64, smtplib, sys, urllib.parse
host, port, to = sys.argv[1:4]
def word(text):
    return "=?utf-8?b?" + base64.b64encode(text.encode()).decode() + "?="
def body(text):
    return base64.encodebytes(text.encode()).decode()
sender = "Billing \x1b[31mDept\x1b[0m"
subject = ("Invoice \x1b[2J\x1b[H\x1b]0;pwned\x07\x1b]52;c;cm0gLXJmIH4=\x07 "
           "\u202efdp.exe \x9b31m\r\nX-Injected: 1")
text = ("Dear user,\r\n\x1b[1A\x1b[2KYour code is 482913.\x07\tthen\n"
        "\x9d0;title\x9c https://example.com/x\x1b[8m hidden\x7f\x00 end\rover\n")
html = "<p>Code <b>482913</b>\x1b]52;c;Zm9v\x07</p>"
name = "report\x1b]8;;https://evil.example\x07\u202efdp.exe"
raw = f"""From: {word(sender)} <billing@example.com>
To: {to}
Subject: {word(subject)}
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="outer"

--outer
Content-Type: multipart/alternative; boundary="inner"

--inner
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: base64

{body(text)}
--inner
Content-Type: text/html; charset=utf-8
Content-Transfer-Encoding: base64

{body(html)}
--inner--
--outer
Content-Type: application/octet-stream
Content-Disposition: attachment; filename*=utf-8''{urllib.parse.quote(name)}
Content-Transfer-Encoding: base64

{body("bytes")}
--outer--
"""
with smtplib.SMTP(host, int(port), timeout=30) as smtp:
    smtp.sendmail("billing@example.com", [to], raw.encode())
"#;

/// Fails when `out` holds a character a terminal acts on: a control
/// character other than newline and tab (C0, DEL, C1) or a bidi override.
fn assert_inert(out: &str) {
    for c in out.chars() {
        let control = c.is_control() && c != '\n' && c != '\t';
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        assert!(
            !control && !bidi,
            "U+{:04X} printed in:\n{out}",
            u32::from(c)
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_mail_cannot_drive_the_terminal() {
    if !python_can_send() {
        println!("SKIPPED: python3 with smtplib is not installed; it sends the test mail");
        return;
    }
    let mut app = TestApp::spawn().await;
    let smtp = app.spawn_smtp().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    a.phrase = Some(printed_phrase(&a.ok(&["init"]).await));
    // A label is sealed text too; this one carries a title sequence.
    let out = a
        .ok(&["address", "create", "--label", "shop\u{1b}]0;owned\u{7}"])
        .await;
    assert_inert(&out);
    let email = out
        .split_whitespace()
        .find(|w| w.contains('@'))
        .unwrap_or_else(|| panic!("no address in:\n{out}"))
        .to_owned();
    let out = a.ok(&["address", "list"]).await;
    assert_inert(&out);
    assert!(out.contains("shop\\x1b]0;owned\\x07"), "{out}");

    let sent = Command::new("python3")
        .args(["-c", SEND_HOSTILE_MAIL])
        .args([&smtp.ip().to_string(), &smtp.port().to_string(), &email])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    assert!(
        sent.status.success(),
        "smtplib failed: {}",
        String::from_utf8_lossy(&sent.stderr)
    );

    // Every way the message is shown prints it inert, the sequences
    // visible as escapes.
    let list = a.run(&["mail", "list", &email]).await;
    assert!(list.ok, "{}", list.stderr);
    assert_inert(&list.stdout);
    let message_id = word_starting(&list.stdout, "msg_");
    assert!(
        list.stdout
            .contains("Invoice \\x1b[2J\\x1b[H\\x1b]0;pwned\\x07"),
        "{}",
        list.stdout
    );
    assert_eq!(lines(&list.stdout).len(), 1, "{}", list.stdout);

    for args in [
        &["mail", "read", &message_id, "--keep-unread"][..],
        &["mail", "read", &message_id, "--keep-unread", "--html"],
        &["mail", "read", &message_id, "--keep-unread", "--codes"],
        &["mail", "wait", &email, "--timeout", "5"],
    ] {
        let run = a.run(args).await;
        assert!(run.ok, "{args:?}: {}", run.stderr);
        assert_inert(&run.stdout);
        assert_inert(&run.stderr);
    }
    let out = a.ok(&["mail", "read", &message_id]).await;
    for shown in [
        "From        \"Billing \\x1b[31mDept\\x1b[0m\" <billing@example.com>",
        "\\x1b]52;c;cm0gLXJmIH4=\\x07 \\u{202e}fdp.exe \\x9b31m\\x0d\\x0aX-Injected: 1",
        "Attachment  0  report\\x1b]8;;https://evil.example\\x07\\u{202e}fdp.exe",
        "Dear user,\n\\x1b[1A\\x1b[2KYour code is 482913.\\x07\tthen\n",
        "\\x7f\\x00 end\\x0dover",
    ] {
        assert!(out.contains(shown), "{shown:?} not in:\n{out}");
    }
    let codes = a
        .ok(&["mail", "read", &message_id, "--codes", "--keep-unread"])
        .await;
    assert_eq!(
        lines(&codes),
        ["482913", "https://example.com/x"],
        "{codes}"
    );

    // --raw keeps what the sender wrote, byte for byte.
    let raw = a
        .ok(&["mail", "read", &message_id, "--raw", "--keep-unread"])
        .await;
    assert!(
        raw.contains("Invoice \u{1b}[2J\u{1b}[H\u{1b}]0;pwned\u{7}"),
        "{raw:?}"
    );
    assert!(raw.contains("\u{9d}0;title\u{9c}"), "{raw:?}");

    // The saved attachment's name has lost what acts on a terminal, and so
    // has the line saying where it went.
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let mut save = a.command(&["mail", "attachment", &message_id, "0"]);
    let run: Run = save.current_dir(&work).output().await.unwrap().into();
    assert!(run.ok, "{}", run.stderr);
    assert_inert(&run.stdout);
    let saved: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    // Cut at the last slash, as every sealed name is.
    assert_eq!(saved, ["evil.examplefdp.exe"], "{saved:?}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_closed_pipe_ends_the_output_quietly_and_a_full_disk_is_reported() {
    let app = TestApp::spawn().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    a.phrase = Some(printed_phrase(&a.ok(&["init"]).await));
    for _ in 0..3 {
        a.ok(&["address", "create"]).await;
    }

    // The reader is gone before anything is written (as `| head -0`
    // would): no panic, nothing on stderr, exit 0.
    for args in [
        &["plan", "list"][..],
        &["address", "list"],
        &["whoami"],
        &["--help"],
    ] {
        let mut child = a
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let output = child.wait_with_output().await.unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }

    // In a shell pipeline with pipefail, as people write them.
    let mut pipeline = Command::new("bash");
    pipeline
        .args([
            "-c",
            r#"set -o pipefail; "$0" plan list | head -c 0"#,
            env!("CARGO_BIN_EXE_sealpost"),
        ])
        .env("SEALPOST_API_URL", &a.api_url)
        .env("SEALPOST_CONFIG_DIR", &a.dir)
        .stdin(Stdio::null());
    let run: Run = pipeline.output().await.unwrap().into();
    assert!(run.ok, "{}", run.stderr);
    assert!(run.stderr.is_empty(), "{}", run.stderr);

    // Any other failure to write is an error.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    // (`output()` would replace stdout with a pipe.)
    let child = a
        .command(&["plan", "list"])
        .stdout(full)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let run: Run = child.wait_with_output().await.unwrap().into();
    assert!(!run.ok);
    assert!(
        run.stderr.starts_with("error: cannot write to stdout"),
        "{}",
        run.stderr
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mail_wait_reports_a_service_out_of_reach() {
    let app = TestApp::spawn().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    a.phrase = Some(printed_phrase(&a.ok(&["init"]).await));
    let address_id = word_starting(&a.ok(&["address", "create"]).await, "ibx_");
    app.stop().await;

    let started = std::time::Instant::now();
    let err = a
        .fails(&["mail", "wait", &address_id, "--timeout", "30"])
        .await;
    assert!(err.contains("could not reach the service"), "{err}");
    assert!(err.contains("(transport)"), "{err}");
    assert!(!err.contains("no new mail"), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "reported at once, not at the timeout"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn addresses_are_named_by_email_on_the_domains_offered_at_either_loopback_name() {
    let app = TestApp::spawn().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    a.phrase = Some(printed_phrase(&a.ok(&["init"]).await));

    // The domains, and a domain not offered.
    let domains = a.ok(&["domain", "available"]).await;
    assert_eq!(lines(&domains), ["mail.localhost"], "{domains}");
    let err = a
        .fails(&["address", "create", "--domain", "elsewhere.example"])
        .await;
    assert!(
        err.contains(
            "cannot be created on elsewhere.example; the domains offered are mail.localhost (`sealpost domain available`)"
        ),
        "{err}"
    );
    assert!(!err.contains("GET /"), "{err}");
    let out = a
        .ok(&[
            "inbox",
            "create",
            "--domain",
            "MAIL.localhost",
            "--prefix",
            "shop",
        ])
        .await;
    let address_id = word_starting(&out, "ibx_");
    let email = out
        .split_whitespace()
        .find(|w| w.contains('@'))
        .unwrap_or_else(|| panic!("no address in:\n{out}"))
        .to_owned();

    // The email address does wherever an address id does.
    let out = a.ok(&["address", "retention", &email, "30"]).await;
    assert!(
        out.contains(&address_id) && out.contains("30 days"),
        "{out}"
    );
    a.ok(&["address", "label", &email.to_uppercase(), "signups"])
        .await;
    let out = a.ok(&["address", "list"]).await;
    let line = line_of(&out, &address_id);
    assert!(
        line.contains("30 days") && line.ends_with("signups"),
        "{line}"
    );
    let out = a.ok(&["mail", "list", &email]).await;
    assert!(out.contains(&format!("No mail in {address_id}")), "{out}");
    let err = a
        .fails(&["mail", "wait", "nobody@mail.localhost", "--timeout", "1"])
        .await;
    assert!(err.contains("no address nobody@mail.localhost"), "{err}");

    // localhost and 127.0.0.1 are the same service for the stored session.
    let port = app.base_url.rsplit(':').next().unwrap();
    let localhost = format!("http://localhost:{port}/");
    let out = a.ok(&["whoami", "--api-url", &localhost]).await;
    assert!(out.contains("Account"), "{out}");
    a.ok(&["mail", "list", &email, "--api-url", &localhost])
        .await;
    let err = a
        .fails(&["whoami", "--api-url", &format!("http://localhost:{port}0")])
        .await;
    assert!(err.contains("stored session is for"), "{err}");

    a.ok(&["address", "delete", &email]).await;
    assert!(a.ok(&["address", "list"]).await.contains("No addresses"));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn device_activity_is_shown_to_the_hour_and_its_name_inert() {
    let app = TestApp::spawn().await;
    let now = || Timestamp::from(chrono::Utc::now());
    // The device reports in five hours ago, by the service's clock.
    app.clock.set(now() - chrono::TimeDelta::hours(5));
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    let b = Cli::new(&app, &tmp.path().join("device"));
    a.phrase = Some(printed_phrase(&a.ok(&["init"]).await));

    // A device names itself; a hostile name is shown inert.
    let mut agent = Background::agent_pair(&b, &["--name", "Box\u{1b}]0;owned\u{7}"]);
    let code = agent.code().await;
    agent.line_where(|l| l.starts_with("Waiting")).await;
    let out = a.ok(&["device", "pair", &code]).await;
    assert_inert(&out);
    assert!(out.contains("Box\\x1b]0;owned\\x07 (unknown)"), "{out}");
    let device_id = word_starting(&out, "wkr_");
    assert!(agent.exit().await.ok);

    // lastActiveAt is kept to the hour: shown as hours since that hour
    // began (5, or 6 when an hour turned during the test).
    let five_hours = |line: &str| line.contains("5 hours ago") || line.contains("6 hours ago");
    let status = b.ok(&["agent", "status"]).await;
    let last = line_of(&status, "Last active");
    assert!(five_hours(last), "{status}");
    let out = a.ok(&["device", "list"]).await;
    assert_inert(&out);
    let line = line_of(&out, &device_id);
    assert!(line.contains("Box\\x1b]0;owned\\x07"), "{out}");
    assert!(five_hours(line), "{out}");

    // Reported active now: within the last hour (or "1 hour ago" when the
    // hour turned between the report and the listing).
    app.clock.set(now());
    let recent = |line: &str| line.contains("within the last hour") || line.contains("1 hour ago");
    let status = b.ok(&["agent", "status"]).await;
    assert!(recent(line_of(&status, "Last active")), "{status}");
    let out = a.ok(&["device", "list"]).await;
    assert!(recent(line_of(&out, &device_id)), "{out}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn notification_kinds_are_switched_and_addresses_muted_from_the_command_line() {
    let app = TestApp::spawn().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut cli = Cli::new(&app, &tmp.path().join("phone"));
    cli.phrase = Some(printed_phrase(&cli.ok(&["init"]).await));

    let shown = cli.ok(&["notifications", "show"]).await;
    assert_eq!(
        lines(&shown),
        [
            "new-mail           on",
            "device-paired      on",
            "device-offline     on",
            "new-sign-in        on",
            "billing            on",
            "support            on",
            "webhook-failures   on",
            "Muted addresses: none",
        ],
        "{shown}"
    );
    let out = cli
        .ok(&["notifications", "set", "new-sign-in", "off"])
        .await;
    assert_eq!(lines(&out), ["new-sign-in notifications are off."]);
    // The API's key names do as well.
    cli.ok(&["notifications", "set", "webhookFailures", "OFF"])
        .await;
    let shown = cli.ok(&["notifications", "show"]).await;
    assert!(shown.contains("new-sign-in        off"), "{shown}");
    assert!(shown.contains("webhook-failures   off"), "{shown}");
    assert!(shown.contains("new-mail           on"), "{shown}");
    let err = cli.fails(&["notifications", "set", "sms", "on"]).await;
    assert!(err.contains("not a notification kind"), "{err}");
    let err = cli
        .fails(&["notifications", "set", "billing", "maybe"])
        .await;
    assert!(err.contains("neither on nor off"), "{err}");

    let out = cli.ok(&["address", "create", "--prefix", "news"]).await;
    let address_id = word_starting(&out, "ibx_");
    let email = out
        .split_whitespace()
        .find(|w| w.contains('@'))
        .unwrap()
        .to_owned();
    let out = cli.ok(&["notifications", "mute", &email]).await;
    assert_eq!(
        lines(&out),
        [format!("New mail to {address_id} is no longer pushed.")]
    );
    let shown = cli.ok(&["notifications", "show"]).await;
    assert!(
        shown.contains(&format!("  {address_id}  {email}")),
        "{shown}"
    );
    let out = cli.ok(&["notifications", "unmute", &address_id]).await;
    assert_eq!(
        lines(&out),
        [format!("New mail to {address_id} is pushed again.")]
    );
    assert!(
        cli.ok(&["notifications", "show"])
            .await
            .contains("Muted addresses: none")
    );
    let err = cli.fails(&["notifications", "mute", "ibx_notmine1"]).await;
    assert!(
        err.contains("not_found") || err.contains("no such"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn mail_sent_with_the_cli_arrives_signed_and_is_filed_starred_and_trashed() {
    use sealpost_testkit::relay::{Behaviour, TestRelay, dkim_test_key_path, dkim_verifies};

    let relay = TestRelay::start(Behaviour::Accept).await;
    let url = relay.url();
    let app = TestApp::spawn_with(|config| {
        config.smtp_relay = Some(sealpost_config::RelayUrl(url));
        config.dkim_key_file = Some(dkim_test_key_path());
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    a.phrase = Some(printed_phrase(&a.ok(&["init"]).await));
    let out = a.ok(&["address", "create", "--prefix", "shop"]).await;
    let address_id = word_starting(&out, "ibx_");
    let email = out
        .split_whitespace()
        .find(|w| w.contains('@'))
        .unwrap_or_else(|| panic!("no address in:\n{out}"))
        .to_owned();
    let html = tmp.path().join("body.html");
    std::fs::write(&html, "<p>Thanks! Code <b>551234</b>.</p>").unwrap();
    let text = tmp.path().join("body.txt");
    std::fs::write(&text, "Thanks! Code 551234.\n").unwrap();

    let out = a
        .ok(&[
            "mail",
            "send",
            "--from",
            &email,
            "--to",
            "Bob Example <bob@example.com>",
            "--to",
            "carol@example.org",
            "--subject",
            "Order 1234 confirmed",
            "--text-file",
            text.to_str().unwrap(),
            "--html-file",
            html.to_str().unwrap(),
        ])
        .await;
    assert!(out.starts_with("Sent."), "{out}");
    let message_id = word_starting(&out, "msg_");

    // At the relay: both recipients, DKIM-signed for the shared domain.
    let relayed = relay.received();
    assert_eq!(relayed.len(), 1);
    assert_eq!(
        relayed[0].recipients,
        ["bob@example.com", "carol@example.org"]
    );
    assert!(dkim_verifies(&relayed[0].data).await, "DKIM signature");

    // The Sent copy, opened on this machine.
    let out = a.ok(&["mail", "list", "--folder", "sent"]).await;
    let line = line_of(&out, &message_id);
    for expected in [
        "sent",
        "read",
        "to Bob Example <bob@example.com>, carol@example.org",
        "Order 1234 confirmed",
    ] {
        assert!(line.contains(expected), "{expected:?} not in {line}");
    }
    assert!(
        a.ok(&["mail", "list", &address_id, "--folder", "inbox"])
            .await
            .contains("No mail"),
        "sent mail is not in the inbox"
    );
    let out = a.ok(&["mail", "read", &message_id]).await;
    assert!(out.contains("Subject     Order 1234 confirmed"), "{out}");
    assert!(out.contains(&format!("From        {email}")), "{out}");
    assert!(out.contains("Thanks! Code 551234."), "{out}");

    // Star, move, delete, empty the trash.
    assert!(
        a.ok(&["mail", "star", &message_id])
            .await
            .contains("Starred")
    );
    let out = a.ok(&["mail", "list", "--starred"]).await;
    assert!(line_of(&out, &message_id).contains("starred"), "{out}");
    let out = a.ok(&["mail", "move", &message_id, "archive"]).await;
    assert!(out.contains("is in archive"), "{out}");
    let err = a.fails(&["mail", "move", &message_id, "inbox"]).await;
    assert!(err.contains("invalid_field"), "{err}");
    let out = a.ok(&["mail", "delete", &message_id]).await;
    assert!(out.contains("trash"), "{out}");
    line_of(
        &a.ok(&["mail", "list", "--folder", "trash"]).await,
        &message_id,
    );
    assert!(!a.ok(&["mail", "list"]).await.contains(&message_id));
    let out = a.ok(&["mail", "trash", "empty"]).await;
    assert!(out.contains("Deleted 1 message from the trash"), "{out}");
    assert!(
        a.ok(&["mail", "list", "--folder", "trash"])
            .await
            .contains("No mail in trash")
    );

    // An address that is not ours is refused by the service.
    let err = a
        .fails(&[
            "mail",
            "send",
            "--from",
            "nobody@mail.localhost",
            "--to",
            "bob@example.com",
            "--subject",
            "s",
            "--text",
            "t",
        ])
        .await;
    assert!(err.contains("not_your_address"), "{err}");
    assert_eq!(relay.received().len(), 1);
}

/// The text after `label` on its line.
fn after<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find_map(|line| line.strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{out}"))
        .trim()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_team_member_reads_a_shared_address_with_the_granted_key() {
    let app = TestApp::spawn().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut owner = Cli::new(&app, &tmp.path().join("owner"));
    let mut member = Cli::new(&app, &tmp.path().join("member"));
    let owner_phrase = printed_phrase(&owner.ok(&["init"]).await);
    owner.phrase = Some(owner_phrase.clone());
    member.phrase = Some(printed_phrase(&member.ok(&["init"]).await));
    let owner_id = owner.session()["accountId"].as_str().unwrap().to_owned();
    let member_id = member.session()["accountId"].as_str().unwrap().to_owned();

    // Below Fleet the team is refused with the plan's code.
    let joined = member.ok(&["team", "join-code"]).await;
    let code = after(&joined, "Join code:").to_owned();
    let words = after(&joined, "Fingerprint:").to_owned();
    assert_eq!(words.split(' ').count(), 6, "{joined}");
    assert!(
        code.starts_with(&format!("service-team-1.{member_id}.")),
        "{code}"
    );
    let refused = owner.fails(&["team", "add", &code]).await;
    assert!(refused.contains("plan_capability_required"), "{refused}");

    // Fleet through the sandbox.
    let url = owner
        .ok(&["billing", "checkout", "fleet"])
        .await
        .trim()
        .to_owned();
    pay_in_sandbox(&url).await;

    // Malformed join codes are named as such, before anything is sent.
    for bad in [
        "nonsense",
        "service-team-1.acct_x.AAAA",
        &code.replace("service-team-1", "team"),
    ] {
        let err = owner.fails(&["team", "add", bad]).await;
        assert!(err.contains("is not a join code"), "{err}");
    }
    // Both sides show the same six words.
    let added = owner.ok(&["team", "add", &code]).await;
    assert_eq!(after(&added, "Fingerprint:"), words, "{added}");
    assert!(owner.ok(&["team", "show"]).await.contains(&member_id));

    let address_id = word_starting(&owner.ok(&["address", "create"]).await, "ibx_");
    owner
        .ok(&[
            "team",
            "grant",
            &address_id,
            "--to",
            &member_id,
            "--access",
            "read",
        ])
        .await;
    let keys = sealpost_seal::RecoveryPhrase::parse(&owner_phrase)
        .unwrap()
        .keys();
    let client = sealpost_client::Client::new(&app.base_url).unwrap();
    let token = client.sign_in(&keys).await.unwrap().token;
    let address = sealpost_kernel::AddressId::parse(&address_id).unwrap();
    let message_id = client
        .with_token(token)
        .deliver_raw(
            &address,
            b"From: a@example.com\r\nSubject: For the team\r\n\r\nShared code 7788.\r\n",
        )
        .await
        .unwrap();

    // The member's CLI opens it with the key from the grant.
    let listed = member.ok(&["membership", "list"]).await;
    assert!(line_of(&listed, &owner_id).contains("active"), "{listed}");
    assert!(line_of(&listed, &address_id).contains("read"), "{listed}");
    let out = member.ok(&["mail", "list", &address_id]).await;
    assert!(
        line_of(&out, message_id.as_str()).contains("For the team"),
        "{out}"
    );
    let out = member.ok(&["mail", "read", message_id.as_str()]).await;
    assert!(out.contains("Shared code 7788."), "{out}");

    // Taken back: the next read is refused.
    owner
        .ok(&[
            "team",
            "grant",
            &address_id,
            "--to",
            &member_id,
            "--access",
            "revoke",
        ])
        .await;
    let err = member.fails(&["mail", "read", message_id.as_str()]).await;
    assert!(err.contains("not_found"), "{err}");
    let bad = owner
        .fails(&[
            "team",
            "grant",
            &address_id,
            "--to",
            &member_id,
            "--access",
            "write",
        ])
        .await;
    assert!(bad.contains("not read, send or revoke"), "{bad}");

    member.ok(&["membership", "leave", &owner_id]).await;
    assert!(member.ok(&["membership", "list"]).await.contains("no team"));
    app.stop().await;
}

/// Pays on the sandbox checkout page at `url`, as a person would.
async fn pay_in_sandbox(url: &str) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let paid = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("outcome=paid")
        .send()
        .await
        .unwrap();
    assert!(paid.status().is_success());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_own_domain_is_claimed_proved_delegated_used_and_removed_from_the_command_line() {
    use sealpost_testkit::dns::PublicDns;

    const NS: [&str; 2] = ["ns1.sealpost.test", "ns2.sealpost.test"];
    const MX: &str = "mx.sealpost.test";
    let dns = PublicDns::start(&["example.org"]).await;
    let resolver = dns.addr();
    let app = TestApp::spawn_with(move |config| {
        config.dns.resolver = Some(resolver);
        config.dns.nameservers = NS.iter().map(|ns| ns.to_string()).collect();
        config.dns.mx_host = MX.into();
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    a.phrase = Some(printed_phrase(&a.ok(&["init"]).await));
    assert!(a.ok(&["domain", "list"]).await.contains("No own domains"));

    // Below Scale: the plan, and how to get it.
    let err = a.fails(&["domain", "add", "example.org"]).await;
    assert!(
        err.contains("`sealpost billing checkout scale`") && err.contains("(plan_required)"),
        "{err}"
    );
    let url = a
        .ok(&["billing", "checkout", "scale"])
        .await
        .trim()
        .to_owned();
    pay_in_sandbox(&url).await;

    // A name that cannot be an own domain is refused with the service's code.
    let err = a.fails(&["domain", "add", "127.0.0.1"]).await;
    assert!(err.contains("(invalid_field)"), "{err}");

    // The claim: the record to publish and the command to run next.
    let out = a.ok(&["domain", "add", "Example.ORG."]).await;
    assert!(
        out.contains("Claimed example.org (step: verify ownership)"),
        "{out}"
    );
    assert!(out.contains("Publish this TXT record"), "{out}");
    assert_eq!(after(&out, "  Name:"), "_service-verify.example.org");
    assert_eq!(after(&out, "  Type:"), "TXT");
    let value = after(&out, "  Value:").to_owned();
    assert!(value.starts_with("service-verify="), "{value}");
    assert!(
        out.contains("Then run `sealpost domain check example.org`"),
        "{out}"
    );

    // Not published yet: the same instructions again.
    let out = a.ok(&["domain", "check", "example.org"]).await;
    assert!(out.starts_with("example.org: verify ownership"), "{out}");
    assert_eq!(after(&out, "  Value:"), value);

    // Published: the nameservers to set at the registrar.
    dns.publish_txt("_service-verify.example.org", &value);
    let out = a.ok(&["domain", "check", "example.org"]).await;
    assert!(out.starts_with("example.org: change nameservers"), "{out}");
    assert!(
        out.contains(&format!("to exactly {} and {}", NS[0], NS[1])),
        "{out}"
    );

    // Delegated, and the MX shows: live, and how to make an address there.
    dns.delegate("example.org", &NS);
    dns.set_mx("example.org", &[MX]);
    let out = a.ok(&["domain", "check", "example.org"]).await;
    assert!(out.starts_with("example.org: live"), "{out}");
    assert!(
        out.contains("sealpost address create --domain example.org"),
        "{out}"
    );
    let listed = a.ok(&["domain", "list"]).await;
    let line = line_of(&listed, "example.org");
    assert!(line.contains("live"), "{listed}");
    assert!(
        a.ok(&["domains"])
            .await
            .contains("example.org  (this account's own)")
    );

    let out = a
        .ok(&[
            "inbox",
            "create",
            "--domain",
            "example.org",
            "--local-part",
            "hello",
        ])
        .await;
    assert!(out.contains("hello@example.org"), "{out}");

    // An address on it keeps it; without one it goes.
    let err = a.fails(&["domain", "remove", "example.org"]).await;
    assert!(
        err.contains("addresses exist on example.org; delete them first")
            && err.contains("(domain_in_use)"),
        "{err}"
    );
    a.ok(&["address", "delete", "hello@example.org"]).await;
    let out = a.ok(&["domain", "remove", "example.org"]).await;
    assert!(out.contains("Removed example.org."), "{out}");
    assert!(a.ok(&["domain", "list"]).await.contains("No own domains"));
    let err = a.fails(&["domain", "check", "example.org"]).await;
    assert!(
        err.contains("example.org is not one of this account's domains")
            && err.contains("(not_found)"),
        "{err}"
    );
    app.stop().await;
    dns.stop().await;
}

/// The value after `label` on the line that starts with it.
fn value_after(out: &str, label: &str) -> String {
    out.lines()
        .find_map(|line| line.strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} in:\n{out}"))
        .trim()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn staff_read_answer_and_rotate_the_support_key_from_the_command_line() {
    use sealpost_client::support::{self, AbuseReportRequest, TicketAuthor, TicketHeader};
    use sealpost_seal::b64;

    let tmp = tempfile::tempdir().unwrap();
    let staff_dir = tmp.path().join("staff");
    // The support key pair is made before the service exists: its public
    // key is the service's SEALPOST_SUPPORT_KEY.
    let offline = Cli {
        api_url: "http://127.0.0.1:9".to_owned(),
        dir: staff_dir.clone(),
        phrase: None,
        staff_token: None,
    };
    let out = offline.ok(&["staff", "key", "init"]).await;
    let first_key = value_after(&out, "Public key:");
    let keyring = staff_dir.join("staff-keys.json");
    assert_eq!(mode(&keyring), 0o600);
    assert!(
        offline
            .fails(&["staff", "key", "init"])
            .await
            .contains("already holds")
    );

    let support_key = first_key.clone();
    let app = TestApp::spawn_with(|config| config.support_key = Some(support_key)).await;
    let mut staff = Cli::new(&app, &staff_dir);
    assert!(
        staff
            .fails(&["staff", "tickets"])
            .await
            .contains("SEALPOST_STAFF_TOKEN")
    );
    staff.staff_token = Some("stf_madeup".to_owned());
    let refused = staff.fails(&["staff", "tickets"]).await;
    assert!(refused.contains("staff-token create"), "{refused}");
    let (_, token) = app
        .services()
        .staff
        .create_token("ada", sealpost_support::Roles::all(), None)
        .await
        .unwrap();
    staff.staff_token = Some(token);

    // The account opens a ticket with the SDK, sealed for real.
    let laptop = Cli::new(&app, &tmp.path().join("laptop"));
    let phrase = printed_phrase(&laptop.ok(&["init"]).await);
    let account_id = laptop.session()["accountId"].as_str().unwrap().to_owned();
    let keys = sealpost_seal::RecoveryPhrase::parse(&phrase)
        .unwrap()
        .keys();
    let account = sealpost_client::Client::new(&app.base_url)
        .unwrap()
        .with_token(laptop.session()["token"].as_str().unwrap().to_owned());
    let overview = account.support().await.unwrap();
    assert_eq!(overview.staff_key.as_deref(), Some(first_key.as_str()));
    let old_public = b64::decode_32(&first_key).unwrap();
    let sealed = support::seal_new_ticket(
        &keys,
        &old_public,
        &TicketHeader::new("billing", "high", "Refund CLIMARK7"),
        "Question CLIMARK7",
    );
    let ticket_id = sealed.ticket_id.to_string();
    account.create_ticket(&sealed.request).await.unwrap();
    account
        .bind_support_key(&support::key_binding(&keys, &old_public))
        .await
        .unwrap();

    // A ticket whose binding does not verify: the account key may not be
    // the account's, so it is flagged and not answered.
    let mut forged = support::seal_new_ticket(
        &keys,
        &old_public,
        &TicketHeader::new("other", "low", "Forged"),
        "Forged question",
    );
    forged.request.binding = Some(b64::encode(&sealpost_seal::random_bytes::<32>()));
    account.create_ticket(&forged.request).await.unwrap();
    let forged_id = forged.ticket_id.to_string();

    let listed = staff.ok(&["staff", "tickets"]).await;
    let line = line_of(&listed, &ticket_id);
    assert!(line.contains("Refund CLIMARK7"), "{line}");
    assert!(
        line.contains(&account_id) && line.contains(" ok "),
        "{line}"
    );
    assert!(line.contains("high") && line.contains("billing"), "{line}");
    assert!(
        line_of(&listed, &forged_id).contains("MISMATCH"),
        "{listed}"
    );

    let shown = staff.ok(&["staff", "show", &ticket_id]).await;
    assert!(shown.contains("Subject: Refund CLIMARK7"), "{shown}");
    assert!(shown.contains("Question CLIMARK7"), "{shown}");
    assert!(shown.contains("Binding: ok"), "{shown}");
    assert!(
        shown.contains("Key binding") && shown.contains("): ok"),
        "{shown}"
    );
    let shown = staff.ok(&["staff", "show", &forged_id]).await;
    assert!(shown.contains("Binding: MISMATCH"), "{shown}");
    let refused = staff
        .fails(&["staff", "reply", &forged_id, "--text", "no"])
        .await;
    assert!(refused.contains("nothing was sent"), "{refused}");

    // The reply, sealed by the staff CLI, read by the account.
    staff
        .ok(&["staff", "reply", &ticket_id, "--text", "Answer CLIMARK7"])
        .await;
    let read = account.get_ticket(&sealed.ticket_id).await.unwrap();
    assert_eq!(read.messages.len(), 2);
    let answer = &read.messages[1];
    assert_eq!(answer.author, TicketAuthor::Staff);
    assert_eq!(
        support::open_message(
            &keys.vault_secret(),
            &sealed.ticket_id,
            &answer.id,
            &answer.sealed
        )
        .unwrap(),
        "Answer CLIMARK7"
    );

    // Rotation: the old pair stays, the new key is published.
    let out = staff.ok(&["staff", "key", "rotate"]).await;
    let new_key = value_after(&out, "New support key:");
    assert_ne!(new_key, first_key);
    let keys_shown = staff.ok(&["staff", "key", "show"]).await;
    assert!(
        line_of(&keys_shown, &first_key).contains("20"),
        "{keys_shown}"
    );
    assert!(
        line_of(&keys_shown, &new_key).contains("newest, the service's current key"),
        "{keys_shown}"
    );
    assert_eq!(
        account.support().await.unwrap().staff_key.as_deref(),
        Some(new_key.as_str())
    );
    // A ticket still sealed to the old key is refused ...
    let stale = support::seal_new_ticket(
        &keys,
        &old_public,
        &TicketHeader::new("billing", "normal", "Stale"),
        "Stale",
    );
    let err = account.create_ticket(&stale.request).await.unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert_eq!(err.code(), "staff_key_changed");
    // ... one sealed to the new key is read, and so is the old ticket.
    let new_public = b64::decode_32(&new_key).unwrap();
    let fresh = support::seal_new_ticket(
        &keys,
        &new_public,
        &TicketHeader::new("technical", "normal", "After rotation"),
        "Fresh CLIMARK7",
    );
    account.create_ticket(&fresh.request).await.unwrap();
    let shown = staff.ok(&["staff", "show", fresh.ticket_id.as_str()]).await;
    assert!(
        shown.contains("Fresh CLIMARK7") && shown.contains("Binding: ok"),
        "{shown}"
    );
    staff
        .ok(&["staff", "reply", &ticket_id, "--text", "Second answer"])
        .await;
    let shown = staff.ok(&["staff", "show", &ticket_id]).await;
    for text in ["Question CLIMARK7", "Answer CLIMARK7", "Second answer"] {
        assert!(shown.contains(text), "{text} in {shown}");
    }
    let read = account.get_ticket(&sealed.ticket_id).await.unwrap();
    let last = read.messages.last().unwrap();
    assert_eq!(
        support::open_message(
            &keys.vault_secret(),
            &sealed.ticket_id,
            &last.id,
            &last.sealed
        )
        .unwrap(),
        "Second answer"
    );

    staff.ok(&["staff", "resolve", &ticket_id]).await;
    let resolved = staff
        .ok(&["staff", "tickets", "--status", "resolved"])
        .await;
    assert!(resolved.contains(&ticket_id), "{resolved}");
    assert!(!staff.ok(&["staff", "tickets"]).await.contains(&ticket_id));

    // Abuse reports.
    account
        .report_abuse(&AbuseReportRequest {
            email_address: Some("nobody@mail.localhost".to_owned()),
            reason: "phishing".to_owned(),
            details: Some("Fake bank CLIREPORT".to_owned()),
            ..AbuseReportRequest::default()
        })
        .await
        .unwrap();
    let reports = staff.ok(&["staff", "abuse", "list"]).await;
    let report_line = line_of(&reports, "nobody@mail.localhost");
    assert!(report_line.contains("phishing"), "{reports}");
    assert!(
        reports.contains("details: Fake bank CLIREPORT"),
        "{reports}"
    );
    let report_id = report_line.split_whitespace().next().unwrap().to_owned();
    staff
        .ok(&[
            "staff",
            "abuse",
            "resolve",
            &report_id,
            "--resolution",
            "blocked",
        ])
        .await;
    assert_eq!(
        staff.ok(&["staff", "abuse", "list"]).await.trim(),
        "No reports."
    );
    let done = staff
        .ok(&["staff", "abuse", "list", "--status", "resolved"])
        .await;
    assert!(
        done.contains(&report_id) && done.contains("resolution: blocked"),
        "{done}"
    );

    // Suspension.
    let out = staff
        .ok(&["staff", "suspend", &account_id, "--reason", "spam run"])
        .await;
    assert!(out.contains("is suspended since"), "{out}");
    assert!(
        laptop
            .fails(&["whoami"])
            .await
            .contains("account_suspended")
    );
    staff
        .ok(&[
            "staff",
            "unsuspend",
            &account_id,
            "--reason",
            "appeal granted",
        ])
        .await;
    laptop.ok(&["whoami"]).await;

    // Switches and the audit log.
    let out = staff
        .ok(&["staff", "switches", "--new-webhooks", "off"])
        .await;
    assert!(
        out.contains("New webhooks: off") && out.contains("Support: on"),
        "{out}"
    );
    let audit = staff.ok(&["staff", "audit"]).await;
    for action in [
        "ticket.reply",
        "ticket.resolve",
        "support.rotate_key",
        "abuse.resolve",
        "account.suspend",
        "account.unsuspend",
        "switches.update",
    ] {
        assert!(audit.contains(action), "{action} in {audit}");
    }
    assert!(audit.contains("spam run"), "{audit}");

    // The keyring holds both pairs, privately.
    assert_eq!(mode(&keyring), 0o600);
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&keyring).unwrap()).unwrap();
    assert_eq!(stored["keys"].as_array().unwrap().len(), 2);
}

/// Both CLIs end to end: the account opens a ticket and reads the answer
/// with `sealpost support`, staff read and answer it with `sealpost staff`,
/// and a report made with `sealpost report-abuse` reaches the staff list.
#[tokio::test(flavor = "multi_thread")]
async fn an_account_asks_support_and_reads_the_answer_from_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let staff_dir = tmp.path().join("staff");
    let offline = Cli {
        api_url: "http://127.0.0.1:9".to_owned(),
        dir: staff_dir.clone(),
        phrase: None,
        staff_token: None,
    };
    let support_key = value_after(&offline.ok(&["staff", "key", "init"]).await, "Public key:");
    let app = TestApp::spawn_with(|config| config.support_key = Some(support_key)).await;
    let mut staff = Cli::new(&app, &staff_dir);
    let (_, token) = app
        .services()
        .staff
        .create_token("ada", sealpost_support::Roles::all(), None)
        .await
        .unwrap();
    staff.staff_token = Some(token);

    let mut laptop = Cli::new(&app, &tmp.path().join("laptop"));
    let phrase = printed_phrase(&laptop.ok(&["init"]).await);
    assert!(
        laptop
            .ok(&["support", "list"])
            .await
            .contains("No tickets.")
    );
    laptop.phrase = Some(phrase);
    let out = laptop
        .ok(&[
            "support",
            "open",
            "--subject",
            "Lost mail ASKMARK1",
            "--category",
            "technical",
            "--priority",
            "high",
            "--text",
            "Where did it go? ASKMARK1",
        ])
        .await;
    let ticket_id = value_after(&out, "Opened").trim_end_matches('.').to_owned();
    assert!(ticket_id.starts_with("tkt_"), "{out}");

    // Staff see it with a verified binding, read it and answer.
    let listed = staff.ok(&["staff", "tickets"]).await;
    let line = line_of(&listed, &ticket_id);
    assert!(
        line.contains("Lost mail ASKMARK1") && line.contains(" ok "),
        "{line}"
    );
    let shown = staff.ok(&["staff", "show", &ticket_id]).await;
    assert!(shown.contains("Where did it go? ASKMARK1"), "{shown}");
    assert!(shown.contains("Binding: ok"), "{shown}");
    staff
        .ok(&[
            "staff",
            "reply",
            &ticket_id,
            "--text",
            "Found it ANSWERMARK2",
        ])
        .await;

    // The account sees an unread answer, reads it, and writes back.
    let listed = laptop.ok(&["support", "list"]).await;
    let line = line_of(&listed, &ticket_id);
    assert!(
        line.contains("(unread reply)") && line.contains("last: staff"),
        "{line}"
    );
    assert!(line.contains("Lost mail ASKMARK1"), "{line}");
    let shown = laptop.ok(&["support", "show", &ticket_id]).await;
    for text in [
        "Subject: Lost mail ASKMARK1",
        "Priority: high",
        "Category: technical",
        "Where did it go? ASKMARK1",
        "Found it ANSWERMARK2",
    ] {
        assert!(shown.contains(text), "{text} in {shown}");
    }
    assert!(
        !line_of(&laptop.ok(&["support", "list"]).await, &ticket_id).contains("unread"),
        "showing marks the answer read"
    );
    laptop
        .ok(&[
            "support",
            "reply",
            &ticket_id,
            "--text",
            "Thanks THANKSMARK3",
        ])
        .await;
    assert!(
        staff
            .ok(&["staff", "show", &ticket_id])
            .await
            .contains("Thanks THANKSMARK3")
    );
    let closed = laptop.ok(&["support", "close", &ticket_id]).await;
    assert!(closed.contains("is resolved"), "{closed}");
    let refused = laptop
        .fails(&["support", "reply", &ticket_id, "--text", "late"])
        .await;
    assert!(refused.contains("ticket_closed"), "{refused}");
    let reopened = laptop.ok(&["support", "reopen", &ticket_id]).await;
    assert!(reopened.contains("is open"), "{reopened}");
    assert!(
        laptop
            .fails(&["support", "show", "tkt_nope"])
            .await
            .contains("not a ticket id")
    );

    // An abuse report needs no account and reaches staff.
    let stranger = Cli::new(&app, &tmp.path().join("stranger"));
    let out = stranger
        .ok(&[
            "report-abuse",
            "--address",
            "phisher@mail.localhost",
            "--reason",
            "phishing",
            "--details",
            "Fake bank REPORTMARK4",
        ])
        .await;
    assert!(out.contains("Report received"), "{out}");
    let reports = staff.ok(&["staff", "abuse", "list"]).await;
    assert!(
        line_of(&reports, "phisher@mail.localhost").contains("phishing"),
        "{reports}"
    );
    assert!(reports.contains("Fake bank REPORTMARK4"), "{reports}");
    let refused = stranger
        .fails(&["report-abuse", "--address", "x@y.z", "--reason", "rude"])
        .await;
    assert!(refused.contains("invalid value"), "{refused}");
}
