//! The `Teams` service behind `TeamRepository`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use sealpost_kernel::{AccountId, AddressId, Clock, PlanId};
use sealpost_plans::{OnPlan, PLANS, decide_on_current_plan, plan};
use sealpost_seal::SealedBox;

use crate::error::{TeamError, invalid};
use crate::model::{
    Access, AddOutcome, Grant, GrantInput, Membership, NewMember, OwnedAddress, Team,
};
use crate::repository::TeamRepository;

/// Team grants per request (docs/api.md "Limits").
pub const MAX_GRANTS_PER_REQUEST: usize = 500;

/// The plans whose accounts have teams (from the one plan table): a
/// membership is active while its owner is on one of them.
pub fn plans_with_teams() -> Vec<PlanId> {
    PLANS
        .iter()
        .filter(|plan| plan.has_teams())
        .map(|plan| plan.id)
        .collect()
}

#[derive(Clone)]
pub struct Teams {
    repo: Arc<dyn TeamRepository>,
    clock: Arc<dyn Clock>,
}

impl Teams {
    pub fn new(repo: Arc<dyn TeamRepository>, clock: Arc<dyn Clock>) -> Self {
        Self { repo, clock }
    }

    /// The owner's team-member limit, or 402 below Fleet.
    pub async fn limit(&self, owner: &AccountId) -> Result<u32, TeamError> {
        let plan_id = self.repo.plan(owner).await?.ok_or(TeamError::NotFound)?;
        members_allowed(plan_id)
    }

    /// `GET /team`.
    pub async fn team(&self, owner: &AccountId) -> Result<Team, TeamError> {
        let limit = self.limit(owner).await?;
        let members = self.repo.members(owner).await?;
        Ok(Team { members, limit })
    }

    /// `POST /team/members`: `public_key` must be the key `member` signs in
    /// with (else 404, as for an unknown account).
    pub async fn add_member(
        &self,
        owner: &AccountId,
        member: AccountId,
        public_key: [u8; 32],
        pin: SealedBox,
    ) -> Result<(), TeamError> {
        let plan_id = self.repo.plan(owner).await?.ok_or(TeamError::NotFound)?;
        members_allowed(plan_id)?;
        if &member == owner {
            return Err(invalid(
                "memberId",
                "an account cannot be a member of its own team",
            ));
        }
        if self.repo.sign_in_key(&member).await? != Some(public_key) {
            return Err(TeamError::NotFound);
        }
        let new = NewMember {
            owner: owner.clone(),
            member,
            public_key,
            pin,
            joined_at: self.clock.now(),
        };
        decide_on_current_plan(plan_id, async |plan_id| {
            let limit = members_allowed(plan_id)?;
            match self.repo.add_member(new.clone(), plan_id, limit).await? {
                AddOutcome::Added => Ok(OnPlan::Done(())),
                AddOutcome::AlreadyMember => Err(TeamError::AlreadyMember),
                AddOutcome::LimitReached => Err(TeamError::TeamLimitReached { limit }),
                AddOutcome::PlanChanged(current) => Ok(OnPlan::Changed(current)),
            }
        })
        .await
    }

    /// `DELETE /team/members/:memberId`: the member and all its grants.
    pub async fn remove_member(
        &self,
        owner: &AccountId,
        member: &AccountId,
    ) -> Result<(), TeamError> {
        self.limit(owner).await?;
        if self.repo.remove_member(owner, member).await? {
            Ok(())
        } else {
            Err(TeamError::NotFound)
        }
    }

