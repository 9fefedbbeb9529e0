use std::sync::{Arc, Mutex};

use chrono::TimeDelta;
use sealpost_activity::{EventType, Records};
use sealpost_kernel::{
    AccountId, AddressId, Clock, DeviceId, PairingSessionId, PlanId, TestClock, Timestamp,
};
use sealpost_plans::LimitError;
use sealpost_seal::SealedBox;

use crate::*;

fn clock() -> Arc<TestClock> {
    Arc::new(TestClock::at(
        Timestamp::parse("2026-11-22T12:30:00Z").unwrap(),
    ))
}

fn account() -> AccountId {
    AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap()
}

fn test_device_id() -> DeviceId {
    DeviceId::parse("wkr_phone01").unwrap()
}

fn profile() -> SealedBox {
    SealedBox::seal(&[9; 32], "service/v1/worker-profile:wkr_phone01", b"{}")
}

fn device(connected: bool) -> Device {
    Device {
        id: test_device_id(),
        account: account(),
        kind: DeviceKind::Device,
        platform: Platform::Ios,
        disabled: false,
        connected,
        created_at: Timestamp::parse("2026-11-01T00:00:00Z").unwrap(),
        last_active_at: None,
        paused_at: None,
        profile: None,
        public_key: None,
    }
}

/// Opens a session through the service and returns the token and what was stored.
async fn open(clock: &Arc<TestClock>) -> (String, PairingSession) {
    open_kind(clock, DeviceKind::Device).await
}

/// [`open`] for a session that makes a device of `kind`.
async fn open_kind(clock: &Arc<TestClock>, kind: DeviceKind) -> (String, PairingSession) {
    let mut repo = MockDeviceRepository::new();
    let stored = Arc::new(Mutex::new(None));
    let slot = stored.clone();
    repo.expect_insert_pairing()
        .returning(move |session, source, max, _| {
            assert_eq!(max, MAX_OPEN_PER_IP);
            assert!(!source.contains("192.0.2.7"), "only a hash of the address");
            *slot.lock().unwrap() = Some(session);
            Ok(PairingInsert::Inserted)
        });
    let opened = Devices::new(Arc::new(repo), clock.clone())
        .open_pairing(
            Platform::Android,
            kind,
            "Pixel".into(),
            [5; 32],
            "192.0.2.7",
        )
        .await
        .unwrap();
    let session = stored.lock().unwrap().take().unwrap();
    assert_eq!(opened.code, session.code);
    assert_eq!(session.kind, kind);
    assert_eq!(
        session.token_hash,
        sealpost_seal::sha256(opened.token.as_bytes())
    );
    (opened.token, session)
}

#[tokio::test]
async fn the_credential_is_minted_at_the_claim_and_handed_over_once() {
    let clock = clock();
    let (token, mut session) = open(&clock).await;
    session.detected_by = Some(account());
    session.state = PairingState::OperatorDetected;

    let claimed = Arc::new(Mutex::new(None));
    let mut repo = MockDeviceRepository::new();
    let for_claim = session.clone();
    repo.expect_pairing_by_id()
        .returning(move |_| Ok(Some(for_claim.clone())));
    let slot = claimed.clone();
    repo.expect_claim().times(1).returning(move |claim| {
        assert_eq!(claim.max_devices, Some(1), "Free plan: one device");
        assert_eq!(claim.records.events[0].kind, EventType::DevicePaired);
        *slot.lock().unwrap() = Some(claim);
        Ok(ClaimOutcome::Claimed)
    });
    let devices = Devices::new(Arc::new(repo), clock.clone());
    let device = devices
        .claim(
            &account(),
            PlanId::Free,
            &session.id,
            test_device_id(),
            profile(),
        )
        .await
        .unwrap();
    // Kept exact (the API shows it to the hour): the idle rule counts from it.
    assert_eq!(
        device.last_active_at.unwrap().to_string(),
        "2026-11-22T12:30:00.000Z"
    );
    let claim = claimed.lock().unwrap().take().unwrap();

    // The device polls: the first poll after the claim gets the credential, later ones do not.
    let mut after = session.clone();
    after.state = PairingState::AwaitingAddress;
    after.device_id = Some(test_device_id());
    let mut repo = MockDeviceRepository::new();
    repo.expect_poll_pairing()
        .returning(move |_, _, _| Ok(Some(after.clone())));
    let handoff = Mutex::new(Some(claim.handoff.clone()));
    repo.expect_take_handoff()
        .returning(move |_| Ok(handoff.lock().unwrap().take()));
    let devices = Devices::new(Arc::new(repo), clock.clone());
    let first = devices.poll_pairing(&token).await.unwrap();
    let (device_id, credential) = first.handed_over.unwrap();
    assert_eq!(device_id, test_device_id());
    assert_eq!(
        sealpost_seal::sha256(credential.as_bytes()),
        claim.credential_hash
    );
    let second = devices.poll_pairing(&token).await.unwrap();
    assert_eq!(second.handed_over, None);
    assert_eq!(second.state, PairingState::AwaitingAddress);
}

