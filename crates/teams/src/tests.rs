use std::sync::Arc;

use mockall::predicate::eq;
use sealpost_kernel::{AccountId, AddressId, PlanId, TestClock};
use sealpost_seal::SealedBox;

use crate::*;

fn owner() -> AccountId {
    AccountId::parse("acct_tul7dckxx25gyxvml33luw2o").unwrap()
}

fn member() -> AccountId {
    AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap()
}

fn address(n: usize) -> AddressId {
    AddressId::parse(&format!("ibx_shared{n}")).unwrap()
}

fn sealed() -> SealedBox {
    SealedBox::seal(&[9; 32], "service/v1/team-grant:a:b:c:0", b"{}")
}

fn teams(repo: MockTeamRepository) -> Teams {
    Teams::new(Arc::new(repo), Arc::new(TestClock::starting_now()))
}

fn on_plan(repo: &mut MockTeamRepository, plan: PlanId) {
    repo.expect_plan()
        .with(eq(owner()))
        .returning(move |_| Ok(Some(plan)));
}

fn grant(n: usize, epoch: u32, access: Access) -> GrantInput {
    GrantInput {
        address: address(n),
        epoch,
        access,
        sealed: sealed(),
    }
}

#[tokio::test]
async fn team_endpoints_need_fleet_or_higher() {
    for plan in [PlanId::Free, PlanId::Operator, PlanId::Scale] {
        let mut repo = MockTeamRepository::new();
        on_plan(&mut repo, plan);
        let teams = teams(repo);
        assert!(matches!(
            teams.team(&owner()).await,
            Err(TeamError::PlanCapabilityRequired)
        ));
        assert!(matches!(
            teams
                .add_member(&owner(), member(), [1; 32], sealed())
                .await,
            Err(TeamError::PlanCapabilityRequired)
        ));
        assert!(matches!(
            teams
                .grant(&owner(), &member(), vec![grant(1, 0, Access::Read)])
                .await,
            Err(TeamError::PlanCapabilityRequired)
        ));
        assert!(matches!(
            teams.remove_member(&owner(), &member()).await,
            Err(TeamError::PlanCapabilityRequired)
        ));
        assert!(matches!(
            teams.revoke(&owner(), &member(), &address(1)).await,
            Err(TeamError::PlanCapabilityRequired)
        ));
        assert!(matches!(
            teams.rotate(&owner(), &address(1), 1).await,
            Err(TeamError::PlanCapabilityRequired)
        ));
    }
}

#[tokio::test]
async fn the_team_shows_the_plans_limit() {
    for (plan, limit) in [(PlanId::Fleet, 25), (PlanId::Enterprise, 100)] {
        let mut repo = MockTeamRepository::new();
        on_plan(&mut repo, plan);
        repo.expect_members().returning(|_| Ok(Vec::new()));
        let team = teams(repo).team(&owner()).await.unwrap();
        assert_eq!(team.limit, limit);
        assert!(team.members.is_empty());
    }
}

#[tokio::test]
async fn a_member_is_added_by_its_sign_in_key_within_the_limit() {
    let mut repo = MockTeamRepository::new();
    on_plan(&mut repo, PlanId::Fleet);
    repo.expect_sign_in_key()
        .with(eq(member()))
        .returning(|_| Ok(Some([7; 32])));
    repo.expect_add_member()
        .withf(|new, plan, limit| {
            new.owner == owner()
                && new.member == member()
                && new.public_key == [7; 32]
                && *plan == PlanId::Fleet
                && *limit == 25
        })
        .times(1)
        .returning(|_, _, _| Ok(AddOutcome::Added));
    teams(repo)
        .add_member(&owner(), member(), [7; 32], sealed())
        .await
        .unwrap();
}

/// The plan read before the store's lock moved: the member is decided
/// again with the plan the owner holds (none, or a smaller limit).
#[tokio::test]
async fn a_plan_changed_under_the_lock_is_decided_again() {
    let mut repo = MockTeamRepository::new();
    on_plan(&mut repo, PlanId::Enterprise);
    repo.expect_sign_in_key().returning(|_| Ok(Some([7; 32])));
    repo.expect_add_member()
        .times(1)
        .returning(|_, _, _| Ok(AddOutcome::PlanChanged(PlanId::Scale)));
    assert!(matches!(
        teams(repo)
            .add_member(&owner(), member(), [7; 32], sealed())
            .await,
        Err(TeamError::PlanCapabilityRequired)
    ));

    let mut repo = MockTeamRepository::new();
    on_plan(&mut repo, PlanId::Enterprise);
    repo.expect_sign_in_key().returning(|_| Ok(Some([7; 32])));
    let mut tries = mockall::Sequence::new();
    repo.expect_add_member()
        .withf(|_, plan, limit| *plan == PlanId::Enterprise && *limit == 100)
        .times(1)
        .in_sequence(&mut tries)
        .returning(|_, _, _| Ok(AddOutcome::PlanChanged(PlanId::Fleet)));
    repo.expect_add_member()
        .withf(|_, plan, limit| *plan == PlanId::Fleet && *limit == 25)
        .times(1)
        .in_sequence(&mut tries)
        .returning(|_, _, _| Ok(AddOutcome::LimitReached));
    assert!(matches!(
        teams(repo)
            .add_member(&owner(), member(), [7; 32], sealed())
            .await,
        Err(TeamError::TeamLimitReached { limit: 25 })
    ));
}

