//! `Billing::remind_renewals` over a mocked store.

use std::sync::{Arc, Mutex};

use sealpost_activity::{ActivityKind, NoticeKind};
use sealpost_kernel::{AccountId, TestClock, Timestamp};
use sealpost_subscriptions::MockSubscriptionRepository;
use serde_json::json;

use crate::*;

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

fn candidate(id: &str, paid_until: &str, reminded: Option<u32>) -> RenewalCandidate {
    RenewalCandidate {
        account: AccountId::parse(id).unwrap(),
        paid_until: at(paid_until),
        reminded,
    }
}

#[tokio::test]
async fn each_candidate_gets_the_reminder_due_with_its_records() {
    let mut repo = MockBillingRepository::new();
    repo.expect_renewal_candidates()
        .withf(|now, until, last, _| {
            *now == at("2026-11-22T12:00:00Z") && *until == at("2026-11-29T12:00:00Z") && *last == 1
        })
        .times(1)
        .returning(|_, _, _, _| {
            Ok(vec![
                // Three days left, nothing sent: the 7-day reminder.
                candidate(
                    "acct_aaaaaaaaaaaaaaaaaaaaaaaa",
                    "2026-11-25T12:00:00Z",
                    None,
                ),
                // Three days left, reminded of 7 already: nothing yet.
                candidate(
                    "acct_bbbbbbbbbbbbbbbbbbbbbbbb",
                    "2026-11-25T12:00:00Z",
                    Some(7),
                ),
                // Twelve hours left, reminded of 7: the last reminder.
                candidate(
                    "acct_cccccccccccccccccccccccc",
                    "2026-11-23T00:00:00Z",
                    Some(7),
                ),
            ])
        });
    let sent = Arc::new(Mutex::new(Vec::new()));
    let slot = sent.clone();
    repo.expect_remind_renewal()
        .times(2)
        .returning(move |reminder| {
            slot.lock().unwrap().push(reminder);
            Ok(Applied::Done)
        });
    let billing = Billing::new(
        Arc::new(repo),
        Arc::new(MockSubscriptionRepository::new()),
        Vec::new(),
        Arc::new(TestClock::at(at("2026-11-22T12:00:00Z"))),
    );
    assert_eq!(billing.remind_renewals().await.unwrap(), 2);
    let sent = sent.lock().unwrap();
    let days: Vec<(&str, u32)> = sent
        .iter()
        .map(|reminder| (reminder.account.as_str(), reminder.days_left))
        .collect();
    assert_eq!(
        days,
        [
            ("acct_aaaaaaaaaaaaaaaaaaaaaaaa", 7),
            ("acct_cccccccccccccccccccccccc", 1)
        ]
    );
    let records = &sent[1].records;
    assert_eq!(records.activity[0].kind, ActivityKind::RenewalDue);
    assert_eq!(records.notices[0].kind, NoticeKind::RenewalDue);
    assert_eq!(
        records.notices[0].payload,
        json!({ "renewsAt": "2026-11-23T00:00:00.000Z", "daysLeft": 1 })
    );
    assert!(records.events.is_empty(), "a reminder is no webhook event");
}
