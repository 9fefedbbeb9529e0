//! `POST /messages/send` through a real SMTP relay on loopback (the
//! testkit's, on the project's own SMTP session): MIME, headers, the DKIM
//! signature verified with mail-auth, the Sent copy, limits, refusals.

use std::time::Duration;

use chrono::TimeDelta;
use mail_parser::{MessageParser, MimeHeaders};
use reqwest::StatusCode;
use sealpost_seal::{AccountKeys, context};
use sealpost_testkit::TestApp;
use sealpost_testkit::relay::{Behaviour, TestRelay, dkim_test_key_path, dkim_verifies};
use serde_json::{Value, json};

use crate::support::{Api, Reply, SignedIn, captured_logs, new_keys};

struct Sending {
    api: Api,
    relay: TestRelay,
    owner: SignedIn,
    keys: AccountKeys,
    /// The sending address.
    address: String,
}

async fn sending(behaviour: Behaviour) -> Sending {
    sending_with(behaviour, |_| {}).await
}

async fn sending_with(
    behaviour: Behaviour,
    adjust: impl FnOnce(&mut sealpost_config::Config),
) -> Sending {
    let relay = TestRelay::start(behaviour).await;
    let url = relay.url();
    let app = TestApp::spawn_with(|config| {
        config.smtp_relay = Some(sealpost_config::RelayUrl::new(url));
        config.dkim_key_file = Some(dkim_test_key_path());
        config.smtp_relay_timeout = Duration::from_secs(2);
        adjust(config);
    })
    .await;
    let api = Api::with(app);
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let address = api.keyed_address(&owner, &keys, "ibx_send01", "shop").await;
    Sending {
        api,
        relay,
        owner,
        keys,
        address,
    }
}

impl Sending {
    async fn send(&self, body: Value) -> Reply {
        self.api
            .post("/messages/send", Some(&self.owner.token), body)
            .await
    }

    /// A plain message from the address to `count` distinct recipients.
    async fn send_to(&self, count: usize) -> Reply {
        let to: Vec<String> = (0..count).map(|n| format!("r{n}@example.com")).collect();
        self.send(json!({ "from": self.address, "to": to, "subject": "hi", "text": "hello" }))
            .await
    }

    async fn sent_usage(&self) -> (u64, u64) {
        let usage = self.api.get("/usage", Some(&self.owner.token)).await;
        let sent = &usage.body["messagesSent"];
        (
            sent["hour"]["used"].as_u64().unwrap(),
            sent["day"]["used"].as_u64().unwrap(),
        )
    }

    async fn sent_folder(&self) -> Vec<Value> {
        let listed = self
            .api
            .get("/messages?folder=sent", Some(&self.owner.token))
            .await;
        listed.body["messages"].as_array().unwrap().clone()
    }

