use std::sync::{Arc, Mutex};

use sealpost_activity::ActivityKind;
use sealpost_kernel::{AccountId, PlanId, TestClock, Timestamp};
use sealpost_plans::LimitError;
use sealpost_seal::ServerKeys;

use crate::*;

fn account() -> AccountId {
    AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap()
}

fn now() -> Timestamp {
    Timestamp::parse("2026-11-25T12:00:00Z").unwrap()
}

fn settings() -> DomainSettings {
    DomainSettings {
        service_domains: vec!["mail.localhost".into(), "sealpost.net".into()],
        nameservers: vec!["ns1.sealpost.net".into(), "ns2.sealpost.net".into()],
        mx_host: "mx.sealpost.net".into(),
        dkim_selector: "sp1".into(),
    }
}

fn service(repo: MockDomainRepository, dns: MockDnsLookup) -> Domains {
    Domains::new(
        Arc::new(repo),
        Arc::new(dns),
        Arc::new(TestClock::at(now())),
        settings(),
    )
}

fn claim(step: Step, proved: bool) -> OwnDomain {
    OwnDomain {
        account: account(),
        name: DomainName::parse("example.com", &[]).unwrap(),
        token: "tok".into(),
        step,
        proved_at: proved.then(now),
        created_at: now(),
        checked_at: None,
        next_check_at: now(),
        checks_in_step: 3,
        plan_lost_at: None,
    }
}

#[tokio::test]
async fn own_domains_need_scale_and_fit_the_plan() {
    let mut repo = MockDomainRepository::new();
    repo.expect_add()
        .withf(|domain, plan, max, records| {
            domain.name.as_str() == "example.com"
                && domain.step == Step::VerifyOwnership
                && *plan == PlanId::Scale
                && *max == 10
                && records.activity[0].kind == ActivityKind::DomainAdded
        })
        .times(1)
        .returning(|_, _, _, _| Ok(AddOutcome::LimitReached));
    let domains = service(repo, MockDnsLookup::new());
    assert!(matches!(
        domains
            .add(&account(), PlanId::Operator, "example.com")
            .await,
        Err(DomainError::Limit(LimitError::OwnDomainsNeedScale))
    ));
    assert!(matches!(
        domains.add(&account(), PlanId::Scale, "EXAMPLE.com.").await,
        Err(DomainError::Limit(LimitError::OwnDomainLimit { limit: 10 }))
    ));
}

/// The plan read before the store's lock moved: the claim is decided again
/// with the plan the locked account holds, here one without own domains.
#[tokio::test]
async fn a_plan_changed_under_the_lock_is_decided_again() {
    let mut repo = MockDomainRepository::new();
    repo.expect_add()
        .withf(|_, plan, max, _| *plan == PlanId::Fleet && *max == 50)
        .times(1)
        .returning(|_, _, _, _| Ok(AddOutcome::PlanChanged(PlanId::Operator)));
    let domains = service(repo, MockDnsLookup::new());
    assert!(matches!(
        domains.add(&account(), PlanId::Fleet, "example.com").await,
        Err(DomainError::Limit(LimitError::OwnDomainsNeedScale))
    ));

    let mut repo = MockDomainRepository::new();
    let mut tries = mockall::Sequence::new();
    repo.expect_add()
        .times(1)
        .in_sequence(&mut tries)
        .returning(|_, _, _, _| Ok(AddOutcome::PlanChanged(PlanId::Scale)));
    repo.expect_add()
        .withf(|_, plan, max, _| *plan == PlanId::Scale && *max == 10)
        .times(1)
        .in_sequence(&mut tries)
        .returning(|_, _, _, _| Ok(AddOutcome::LimitReached));
    let domains = service(repo, MockDnsLookup::new());
    assert!(matches!(
        domains.add(&account(), PlanId::Fleet, "example.com").await,
        Err(DomainError::Limit(LimitError::OwnDomainLimit { limit: 10 }))
    ));
}

