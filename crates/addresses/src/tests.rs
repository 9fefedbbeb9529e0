use std::sync::{Arc, Mutex};

use sealpost_kernel::{AccountId, AddressId, DeviceId, PlanId, TestClock, Timestamp};
use sealpost_plans::LimitError;

use crate::*;

fn account() -> AccountId {
    AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap()
}

fn service(repo: MockAddressRepository) -> Addresses {
    let clock = Arc::new(TestClock::at(
        Timestamp::parse("2026-11-22T12:00:00Z").unwrap(),
    ));
    Addresses::new(Arc::new(repo), clock, vec!["mail.localhost".into()])
}

fn input(id: &str) -> NewAddress {
    NewAddress {
        id: Some(AddressId::parse(id).unwrap()),
        domain: Some("mail.localhost".into()),
        ..NewAddress::default()
    }
}

#[tokio::test]
async fn a_prefix_gets_a_random_ending_and_defaults_apply() {
    let mut repo = MockAddressRepository::new();
    repo.expect_create()
        .withf(|_, plan, on_own_domain, max, records| {
            *plan == PlanId::Free && !*on_own_domain && *max == 3 && records.events.len() == 1
        })
        .returning(|_, _, _, _, _| Ok(CreateOutcome::Created));
    let mut new = input("ibx_shop01");
    new.prefix = Some("Shop".into());
    let address = service(repo)
        .create(&account(), PlanId::Free, new)
        .await
        .unwrap();
    let (local, domain) = address.email_address.split_once('@').unwrap();
    assert_eq!(domain, "mail.localhost");
    assert!(
        local.starts_with("shop.") && local.len() == "shop.".len() + 6,
        "{local}"
    );
    assert_eq!(address.retention_days, 7);
    assert_eq!(address.status(), "unassigned");
}

#[tokio::test]
async fn exact_names_need_scale() {
    let mut repo = MockAddressRepository::new();
    repo.expect_create().never();
    let mut new = input("ibx_exact1");
    new.local_part = Some("hello".into());
    let result = service(repo)
        .create(&account(), PlanId::Operator, new)
        .await;
    assert!(matches!(
        result,
        Err(AddressError::Limit(LimitError::CustomAddressNeedsScale))
    ));
}

#[tokio::test]
async fn an_exact_name_that_is_taken_is_address_taken_but_a_random_one_retries() {
    let mut repo = MockAddressRepository::new();
    repo.expect_create()
        .returning(|_, _, _, _, _| Ok(CreateOutcome::AddressTaken));
    let mut new = input("ibx_exact1");
    new.email_address = Some("Hello@Mail.Localhost".into());
    new.domain = None;
    let result = service(repo).create(&account(), PlanId::Scale, new).await;
    assert!(matches!(result, Err(AddressError::AddressTaken)));

    let mut repo = MockAddressRepository::new();
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let seen = attempts.clone();
    repo.expect_create().returning(move |address, _, _, _, _| {
        let mut seen = seen.lock().unwrap();
        seen.push(address.email_address);
        Ok(if seen.len() < 3 {
            CreateOutcome::AddressTaken
        } else {
            CreateOutcome::Created
        })
    });
    service(repo)
        .create(&account(), PlanId::Free, input("ibx_rand01"))
        .await
        .unwrap();
    assert_eq!(attempts.lock().unwrap().len(), 3);
}

/// The plan the store finds under the account's lock wins: a request
/// decided on Operator is decided again on Free, with Free's limit.
#[tokio::test]
async fn a_plan_changed_under_the_lock_is_decided_again_on_the_new_plan() {
    let mut repo = MockAddressRepository::new();
    let mut order = mockall::Sequence::new();
    repo.expect_create()
        .withf(|_, plan, _, max, _| *plan == PlanId::Operator && *max == 100)
        .times(1)
        .in_sequence(&mut order)
        .returning(|_, _, _, _, _| Ok(CreateOutcome::PlanChanged(PlanId::Free)));
    repo.expect_create()
        .withf(|_, plan, _, max, _| *plan == PlanId::Free && *max == 3)
        .times(1)
        .in_sequence(&mut order)
        .returning(|_, _, _, _, _| Ok(CreateOutcome::LimitReached));
    let result = service(repo)
        .create(&account(), PlanId::Operator, input("ibx_four04"))
        .await;
    assert!(matches!(
        result,
        Err(AddressError::Limit(LimitError::AllocationExhausted {
            limit: 3
        }))
    ));
}

