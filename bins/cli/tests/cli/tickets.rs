//! `support` and `staff`: tickets, answers, the support key.

use sealpost_testkit::TestApp;

use crate::support::{Cli, line_of, mode, printed_phrase, value_after};

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
