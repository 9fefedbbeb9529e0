//! `address`: naming addresses on the offered domains.

use sealpost_testkit::TestApp;

use crate::support::{Cli, line_of, lines, printed_phrase, word_starting};

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