#[tokio::test]
async fn an_exact_name_decided_on_scale_is_refused_when_the_plan_became_operator() {
    let mut repo = MockAddressRepository::new();
    repo.expect_create()
        .withf(|_, plan, _, _, _| *plan == PlanId::Scale)
        .times(1)
        .returning(|_, _, _, _, _| Ok(CreateOutcome::PlanChanged(PlanId::Operator)));
    let mut new = input("ibx_exact1");
    new.local_part = Some("hello".into());
    let result = service(repo).create(&account(), PlanId::Scale, new).await;
    assert!(matches!(
        result,
        Err(AddressError::Limit(LimitError::CustomAddressNeedsScale))
    ));
}

#[tokio::test]
async fn the_plan_limit_is_allocation_exhausted() {
    let mut repo = MockAddressRepository::new();
    repo.expect_create()
        .returning(|_, _, _, _, _| Ok(CreateOutcome::LimitReached));
    let result = service(repo)
        .create(&account(), PlanId::Free, input("ibx_four04"))
        .await;
    assert!(matches!(
        result,
        Err(AddressError::Limit(LimitError::AllocationExhausted {
            limit: 3
        }))
    ));
}

#[tokio::test]
async fn field_rules() {
    let cases: Vec<(NewAddress, &str)> = vec![
        (
            NewAddress {
                retention_days: Some(91),
                ..input("ibx_abcd")
            },
            "retentionDays",
        ),
        (
            NewAddress {
                retention_days: Some(0),
                ..input("ibx_abcd")
            },
            "retentionDays",
        ),
        (
            NewAddress {
                domain: Some("gmail.com".into()),
                ..input("ibx_abcd")
            },
            "domain",
        ),
        (
            NewAddress {
                domain: None,
                ..input("ibx_abcd")
            },
            "domain",
        ),
        (
            NewAddress {
                prefix: Some("no spaces".into()),
                ..input("ibx_abcd")
            },
            "prefix",
        ),
    ];
    for (new, field) in cases {
        let mut repo = MockAddressRepository::new();
        repo.expect_create().never();
        match service(repo).create(&account(), PlanId::Scale, new).await {
            Err(AddressError::InvalidField { field: got, .. }) => assert_eq!(got, field),
            other => panic!("expected invalid {field}, got {other:?}"),
        }
    }
    assert!(local_part("a..b", "localPart").is_err());
    assert!(local_part(".ab", "localPart").is_err());
    assert_eq!(
        local_part("First.Last+tag", "localPart").unwrap(),
        "first.last+tag"
    );
}

#[tokio::test]
async fn free_devices_hold_one_address_and_moves_emit_both_events() {
    let device = DeviceId::parse("wkr_phone01").unwrap();
    let other = DeviceId::parse("wkr_phone02").unwrap();
    let mut repo = MockAddressRepository::new();
    let held_by = other.clone();
    repo.expect_address().returning(move |account, id| {
        Ok(Some(Address {
            id: id.clone(),
            account: account.clone(),
            email_address: "x@mail.localhost".into(),
            domain: "mail.localhost".into(),
            device: Some(held_by.clone()),
            retention_days: 7,
            paused_at: None,
            meta: None,
            public_key: None,
            key_epoch: 0,
            created_at: Timestamp::parse("2026-11-22T00:00:00Z").unwrap(),
        }))
    });
    let expected = other.clone();
    repo.expect_assign()
        .withf(move |_, _, _, previous, max, records| {
            previous.as_ref() == Some(&expected) && *max == Some(1) && records.events.len() == 2
        })
        .returning(|_, _, _, _, _, _| Ok(AssignOutcome::DeviceFull));
    let result = service(repo)
        .assign(
            &account(),
            PlanId::Free,
            &AddressId::parse("ibx_abcd").unwrap(),
            &device,
        )
        .await;
    assert!(matches!(
        result,
        Err(AddressError::Limit(LimitError::OneAddressPerDevice))
    ));
}