    /// `POST /team/members/:memberId/grants`: all or nothing.
    pub async fn grant(
        &self,
        owner: &AccountId,
        member: &AccountId,
        grants: Vec<GrantInput>,
    ) -> Result<(), TeamError> {
        self.limit(owner).await?;
        if grants.is_empty() {
            return Err(invalid("grants", "at least one grant"));
        }
        if grants.len() > MAX_GRANTS_PER_REQUEST {
            return Err(invalid(
                "grants",
                format!("up to {MAX_GRANTS_PER_REQUEST} grants per request"),
            ));
        }
        let mut access: BTreeMap<&AddressId, Access> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        for grant in &grants {
            if !seen.insert((&grant.address, grant.epoch)) {
                return Err(invalid(
                    "grants",
                    format!("{} epoch {} is given twice", grant.address, grant.epoch),
                ));
            }
            if *access.entry(&grant.address).or_insert(grant.access) != grant.access {
                return Err(invalid(
                    "grants",
                    format!(
                        "{} is given two different accesses; an address has one",
                        grant.address
                    ),
                ));
            }
        }
        let addresses: Vec<AddressId> = access.keys().map(|address| (*address).clone()).collect();
        let owned: BTreeMap<AddressId, OwnedAddress> = self
            .repo
            .owned_addresses(owner, addresses)
            .await?
            .into_iter()
            .collect();
        for grant in &grants {
            let address = owned.get(&grant.address).ok_or(TeamError::NotFound)?;
            if grant.epoch > address.key_epoch {
                return Err(TeamError::EpochConflict(format!(
                    "{} is at key epoch {}; grants are for epochs 0 to {}",
                    grant.address, address.key_epoch, address.key_epoch
                )));
            }
        }
        let now = self.clock.now();
        let grants = grants
            .into_iter()
            .map(|grant| Grant {
                address: grant.address,
                epoch: grant.epoch,
                access: grant.access,
                sealed: grant.sealed,
                granted_at: now,
            })
            .collect();
        if self.repo.put_grants(owner, member, grants).await? {
            Ok(())
        } else {
            Err(TeamError::NotFound)
        }
    }

    /// `DELETE /team/members/:memberId/grants/:inboxId`.
    pub async fn revoke(
        &self,
        owner: &AccountId,
        member: &AccountId,
        address: &AddressId,
    ) -> Result<(), TeamError> {
        self.limit(owner).await?;
        if self.repo.remove_grants(owner, member, address).await? {
            Ok(())
        } else {
            Err(TeamError::NotFound)
        }
    }

    /// `POST /inboxes/:id/rotate`: the address must be the owner's (404),
    /// the epoch its `keyEpoch + 1` (409 `epoch_conflict`), and then the
    /// answer is 503 `feature_disabled`: rotation is not available yet.
    pub async fn rotate(
        &self,
        owner: &AccountId,
        address: &AddressId,
        epoch: u32,
    ) -> Result<(), TeamError> {
        self.limit(owner).await?;
        let owned = self
            .repo
            .owned_addresses(owner, vec![address.clone()])
            .await?;
        let (_, address) = owned.first().ok_or(TeamError::NotFound)?;
        let next = u64::from(address.key_epoch) + 1;
        if u64::from(epoch) != next {
            return Err(TeamError::EpochConflict(format!(
                "the address is at key epoch {}; the next epoch is {next}",
                address.key_epoch
            )));
        }
        Err(TeamError::FeatureDisabled)
    }

    /// `GET /memberships`: any plan.
    pub async fn memberships(&self, member: &AccountId) -> Result<Vec<Membership>, TeamError> {
        let mut memberships = self.repo.memberships(member).await?;
        for membership in &mut memberships {
            membership.active = plan(membership.owner_plan).has_teams();
        }
        Ok(memberships)
    }

    /// `DELETE /memberships/:ownerId`: leaves a team (the owner's grants to
    /// the member go with it).
    pub async fn leave(&self, member: &AccountId, owner: &AccountId) -> Result<(), TeamError> {
        if self.repo.remove_member(owner, member).await? {
            Ok(())
        } else {
            Err(TeamError::NotFound)
        }
    }
}

/// How many members `plan_id` allows; none is 402 `plan_capability_required`.
fn members_allowed(plan_id: PlanId) -> Result<u32, TeamError> {
    let limit = plan(plan_id).team_members;
    if limit == 0 {
        return Err(TeamError::PlanCapabilityRequired);
    }
    Ok(limit)
}
