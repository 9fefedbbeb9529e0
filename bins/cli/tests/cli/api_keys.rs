//! `api-key create|list|revoke` and `address create --export-key`: the
//! automation path without the phrase.

use sealpost_testkit::TestApp;

use crate::support::{Cli, line_of, pay_in_sandbox, printed_phrase, word_starting};

#[tokio::test(flavor = "multi_thread")]
async fn api_keys_are_created_listed_used_and_revoked_from_the_command_line() {
    let app = TestApp::spawn().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut cli = Cli::new(&app, &tmp.path().join("laptop"));
    cli.phrase = Some(printed_phrase(&cli.ok(&["init"]).await));

    // Free has no keys: the service's code says so.
    let err = cli.fails(&["api-key", "create", "--label", "ci"]).await;
    assert!(err.contains("(plan_required)"), "{err}");
    let url = cli
        .ok(&["billing", "checkout", "operator"])
        .await
        .trim()
        .to_owned();
    pay_in_sandbox(&url).await;

    let out = cli.ok(&["api-key", "create", "--label", "ci runner"]).await;
    let token = out
        .lines()
        .find(|line| line.starts_with("spk_"))
        .unwrap_or_else(|| panic!("no token in {out}"))
        .to_owned();
    let id = word_starting(&out, "key_");
    let keyed = sealpost_client::Client::new(&app.base_url)
        .unwrap()
        .with_token(token.clone());
    assert!(keyed.list_addresses().await.is_ok(), "the key reads");

    let listed = cli.ok(&["api-key", "list"]).await;
    let row = line_of(&listed, &id);
    assert!(
        row.contains("ci runner") && row.contains("active"),
        "{listed}"
    );
    assert!(!listed.contains(&token), "the list never shows the token");

    // The address's keys, printed once for a script, open its mail's box.
    let out = cli
        .ok(&["address", "create", "--prefix", "ci", "--export-key"])
        .await;
    let exported: sealpost_client::sealing::AddressKeys = serde_json::from_str(
        out.lines()
            .find(|line| line.starts_with('{'))
            .unwrap_or_else(|| panic!("no key in {out}")),
    )
    .unwrap();
    let address = keyed.list_addresses().await.unwrap().addresses;
    assert_eq!(address[0].id, exported.address_id);
    assert_eq!(
        address[0].public_key,
        Some(exported.public_key()),
        "the exported key is the address's"
    );

    cli.ok(&["api-key", "revoke", &id]).await;
    assert_eq!(
        keyed.list_addresses().await.unwrap_err().status(),
        Some(401)
    );
    app.stop().await;
}
