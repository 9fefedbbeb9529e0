//! What the CLI's tests share: a CLI installation with its own state
//! directory (`Cli`), `agent pair` in the background, mail sent by SMTP,
//! and reading values out of the CLI's output.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use sealpost_testkit::TestApp;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// One CLI installation: its own state directory, pointed at one service.
pub(crate) struct Cli {
    pub(crate) api_url: String,
    pub(crate) dir: PathBuf,
    /// Sent as SEALPOST_PHRASE when set.
    pub(crate) phrase: Option<String>,
    /// Sent as SEALPOST_STAFF_TOKEN when set.
    pub(crate) staff_token: Option<String>,
}

pub(crate) struct Run {
    pub(crate) ok: bool,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
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
    pub(crate) fn new(app: &TestApp, dir: &Path) -> Self {
        Cli {
            api_url: app.base_url.clone(),
            dir: dir.to_owned(),
            phrase: None,
            staff_token: None,
        }
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
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

    pub(crate) async fn run(&self, args: &[&str]) -> Run {
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

    pub(crate) async fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args).await;
        assert!(run.ok, "sealpost {args:?} failed: {}", run.stderr);
        run.stdout
    }

    pub(crate) async fn fails(&self, args: &[&str]) -> String {
        let run = self.run(args).await;
        assert!(!run.ok, "sealpost {args:?} succeeded: {}", run.stdout);
        assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
        run.stderr
    }

    pub(crate) async fn login_env(&self, phrase: &str) -> String {
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

    pub(crate) async fn login_stdin(&self, input: &str) -> Run {
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

    pub(crate) fn session_file(&self) -> PathBuf {
        self.dir.join("session.json")
    }

    pub(crate) fn session(&self) -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(self.session_file()).unwrap()).unwrap()
    }

    /// The other sessions' ids, from `sealpost sessions`.
    pub(crate) async fn other_session_ids(&self) -> Vec<String> {
        self.ok(&["sessions"])
            .await
            .lines()
            .filter(|line| !line.contains("(current)"))
            .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
            .collect()
    }
}

pub(crate) fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The 12-word phrase `init` printed, on its own indented line.
pub(crate) fn printed_phrase(stdout: &str) -> String {
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("    ") && line.split_whitespace().count() == 12)
        .collect();
    assert_eq!(lines.len(), 1, "one phrase line expected in:\n{stdout}");
    lines[0].trim().to_owned()
}

/// `sealpost agent pair` running in the background, as in a second
/// terminal: its stdout arrives line by line.
pub(crate) struct Background {
    pub(crate) child: std::process::Child,
    pub(crate) lines: tokio::sync::mpsc::UnboundedReceiver<String>,
    pub(crate) seen: Vec<String>,
}

/// Long enough for a slow machine; the pairing poll runs every 2 s.
pub(crate) const WAIT: std::time::Duration = std::time::Duration::from_secs(60);

impl Background {
    pub(crate) fn agent_pair(cli: &Cli, args: &[&str]) -> Background {
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
    pub(crate) async fn line_where(&mut self, wanted: impl Fn(&str) -> bool) -> String {
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
    pub(crate) async fn exit(mut self) -> Run {
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
    pub(crate) async fn code(&mut self) -> String {
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
pub(crate) fn word_starting(out: &str, prefix: &str) -> String {
    out.split(|c: char| c.is_whitespace() || c == ':' || c == '.' || c == '"')
        .find(|word| word.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix}... in:\n{out}"))
        .to_owned()
}

/// The 19-character fingerprint on a `Fingerprint  ...` line.
pub(crate) fn fingerprint(line: &str) -> String {
    let value = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("no fingerprint in {line}"));
    assert_eq!(value.len(), 19, "{line}");
    value.to_owned()
}

/// The line of `out` that mentions `id`.
pub(crate) fn line_of<'a>(out: &'a str, id: &str) -> &'a str {
    out.lines()
        .find(|line| line.contains(id))
        .unwrap_or_else(|| panic!("{id} not listed in:\n{out}"))
}

/// Sends one message with Python's smtplib, as any standard client would:
/// argv is host, port, to, subject, text, html ("" for none), attachment
/// path ("" for none).
pub(crate) const SEND_MAIL: &str = r#"
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
pub(crate) fn python_can_send() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import smtplib, email.message"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

pub(crate) struct Mail<'a> {
    pub(crate) subject: &'a str,
    pub(crate) text: &'a str,
    pub(crate) html: &'a str,
    pub(crate) attachment: Option<&'a Path>,
}

pub(crate) async fn send_by_smtp(smtp: std::net::SocketAddr, to: &str, mail: Mail<'_>) {
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
pub(crate) fn lines(out: &str) -> Vec<&str> {
    out.lines().filter(|line| !line.trim().is_empty()).collect()
}

/// The text after `label` on its line.
pub(crate) fn after<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find_map(|line| line.strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{out}"))
        .trim()
}

/// Pays on the sandbox checkout page at `url`, as a person would.
pub(crate) async fn pay_in_sandbox(url: &str) {
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

/// The value after `label` on the line that starts with it.
pub(crate) fn value_after(out: &str, label: &str) -> String {
    out.lines()
        .find_map(|line| line.strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} in:\n{out}"))
        .trim()
        .to_owned()
}

/// Fails when `out` holds a character a terminal acts on: a control
/// character other than newline and tab (C0, DEL, C1) or a bidi override.
pub(crate) fn assert_inert(out: &str) {
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
