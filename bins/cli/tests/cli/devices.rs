//! `agent pair` from two terminals (as an agent, and `--kind device`),
//! cancelling it, a paired device reading its mail, device activity.

use sealpost_kernel::Timestamp;
use sealpost_testkit::TestApp;

use crate::support::{
    Background, Cli, assert_inert, fingerprint, line_of, mode, pay_in_sandbox, printed_phrase,
    word_starting,
};

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
    let mut agent = Background::agent_pair(&b, &["--kind", "device", "--name", "Build box"]);
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

/// `agent pair` pairs this machine as an agent: refused on Free (with the
/// way out), paired once the account is on Operator, counted as an agent.
#[tokio::test(flavor = "multi_thread")]
async fn agent_pair_pairs_an_agent_which_needs_operator() {
    let app = TestApp::spawn().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    let b = Cli::new(&app, &tmp.path().join("runner"));
    a.phrase = Some(printed_phrase(&a.ok(&["init"]).await));

    let mut agent = Background::agent_pair(&b, &["--name", "CI runner"]);
    let code = agent.code().await;
    agent.line_where(|l| l.starts_with("Waiting")).await;

    // Free: the operator sees an agent, and is refused with the way out.
    let refused = a.run(&["device", "pair", &code]).await;
    assert!(!refused.ok);
    assert!(
        refused.stdout.contains("Agent        CI runner (unknown)"),
        "{}",
        refused.stdout
    );
    assert!(
        refused.stderr.contains("(plan_required)"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("--kind device"),
        "{}",
        refused.stderr
    );

    // On Operator the same waiting session is claimed as an agent.
    let url = a
        .ok(&["billing", "checkout", "operator"])
        .await
        .trim()
        .to_owned();
    pay_in_sandbox(&url).await;
    let out = a.ok(&["device", "pair", &code]).await;
    assert!(out.contains("Agent        CI runner (unknown)"), "{out}");
    let agent_id = word_starting(&out, "wkr_");
    let run = agent.exit().await;
    assert!(run.ok, "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!("Paired as agent {agent_id}.")),
        "{}",
        run.stdout
    );
    let out = b.ok(&["agent", "status"]).await;
    assert!(out.contains(&agent_id), "{out}");

    // Listed as an agent; usage counts it with the paired, not the devices.
    let out = a.ok(&["device", "list"]).await;
    assert!(line_of(&out, &agent_id).contains("agent"), "{out}");
    let usage = a.ok(&["usage"]).await;
    let numbers = |label: &str| -> Vec<String> {
        line_of(&usage, label)
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(numbers("devices")[..3], ["devices", "0", "10"], "{usage}");
    assert_eq!(numbers("paired")[..3], ["paired", "1", "10"], "{usage}");
    assert_eq!(
        numbers("agents")[..3],
        ["agents", "1", "allowed"],
        "{usage}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_cancels_a_waiting_pairing() {
    let app = TestApp::spawn().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    let b = Cli::new(&app, &tmp.path().join("device"));
    a.phrase = Some(printed_phrase(&a.ok(&["init"]).await));

    let mut agent = Background::agent_pair(&b, &["--kind", "device", "--platform", "web"]);
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

#[tokio::test(flavor = "multi_thread")]
async fn a_paired_device_reads_the_mail_of_its_address_without_the_phrase() {
    let app = TestApp::spawn().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    let b = Cli::new(&app, &tmp.path().join("device"));
    let phrase = printed_phrase(&a.ok(&["init"]).await);
    a.phrase = Some(phrase.clone());

    let mut agent = Background::agent_pair(&b, &["--kind", "device"]);
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
    let mut agent = Background::agent_pair(
        &b,
        &["--kind", "device", "--name", "Box\u{1b}]0;owned\u{7}"],
    );
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