#[tokio::test]
async fn bad_names_and_service_domains_never_reach_the_store() {
    let mut repo = MockDomainRepository::new();
    repo.expect_add().never();
    let domains = service(repo, MockDnsLookup::new());
    for bad in [
        "10.0.0.1",
        "com",
        "mail.localhost",
        "sealpost.net",
        "a..b.com",
    ] {
        assert!(
            matches!(
                domains.add(&account(), PlanId::Fleet, bad).await,
                Err(DomainError::InvalidName(_))
            ),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn a_new_claim_publishes_a_random_token() {
    let mut repo = MockDomainRepository::new();
    repo.expect_add()
        .returning(|_, _, _, _| Ok(AddOutcome::Added));
    let domains = service(repo, MockDnsLookup::new());
    let first = domains
        .add(&account(), PlanId::Fleet, "example.com")
        .await
        .unwrap();
    let second = domains
        .add(&account(), PlanId::Fleet, "example.org")
        .await
        .unwrap();
    assert!(first.created);
    assert_eq!(first.domain.token.len(), 26);
    assert_ne!(first.domain.token, second.domain.token);
    assert_eq!(
        first.domain.verification_value(),
        format!("service-verify={}", first.domain.token)
    );
    assert_eq!(
        first.domain.next_check_at,
        now() + chrono::TimeDelta::minutes(1)
    );
}

#[tokio::test]
async fn proof_with_delegation_and_mx_goes_live_and_writes_activity() {
    let mut dns = MockDnsLookup::new();
    dns.expect_txt()
        .withf(|name| name == "_service-verify.example.com")
        .returning(|_| Ok(vec!["other".into(), "service-verify=tok".into()]));
    dns.expect_ns()
        .returning(|_| Ok(vec!["NS2.sealpost.net.".into(), "ns1.sealpost.net".into()]));
    dns.expect_mx()
        .returning(|_| Ok(vec!["mx.sealpost.net.".into()]));
    let mut repo = MockDomainRepository::new();
    repo.expect_domain()
        .returning(|_, _| Ok(Some(claim(Step::VerifyOwnership, false))));
    let seen = Arc::new(Mutex::new(None));
    let keep = seen.clone();
    repo.expect_prove()
        .times(1)
        .returning(move |change, dkim, records| {
            let kinds: Vec<_> = records.activity.iter().map(|entry| entry.kind).collect();
            *keep.lock().unwrap() = Some((change.clone(), dkim.is_some(), kinds));
            Ok(ProveOutcome::Proved)
        });
    let domains = service(repo, dns);
    domains
        .check(&account(), &DomainName::from_trusted("example.com"))
        .await
        .unwrap();
    let (change, dkim, kinds) = seen.lock().unwrap().take().unwrap();
    assert_eq!(
        (change.from, change.to),
        (Step::VerifyOwnership, Step::Live)
    );
    assert_eq!(change.next_check_at, now() + LIVE_INTERVAL);
    assert!(!dkim, "no key maker configured");
    assert_eq!(
        kinds,
        vec![ActivityKind::DomainVerified, ActivityKind::DomainLive]
    );
}

#[tokio::test]
async fn a_claim_proved_elsewhere_first_moves_to_attention() {
    let mut dns = MockDnsLookup::new();
    dns.expect_txt()
        .returning(|_| Ok(vec!["service-verify=tok".into()]));
    dns.expect_ns().returning(|_| Ok(vec![]));
    let mut repo = MockDomainRepository::new();
    repo.expect_domain()
        .returning(|_, _| Ok(Some(claim(Step::VerifyOwnership, false))));
    repo.expect_prove()
        .returning(|_, _, _| Ok(ProveOutcome::TakenByOther));
    repo.expect_update()
        .withf(|change, records| {
            change.to == Step::Attention
                && records.activity[0].kind == ActivityKind::DomainAttention
        })
        .times(1)
        .returning(|_, _| Ok(true));
    service(repo, dns)
        .check(&account(), &DomainName::from_trusted("example.com"))
        .await
        .unwrap();
}

#[tokio::test]
async fn nameservers_must_be_exactly_the_services() {
    let mut dns = MockDnsLookup::new();
    dns.expect_ns().returning(|_| {
        Ok(vec![
            "ns1.sealpost.net".into(),
            "ns2.sealpost.net".into(),
            "ns.elsewhere.example".into(),
        ])
    });
    dns.expect_mx().never();
    dns.expect_txt().never();
    let mut repo = MockDomainRepository::new();
    repo.expect_domain()
        .returning(|_, _| Ok(Some(claim(Step::Live, true))));
    repo.expect_update()
        .withf(|change, records| {
            change.from == Step::Live
                && change.to == Step::Attention
                && change.checks_in_step == 0
                && change.next_check_at == now() + chrono::TimeDelta::minutes(1)
                && records.activity[0].kind == ActivityKind::DomainAttention
        })
        .times(1)
        .returning(|_, _| Ok(true));
    service(repo, dns)
        .check(&account(), &DomainName::from_trusted("example.com"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_failed_lookup_keeps_the_step_and_backs_off() {
    let mut dns = MockDnsLookup::new();
    dns.expect_ns()
        .returning(|_| Err(LookupError("timed out".into())));
    let mut repo = MockDomainRepository::new();
    repo.expect_due()
        .returning(|_, _| Ok(vec![claim(Step::SettingUp, true)]));
    repo.expect_update()
        .withf(|change, records| {
            change.to == Step::SettingUp
                && change.checks_in_step == 4
                && change.next_check_at == now() + SETUP_INTERVAL_MAX
                && records.activity.is_empty()
        })
        .times(1)
        .returning(|_, _| Ok(true));
    assert_eq!(service(repo, dns).check_due(100).await.unwrap(), 1);
}

#[tokio::test]
async fn removing_a_domain_with_addresses_is_refused() {
    let mut repo = MockDomainRepository::new();
    repo.expect_remove()
        .returning(|_, _, _| Ok(RemoveOutcome::InUse));
    let result = service(repo, MockDnsLookup::new())
        .remove(&account(), &DomainName::from_trusted("example.com"))
        .await;
    assert!(matches!(result, Err(DomainError::InUse)));
}

struct FixedKey;

impl DkimKeyMaker for FixedKey {
    fn generate(&self) -> Result<DkimKeyPair, String> {
        Ok(DkimKeyPair {
            private_pkcs8_der: b"private".to_vec(),
            public_spki_der: b"public".to_vec(),
            algorithm: "rsa",
        })
    }
}

#[tokio::test]
async fn the_dkim_key_is_made_at_proof_and_sealed() {
    let mut dns = MockDnsLookup::new();
    dns.expect_txt()
        .returning(|_| Ok(vec!["service-verify=tok".into()]));
    dns.expect_ns()
        .returning(|_| Err(LookupError("servfail".into())));
    let mut repo = MockDomainRepository::new();
    repo.expect_domain()
        .returning(|_, _| Ok(Some(claim(Step::VerifyOwnership, false))));
    let keys = ServerKeys::new([9; 32], []);
    let opener = keys.clone();
    repo.expect_prove()
        .withf(move |change, dkim, _| {
            let dkim = dkim.as_ref().unwrap();
            change.to == Step::AwaitingSetup
                && dkim.selector == "sp1"
                && dkim.public_spki_der == b"public"
                && opener
                    .open(
                        DKIM_KEY_PURPOSE,
                        &dkim_key_row(&account(), "example.com"),
                        &dkim.sealed_private_key,
                    )
                    .is_ok_and(|key| key.as_slice() == b"private")
        })
        .times(1)
        .returning(|_, _, _| Ok(ProveOutcome::Proved));
    service(repo, dns)
        .with_dkim(Arc::new(FixedKey), keys)
        .check(&account(), &DomainName::from_trusted("example.com"))
        .await
        .unwrap();
}