    /// A Sent copy's content, opened with the address's key.
    fn open_sent_copy(&self, copy: &Value) -> Value {
        let sealed: sealpost_seal::SealedBox =
            serde_json::from_value(copy["content"].clone()).unwrap();
        let plain = sealed
            .open(
                &self.keys.address_secret("ibx_send01", 0),
                &context::message("ibx_send01", copy["id"].as_str().unwrap()),
            )
            .unwrap();
        serde_json::from_slice(&plain).unwrap()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sent_mail_reaches_the_relay_dkim_signed_and_is_kept_sealed_in_sent() {
    let logs = captured_logs();
    let marker = "MARKERb41d7e";
    let s = sending(Behaviour::Accept).await;
    let reply = s
        .send(json!({
            "from": s.address.to_uppercase(),
            "fromName": "Zoë's Shop",
            "to": ["Bob Example <bob@example.com>", "carol@example.org", "BOB@example.com"],
            "subject": format!("Grüße, your code {marker}"),
            "text": format!("Your code is 123456.\n.a line with a leading dot {marker}"),
            "html": format!("<p>Your code is <b>123456</b> {marker}</p>"),
        }))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["sent"], true);
    let message_id = reply.body["messageId"].as_str().unwrap().to_owned();

    // What the relay got: the envelope, MIME, headers.
    let relayed = s.relay.received();
    assert_eq!(relayed.len(), 1);
    let mail = &relayed[0];
    assert_eq!(mail.mail_from, s.address);
    assert_eq!(mail.recipients, ["bob@example.com", "carol@example.org"]);
    let raw = String::from_utf8(mail.data.clone()).unwrap();
    let header_block = &raw[..raw.find("\r\n\r\n").unwrap()];
    assert!(
        header_block.is_ascii(),
        "UTF-8 headers are encoded: {header_block}"
    );
    assert!(header_block.contains("MIME-Version: 1.0"), "{header_block}");
    let parsed = MessageParser::default().parse(&mail.data).unwrap();
    let from = parsed.from().unwrap().first().unwrap();
    assert_eq!(from.name(), Some("Zoë's Shop"));
    assert_eq!(from.address(), Some(s.address.as_str()));
    let to: Vec<(Option<&str>, Option<&str>)> = parsed
        .to()
        .unwrap()
        .iter()
        .map(|addr| (addr.name(), addr.address()))
        .collect();
    assert_eq!(
        to,
        [
            (Some("Bob Example"), Some("bob@example.com")),
            (None, Some("carol@example.org"))
        ]
    );
    assert_eq!(
        parsed.subject(),
        Some(format!("Grüße, your code {marker}").as_str())
    );
    let message_id_header = parsed.message_id().unwrap().to_owned();
    assert!(
        message_id_header.ends_with("@mail.localhost"),
        "{message_id_header}"
    );
    assert_eq!(
        parsed.date().unwrap().to_timestamp(),
        chrono::DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z")
            .unwrap()
            .timestamp(),
        "the service clock's time"
    );
    let root_type = parsed.root_part().content_type().unwrap();
    assert_eq!(
        (root_type.ctype(), root_type.subtype()),
        ("multipart", Some("alternative"))
    );
    assert_eq!(
        parsed
            .body_text(0)
            .unwrap()
            .replace("\r\n", "\n")
            .trim_end(),
        format!("Your code is 123456.\n.a line with a leading dot {marker}")
    );
    assert_eq!(
        parsed
            .body_html(0)
            .unwrap()
            .replace("\r\n", "\n")
            .trim_end(),
        format!("<p>Your code is <b>123456</b> {marker}</p>")
    );

    // The DKIM signature verifies against the published key.
    assert!(dkim_verifies(&mail.data).await, "{raw}");
    for tag in [" d=mail.localhost;", " s=sealpost;", " c=relaxed/relaxed;"] {
        assert!(header_block.contains(tag), "{tag}: {header_block}");
    }
    // And a changed body breaks it: the verification is real.
    let tampered = raw.replace("123456", "654321");
    assert!(!dkim_verifies(tampered.as_bytes()).await);

    // The Sent copy: sealed to the address's key, message content JSON
    // (docs/protocol.md).
    let sent = s.sent_folder().await;
    assert_eq!(sent.len(), 1);
    let copy = &sent[0];
    assert_eq!(copy["id"], message_id.as_str());
    assert_eq!(
        (
            &copy["folder"],
            &copy["outgoing"],
            &copy["read"],
            &copy["inboxId"]
        ),
        (
            &json!("sent"),
            &json!(true),
            &json!(true),
            &json!("ibx_send01")
        )
    );
    let size = copy["sizeBytes"].as_u64().unwrap();
    assert!(
        size.abs_diff(mail.data.len() as u64) <= 2,
        "the size as submitted: {size}"
    );
    let content = s.open_sent_copy(copy);
    assert_eq!(content["from"], format!("Zoë's Shop <{}>", s.address));
    assert_eq!(
        content["to"],
        json!(["Bob Example <bob@example.com>", "carol@example.org"])
    );
    assert_eq!(content["subject"], format!("Grüße, your code {marker}"));
    assert_eq!(content["messageIdHeader"], format!("<{message_id_header}>"));
    assert_eq!(content["date"], "2026-11-22T12:00:00.000Z");
    assert_eq!(content["attachments"], json!([]));
    // Sent copies are not inbox mail: not in the inbox, not waking waiters.
    assert!(
        s.api
            .get("/messages?folder=inbox", Some(&s.owner.token))
            .await
            .body["messages"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let wait = s
        .api
        .get(
            "/inboxes/ibx_send01/messages/wait?timeout=1",
            Some(&s.owner.token),
        )
        .await;
    assert_eq!(wait.status, StatusCode::NO_CONTENT);

    // Counted per recipient; recorded as activity and event, ids only.
    assert_eq!(s.sent_usage().await, (2, 2));
    assert!(
        s.api
            .activity_kinds(&s.owner)
            .await
            .contains(&"mail.sent".to_owned())
    );
    assert_eq!(
        s.api
            .event_payloads(&s.owner.account_id, "message.sent")
            .await,
        [json!({ "messageId": message_id, "inboxId": "ibx_send01", "via": "app" })]
    );

    // Nothing of the content, sender or recipients in the logs.
    let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    for secret in [
        marker,
        "bob@example.com",
        "carol@example.org",
        s.address.as_str(),
    ] {
        assert!(!logs.contains(secret), "{secret} in the logs");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn copies_reach_the_relay_in_cc_count_as_sends_and_stay_in_the_sent_copy() {
    let s = sending(Behaviour::Accept).await;
    let reply = s
        .send(json!({
            "from": s.address,
            "to": ["bob@example.com"],
            "cc": ["Dave Example <dave@example.net>", "BOB@example.com", "dave@EXAMPLE.net"],
            "subject": "Copies",
            "text": "hello",
        }))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let message_id = reply.body["messageId"].as_str().unwrap().to_owned();

    // One message, its envelope to both; Dave in Cc once, Bob not copied.
    let relayed = s.relay.received();
    assert_eq!(relayed.len(), 1);
    assert_eq!(
        relayed[0].recipients,
        ["bob@example.com", "dave@example.net"]
    );
    let parsed = MessageParser::default().parse(&relayed[0].data).unwrap();
    let cc: Vec<(Option<&str>, Option<&str>)> = parsed
        .cc()
        .unwrap()
        .iter()
        .map(|addr| (addr.name(), addr.address()))
        .collect();
    assert_eq!(cc, [(Some("Dave Example"), Some("dave@example.net"))]);
    assert!(dkim_verifies(&relayed[0].data).await);
    assert_eq!(s.sent_usage().await, (2, 2), "one send per recipient");

    let copy = &s.sent_folder().await[0];
    assert_eq!(copy["id"], message_id.as_str());
    let content = s.open_sent_copy(copy);
    assert_eq!(content["cc"], json!(["Dave Example <dave@example.net>"]));

    // More than 50 in to and cc together: refused, nothing sent.
    let many: Vec<String> = (0..50).map(|n| format!("c{n}@example.com")).collect();
    let refused = s
        .send(json!({
            "from": s.address, "to": ["bob@example.com"], "cc": many,
            "subject": "Too many", "text": "hello",
        }))
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    assert_eq!(refused.body["error"]["code"], "invalid_field");
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("cc:"),
        "{}",
        refused.body
    );
    assert_eq!(s.relay.received().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn only_sessions_send_and_only_from_their_own_live_addresses() {
    let s = sending(Behaviour::Accept).await;
    let device = s.api.pair(&s.owner.token, "wkr_phone01").await;
    let by_device = s
        .api
        .post(
            "/messages/send",
            Some(&device.credential),
            json!({ "from": s.address, "to": ["bob@example.com"], "subject": "s", "text": "t" }),
        )
        .await;
    assert_eq!(
        (by_device.status, by_device.code()),
        (StatusCode::FORBIDDEN, "session_required")
    );

    // Another account's address, or one that does not exist: 403.
    let (_, other_keys) = new_keys();
    let stranger = s.api.register(&other_keys).await;
    let foreign = s
        .api
        .post(
            "/messages/send",
            Some(&stranger.token),
            json!({ "from": s.address, "to": ["bob@example.com"], "subject": "s", "text": "t" }),
        )
        .await;
    assert_eq!(
        (foreign.status, foreign.code()),
        (StatusCode::FORBIDDEN, "not_your_address")
    );
    let unknown = s
        .send(json!({ "from": "nobody@mail.localhost", "to": ["bob@example.com"], "subject": "s", "text": "t" }))
        .await;
    assert_eq!(
        (unknown.status, unknown.code()),
        (StatusCode::FORBIDDEN, "not_your_address")
    );

    // An address without a key sends, but keeps no copy (messageId null).
    let keyless = s
        .api
        .post(
            "/inboxes",
            Some(&s.owner.token),
            json!({ "id": "ibx_nokey1", "domain": "mail.localhost", "prefix": "nokey" }),
        )
        .await;
    let keyless_address = keyless.body["inbox"]["emailAddress"].as_str().unwrap();
    let sent = s
        .send(json!({ "from": keyless_address, "to": ["bob@example.com"], "subject": "s", "text": "t" }))
        .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.body);
    assert_eq!(sent.body["messageId"], Value::Null);
    assert_eq!(
        s.api
            .event_payloads(&s.owner.account_id, "message.sent")
            .await,
        [json!({ "messageId": null, "inboxId": "ibx_nokey1", "via": "app" })]
    );
    assert_eq!(s.relay.received().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_gets_its_documented_code_and_sends_nothing() {
    let s = sending(Behaviour::Accept).await;
    let many: Vec<String> = (0..51).map(|n| format!("r{n}@example.com")).collect();
    let base = json!({ "from": s.address, "to": ["bob@example.com"], "subject": "s", "text": "t" });
    let with = |field: &str, value: Value| {
        let mut body = base.clone();
        body[field] = value;
        body
    };
    for (body, field) in [
        (with("from", json!("not an address")), "from"),
        (with("to", json!([])), "to"),
        (with("to", json!(many)), "to"),
        (
            with("to", json!(["bob@example.com", "bob(at)example.com"])),
            "to[1]",
        ),
        (
            with(
                "to",
                json!(["Bob\r\nBcc: eve@example.net <bob@example.com>"]),
            ),
            "to[0]",
        ),
        (
            with("to", json!(["bob@example.com\nBcc: eve@example.net"])),
            "to[0]",
        ),
        (
            with("subject", json!("hello\r\nBcc: eve@example.net")),
            "subject",
        ),
        (
            with("fromName", json!("Shop\nBcc: eve@example.net")),
            "fromName",
        ),
        (with("text", json!("x".repeat(600 * 1024))), "text"),
        (with("html", json!("x".repeat(600 * 1024))), "html"),
        (with("subject", json!(7)), "subject"),
    ] {
        let reply = s.send(body).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::BAD_REQUEST, "invalid_field"),
            "{field}: {}",
            reply.body
        );
        assert!(
            reply.body["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{field}:")),
            "{field}: {}",
            reply.body
        );
    }
    let oversize = s
        .send(with("text", json!("x".repeat(3 * 1024 * 1024))))
        .await;
    assert_eq!(
        (oversize.status, oversize.code()),
        (StatusCode::PAYLOAD_TOO_LARGE, "too_large")
    );

    assert!(s.relay.received().is_empty(), "nothing was sent");
    assert_eq!(s.sent_usage().await, (0, 0));
    assert!(s.sent_folder().await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refusing_relay_is_send_failed_and_counts_nothing() {
    let logs = captured_logs();
    let s = sending(Behaviour::Accept).await;
    for behaviour in [
        Behaviour::RefuseRecipients,
        Behaviour::DeferRecipients,
        Behaviour::RejectData,
        Behaviour::DeferData,
    ] {
        s.relay.set(behaviour);
        let reply = s.send_to(2).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::BAD_GATEWAY, "send_failed"),
            "{behaviour:?}: {}",
            reply.body
        );
        let message = reply.body["error"]["message"].as_str().unwrap();
        for relay_words in [
            "relaying denied",
            "try again later",
            "message refused",
            "queue full",
        ] {
            assert!(
                !message.contains(relay_words),
                "the relay's reason stays in the log"
            );
        }
    }
    assert!(s.relay.received().is_empty());
    assert_eq!(s.sent_usage().await, (0, 0));
    assert!(s.sent_folder().await.is_empty());
    assert!(
        s.api
            .event_payloads(&s.owner.account_id, "message.sent")
            .await
            .is_empty()
    );
    let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(logs.contains("outgoing mail not accepted by the relay"));
    assert!(
        logs.contains("relaying denied"),
        "the relay's reason is logged"
    );
    assert!(!logs.contains("r0@example.com"), "addresses are not");

    // The same relay taking mail again: sent and counted once.
    s.relay.set(Behaviour::Accept);
    assert_eq!(s.send_to(2).await.status, StatusCode::OK);
    assert_eq!(s.sent_usage().await, (2, 2));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_silent_relay_times_out_as_send_failed() {
    let s = sending(Behaviour::Silent).await;
    let started = std::time::Instant::now();
    let reply = s.send_to(1).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::BAD_GATEWAY, "send_failed"),
        "{}",
        reply.body
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "bounded by SEALPOST_SMTP_RELAY_TIMEOUT"
    );
    assert_eq!(s.sent_usage().await, (0, 0));
    assert!(s.sent_folder().await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_relay_sending_is_feature_disabled() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let reply = api
        .post(
            "/messages/send",
            Some(&owner.token),
            json!({ "from": "a@mail.localhost", "to": ["bob@example.com"], "subject": "s", "text": "t" }),
        )
        .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::SERVICE_UNAVAILABLE, "feature_disabled")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn send_limits_follow_the_clock_hour_and_the_utc_day() {
    let s = sending(Behaviour::Accept).await;
    // Free: 60 an hour, 200 a day, one per recipient. The clock stands at 12:00:00.
    assert_eq!(s.send_to(50).await.status, StatusCode::OK);
    let over = s.send_to(11).await;
    assert_eq!(
        (over.status, over.code()),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    assert_eq!(over.headers["retry-after"], "3600", "to 13:00");
    assert_eq!(s.send_to(10).await.status, StatusCode::OK);
    assert_eq!(s.sent_usage().await, (60, 60));

    s.api
        .app
        .clock
        .advance(TimeDelta::minutes(59) + TimeDelta::seconds(59));
    let last_second = s.send_to(1).await;
    assert_eq!(last_second.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(last_second.headers["retry-after"], "1");
    s.api.app.clock.advance(TimeDelta::seconds(1));
    assert_eq!(
        s.send_to(1).await.status,
        StatusCode::OK,
        "a new clock hour"
    );
    let usage = s.api.get("/usage", Some(&s.owner.token)).await;
    assert_eq!(
        usage.body["messagesSent"],
        json!({
            "hour": { "used": 1, "limit": 60, "windowEndsAt": "2026-11-22T14:00:00.000Z" },
            "day": { "used": 61, "limit": 200, "windowEndsAt": "2026-11-23T00:00:00.000Z" },
        })
    );

    // The day: 200 on Free, whatever the hours.
    for _ in 0..2 {
        s.api.app.clock.advance(TimeDelta::hours(1));
        assert_eq!(s.send_to(50).await.status, StatusCode::OK);
    }
    s.api.app.clock.advance(TimeDelta::hours(1));
    assert_eq!(s.send_to(39).await.status, StatusCode::OK);
    assert_eq!(s.sent_usage().await, (39, 200));
    s.api.app.clock.advance(TimeDelta::hours(1));
    let day_over = s.send_to(1).await;
    assert_eq!(day_over.status, StatusCode::TOO_MANY_REQUESTS);
    // 17:00:00 now: the day ends in seven hours, the hour would not help.
    assert_eq!(day_over.headers["retry-after"], (7 * 3600).to_string());
    s.api
        .app
        .clock
        .advance(TimeDelta::hours(6) + TimeDelta::minutes(59) + TimeDelta::seconds(59));
    assert_eq!(s.send_to(1).await.headers["retry-after"], "1");
    s.api.app.clock.advance(TimeDelta::seconds(1));
    assert_eq!(s.send_to(1).await.status, StatusCode::OK, "00:00 UTC");
    assert_eq!(s.sent_usage().await, (1, 1));
    assert_eq!(s.relay.received().len(), 7);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_free_account_sends_its_first_day_allowance_only() {
    let s = sending_with(Behaviour::Accept, |config| config.new_account_sends = 5).await;
    // Registered at 12:00:00: new until 12:00 tomorrow.
    assert_eq!(s.send_to(5).await.status, StatusCode::OK);
    let over = s.send_to(1).await;
    assert_eq!(
        (over.status, over.code()),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    assert_eq!(
        over.headers["retry-after"],
        (12 * 3600).to_string(),
        "to 00:00 UTC"
    );

    // A new UTC day, the account twelve hours old: five more, and the
    // refusal now points at its first day's end.
    s.api.app.clock.advance(TimeDelta::hours(12));
    assert_eq!(s.send_to(5).await.status, StatusCode::OK);
    s.api.app.clock.advance(TimeDelta::hours(2));
    let over = s.send_to(1).await;
    assert_eq!(over.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        over.headers["retry-after"],
        (10 * 3600).to_string(),
        "to 12:00"
    );

    // A day old: the plan's limits.
    s.api.app.clock.advance(TimeDelta::hours(10));
    assert_eq!(s.send_to(50).await.status, StatusCode::OK);
    assert_eq!(s.relay.received().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_sends_from_the_addresses_assigned_to_it_as_via_agent() {
    let s = sending(Behaviour::Accept).await;
    s.api.set_plan(&s.owner.account_id, "operator").await;
    let agent = s.api.pair_agent(&s.owner.token, "wkr_runner1").await;
    let body =
        || json!({ "from": s.address, "to": ["bob@example.com"], "subject": "s", "text": "t" });

    // Not assigned to it yet: not its address.
    let refused = s
        .api
        .post("/messages/send", Some(&agent.credential), body())
        .await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::FORBIDDEN, "not_your_address"),
        "{}",
        refused.body
    );
    assert!(s.relay.received().is_empty());

    let assigned = s
        .api
        .post(
            "/workers/wkr_runner1/inboxes",
            Some(&s.owner.token),
            json!({ "inboxId": "ibx_send01" }),
        )
        .await;
    assert_eq!(assigned.status, StatusCode::OK, "{}", assigned.body);
    let sent = s
        .api
        .post("/messages/send", Some(&agent.credential), body())
        .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.body);
    assert_eq!(s.relay.received().len(), 1);
    let events = s
        .api
        .event_payloads(&s.owner.account_id, "message.sent")
        .await;
    assert_eq!(
        events,
        vec![
            json!({ "messageId": sent.body["messageId"], "inboxId": "ibx_send01", "via": "agent" })
        ]
    );
    // The account's own sends still say `app`; the agent's counted with them.
    assert_eq!(s.send_to(1).await.status, StatusCode::OK);
    assert_eq!(s.sent_usage().await, (2, 2));
}
