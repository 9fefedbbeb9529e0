//! The staff side: staff tokens, reading and answering sealed tickets with
//! the support key held by the staff client, key rotation, suspension,
//! operator switches, abuse reports and the audit log.

use reqwest::StatusCode;
use sealpost_client::support::{self, SwitchesRequest, TicketHeader};
use sealpost_seal::b64;
use serde_json::json;

use crate::messages::everything_in_the_database;
use crate::support::{Api, staff_client, staff_token};
use crate::tickets::{SupportKeys, account, support_api};

#[tokio::test(flavor = "multi_thread")]
async fn staff_read_and_answer_a_sealed_ticket_and_the_account_reads_the_reply() {
    let (api, support_keys) = support_api().await;
    let (keys, owner, client) = account(&api).await;
    let marker = "STAFFMARKER83c2";
    let sealed = support::seal_new_ticket(
        &keys,
        &support_keys.public,
        &TicketHeader::new("abuse", "urgent", &format!("Help {marker}")),
        &format!("Question {marker}"),
    );
    client.create_ticket(&sealed.request).await.unwrap();
    client
        .bind_support_key(&support::key_binding(&keys, &support_keys.public))
        .await
        .unwrap();

    let token = staff_token(&api, "ada").await;
    let staff = staff_client(&api, &token);
    let open = staff.staff_tickets(Some("open"), None).await.unwrap();
    assert_eq!(open.tickets.len(), 1);
    let listed = &open.tickets[0];
    assert_eq!(listed.account_id.as_str(), owner.account_id);
    assert!(support::verify_ticket_binding(&support_keys.secret, listed));

    let detail = staff.staff_ticket(&sealed.ticket_id).await.unwrap();
    let header = support::open_header(
        &support_keys.secret,
        &sealed.ticket_id,
        &detail.ticket.ticket.header,
    )
    .unwrap();
    assert_eq!(header.subject, format!("Help {marker}"));
    assert_eq!(header.priority, "urgent");
    let question = support::open_message(
        &support_keys.secret,
        &sealed.ticket_id,
        &detail.messages[0].id,
        &detail.messages[0].sealed,
    )
    .unwrap();
    assert_eq!(question, format!("Question {marker}"));
    assert!(detail.key_binding.is_some());

    // The reply: both copies sealed by the staff client.
    let account_key = b64::decode_32(&detail.ticket.account_key).unwrap();
    let reply = support::seal_message(
        &support_keys.public,
        &account_key,
        &sealed.ticket_id,
        &format!("Answer {marker}"),
    );
    staff.staff_reply(&sealed.ticket_id, &reply).await.unwrap();

    let overview = client.support().await.unwrap();
    assert!(overview.tickets[0].unread);
    assert_eq!(
        overview.tickets[0].last_author,
        support::TicketAuthor::Staff
    );
    let read = client.get_ticket(&sealed.ticket_id).await.unwrap();
    assert!(!read.ticket.unread, "reading marks the reply read");
    let answer = &read.messages[1];
    assert_eq!(answer.author, support::TicketAuthor::Staff);
    assert_eq!(
        support::open_message(
            &keys.vault_secret(),
            &sealed.ticket_id,
            &answer.id,
            &answer.sealed
        )
        .unwrap(),
        format!("Answer {marker}")
    );
    assert!(!client.support().await.unwrap().tickets[0].unread);
    assert_eq!(
        api.events(&owner.account_id, "notice.support_replied")
            .await
            .len(),
        1
    );

    let resolved = staff.staff_resolve(&sealed.ticket_id).await.unwrap();
    assert_eq!(resolved.ticket.status, support::TicketStatus::Resolved);

    let audit = staff.audit_log(50).await.unwrap();
    let actions: Vec<&str> = audit.entries.iter().map(|e| e.action.as_str()).collect();
    assert!(actions.contains(&"ticket.reply"), "{actions:?}");
    assert!(actions.contains(&"ticket.resolve"));
    assert!(actions.contains(&"token.create"));

    let database = everything_in_the_database(&api).await;
    assert!(database.contains(sealed.ticket_id.as_str()));
    assert!(!database.contains(marker), "plaintext in the database");
    assert!(!database.contains(&token), "a staff token in the clear");
}