#[tokio::test]
async fn another_key_than_the_sign_in_key_is_not_found() {
    let mut repo = MockTeamRepository::new();
    on_plan(&mut repo, PlanId::Fleet);
    repo.expect_sign_in_key().returning(|_| Ok(Some([7; 32])));
    repo.expect_add_member().never();
    assert!(matches!(
        teams(repo)
            .add_member(&owner(), member(), [8; 32], sealed())
            .await,
        Err(TeamError::NotFound)
    ));

    let mut repo = MockTeamRepository::new();
    on_plan(&mut repo, PlanId::Fleet);
    repo.expect_sign_in_key().returning(|_| Ok(None));
    assert!(matches!(
        teams(repo)
            .add_member(&owner(), member(), [8; 32], sealed())
            .await,
        Err(TeamError::NotFound)
    ));
}

#[tokio::test]
async fn the_owner_cannot_join_its_own_team() {
    let mut repo = MockTeamRepository::new();
    on_plan(&mut repo, PlanId::Fleet);
    assert!(matches!(
        teams(repo)
            .add_member(&owner(), owner(), [7; 32], sealed())
            .await,
        Err(TeamError::InvalidField { .. })
    ));
}

#[tokio::test]
async fn already_member_and_limit_reached_come_from_the_store_decision() {
    for (outcome, enterprise) in [
        (AddOutcome::AlreadyMember, false),
        (AddOutcome::LimitReached, true),
    ] {
        let mut repo = MockTeamRepository::new();
        on_plan(
            &mut repo,
            if enterprise {
                PlanId::Enterprise
            } else {
                PlanId::Fleet
            },
        );
        repo.expect_sign_in_key().returning(|_| Ok(Some([7; 32])));
        repo.expect_add_member()
            .withf(move |_, _, limit| *limit == if enterprise { 100 } else { 25 })
            .returning(move |_, _, _| Ok(outcome));
        let result = teams(repo)
            .add_member(&owner(), member(), [7; 32], sealed())
            .await;
        match outcome {
            AddOutcome::AlreadyMember => assert!(matches!(result, Err(TeamError::AlreadyMember))),
            _ => assert!(matches!(
                result,
                Err(TeamError::TeamLimitReached { limit: 100 })
            )),
        }
    }
}

fn owning(repo: &mut MockTeamRepository, key_epoch: u32) {
    repo.expect_owned_addresses()
        .returning(move |_, addresses| {
            Ok(addresses
                .into_iter()
                .filter(|address| address.as_str() != "ibx_shared999")
                .map(|address| (address, OwnedAddress { key_epoch }))
                .collect())
        });
}

#[tokio::test]
async fn up_to_500_grants_are_stored_at_once() {
    let mut repo = MockTeamRepository::new();
    on_plan(&mut repo, PlanId::Fleet);
    owning(&mut repo, 0);
    repo.expect_put_grants()
        .withf(|_, _, grants| grants.len() == 500)
        .times(1)
        .returning(|_, _, _| Ok(true));
    let grants = (0..500).map(|n| grant(n, 0, Access::Read)).collect();
    teams(repo)
        .grant(&owner(), &member(), grants)
        .await
        .unwrap();
}

#[tokio::test]
async fn grant_requests_past_500_or_empty_store_nothing() {
    for count in [0, 501] {
        let mut repo = MockTeamRepository::new();
        on_plan(&mut repo, PlanId::Fleet);
        repo.expect_put_grants().never();
        let grants = (0..count).map(|n| grant(n, 0, Access::Read)).collect();
        assert!(matches!(
            teams(repo).grant(&owner(), &member(), grants).await,
            Err(TeamError::InvalidField { .. })
        ));
    }
}

#[tokio::test]
async fn epochs_run_from_zero_to_the_key_epoch() {
    let mut repo = MockTeamRepository::new();
    on_plan(&mut repo, PlanId::Fleet);
    owning(&mut repo, 1);
    repo.expect_put_grants()
        .times(1)
        .returning(|_, _, _| Ok(true));
    teams(repo)
        .grant(
            &owner(),
            &member(),
            vec![grant(1, 0, Access::Send), grant(1, 1, Access::Send)],
        )
        .await
        .unwrap();

    let mut repo = MockTeamRepository::new();
    on_plan(&mut repo, PlanId::Fleet);
    owning(&mut repo, 1);
    repo.expect_put_grants().never();
    assert!(matches!(
        teams(repo)
            .grant(
                &owner(),
                &member(),
                vec![grant(1, 0, Access::Read), grant(2, 2, Access::Read)]
            )
            .await,
        Err(TeamError::EpochConflict(_))
    ));
}

