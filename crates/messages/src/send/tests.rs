use std::sync::Mutex;

use sealpost_activity::{ActivityKind, EventType};
use sealpost_kernel::TestClock;
use sealpost_seal::{AccountKeys, RecoveryPhrase};
use serde_json::json;

use super::*;

fn keys() -> AccountKeys {
    RecoveryPhrase::parse("abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about")
        .unwrap()
        .keys()
}

fn account() -> AccountId {
    AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap()
}

fn sender(with_key: bool, paused: bool) -> SenderRecord {
    SenderRecord {
        address: AddressId::parse("ibx_shop01").unwrap(),
        account: account(),
        plan: PlanId::Free,
        // Weeks old: past the first-day allowance.
        account_created_at: Timestamp::parse("2026-10-01T00:00:00Z").unwrap(),
        email_address: "shop.abcdef@mail.localhost".into(),
        public_key: with_key.then(|| keys().address_public_key("ibx_shop01", 0)),
        key_epoch: 0,
        paused,
    }
}

fn request() -> SendRequest {
    SendRequest {
        from: "Shop.ABCDEF@mail.localhost".into(),
        from_name: Some("Shop, Inc.".into()),
        to: vec![
            "Bob <bob@example.com>".into(),
            "carol@example.org".into(),
            "BOB@example.com".into(),
        ],
        cc: Vec::new(),
        subject: "Your code".into(),
        text: "code 123456".into(),
        html: Some("<p>code 123456</p>".into()),
    }
}

fn outbox(repo: MockSendRepository, relay: Option<MockMailRelay>) -> Outbox {
    let clock = Arc::new(TestClock::at(
        Timestamp::parse("2026-11-22T12:00:00Z").unwrap(),
    ));
    Outbox::new(
        Arc::new(repo),
        relay.map(|relay| Arc::new(relay) as Arc<dyn MailRelay>),
        clock,
    )
}

/// What an accepted send gave: its answer, the mail the relay was handed
/// and the Sent copy committed.
struct Accepted {
    sent: Sent,
    mail: OutgoingMail,
    copy: SentCopy,
}

/// Sends `request` with `repo` (its sender and reservation expected by the
/// caller), a relay that accepts the mail as `size_bytes` once, and a
/// commit of the Sent copy once.
async fn send_accepted(
    mut repo: MockSendRepository,
    request: &SendRequest,
    size_bytes: u64,
) -> Accepted {
    let submitted = Arc::new(Mutex::new(None));
    let seen = submitted.clone();
    let mut relay = MockMailRelay::new();
    relay.expect_submit().times(1).returning(move |mail| {
        *seen.lock().unwrap() = Some(mail.clone());
        Ok(Submitted { size_bytes })
    });
    let committed = Arc::new(Mutex::new(None));
    let slot = committed.clone();
    repo.expect_commit_sent().times(1).returning(move |sent| {
        *slot.lock().unwrap() = Some(sent);
        Ok(())
    });
    let sent = outbox(repo, Some(relay))
        .send(&account(), VIA_APP, request)
        .await
        .unwrap();
    let mail = submitted.lock().unwrap().take().unwrap();
    let copy = committed.lock().unwrap().take().unwrap();
    Accepted { sent, mail, copy }
}

/// A Sent copy's content, opened with the address's key.
fn opened(copy: &Message) -> serde_json::Value {
    let plain = copy
        .content
        .open(
            &keys().address_secret("ibx_shop01", 0),
            &context::message("ibx_shop01", copy.id.as_str()),
        )
        .unwrap();
    serde_json::from_slice(&plain).unwrap()
}

/// A repository that refuses every call: for requests that must stop early.
fn untouched() -> MockSendRepository {
    let mut repo = MockSendRepository::new();
    repo.expect_sender().never();
    repo.expect_reserve_sends().never();
    repo.expect_commit_sent().never();
    repo
}

fn untouched_relay() -> MockMailRelay {
    let mut relay = MockMailRelay::new();
    relay.expect_submit().never();
    relay
}

#[tokio::test]
async fn without_a_relay_sending_is_off() {
    let result = outbox(untouched(), None)
        .send(&account(), VIA_APP, &request())
        .await;
    assert!(matches!(result, Err(SendError::FeatureDisabled)));
}

