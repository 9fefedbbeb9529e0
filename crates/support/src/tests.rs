use std::sync::Arc;

use chrono::TimeDelta;
use sealpost_kernel::{AccountId, Clock, TestClock, TicketId, TicketMessageId, Timestamp};
use sealpost_seal::SealedBox;

use crate::rules::{
    CLOSE_AFTER, DELETE_AFTER, MAX_BYTES, MAX_MESSAGES, MAX_OPEN, MAX_STORED, NEW_PER_DAY,
    REPLIES_PER_HOUR,
};
use crate::*;

const NOW: &str = "2026-11-25T10:20:00Z";

fn now() -> Timestamp {
    Timestamp::parse(NOW).unwrap()
}

fn account() -> AccountId {
    AccountId::from_trusted("acct_test".to_owned())
}

fn ticket_id() -> TicketId {
    TicketId::parse("tkt_abcdefghij0123456789").unwrap()
}

fn key(byte: u8) -> PublicKey {
    PublicKey([byte; 32])
}

fn pair(len: usize) -> BoxPair {
    let sealed = SealedBox::seal(&[9u8; 32], "t", &vec![0u8; len]);
    BoxPair {
        for_staff: sealed.clone(),
        for_account: sealed,
    }
}

fn new_ticket(staff: PublicKey) -> NewTicket {
    NewTicket {
        id: ticket_id(),
        account_key: key(2),
        staff_key: staff,
        binding: None,
        header: pair(10),
        message_id: TicketMessageId::parse("tkm_first1").unwrap(),
        message: pair(20),
    }
}

fn ticket(status: TicketStatus, unread: bool) -> Ticket {
    Ticket {
        id: ticket_id(),
        account: account(),
        status,
        last_author: Author::Staff,
        created_at: now(),
        updated_at: now(),
        closed_at: None,
        unread,
        header: pair(10),
        account_key: key(2),
        staff_key: key(1),
        binding: None,
    }
}

fn service(repo: MockSupportRepository, configured: Option<PublicKey>) -> Support {
    Support::new(Arc::new(repo), Arc::new(TestClock::at(now())), configured)
}

fn switches(repo: &mut MockSupportRepository, switches: Switches) {
    repo.expect_switches().returning(move || Ok(switches));
}

fn guard(write: Write) -> Guard {
    Guard::new(write, 100, now())
}

#[test]
fn a_new_ticket_fits_below_every_limit() {
    assert_eq!(guard(Write::NewTicket).check(&Usage::default()), Ok(()));
}

#[test]
fn twenty_stored_tickets_refuse_a_new_one() {
    let usage = Usage {
        stored: MAX_STORED,
        ..Usage::default()
    };
    assert_eq!(
        guard(Write::NewTicket).check(&usage),
        Err(Refusal::TooManyTickets)
    );
}

#[test]
fn five_open_tickets_refuse_a_new_one_and_a_reopen() {
    let usage = Usage {
        open: MAX_OPEN,
        stored: MAX_OPEN,
        ticket: Some((TicketStatus::Resolved, 1)),
        ..Usage::default()
    };
    assert_eq!(
        guard(Write::NewTicket).check(&usage),
        Err(Refusal::TooManyOpen)
    );
    assert_eq!(
        Guard::new(Write::Reopen, 0, now()).check(&usage),
        Err(Refusal::TooManyOpen)
    );
    // Reopening an open ticket changes nothing, so it is not refused.
    let open = Usage {
        ticket: Some((TicketStatus::Open, 1)),
        ..usage
    };
    assert_eq!(Guard::new(Write::Reopen, 0, now()).check(&open), Ok(()));
}

#[test]
fn five_new_tickets_a_day_then_wait_for_the_next_utc_day() {
    let usage = Usage {
        created_today: NEW_PER_DAY,
        ..Usage::default()
    };
    // 10:20 UTC: 13 h 40 min to midnight.
    assert_eq!(
        guard(Write::NewTicket).check(&usage),
        Err(Refusal::TooManyNew {
            retry_after_seconds: 13 * 3600 + 40 * 60
        })
    );
}

#[test]
fn thirty_account_replies_an_hour_but_staff_are_not_counted() {
    let usage = Usage {
        replies_this_hour: REPLIES_PER_HOUR,
        ticket: Some((TicketStatus::Open, 31)),
        ..Usage::default()
    };
    assert_eq!(
        guard(Write::Reply(Author::Account)).check(&usage),
        Err(Refusal::TooManyReplies {
            retry_after_seconds: 40 * 60
        })
    );
    assert_eq!(guard(Write::Reply(Author::Staff)).check(&usage), Ok(()));
}