#[tokio::test]
async fn one_address_has_one_access_and_each_epoch_once() {
    for grants in [
        vec![grant(1, 0, Access::Read), grant(1, 1, Access::Send)],
        vec![grant(1, 0, Access::Read), grant(1, 0, Access::Read)],
    ] {
        let mut repo = MockTeamRepository::new();
        on_plan(&mut repo, PlanId::Fleet);
        repo.expect_put_grants().never();
        assert!(matches!(
            teams(repo).grant(&owner(), &member(), grants).await,
            Err(TeamError::InvalidField { .. })
        ));
    }
}

#[tokio::test]
async fn an_address_of_someone_else_or_a_stranger_refuses_the_whole_request() {
    let mut repo = MockTeamRepository::new();
    on_plan(&mut repo, PlanId::Fleet);
    owning(&mut repo, 0);
    repo.expect_put_grants().never();
    assert!(matches!(
        teams(repo)
            .grant(
                &owner(),
                &member(),
                vec![grant(1, 0, Access::Read), grant(999, 0, Access::Read)]
            )
            .await,
        Err(TeamError::NotFound)
    ));

    let mut repo = MockTeamRepository::new();
    on_plan(&mut repo, PlanId::Fleet);
    owning(&mut repo, 0);
    repo.expect_put_grants().returning(|_, _, _| Ok(false));
    assert!(matches!(
        teams(repo)
            .grant(&owner(), &member(), vec![grant(1, 0, Access::Read)])
            .await,
        Err(TeamError::NotFound)
    ));
}

#[tokio::test]
async fn removing_what_is_not_there_is_not_found() {
    let mut repo = MockTeamRepository::new();
    on_plan(&mut repo, PlanId::Fleet);
    repo.expect_remove_member().returning(|_, _| Ok(false));
    repo.expect_remove_grants().returning(|_, _, _| Ok(false));
    let teams = teams(repo);
    assert!(matches!(
        teams.remove_member(&owner(), &member()).await,
        Err(TeamError::NotFound)
    ));
    assert!(matches!(
        teams.revoke(&owner(), &member(), &address(1)).await,
        Err(TeamError::NotFound)
    ));
    assert!(matches!(
        teams.leave(&member(), &owner()).await,
        Err(TeamError::NotFound)
    ));
}

#[tokio::test]
async fn leaving_removes_the_membership_on_any_plan() {
    let mut repo = MockTeamRepository::new();
    repo.expect_plan().never();
    repo.expect_remove_member()
        .with(eq(owner()), eq(member()))
        .times(1)
        .returning(|_, _| Ok(true));
    teams(repo).leave(&member(), &owner()).await.unwrap();
}

#[tokio::test]
async fn a_membership_is_active_while_the_owners_plan_has_teams() {
    let mut repo = MockTeamRepository::new();
    repo.expect_plan().never();
    repo.expect_memberships().returning(|_| {
        Ok([
            PlanId::Fleet,
            PlanId::Scale,
            PlanId::Enterprise,
            PlanId::Free,
        ]
        .into_iter()
        .map(|owner_plan| Membership {
            owner: owner(),
            owner_plan,
            joined_at: sealpost_kernel::Timestamp::parse("2026-01-01T00:00:00Z").unwrap(),
            active: true,
            addresses: Vec::new(),
        })
        .collect())
    });
    let active: Vec<bool> = teams(repo)
        .memberships(&member())
        .await
        .unwrap()
        .into_iter()
        .map(|membership| membership.active)
        .collect();
    assert_eq!(active, [true, false, true, false]);
}

#[tokio::test]
async fn rotation_checks_the_epoch_then_answers_feature_disabled() {
    let mut repo = MockTeamRepository::new();
    on_plan(&mut repo, PlanId::Fleet);
    owning(&mut repo, 0);
    let teams = teams(repo);
    assert!(matches!(
        teams.rotate(&owner(), &address(1), 2).await,
        Err(TeamError::EpochConflict(_))
    ));
    assert!(matches!(
        teams.rotate(&owner(), &address(1), 0).await,
        Err(TeamError::EpochConflict(_))
    ));
    assert!(matches!(
        teams.rotate(&owner(), &address(1), 1).await,
        Err(TeamError::FeatureDisabled)
    ));
    assert!(matches!(
        teams.rotate(&owner(), &address(999), 1).await,
        Err(TeamError::NotFound)
    ));
}

#[test]
fn fleet_and_enterprise_have_teams() {
    assert_eq!(plans_with_teams(), [PlanId::Fleet, PlanId::Enterprise]);
}
