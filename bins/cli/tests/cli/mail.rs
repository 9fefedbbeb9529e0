//! `mail`: listing, reading, saving, waiting for and sending mail; folders.

use sealpost_testkit::TestApp;
use std::process::Stdio;
use tokio::process::Command;

use crate::support::{
    Cli, Mail, Run, line_of, lines, mode, printed_phrase, python_can_send, send_by_smtp,
    word_starting,
};

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
async fn mail_sent_with_the_cli_arrives_signed_and_is_filed_starred_and_trashed() {
    use sealpost_testkit::relay::{Behaviour, TestRelay, dkim_test_key_path, dkim_verifies};

    let relay = TestRelay::start(Behaviour::Accept).await;
    let url = relay.url();
    let app = TestApp::spawn_with(|config| {
        config.smtp_relay = Some(sealpost_config::RelayUrl::new(url));
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
            "--cc",
            "dave@example.net",
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

    // At the relay: both recipients and the copy, DKIM-signed for the
    // shared domain.
    let relayed = relay.received();
    assert_eq!(relayed.len(), 1);
    assert_eq!(
        relayed[0].recipients,
        ["bob@example.com", "carol@example.org", "dave@example.net"]
    );
    let raw = String::from_utf8_lossy(&relayed[0].data);
    assert!(raw.contains("\r\nCc: dave@example.net\r\n"), "{raw}");
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