#[test]
fn replies_need_an_open_ticket_with_room() {
    let closed = Usage {
        ticket: Some((TicketStatus::Resolved, 2)),
        ..Usage::default()
    };
    assert_eq!(
        guard(Write::Reply(Author::Staff)).check(&closed),
        Err(Refusal::TicketClosed)
    );
    let full = Usage {
        ticket: Some((TicketStatus::Open, MAX_MESSAGES)),
        ..Usage::default()
    };
    assert_eq!(
        guard(Write::Reply(Author::Account)).check(&full),
        Err(Refusal::TicketFull)
    );
    assert_eq!(
        guard(Write::Reply(Author::Account)).check(&Usage::default()),
        Err(Refusal::NotFound)
    );
}

#[test]
fn storage_counts_both_copies_up_to_512_kb() {
    let usage = Usage {
        bytes: MAX_BYTES - 100,
        ticket: Some((TicketStatus::Open, 1)),
        ..Usage::default()
    };
    assert_eq!(guard(Write::Reply(Author::Account)).check(&usage), Ok(()));
    let over = Guard::new(Write::Reply(Author::Account), 101, now());
    assert_eq!(over.check(&usage), Err(Refusal::StorageFull));
    // 61 bytes of framing per box (version, key, nonce, tag) plus the ciphertext.
    assert_eq!(pair(10).stored_bytes(), 2 * (61 + 10));
}

#[test]
fn the_sweep_closes_after_60_days_and_deletes_90_days_after_closing() {
    let cutoffs = SweepCutoffs::at(now());
    assert_eq!(cutoffs.close_inactive_before, now() - TimeDelta::days(60));
    assert_eq!(cutoffs.delete_closed_before, now() - TimeDelta::days(90));
    assert_eq!(CLOSE_AFTER, TimeDelta::days(60));
    assert_eq!(DELETE_AFTER, TimeDelta::days(90));
}

#[tokio::test]
async fn the_sweep_takes_now_from_the_clock() {
    let clock = Arc::new(TestClock::at(now()));
    clock.advance(TimeDelta::days(61));
    let later = clock.now();
    let mut repo = MockSupportRepository::new();
    repo.expect_sweep()
        .withf(move |cutoffs| *cutoffs == SweepCutoffs::at(later))
        .times(1)
        .returning(|_| {
            Ok(SweepReport {
                closed: 2,
                deleted: 1,
            })
        });
    let support = Support::new(Arc::new(repo), clock, None);
    assert_eq!(
        support.sweep().await.unwrap(),
        SweepReport {
            closed: 2,
            deleted: 1
        }
    );
}

#[tokio::test]
async fn without_a_key_support_is_unavailable() {
    let mut repo = MockSupportRepository::new();
    switches(&mut repo, Switches::default());
    repo.expect_tickets().returning(|_| Ok(vec![]));
    let support = service(repo, None);
    let overview = support.overview(&account()).await.unwrap();
    assert!(!overview.available);
    assert_eq!(overview.staff_key, None);
    assert!(matches!(
        support.open_ticket(&account(), &new_ticket(key(1))).await,
        Err(SupportError::Unavailable)
    ));
}

#[tokio::test]
async fn switched_off_support_is_unavailable_but_shows_its_key() {
    let mut repo = MockSupportRepository::new();
    switches(
        &mut repo,
        Switches {
            support_off: true,
            ..Switches::default()
        },
    );
    let support = service(repo, Some(key(1)));
    let availability = support.availability().await.unwrap();
    assert!(!availability.available);
    assert_eq!(availability.staff_key, Some(key(1)));
    assert!(matches!(
        support.close(&account(), &ticket_id()).await,
        Err(SupportError::Unavailable)
    ));
}

#[tokio::test]
async fn a_rotated_key_overrides_the_configured_one() {
    let mut repo = MockSupportRepository::new();
    switches(
        &mut repo,
        Switches {
            support_key: Some(key(7)),
            ..Switches::default()
        },
    );
    let support = service(repo, Some(key(1)));
    assert!(matches!(
        support.open_ticket(&account(), &new_ticket(key(1))).await,
        Err(SupportError::StaffKeyChanged)
    ));
    assert_eq!(
        support.availability().await.unwrap().staff_key,
        Some(key(7))
    );
}

#[tokio::test]
async fn a_new_ticket_goes_to_the_store_with_its_guard() {
    let mut repo = MockSupportRepository::new();
    switches(&mut repo, Switches::default());
    let expected = new_ticket(key(1));
    let bytes = expected.header.stored_bytes() + expected.message.stored_bytes();
    repo.expect_create_ticket()
        .withf(move |account, ticket, guard| {
            *account == self::account()
                && ticket.id == ticket_id()
                && *guard == Guard::new(Write::NewTicket, bytes, now())
        })
        .times(1)
        .returning(|_, _, _| Ok(Ok(ticket(TicketStatus::Open, false))));
    let created = service(repo, Some(key(1)))
        .open_ticket(&account(), &new_ticket(key(1)))
        .await
        .unwrap();
    assert_eq!(created.status, TicketStatus::Open);
}