fn own_domain_service(repo: MockAddressRepository, state: Option<OwnDomainState>) -> Addresses {
    let mut directory = MockOwnDomainDirectory::new();
    directory
        .expect_own_domain()
        .withf(|_, name| name == "example.com")
        .returning(move |_, _| Ok(state));
    service(repo).with_own_domains(Arc::new(directory))
}

fn on_own_domain(id: &str) -> NewAddress {
    NewAddress {
        id: Some(AddressId::parse(id).unwrap()),
        email_address: Some("Hello@Example.com".into()),
        ..NewAddress::default()
    }
}

#[tokio::test]
async fn addresses_are_made_on_a_live_own_domain() {
    let mut repo = MockAddressRepository::new();
    repo.expect_create()
        .withf(|address, _, on_own_domain, _, _| {
            address.email_address == "hello@example.com"
                && address.domain == "example.com"
                && *on_own_domain
        })
        .times(1)
        .returning(|_, _, _, _, _| Ok(CreateOutcome::Created));
    let live = OwnDomainState {
        live: true,
        plan_lost_at: None,
    };
    own_domain_service(repo, Some(live))
        .create(&account(), PlanId::Scale, on_own_domain("ibx_own001"))
        .await
        .unwrap();
}

#[tokio::test]
async fn own_domains_not_live_unknown_or_after_plan_loss_take_no_address() {
    let not_live = OwnDomainState {
        live: false,
        plan_lost_at: None,
    };
    let lost = OwnDomainState {
        live: true,
        plan_lost_at: Some(Timestamp::parse("2026-11-21T12:00:00Z").unwrap()),
    };
    for (state, plan) in [
        (None, PlanId::Scale),
        (Some(not_live), PlanId::Scale),
        (Some(lost), PlanId::Operator),
    ] {
        let mut repo = MockAddressRepository::new();
        repo.expect_create().never();
        let result = own_domain_service(repo, state)
            .create(&account(), plan, on_own_domain("ibx_own002"))
            .await;
        match state {
            Some(OwnDomainState { live: true, .. }) => assert!(
                matches!(
                    result,
                    Err(AddressError::Limit(LimitError::OwnDomainReceiveOnly))
                ),
                "{result:?}"
            ),
            _ => assert!(
                matches!(
                    result,
                    Err(AddressError::InvalidField {
                        field: "emailAddress",
                        ..
                    })
                ),
                "{result:?}"
            ),
        }
    }
}

#[tokio::test]
async fn reserved_names_are_refused_on_shared_domains_only() {
    let mut repo = MockAddressRepository::new();
    repo.expect_create().never();
    let service = service(repo).with_reserved_names(ReservedNames::new(["billing".to_owned()]));
    for (field, local) in [
        ("localPart", "postmaster"),
        ("localPart", "Admin+certs"),
        ("localPart", "billing"),
    ] {
        let mut new = input("ibx_role001");
        new.local_part = Some(local.into());
        let refused = service.create(&account(), PlanId::Scale, new).await;
        assert!(
            matches!(&refused, Err(AddressError::InvalidField { field: f, reason }) if *f == field && reason.contains("reserved")),
            "{local}: {refused:?}"
        );
    }
    let mut whole = input("ibx_role002");
    whole.domain = None;
    whole.email_address = Some("webmaster@mail.localhost".into());
    let refused = service.create(&account(), PlanId::Scale, whole).await;
    assert!(
        matches!(
            &refused,
            Err(AddressError::InvalidField {
                field: "emailAddress",
                ..
            })
        ),
        "{refused:?}"
    );
}

#[tokio::test]
async fn an_own_domain_may_use_a_role_name() {
    let mut repo = MockAddressRepository::new();
    repo.expect_create()
        .withf(|address, _, _, _, _| address.email_address == "postmaster@example.com")
        .times(1)
        .returning(|_, _, _, _, _| Ok(CreateOutcome::Created));
    let live = OwnDomainState {
        live: true,
        plan_lost_at: None,
    };
    let mut new = on_own_domain("ibx_own002");
    new.email_address = Some("postmaster@example.com".into());
    own_domain_service(repo, Some(live))
        .create(&account(), PlanId::Scale, new)
        .await
        .unwrap();
}