#[tokio::test]
async fn a_session_looked_up_by_another_account_cannot_be_claimed() {
    let clock = clock();
    let (_, mut session) = open(&clock).await;
    session.detected_by = Some(AccountId::parse("acct_bbbbbbbbbbbbbbbbbbbbbbbb").unwrap());
    let mut repo = MockDeviceRepository::new();
    repo.expect_pairing_by_id()
        .returning(move |_| Ok(Some(session.clone())));
    repo.expect_claim().never();
    let result = Devices::new(Arc::new(repo), clock)
        .claim(
            &account(),
            PlanId::Free,
            &PairingSessionId::generate(),
            test_device_id(),
            profile(),
        )
        .await;
    assert!(matches!(result, Err(DeviceError::NotFound)));
}

#[tokio::test]
async fn a_second_device_on_free_is_device_limit_reached() {
    let clock = clock();
    let (_, mut session) = open(&clock).await;
    session.detected_by = Some(account());
    let mut repo = MockDeviceRepository::new();
    repo.expect_pairing_by_id()
        .returning(move |_| Ok(Some(session.clone())));
    repo.expect_claim()
        .returning(|_| Ok(ClaimOutcome::LimitReached));
    let result = Devices::new(Arc::new(repo), clock)
        .claim(
            &account(),
            PlanId::Free,
            &PairingSessionId::generate(),
            test_device_id(),
            profile(),
        )
        .await;
    assert!(matches!(
        result,
        Err(DeviceError::Limit(LimitError::DeviceLimitReached {
            limit: 1
        }))
    ));
}

/// The plan the store finds under the account's lock wins: a claim decided
/// on Operator is decided again on Free, with Free's one device.
#[tokio::test]
async fn a_plan_changed_under_the_lock_is_decided_again_on_the_new_plan() {
    let clock = clock();
    let (_, mut session) = open(&clock).await;
    session.detected_by = Some(account());
    let mut repo = MockDeviceRepository::new();
    repo.expect_pairing_by_id()
        .returning(move |_| Ok(Some(session.clone())));
    let mut order = mockall::Sequence::new();
    repo.expect_claim()
        .withf(|claim| claim.plan == PlanId::Operator && claim.max_devices == Some(10))
        .times(1)
        .in_sequence(&mut order)
        .returning(|_| Ok(ClaimOutcome::PlanChanged(PlanId::Free)));
    repo.expect_claim()
        .withf(|claim| claim.plan == PlanId::Free && claim.max_devices == Some(1))
        .times(1)
        .in_sequence(&mut order)
        .returning(|_| Ok(ClaimOutcome::LimitReached));
    let result = Devices::new(Arc::new(repo), clock)
        .claim(
            &account(),
            PlanId::Operator,
            &PairingSessionId::generate(),
            test_device_id(),
            profile(),
        )
        .await;
    assert!(matches!(
        result,
        Err(DeviceError::Limit(LimitError::DeviceLimitReached {
            limit: 1
        }))
    ));
}

