//! `team`: a member reads a shared address with the granted key.

use sealpost_testkit::TestApp;

use crate::support::{Cli, after, line_of, pay_in_sandbox, printed_phrase, word_starting};

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