#[tokio::test]
async fn bad_input_names_its_field_and_sends_nothing() {
    let many: Vec<String> = (0..=MAX_RECIPIENTS)
        .map(|n| format!("r{n}@example.com"))
        .collect();
    let cases: Vec<(SendRequest, &str)> = vec![
        (
            SendRequest {
                from: "not an address".into(),
                ..request()
            },
            "from",
        ),
        (
            SendRequest {
                from_name: Some("Shop\r\nBcc: victim@example.com".into()),
                ..request()
            },
            "fromName",
        ),
        (
            SendRequest {
                to: Vec::new(),
                ..request()
            },
            "to",
        ),
        (
            SendRequest {
                to: many,
                ..request()
            },
            "to",
        ),
        (
            SendRequest {
                to: vec!["ok@example.com".into(), "bob@@example.com".into()],
                ..request()
            },
            "to[1]",
        ),
        (
            SendRequest {
                to: vec!["bob@localhost".into()],
                ..request()
            },
            "to[0]",
        ),
        (
            SendRequest {
                to: vec!["Bob\r\nBcc: victim@example.com <bob@example.com>".into()],
                ..request()
            },
            "to[0]",
        ),
        (
            SendRequest {
                to: vec!["bob@example.com\r\nBcc: victim@example.com".into()],
                ..request()
            },
            "to[0]",
        ),
        (
            SendRequest {
                to: vec!["ok@example.com".into()],
                cc: (1..MAX_RECIPIENTS)
                    .map(|n| format!("c{n}@example.com"))
                    .chain(["one-too-many@example.com".to_owned()])
                    .collect(),
                ..request()
            },
            "cc",
        ),
        (
            SendRequest {
                cc: vec![
                    "dave@example.com".into(),
                    "dave\r\nBcc: x@example.com".into(),
                ],
                ..request()
            },
            "cc[1]",
        ),
        (
            SendRequest {
                subject: "Hi\r\nBcc: victim@example.com".into(),
                ..request()
            },
            "subject",
        ),
        (
            SendRequest {
                subject: "x".repeat(MAX_SUBJECT_CHARS + 1),
                ..request()
            },
            "subject",
        ),
        (
            SendRequest {
                text: "x".repeat(MAX_BODY_BYTES + 1),
                ..request()
            },
            "text",
        ),
        (
            SendRequest {
                html: Some("x".repeat(MAX_BODY_BYTES + 1)),
                ..request()
            },
            "html",
        ),
    ];
    for (bad, expected) in cases {
        let result = outbox(untouched(), Some(untouched_relay()))
            .send(&account(), VIA_APP, &bad)
            .await;
        match result {
            Err(SendError::InvalidField { field, .. }) => assert_eq!(field, expected),
            other => panic!("{expected}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn only_a_live_address_of_the_account_sends() {
    let mut repo = MockSendRepository::new();
    repo.expect_sender()
        .withf(|_, address| address == "shop.abcdef@mail.localhost")
        .returning(|_, _| Ok(None));
    repo.expect_reserve_sends().never();
    let result = outbox(repo, Some(untouched_relay()))
        .send(&account(), VIA_APP, &request())
        .await;
    assert!(matches!(result, Err(SendError::NotYourAddress)));

    let mut repo = MockSendRepository::new();
    repo.expect_sender()
        .returning(|_, _| Ok(Some(sender(true, true))));
    repo.expect_reserve_sends().never();
    let result = outbox(repo, Some(untouched_relay()))
        .send(&account(), VIA_APP, &request())
        .await;
    assert!(matches!(result, Err(SendError::AddressPaused)));
}

#[tokio::test]
async fn a_new_free_account_is_held_to_its_first_day_allowance() {
    // Sixteen hours old at the clock's 12:00: a day old at 20:00, before
    // the UTC day ends.
    let young = || SenderRecord {
        account_created_at: Timestamp::parse("2026-11-21T20:00:00Z").unwrap(),
        ..sender(true, false)
    };
    let mut repo = MockSendRepository::new();
    repo.expect_sender()
        .returning(move |_, _| Ok(Some(young())));
    repo.expect_reserve_sends()
        .withf(|_, _, count, hour, day| (*count, *hour, *day) == (2, 60, 7))
        .times(1)
        .returning(|_, _, _, _, _| Ok(Reservation::DayFull));
    repo.expect_commit_sent().never();
    let result = outbox(repo, Some(untouched_relay()))
        .with_first_day_sends(7)
        .send(&account(), VIA_APP, &request())
        .await;
    match result {
        Err(SendError::RateLimited {
            retry_after_seconds,
        }) => assert_eq!(retry_after_seconds, 8 * 3_600, "until it is a day old"),
        other => panic!("{other:?}"),
    }

    // A paid plan is never held to it.
    let mut repo = MockSendRepository::new();
    repo.expect_sender().returning(move |_, _| {
        Ok(Some(SenderRecord {
            plan: PlanId::Operator,
            ..young()
        }))
    });
    repo.expect_reserve_sends()
        .withf(|_, _, _, _, day| *day == 1_000)
        .times(1)
        .returning(|_, _, _, _, _| Ok(Reservation::DayFull));
    let result = outbox(repo, Some(untouched_relay()))
        .with_first_day_sends(7)
        .send(&account(), VIA_APP, &request())
        .await;
    assert!(matches!(
        result,
        Err(SendError::RateLimited {
            retry_after_seconds: 43_200
        })
    ));
}

#[tokio::test]
async fn a_full_window_answers_when_it_ends() {
    for (full, wait) in [
        (Reservation::HourFull, 3_600),
        (Reservation::DayFull, 43_200),
    ] {
        let mut repo = MockSendRepository::new();
        repo.expect_sender()
            .returning(|_, _| Ok(Some(sender(true, false))));
        repo.expect_reserve_sends()
            .withf(|_, windows, count, hour, day| {
                windows.hour_end.to_string() == "2026-11-22T13:00:00.000Z"
                    && windows.day_end.to_string() == "2026-11-23T00:00:00.000Z"
                    && (*count, *hour, *day) == (2, 60, 200)
            })
            .times(1)
            .returning(move |_, _, _, _, _| Ok(full));
        repo.expect_commit_sent().never();
        let result = outbox(repo, Some(untouched_relay()))
            .send(&account(), VIA_APP, &request())
            .await;
        match result {
            Err(SendError::RateLimited {
                retry_after_seconds,
            }) => assert_eq!(retry_after_seconds, wait),
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn a_refusing_relay_gives_the_reservation_back_and_keeps_nothing() {
    let mut seq = mockall::Sequence::new();
    let mut repo = MockSendRepository::new();
    repo.expect_sender()
        .returning(|_, _| Ok(Some(sender(true, false))));
    repo.expect_reserve_sends()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _, _, _, _| Ok(Reservation::Reserved));
    let mut relay = MockMailRelay::new();
    relay
        .expect_submit()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_| Err(RelayError("550 5.7.1 refused".into())));
    repo.expect_release_sends()
        .withf(|_, _, count| *count == 2)
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _, _| Ok(()));
    repo.expect_commit_sent().never();
    let result = outbox(repo, Some(relay))
        .send(&account(), VIA_APP, &request())
        .await;
    assert!(matches!(result, Err(SendError::RelayFailed(_))));
}

#[tokio::test]
async fn an_accepted_message_is_kept_sealed_in_sent_with_its_records() {
    let mut repo = MockSendRepository::new();
    repo.expect_sender()
        .returning(|_, _| Ok(Some(sender(true, false))));
    repo.expect_reserve_sends()
        .returning(|_, _, _, _, _| Ok(Reservation::Reserved));
    let Accepted {
        sent,
        mail,
        copy: copy_committed,
    } = send_accepted(repo, &request(), 777).await;

    assert_eq!(mail.from.address, "shop.abcdef@mail.localhost");
    assert_eq!(mail.from.name.as_deref(), Some("Shop, Inc."));
    assert_eq!(
        mail.to,
        vec![
            MailAddress {
                name: Some("Bob".into()),
                address: "bob@example.com".into()
            },
            MailAddress {
                name: None,
                address: "carol@example.org".into()
            },
        ],
        "the same address twice is sent once"
    );
    assert!(mail.message_id_header.ends_with("@mail.localhost>"));

    let copy = copy_committed.message.unwrap();
    assert_eq!(sent.message_id.as_ref(), Some(&copy.id));
    assert!(sent.unrecorded.is_none());
    assert_eq!(
        (copy.folder, copy.read, copy.outgoing, copy.size_bytes),
        (Folder::Sent, true, true, 777)
    );
    assert_eq!(
        opened(&copy),
        json!({
            "from": "\"Shop, Inc.\" <shop.abcdef@mail.localhost>",
            "to": ["Bob <bob@example.com>", "carol@example.org"],
            "cc": [],
            "replyTo": null,
            "subject": "Your code",
            "date": "2026-11-22T12:00:00.000Z",
            "messageIdHeader": mail.message_id_header,
            "text": "code 123456",
            "html": "<p>code 123456</p>",
            "attachments": [],
        })
    );
    let records = copy_committed.records;
    assert_eq!(records.activity[0].kind, ActivityKind::MailSent);
    assert_eq!(records.events[0].kind, EventType::MessageSent);
    assert_eq!(
        records.events[0].payload,
        json!({ "messageId": copy.id, "inboxId": "ibx_shop01", "via": "app" })
    );
}

/// Without a key, or with a low-order one (stored before the API refused
/// them: a box sealed to it opens for anyone), the mail goes out and no
/// Sent copy is kept.
#[tokio::test]
async fn an_address_without_a_usable_key_sends_but_keeps_no_copy() {
    let low_order = SenderRecord {
        public_key: Some([0; 32]),
        ..sender(true, false)
    };
    for record in [sender(false, false), low_order] {
        let mut repo = MockSendRepository::new();
        repo.expect_sender()
            .returning(move |_, _| Ok(Some(record.clone())));
        repo.expect_reserve_sends()
            .returning(|_, _, _, _, _| Ok(Reservation::Reserved));
        let accepted = send_accepted(repo, &request(), 1).await;
        assert!(accepted.copy.message.is_none());
        assert!(accepted.copy.records.events[0].payload["messageId"].is_null());
        assert!(accepted.sent.message_id.is_none());
    }
}

#[tokio::test]
async fn an_agent_sends_only_as_itself_and_the_event_says_agent() {
    let agent = DeviceId::parse("wkr_runner1").unwrap();
    let mut repo = MockSendRepository::new();
    // The address is looked up for the agent: the store keeps it to the
    // addresses assigned to it.
    let expected = Reader {
        account: account(),
        device: Some(agent.clone()),
    };
    repo.expect_sender()
        .withf(move |by, _| *by == expected)
        .times(1)
        .returning(|_, _| Ok(Some(sender(false, false))));
    repo.expect_reserve_sends()
        .returning(|_, _, _, _, _| Ok(Reservation::Reserved));
    repo.expect_commit_sent()
        .withf(|sent| sent.records.events[0].payload["via"] == "agent")
        .times(1)
        .returning(|_| Ok(()));
    let mut relay = MockMailRelay::new();
    relay
        .expect_submit()
        .returning(|_| Ok(Submitted { size_bytes: 1 }));
    outbox(repo, Some(relay))
        .send_from_agent(&account(), &agent, &request())
        .await
        .unwrap();
}

#[tokio::test]
async fn an_agent_sending_from_an_address_not_its_own_is_not_your_address() {
    let mut repo = MockSendRepository::new();
    repo.expect_sender().returning(|_, _| Ok(None));
    repo.expect_reserve_sends().never();
    let result = outbox(repo, Some(untouched_relay()))
        .send_from_agent(
            &account(),
            &DeviceId::parse("wkr_runner1").unwrap(),
            &request(),
        )
        .await;
    assert!(
        matches!(result, Err(SendError::NotYourAddress)),
        "{result:?}"
    );
}

#[tokio::test]
async fn copies_go_out_once_each_and_count_as_sends() {
    let mut repo = MockSendRepository::new();
    repo.expect_sender()
        .returning(|_, _| Ok(Some(sender(true, false))));
    // Bob and Carol in `to`, Dave in `cc` once: three recipients, three sends.
    repo.expect_reserve_sends()
        .withf(|_, _, count, _, _| *count == 3)
        .times(1)
        .returning(|_, _, _, _, _| Ok(Reservation::Reserved));
    let with_copies = SendRequest {
        cc: vec![
            "Dave <dave@example.net>".into(),
            "carol@EXAMPLE.org".into(),
            "DAVE@example.net".into(),
        ],
        ..request()
    };
    let Accepted { mail, copy, .. } = send_accepted(repo, &with_copies, 900).await;

    assert_eq!(
        mail.cc,
        vec![MailAddress {
            name: Some("Dave".into()),
            address: "dave@example.net".into()
        }],
        "an address already in to, or twice in cc, is not copied again"
    );
    let content = opened(&copy.message.unwrap());
    assert_eq!(content["cc"], json!(["Dave <dave@example.net>"]));
}