#[tokio::test]
async fn a_claimed_session_cannot_be_cancelled() {
    let clock = clock();
    let (token, mut session) = open(&clock).await;
    session.state = PairingState::AwaitingAddress;
    let mut repo = MockDeviceRepository::new();
    repo.expect_pairing_by_token()
        .returning(move |_| Ok(Some(session.clone())));
    repo.expect_delete_unclaimed_pairing().never();
    let result = Devices::new(Arc::new(repo), clock)
        .cancel_pairing(&token)
        .await;
    assert!(matches!(result, Err(DeviceError::AlreadyUsed)));
}

#[tokio::test]
async fn failed_lookups_are_counted_and_then_refused() {
    let clock = clock();
    let now = Timestamp::parse("2026-11-22T12:30:00Z").unwrap();
    let failures: Vec<Timestamp> = (0..10).map(|i| now - TimeDelta::seconds(10 + i)).collect();
    let mut repo = MockDeviceRepository::new();
    repo.expect_reserve_lookup()
        .withf(|keys, _, _, limit| {
            keys.len() == 2
                && keys[0].starts_with("account:")
                && keys[1] == "ip:192.0.2.7"
                && *limit == 10
        })
        .returning(move |_, _, _, _| Ok(Some(failures.clone())));
    repo.expect_live_pairing_by_code().never();
    let result = Devices::new(Arc::new(repo), clock.clone())
        .lookup(&account(), "192.0.2.7", "12345678")
        .await;
    assert!(matches!(
        result,
        Err(DeviceError::TooManyLookups {
            retry_after_seconds: 281
        })
    ));

    // A miss keeps the failure it reserved; nothing is released.
    let mut repo = MockDeviceRepository::new();
    repo.expect_reserve_lookup()
        .times(1)
        .returning(|_, _, _, _| Ok(None));
    repo.expect_live_pairing_by_code()
        .returning(|_, _| Ok(None));
    repo.expect_release_lookup().never();
    let result = Devices::new(Arc::new(repo), clock)
        .lookup(&account(), "192.0.2.7", "12345678")
        .await;
    assert!(matches!(result, Err(DeviceError::NotFound)));
}

#[tokio::test]
async fn a_session_another_account_detected_is_not_taken_over() {
    let clock = clock();
    let (_, mut session) = open(&clock).await;
    session.detected_by = Some(AccountId::parse("acct_bbbbbbbbbbbbbbbbbbbbbbbb").unwrap());
    session.state = PairingState::OperatorDetected;
    let code = session.code.clone();
    let mut repo = MockDeviceRepository::new();
    repo.expect_reserve_lookup()
        .returning(|_, _, _, _| Ok(None));
    let found = session.clone();
    repo.expect_live_pairing_by_code()
        .returning(move |_, _| Ok(Some(found.clone())));
    repo.expect_mark_detected().never();
    repo.expect_release_lookup().never();
    let devices = Devices::new(Arc::new(repo), clock.clone());
    let result = devices.lookup(&account(), "192.0.2.7", &code).await;
    assert!(matches!(result, Err(DeviceError::NotFound)), "{result:?}");

    // The store's guard settles a race between two first lookups: the
    // loser answers like a wrong code and keeps its failure.
    session.detected_by = None;
    let mut repo = MockDeviceRepository::new();
    repo.expect_reserve_lookup()
        .returning(|_, _, _, _| Ok(None));
    repo.expect_live_pairing_by_code()
        .returning(move |_, _| Ok(Some(session.clone())));
    repo.expect_mark_detected().returning(|_, _| Ok(false));
    repo.expect_release_lookup().never();
    let result = Devices::new(Arc::new(repo), clock)
        .lookup(&account(), "192.0.2.7", &code)
        .await;
    assert!(matches!(result, Err(DeviceError::NotFound)));
}

