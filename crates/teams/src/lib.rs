//! Teams: an account on a plan with teams (Fleet and up) shares some of its
//! addresses with other accounts, read-only or with send rights. The owner's
//! client seals each address's keys to the member's account key; the service
//! stores those grants and never holds a key it could open.
//!
//! Rules decided here (the store only applies them):
//! - the team endpoints need a plan with teams (`plan_capability_required`);
//!   memberships work on any plan;
//! - a member is added by the key it signs in with, at most the plan's
//!   `team_members`, once;
//! - grants come up to [`MAX_GRANTS_PER_REQUEST`] per request, all or nothing,
//!   each for an address of the owner at an epoch from 0 to its `keyEpoch`;
//!   the access given for an address is the access of every epoch the member
//!   holds for it;
//! - a membership is `active` while the owner's plan has teams; while it is
//!   not, the member reads nothing of the owner's (grants are kept).

mod error;
mod model;
mod repository;
mod service;

pub use error::TeamError;
pub use model::{
    Access, AddOutcome, Grant, GrantInput, Member, MemberGrant, Membership, NewMember,
    OwnedAddress, SharedAddress, SharedKey, Team,
};
#[cfg(any(test, feature = "mock"))]
pub use repository::MockTeamRepository;
pub use repository::TeamRepository;
pub use service::{MAX_GRANTS_PER_REQUEST, Teams, plans_with_teams};

#[cfg(test)]
mod tests;
