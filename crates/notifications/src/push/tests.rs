use std::sync::Mutex;

use sealpost_kernel::TestClock;
use serde_json::json;

use super::*;
use crate::kind::PreferencesPatch;

const NOW: &str = "2026-11-23T10:00:00Z";

fn now() -> Timestamp {
    Timestamp::parse(NOW).unwrap()
}

fn account() -> AccountId {
    AccountId::from_trusted("acct_test".to_owned())
}

fn settings() -> AccountSettings {
    AccountSettings {
        preferences: Preferences::default(),
        muted: Vec::new(),
        has_tokens: true,
    }
}

fn queued(kind: &str, payload: Value, settings: &AccountSettings) -> Option<Queued> {
    let account = account();
    queue_rule(
        &OutboxEntry {
            account: &account,
            kind,
            payload: &payload,
            at: now(),
        },
        settings,
    )
}

/// Every kind docs/api.md "Notifications" names, as it stands in the outbox.
fn entries() -> Vec<(&'static str, Value, PushKind)> {
    vec![
        (
            "message.received",
            json!({"messageId": "msg_1", "inboxId": "ibx_one"}),
            PushKind::NewMail,
        ),
        (
            "worker.paired",
            json!({"workerId": "wkr_a", "kind": "device"}),
            PushKind::DevicePaired,
        ),
        (
            "worker.disconnected",
            json!({"workerId": "wkr_a"}),
            PushKind::DeviceOffline,
        ),
        (
            "notice.signed_in",
            json!({"sessionId": "ses_1"}),
            PushKind::NewSignIn,
        ),
        (
            "subscription.updated",
            json!({"planId": "free"}),
            PushKind::Billing,
        ),
        (
            "notice.payment_paid",
            json!({"paymentId": "pay_1"}),
            PushKind::Billing,
        ),
        (
            "notice.payment_failed",
            json!({"paymentId": "pay_1"}),
            PushKind::Billing,
        ),
        (
            "notice.webhook_disabled",
            json!({"webhookId": "whk_1"}),
            PushKind::WebhookFailures,
        ),
    ]
}

#[test]
fn each_kind_is_queued_with_its_window_and_honours_its_own_switch() {
    for (kind, payload, push) in entries() {
        assert_eq!(
            queued(kind, payload.clone(), &settings()),
            Some(Queued {
                kind: push,
                due_at: now() + window(push)
            }),
            "{kind}"
        );
        // Its own switch off: not queued. Every other switch off: still queued.
        let mut off = settings();
        off.preferences = off.preferences.patched(&PreferencesPatch::one(push, false));
        assert_eq!(queued(kind, payload.clone(), &off), None, "{kind}");
        for other in PushKind::ALL.into_iter().filter(|other| *other != push) {
            let mut others_off = settings();
            others_off.preferences = others_off
                .preferences
                .patched(&PreferencesPatch::one(other, false));
            assert!(
                queued(kind, payload.clone(), &others_off).is_some(),
                "{kind} {other}"
            );
        }
    }
    assert_eq!(window(PushKind::NewMail), TimeDelta::seconds(60));
}

#[test]
fn nothing_is_queued_without_a_token_or_for_other_events() {
    let mut tokenless = settings();
    tokenless.has_tokens = false;
    for (kind, payload, _) in entries() {
        assert_eq!(queued(kind, payload, &tokenless), None, "{kind}");
    }
    for kind in [
        "inbox.created",
        "inbox.deleted",
        "worker.removed",
        "worker.connected",
        "message.sent",
        "webhook.test",
        "something.else",
    ] {
        assert_eq!(queued(kind, json!({}), &settings()), None, "{kind}");
    }
}

#[test]
fn a_muted_address_mutes_its_new_mail_only() {
    let mut muted = settings();
    muted.muted = vec![AddressId::from_trusted("ibx_one".to_owned())];
    let mail = |address: &str| json!({"messageId": "msg_1", "inboxId": address});
    assert_eq!(queued("message.received", mail("ibx_one"), &muted), None);
    assert!(queued("message.received", mail("ibx_two"), &muted).is_some());
    assert!(queued("worker.paired", json!({"workerId": "wkr_a"}), &muted).is_some());
}

#[test]
fn texts_are_generic_and_carry_the_count() {
    for kind in PushKind::ALL {
        for count in [1, 100] {
            let message = PushMessage::new(kind, count);
            assert!(!message.title.is_empty() && !message.body.is_empty());
            for forbidden in ["@", "ibx_", "msg_", "wkr_", "whk_"] {
                assert!(
                    !message.body.contains(forbidden),
                    "{kind}: {}",
                    message.body
                );
            }
        }
    }
    assert_eq!(
        PushMessage::new(PushKind::NewMail, 100).body,
        "You have 100 new messages."
    );
    assert_eq!(
        PushMessage::new(PushKind::NewMail, 1).body,
        "You have a new message."
    );
}

fn due(attempts: u32, created_at: Timestamp) -> DuePush {
    DuePush {
        id: 7,
        token: PushToken::parse("tok1").unwrap(),
        platform: Platform::Ios,
        kind: PushKind::NewMail,
        count: 3,
        attempts,
        created_at,
    }
}

fn retry(after: Option<TimeDelta>) -> PushOutcome {
    PushOutcome::Retry {
        after,
        reason: "503".to_owned(),
    }
}