#[tokio::test]
async fn a_found_session_takes_its_failure_back() {
    let clock = clock();
    let (_, session) = open(&clock).await;
    let code = session.code.clone();
    let mut repo = MockDeviceRepository::new();
    repo.expect_reserve_lookup()
        .returning(|_, _, _, _| Ok(None));
    let live_since = clock.now() - TimeDelta::minutes(10);
    repo.expect_live_pairing_by_code()
        .withf(move |_, since| *since == live_since)
        .returning(move |_, _| Ok(Some(session.clone())));
    repo.expect_mark_detected().returning(|_, _| Ok(true));
    repo.expect_release_lookup()
        .times(1)
        .returning(|_, _| Ok(()));
    let found = Devices::new(Arc::new(repo), clock)
        .lookup(&account(), "192.0.2.7", &code)
        .await
        .unwrap();
    assert_eq!(found.detected_by, Some(account()));
}

#[tokio::test]
async fn an_address_holding_its_sessions_cannot_open_another() {
    let clock = clock();
    let mut repo = MockDeviceRepository::new();
    repo.expect_insert_pairing()
        .times(1)
        .returning(|_, _, _, _| Ok(PairingInsert::TooMany));
    let result = Devices::new(Arc::new(repo), clock)
        .open_pairing(
            Platform::Android,
            DeviceKind::Device,
            "Pixel".into(),
            [5; 32],
            "192.0.2.7",
        )
        .await;
    assert!(matches!(result, Err(DeviceError::TooManyPairings { .. })));
}

#[tokio::test]
async fn removing_a_device_unassigns_its_addresses_with_events() {
    let clock = clock();
    let addresses = vec![
        AddressId::parse("ibx_one1").unwrap(),
        AddressId::parse("ibx_two2").unwrap(),
    ];
    let mut repo = MockDeviceRepository::new();
    let listed = addresses.clone();
    repo.expect_assigned_addresses()
        .returning(move |_, _| Ok(listed.clone()));
    repo.expect_remove()
        .withf(|_, _, assigned, records: &Records| {
            let kinds: Vec<_> = records.events.iter().map(|e| e.kind).collect();
            assigned.len() == 2
                && kinds
                    == vec![
                        EventType::AddressRemoved,
                        EventType::AddressRemoved,
                        EventType::DeviceRemoved,
                    ]
        })
        .times(1)
        .returning(|_, _, _, _| Ok(WriteOutcome::Changed));
    Devices::new(Arc::new(repo), clock)
        .remove(&account(), &test_device_id())
        .await
        .unwrap();
}

#[tokio::test]
async fn heartbeat_reconnects_a_disconnected_device_and_keeps_the_exact_time() {
    let clock = clock();
    // Not truncated to the hour: the two-hour idle rule counts from here.
    clock.advance(TimeDelta::minutes(34));
    let mut repo = MockDeviceRepository::new();
    repo.expect_device()
        .returning(|_, _| Ok(Some(device(false))));
    repo.expect_record_activity()
        .withf(|_, _, at, records| {
            at.to_string() == "2026-11-22T13:04:00.000Z"
                && records.events.len() == 1
                && records.events[0].kind == EventType::DeviceConnected
        })
        .times(1)
        .returning(|_, _, _, _| Ok(()));
    let device = Devices::new(Arc::new(repo), clock)
        .heartbeat(&account(), &test_device_id())
        .await
        .unwrap();
    assert_eq!(device.status(), "online");
}

#[tokio::test]
async fn the_sweep_reports_stale_devices_disconnected() {
    let clock = clock();
    let mut repo = MockDeviceRepository::new();
    let cutoff = clock.now() - TimeDelta::hours(2);
    repo.expect_stale_devices()
        .withf(move |before| *before == cutoff)
        .returning(|_| Ok(vec![device(true)]));
    repo.expect_mark_disconnected()
        .withf(|_, _, records| records.events[0].kind == EventType::DeviceDisconnected)
        .times(1)
        .returning(|_, _, _| Ok(true));
    let now = clock.now();
    repo.expect_sweep_pairing()
        .withf(move |created, polled, _| {
            *created == now - TimeDelta::days(14) && *polled == now - TimeDelta::minutes(10)
        })
        .times(1)
        .returning(|_, _, _| Ok(0));
    assert_eq!(
        Devices::new(Arc::new(repo), clock).sweep().await.unwrap(),
        1
    );
}

