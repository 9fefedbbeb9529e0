//! `notifications`: kinds switched, addresses muted.

use sealpost_testkit::TestApp;

use crate::support::{Cli, lines, printed_phrase, word_starting};

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
