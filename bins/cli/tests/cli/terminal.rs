//! What the CLI prints: hostile mail stays inert; a closed pipe, a full disk.

use sealpost_testkit::TestApp;
use std::process::Stdio;
use tokio::process::Command;

use crate::support::{
    Cli, Run, assert_inert, lines, printed_phrase, python_can_send, word_starting,
};

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