/// A detected session of `kind`, and a repository that finds it.
async fn detected(
    clock: &Arc<TestClock>,
    kind: DeviceKind,
) -> (PairingSession, MockDeviceRepository) {
    let (_, mut session) = open_kind(clock, kind).await;
    session.detected_by = Some(account());
    session.state = PairingState::OperatorDetected;
    let mut repo = MockDeviceRepository::new();
    let found = session.clone();
    repo.expect_pairing_by_id()
        .returning(move |_| Ok(Some(found.clone())));
    (session, repo)
}

#[tokio::test]
async fn an_agent_on_free_is_refused_before_anything_is_written() {
    let clock = clock();
    let (session, mut repo) = detected(&clock, DeviceKind::Agent).await;
    repo.expect_claim().never();
    let result = Devices::new(Arc::new(repo), clock)
        .claim(
            &account(),
            PlanId::Free,
            &session.id,
            test_device_id(),
            profile(),
        )
        .await;
    assert!(
        matches!(
            result,
            Err(DeviceError::Limit(LimitError::AgentsNeedOperator))
        ),
        "{result:?}"
    );
}

#[tokio::test]
async fn an_agent_on_operator_is_claimed_as_an_agent_with_its_event() {
    let clock = clock();
    let (session, mut repo) = detected(&clock, DeviceKind::Agent).await;
    let claimed = Arc::new(Mutex::new(None));
    let slot = claimed.clone();
    repo.expect_claim().times(1).returning(move |claim| {
        *slot.lock().unwrap() = Some(claim);
        Ok(ClaimOutcome::Claimed)
    });
    let device = Devices::new(Arc::new(repo), clock)
        .claim(
            &account(),
            PlanId::Operator,
            &session.id,
            test_device_id(),
            profile(),
        )
        .await
        .unwrap();
    assert_eq!(device.kind, DeviceKind::Agent);
    let claim = claimed.lock().unwrap().take().unwrap();
    assert_eq!(claim.device.kind, DeviceKind::Agent);
    // Agents count against the device limit with the devices.
    assert_eq!(claim.max_devices, Some(10));
    assert_eq!(claim.records.events.len(), 1);
    let event = &claim.records.events[0];
    assert_eq!(event.kind, EventType::DevicePaired);
    assert_eq!(
        event.payload,
        serde_json::json!({ "workerId": "wkr_phone01", "kind": "agent" })
    );
}

/// A downgrade that committed first: the claim decided on Operator is
/// decided again on Free, which has no agents.
#[tokio::test]
async fn an_agent_whose_plan_changed_to_free_under_the_lock_is_refused() {
    let clock = clock();
    let (session, mut repo) = detected(&clock, DeviceKind::Agent).await;
    repo.expect_claim()
        .withf(|claim| claim.plan == PlanId::Operator)
        .times(1)
        .returning(|_| Ok(ClaimOutcome::PlanChanged(PlanId::Free)));
    let result = Devices::new(Arc::new(repo), clock)
        .claim(
            &account(),
            PlanId::Operator,
            &session.id,
            test_device_id(),
            profile(),
        )
        .await;
    assert!(
        matches!(
            result,
            Err(DeviceError::Limit(LimitError::AgentsNeedOperator))
        ),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_device_session_makes_a_device_on_free() {
    let clock = clock();
    let (session, mut repo) = detected(&clock, DeviceKind::Device).await;
    repo.expect_claim()
        .withf(|claim| claim.device.kind == DeviceKind::Device)
        .times(1)
        .returning(|_| Ok(ClaimOutcome::Claimed));
    let device = Devices::new(Arc::new(repo), clock)
        .claim(
            &account(),
            PlanId::Free,
            &session.id,
            test_device_id(),
            profile(),
        )
        .await
        .unwrap();
    assert_eq!(device.kind, DeviceKind::Device);
}