#[test]
fn retries_follow_the_schedule_and_never_follow_a_4xx() {
    let t = now();
    assert_eq!(
        after_attempt(&due(0, t), &PushOutcome::Delivered, t),
        Next::Done
    );
    let refused = PushOutcome::Dropped {
        reason: "400 BadTopic".to_owned(),
    };
    assert_eq!(after_attempt(&due(0, t), &refused, t), Next::Done);
    assert_eq!(
        after_attempt(&due(0, t), &PushOutcome::Unregistered, t),
        Next::RemoveToken
    );
    assert_eq!(
        after_attempt(&due(0, t), &retry(None), t),
        Next::RetryAt(t + TimeDelta::seconds(30))
    );
    // A Retry-After longer than the schedule wins.
    assert_eq!(
        after_attempt(&due(0, t), &retry(Some(TimeDelta::minutes(5))), t),
        Next::RetryAt(t + TimeDelta::minutes(5))
    );
    assert_eq!(
        after_attempt(&due(3, t), &retry(None), t),
        Next::RetryAt(t + TimeDelta::minutes(30))
    );
    // Five attempts in all.
    assert_eq!(after_attempt(&due(4, t), &retry(None), t), Next::Done);
    // Never past an hour after the push was made.
    let late = t + TimeDelta::minutes(55);
    assert_eq!(after_attempt(&due(2, t), &retry(None), late), Next::Done);
}

/// Answers every push with `outcome` and remembers what it was asked.
struct FixedTransport {
    outcome: PushOutcome,
    sent: Mutex<Vec<(Platform, String, PushMessage)>>,
}

#[async_trait]
impl PushTransport for FixedTransport {
    async fn send(
        &self,
        platform: Platform,
        token: &PushToken,
        message: &PushMessage,
    ) -> PushOutcome {
        self.sent
            .lock()
            .unwrap()
            .push((platform, token.as_str().to_owned(), message.clone()));
        self.outcome.clone()
    }
}

fn sender(repo: MockPushRepository, outcome: PushOutcome) -> (PushSender, Arc<FixedTransport>) {
    let transport = Arc::new(FixedTransport {
        outcome,
        sent: Mutex::new(Vec::new()),
    });
    let sender = PushSender::new(
        Arc::new(repo),
        transport.clone(),
        Arc::new(TestClock::at(now())),
    );
    (sender, transport)
}

#[tokio::test]
async fn a_round_collects_releases_sends_and_records_once() {
    let mut repo = MockPushRepository::new();
    repo.expect_collect()
        .withf(|limit, rule| {
            // The rule handed to the store is `queue_rule`.
            let account = account();
            let payload = json!({"workerId": "wkr_a"});
            *limit == COLLECT_BATCH
                && rule(
                    &OutboxEntry {
                        account: &account,
                        kind: "worker.paired",
                        payload: &payload,
                        at: now(),
                    },
                    &settings(),
                )
                .is_some()
        })
        .times(1)
        .returning(|_, _| Ok(4));
    repo.expect_release_due()
        .withf(|at, limit| *at == now() && *limit == RELEASE_BATCH)
        .times(1)
        .returning(|_, _| Ok(2));
    repo.expect_claim()
        .withf(|at, until, limit| *at == now() && *until == now() + LEASE && *limit == 10)
        .times(1)
        .returning(|_, _, _| {
            Ok(vec![
                due(0, now()),
                DuePush {
                    id: 8,
                    platform: Platform::Android,
                    ..due(0, now())
                },
            ])
        });
    repo.expect_record()
        .withf(|results| {
            results.len() == 2 && results.iter().all(|result| result.next == Next::Done)
        })
        .times(1)
        .returning(|_| Ok(()));
    let (sender, transport) = sender(repo, PushOutcome::Delivered);
    assert_eq!(
        sender.run_round(10).await.unwrap(),
        Round {
            collected: 4,
            released: 2,
            attempts: 2
        }
    );
    let sent = transport.sent.lock().unwrap();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].2, PushMessage::new(PushKind::NewMail, 3));
    assert_eq!(sent[1].0, Platform::Android);
}

#[tokio::test]
async fn nothing_due_writes_nothing() {
    let mut repo = MockPushRepository::new();
    repo.expect_claim().returning(|_, _, _| Ok(Vec::new()));
    repo.expect_record().never();
    let (sender, transport) = sender(repo, PushOutcome::Delivered);
    assert_eq!(sender.send_due(10).await.unwrap(), 0);
    assert!(transport.sent.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_unregistered_token_is_removed_and_a_5xx_retried() {
    for (outcome, next) in [
        (PushOutcome::Unregistered, Next::RemoveToken),
        (retry(None), Next::RetryAt(now() + TimeDelta::seconds(30))),
    ] {
        let mut repo = MockPushRepository::new();
        repo.expect_claim()
            .returning(|_, _, _| Ok(vec![due(0, now())]));
        let expected = next.clone();
        repo.expect_record()
            .withf(move |results| results.len() == 1 && results[0].next == expected)
            .times(1)
            .returning(|_| Ok(()));
        let (sender, _) = sender(repo, outcome);
        assert_eq!(sender.send_due(10).await.unwrap(), 1);
    }
}

#[tokio::test]
async fn a_switched_off_webhook_becomes_a_notice_in_the_outbox() {
    let mut repo = MockPushRepository::new();
    repo.expect_add_notice()
        .withf(|notice| {
            notice.kind == NoticeKind::WebhookDisabled
                && notice.account == account()
                && notice.payload == json!({"webhookId": "whk_gone"})
                && notice.at == now()
        })
        .times(1)
        .returning(|_| Ok(()));
    let alerts = PushAlerts::new(Arc::new(repo), Arc::new(TestClock::at(now())));
    alerts
        .webhook_disabled(&account(), &WebhookId::from_trusted("whk_gone".to_owned()))
        .await;
}