#[tokio::test(flavor = "multi_thread")]
async fn staff_and_account_credentials_do_not_cross() {
    let (api, _) = support_api().await;
    let (_, owner, _) = account(&api).await;
    let device = api.pair(&owner.token, "wkr_staffx1").await;
    let token = staff_token(&api, "bob").await;

    for bearer in [
        owner.token.as_str(),
        device.credential.as_str(),
        "stf_madeup",
    ] {
        let refused = api.get("/staff/tickets", Some(bearer)).await;
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{}", refused.body);
    }
    assert_eq!(
        api.get("/staff/tickets", None).await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        api.get("/staff/tickets", Some(&token)).await.status,
        StatusCode::OK
    );

    // Account endpoints do not know staff tokens.
    for path in ["/support", "/accounts/me", "/inboxes"] {
        let refused = api.get(path, Some(&token)).await;
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{path}");
    }

    api.app.services().staff.revoke_token("bob").await.unwrap();
    let revoked = api.get("/staff/tickets", Some(&token)).await;
    assert_eq!(revoked.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread")]
async fn staff_list_filters_outside_their_documented_values_are_400() {
    let (api, _) = support_api().await;
    let token = staff_token(&api, "carol").await;
    for path in [
        "/staff/audit?limit=0",
        "/staff/audit?limit=201",
        "/staff/tickets?status=",
        "/staff/tickets?status=closed",
        "/staff/abuse-reports?status=",
    ] {
        let refused = api.get(path, Some(&token)).await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{path}: {}",
            refused.body
        );
        assert_eq!(refused.code(), "invalid_field", "{path}");
    }
    for path in [
        "/staff/audit?limit=1",
        "/staff/audit?limit=200",
        "/staff/audit",
        "/staff/tickets?status=open",
        "/staff/abuse-reports?status=resolved",
    ] {
        let listed = api.get(path, Some(&token)).await;
        assert_eq!(listed.status, StatusCode::OK, "{path}: {}", listed.body);
    }
    let one = api.get("/staff/audit?limit=1", Some(&token)).await;
    assert_eq!(one.body["entries"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rotated_key_refuses_old_seals_and_old_tickets_stay_readable() {
    let (api, old) = support_api().await;
    let (keys, _, client) = account(&api).await;
    let first = support::seal_new_ticket(
        &keys,
        &old.public,
        &TicketHeader::new("a", "low", "Old"),
        "old",
    );
    client.create_ticket(&first.request).await.unwrap();

    let staff = staff_client(&api, &staff_token(&api, "ada").await);
    let new = SupportKeys::generate();
    let challenge = staff.support_key_challenge().await.unwrap();
    let switched = staff
        .rotate_support_key(&new.public, &challenge, &old.secret)
        .await
        .unwrap();
    assert_eq!(switched.staff_key, Some(b64::encode(&new.public)));
    assert_eq!(
        client.support().await.unwrap().staff_key,
        Some(b64::encode(&new.public))
    );

    let stale =
        support::seal_new_ticket(&keys, &old.public, &TicketHeader::new("a", "low", "S"), "s");
    let error = client.create_ticket(&stale.request).await.unwrap_err();
    assert_eq!(error.code(), "staff_key_changed");
    let fresh = support::seal_new_ticket(
        &keys,
        &new.public,
        &TicketHeader::new("a", "low", "New"),
        "n",
    );
    client.create_ticket(&fresh.request).await.unwrap();

    // The old ticket opens with the old secret, the new with the new one.
    let old_detail = staff.staff_ticket(&first.ticket_id).await.unwrap();
    assert_eq!(old_detail.ticket.staff_key, b64::encode(&old.public));
    let header = support::open_header(
        &old.secret,
        &first.ticket_id,
        &old_detail.ticket.ticket.header,
    )
    .unwrap();
    assert_eq!(header.subject, "Old");
    let new_detail = staff.staff_ticket(&fresh.ticket_id).await.unwrap();
    assert!(
        support::open_header(
            &new.secret,
            &fresh.ticket_id,
            &new_detail.ticket.ticket.header
        )
        .is_ok()
    );
    // Staff replies must use the new key too.
    let account_key = b64::decode_32(&old_detail.ticket.account_key).unwrap();
    let stale_reply = support::seal_message(&old.public, &account_key, &first.ticket_id, "x");
    let error = staff
        .staff_reply(&first.ticket_id, &stale_reply)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "staff_key_changed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_suspended_account_reaches_only_support_and_keeps_its_data() {
    let (api, support_keys) = support_api().await;
    let (keys, owner, client) = account(&api).await;
    api.create_address(&owner.token, "ibx_suspend1").await;
    let staff = staff_client(&api, &staff_token(&api, "ada").await);

    let suspended = staff
        .set_suspended(&owner.account_id, true, "phishing reports")
        .await
        .unwrap();
    assert!(suspended.suspended);
    let refused = api.get("/inboxes", Some(&owner.token)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(refused.code(), "account_suspended");
    assert_eq!(
        api.get("/accounts/me", Some(&owner.token)).await.code(),
        "account_suspended"
    );
    // Support stays reachable.
    assert!(client.support().await.is_ok());
    let sealed = support::seal_new_ticket(
        &keys,
        &support_keys.public,
        &TicketHeader::new("a", "high", "Why"),
        "?",
    );
    client.create_ticket(&sealed.request).await.unwrap();
    // ... at the suspended accounts' rate: ten requests a minute, two spent.
    let mut answered = 2;
    let limited = loop {
        let reply = api.get("/support", Some(&owner.token)).await;
        if reply.status != StatusCode::OK {
            break reply;
        }
        answered += 1;
        assert!(answered <= 11, "no limit after {answered} requests");
    };
    assert_eq!(
        (limited.status, limited.code()),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    assert!(limited.headers.contains_key("retry-after"));
    assert!(answered >= 10, "limited after {answered} requests");

    let lifted = staff
        .set_suspended(&owner.account_id, false, "resolved")
        .await
        .unwrap();
    assert!(!lifted.suspended);
    assert_eq!(
        api.get("/support", Some(&owner.token)).await.status,
        StatusCode::OK,
        "the suspended rate no longer applies"
    );
    let addresses = api.get("/inboxes", Some(&owner.token)).await;
    assert_eq!(addresses.status, StatusCode::OK);
    assert_eq!(
        addresses.body["inboxes"].as_array().unwrap().len(),
        1,
        "nothing deleted"
    );

    let missing = staff
        .set_suspended("acct_aaaaaaaaaaaaaaaaaaaaaaaa", true, "x")
        .await
        .unwrap_err();
    assert_eq!(missing.code(), "not_found");
    let audit = staff.audit_log(10).await.unwrap();
    let entry = audit
        .entries
        .iter()
        .find(|e| e.action == "account.suspend")
        .unwrap();
    assert_eq!(entry.target.as_deref(), Some(owner.account_id.as_str()));
    assert_eq!(entry.note.as_deref(), Some("phishing reports"));
}

#[tokio::test(flavor = "multi_thread")]
async fn operators_pause_webhooks_and_switch_support_off() {
    let (api, support_keys) = support_api().await;
    let (keys, owner, client) = account(&api).await;
    api.set_plan(&owner.account_id, "operator").await;
    let staff = staff_client(&api, &staff_token(&api, "ada").await);

    let paused = staff
        .update_switches(&SwitchesRequest {
            webhooks_paused: Some(true),
            ..SwitchesRequest::default()
        })
        .await
        .unwrap();
    assert!(paused.webhooks_paused);
    let refused = api
        .post(
            "/webhook-endpoints",
            Some(&owner.token),
            json!({ "id": "whk_paused1", "url": "https://hooks.example.com/x", "events": ["*"] }),
        )
        .await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.code(), "feature_disabled");
    staff
        .update_switches(&SwitchesRequest {
            webhooks_paused: Some(false),
            ..SwitchesRequest::default()
        })
        .await
        .unwrap();
    let created = api
        .post(
            "/webhook-endpoints",
            Some(&owner.token),
            json!({ "id": "whk_paused1", "url": "https://hooks.example.com/x", "events": ["*"] }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);

    staff
        .update_switches(&SwitchesRequest {
            support_off: Some(true),
            ..SwitchesRequest::default()
        })
        .await
        .unwrap();
    let overview = client.support().await.unwrap();
    assert!(!overview.available);
    let sealed = support::seal_new_ticket(
        &keys,
        &support_keys.public,
        &TicketHeader::new("a", "low", "x"),
        "x",
    );
    let error = client.create_ticket(&sealed.request).await.unwrap_err();
    assert_eq!(error.code(), "support_unavailable");
    assert!(
        staff
            .audit_log(10)
            .await
            .unwrap()
            .entries
            .iter()
            .any(|e| e.action == "switches.update")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn abuse_reports_answer_alike_and_are_limited_per_ip() {
    let (api, _) = support_api().await;
    let (_, owner, _) = account(&api).await;
    let address = api.create_address(&owner.token, "ibx_reported1").await;
    let address = address["emailAddress"].as_str().unwrap().to_owned();

    let known = api
        .post(
            "/abuse/reports",
            None,
            json!({ "emailAddress": address, "reason": "phishing", "details": "fake bank", "contact": "me@example.org" }),
        )
        .await;
    let unknown = api
        .post(
            "/abuse/reports",
            None,
            json!({ "emailAddress": "nobody-here@mail.localhost", "reason": "phishing", "details": "fake bank", "contact": "me@example.org" }),
        )
        .await;
    assert_eq!(known.status, StatusCode::ACCEPTED);
    assert_eq!((known.status, &known.body), (unknown.status, &unknown.body));

    let bad = api
        .post(
            "/abuse/reports",
            None,
            json!({ "emailAddress": address, "reason": "boring" }),
        )
        .await;
    assert_eq!(
        (bad.status, bad.code()),
        (StatusCode::BAD_REQUEST, "invalid_field")
    );
    let both = api
        .post(
            "/abuse/reports",
            None,
            json!({ "emailAddress": address, "messageId": "msg_x", "reason": "spam" }),
        )
        .await;
    assert_eq!(both.code(), "invalid_field");

    // Five an hour per IP (the bad requests above counted too).
    let fifth = api
        .post(
            "/abuse/reports",
            None,
            json!({ "messageId": "msg_abc", "reason": "spam" }),
        )
        .await;
    assert_eq!(fifth.status, StatusCode::ACCEPTED);
    let limited = api
        .post(
            "/abuse/reports",
            None,
            json!({ "messageId": "msg_abc", "reason": "spam" }),
        )
        .await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.headers.contains_key("retry-after"));

    let staff = staff_client(&api, &staff_token(&api, "ada").await);
    let reports = staff
        .abuse_reports(Some("open"), None)
        .await
        .unwrap()
        .reports;
    assert_eq!(reports.len(), 3);
    let reported = reports
        .iter()
        .find(|r| r.email_address.as_deref() == Some(address.as_str()))
        .unwrap();
    assert_eq!(
        reported.account_id.as_ref().map(|a| a.as_str()),
        Some(owner.account_id.as_str())
    );
    assert_eq!(reported.reason, "phishing");
    staff
        .resolve_abuse_report(&reported.id, "suspended the account")
        .await
        .unwrap();
    assert_eq!(
        staff
            .abuse_reports(Some("open"), None)
            .await
            .unwrap()
            .reports
            .len(),
        2
    );
}

/// Runs one statement on the test database.
async fn execute_sql(api: &Api, sql: &str) {
    use diesel_async::RunQueryDsl;
    let mut conn = api.app.db.connect().await;
    diesel::sql_query(sql).execute(&mut conn).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_staff_action_never_lands_without_its_audit_row() {
    let (api, _) = support_api().await;
    let (_, owner, _) = account(&api).await;
    let staff = staff_client(&api, &staff_token(&api, "ada").await);
    // The audit log refuses this one action, as a full disk or a lost
    // connection would refuse it.
    execute_sql(
        &api,
        "ALTER TABLE staff_audit ADD CONSTRAINT refuse_suspensions \
         CHECK (action <> 'account.suspend')",
    )
    .await;
    let failed = staff
        .set_suspended(&owner.account_id, true, "spam run")
        .await
        .unwrap_err();
    assert_eq!(failed.status(), Some(500));
    assert_eq!(
        api.get("/inboxes", Some(&owner.token)).await.status,
        StatusCode::OK,
        "the suspension was rolled back with its audit row"
    );
    assert!(
        !everything_in_the_database(&api).await.contains("spam run"),
        "neither the suspension nor its audit row is stored"
    );

    execute_sql(
        &api,
        "ALTER TABLE staff_audit DROP CONSTRAINT refuse_suspensions",
    )
    .await;
    staff
        .set_suspended(&owner.account_id, true, "spam run")
        .await
        .unwrap();
    assert_eq!(
        api.get("/inboxes", Some(&owner.token)).await.code(),
        "account_suspended"
    );
    let audit = staff.audit_log(10).await.unwrap();
    assert_eq!(
        audit
            .entries
            .iter()
            .filter(|entry| entry.action == "account.suspend")
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_staff_reply_or_resolution_never_lands_without_its_audit_row() {
    let (api, support_keys) = support_api().await;
    let (keys, _, client) = account(&api).await;
    let sealed = support::seal_new_ticket(
        &keys,
        &support_keys.public,
        &TicketHeader::new("billing", "normal", "Refund"),
        "Where is my refund?",
    );
    client.create_ticket(&sealed.request).await.unwrap();
    let staff = staff_client(&api, &staff_token(&api, "ada").await);
    let account_key = b64::decode_32(
        &staff
            .staff_ticket(&sealed.ticket_id)
            .await
            .unwrap()
            .ticket
            .account_key,
    )
    .unwrap();
    let reply = support::seal_message(
        &support_keys.public,
        &account_key,
        &sealed.ticket_id,
        "On its way",
    );
    execute_sql(
        &api,
        "ALTER TABLE staff_audit ADD CONSTRAINT refuse_ticket_writes \
         CHECK (action NOT IN ('ticket.reply', 'ticket.resolve'))",
    )
    .await;
    let failed = staff
        .staff_reply(&sealed.ticket_id, &reply)
        .await
        .unwrap_err();
    assert_eq!(failed.status(), Some(500));
    let failed = staff.staff_resolve(&sealed.ticket_id).await.unwrap_err();
    assert_eq!(failed.status(), Some(500));
    let unchanged = client.get_ticket(&sealed.ticket_id).await.unwrap();
    assert_eq!(unchanged.messages.len(), 1, "the reply was rolled back");
    assert_eq!(unchanged.ticket.status, support::TicketStatus::Open);
    assert_eq!(unchanged.ticket.last_author, support::TicketAuthor::Account);

    execute_sql(
        &api,
        "ALTER TABLE staff_audit DROP CONSTRAINT refuse_ticket_writes",
    )
    .await;
    staff.staff_reply(&sealed.ticket_id, &reply).await.unwrap();
    staff.staff_resolve(&sealed.ticket_id).await.unwrap();
    let audit = staff.audit_log(50).await.unwrap();
    let for_ticket = |action: &str| {
        audit
            .entries
            .iter()
            .filter(|entry| {
                entry.action == action && entry.target.as_deref() == Some(sealed.ticket_id.as_str())
            })
            .count()
    };
    assert_eq!(
        (for_ticket("ticket.reply"), for_ticket("ticket.resolve")),
        (1, 1)
    );
}