#[tokio::test]
async fn a_refusal_from_the_store_reaches_the_caller() {
    let mut repo = MockSupportRepository::new();
    switches(&mut repo, Switches::default());
    repo.expect_create_ticket()
        .returning(|_, _, _| Ok(Err(Refusal::IdTaken)));
    assert!(matches!(
        service(repo, Some(key(1)))
            .open_ticket(&account(), &new_ticket(key(1)))
            .await,
        Err(SupportError::Refused(Refusal::IdTaken))
    ));
}

#[tokio::test]
async fn reading_a_ticket_marks_staff_replies_read() {
    let mut repo = MockSupportRepository::new();
    repo.expect_ticket()
        .withf(|account, _| account.as_ref() == Some(&self::account()))
        .returning(|_, _| Ok(Some(ticket(TicketStatus::Open, true))));
    repo.expect_messages().returning(|_| Ok(vec![]));
    repo.expect_mark_read().times(1).returning(|_| Ok(()));
    let (read, _) = service(repo, Some(key(1)))
        .read(&account(), &ticket_id())
        .await
        .unwrap();
    assert!(!read.unread);
}

#[tokio::test]
async fn another_accounts_ticket_is_not_found() {
    let mut repo = MockSupportRepository::new();
    repo.expect_ticket().returning(|_, _| Ok(None));
    assert!(matches!(
        service(repo, Some(key(1)))
            .read(&account(), &ticket_id())
            .await,
        Err(SupportError::Refused(Refusal::NotFound))
    ));
}

#[tokio::test]
async fn a_staff_reply_queues_a_support_push_for_the_account() {
    let mut repo = MockSupportRepository::new();
    switches(&mut repo, Switches::default());
    repo.expect_ticket()
        .withf(|account, _| account.is_none())
        .returning(|_, _| Ok(Some(ticket(TicketStatus::Open, false))));
    repo.expect_add_message()
        .withf(|account, _, author, _, guard, trail| {
            *account == self::account()
                && *author == Author::Staff
                && guard.write == Write::Reply(Author::Staff)
                && trail.records.notices.len() == 1
                && trail.records.notices[0].kind == sealpost_activity::NoticeKind::SupportReplied
                && trail.audit
                    == Some(AuditEntry::ticket(
                        "stm_ann",
                        "ticket.reply",
                        &ticket_id(),
                        now(),
                    ))
        })
        .times(1)
        .returning(|_, _, _, _, _, _| Ok(Ok(now())));
    let message = NewMessage {
        id: TicketMessageId::parse("tkm_staff1").unwrap(),
        staff_key: key(1),
        boxes: pair(5),
    };
    let (to, at) = service(repo, Some(key(1)))
        .staff_reply("stm_ann", &ticket_id(), &message)
        .await
        .unwrap();
    assert_eq!((to, at), (account(), now()));
}

#[tokio::test]
async fn a_staff_reply_sealed_to_an_old_key_is_refused() {
    let mut repo = MockSupportRepository::new();
    switches(
        &mut repo,
        Switches {
            support_key: Some(key(8)),
            ..Switches::default()
        },
    );
    repo.expect_ticket()
        .returning(|_, _| Ok(Some(ticket(TicketStatus::Open, false))));
    let message = NewMessage {
        id: TicketMessageId::parse("tkm_staff1").unwrap(),
        staff_key: key(1),
        boxes: pair(5),
    };
    assert!(matches!(
        service(repo, Some(key(1)))
            .staff_reply("stm_ann", &ticket_id(), &message)
            .await,
        Err(SupportError::StaffKeyChanged)
    ));
}

#[tokio::test]
async fn closing_queues_a_resolution_notice() {
    let mut repo = MockSupportRepository::new();
    switches(&mut repo, Switches::default());
    repo.expect_close()
        .withf(|_, _, at, trail| {
            *at == now()
                && trail.records.notices[0].kind == sealpost_activity::NoticeKind::SupportResolved
                && trail.audit.is_none()
        })
        .times(1)
        .returning(|_, _, _, _| Ok(Some(ticket(TicketStatus::Resolved, false))));
    let closed = service(repo, Some(key(1)))
        .close(&account(), &ticket_id())
        .await
        .unwrap();
    assert_eq!(closed.status, TicketStatus::Resolved);
}
