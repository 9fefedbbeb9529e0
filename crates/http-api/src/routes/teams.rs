//! The team and membership endpoints (docs/api.md "Teams"): session only
//! (device credentials get 403 `session_required`); the team endpoints need a
//! plan with teams (402 `plan_capability_required`), memberships any plan.

use actix_web::HttpResponse;
use actix_web::web::{Data, Path};
use sealpost_kernel::{AccountId, AddressId};
use sealpost_seal::b64;
use sealpost_teams::{Access, GrantInput, Member, Membership, TeamError};
use sealpost_wire as wire;

use crate::auth::SessionCaller;
use crate::error::{ApiError, ErrorCode, check_box_field, path_id};
use crate::json::Json;
use crate::state::AppState;

/// Encoded length of a sealed pin or grant (a grant's keys seal to about
/// 250 characters).
pub const GRANT_BOX_LIMIT: usize = 2 * 1024;
/// `POST /team/members/:memberId/grants` bodies: 500 grants of about 330
/// bytes each, with room to spare.
pub const GRANTS_BODY_LIMIT: usize = 1024 * 1024;

impl From<TeamError> for ApiError {
    fn from(error: TeamError) -> Self {
        let code = match error {
            TeamError::NotFound => return Self::not_found(),
            TeamError::InvalidField { field, reason } => {
                return Self::invalid_field(&field, reason);
            }
            TeamError::Store(store) => return store.into(),
            TeamError::PlanCapabilityRequired => ErrorCode::PlanCapabilityRequired,
            TeamError::AlreadyMember => ErrorCode::AlreadyMember,
            TeamError::TeamLimitReached { .. } => ErrorCode::TeamLimitReached,
            TeamError::EpochConflict(_) => ErrorCode::EpochConflict,
            TeamError::FeatureDisabled => ErrorCode::FeatureDisabled,
        };
        Self::new(code, error.to_string())
    }
}

/// Epochs are PostgreSQL `integer`s, as the document's `int32` says: one
/// above `i32::MAX` can name no key, so it is refused like any bad value.
fn epoch_of(epoch: u32, field: &str) -> Result<u32, ApiError> {
    if i32::try_from(epoch).is_err() {
        return Err(ApiError::invalid_field(
            field,
            "an epoch from 0 to 2147483647",
        ));
    }
    Ok(epoch)
}

fn access_of(access: &wire::GrantAccess, field: &str) -> Result<Access, ApiError> {
    match access {
        wire::GrantAccess::Read => Ok(Access::Read),
        wire::GrantAccess::Send => Ok(Access::Send),
        wire::GrantAccess::Other(_) => Err(ApiError::invalid_field(field, "read or send")),
    }
}

fn wire_access(access: Access) -> wire::GrantAccess {
    match access {
        Access::Read => wire::GrantAccess::Read,
        Access::Send => wire::GrantAccess::Send,
    }
}

fn member_body(member: Member) -> wire::TeamMember {
    wire::TeamMember {
        member_id: member.member,
        public_key: b64::encode(&member.public_key),
        pin: member.pin,
        joined_at: member.joined_at,
        grants: member
            .grants
            .into_iter()
            .map(|grant| wire::TeamGrant {
                address_id: grant.address,
                epoch: grant.epoch,
                access: wire_access(grant.access),
            })
            .collect(),
    }
}

fn membership_body(membership: Membership) -> wire::Membership {
    wire::Membership {
        owner_id: membership.owner,
        joined_at: membership.joined_at,
        active: membership.active,
        addresses: membership
            .addresses
            .into_iter()
            .map(|address| wire::SharedAddress {
                address_id: address.address,
                email_address: address.email_address,
                key_epoch: address.key_epoch,
                access: wire_access(address.access),
                grants: address
                    .grants
                    .into_iter()
                    .map(|key| wire::SharedKey {
                        epoch: key.epoch,
                        sealed: key.sealed,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The member as the owner's team now shows it.
async fn member_reply(
    state: &AppState,
    owner: &AccountId,
    member: &AccountId,
) -> Result<wire::TeamMemberReply, ApiError> {
    let team = state.teams.team(owner).await?;
    let member = team
        .members
        .into_iter()
        .find(|candidate| &candidate.member == member)
        .ok_or_else(ApiError::not_found)?;
    Ok(wire::TeamMemberReply {
        member: member_body(member),
    })
}

/// The owner's members with their grants, and the plan's member limit.
#[utoipa::path(get, path = "/team", operation_id = "get_team", tag = "teams", security(("session" = [])),
    responses((status = 200, body = wire::Team),
        (status = 402, body = wire::ErrorBody, description = "plan_capability_required: teams need Fleet or Enterprise"),
        (status = 403, body = wire::ErrorBody, description = "session_required")))]
pub async fn show(state: Data<AppState>, caller: SessionCaller) -> Result<HttpResponse, ApiError> {
    let team = state.teams.team(&caller.account).await?;
    Ok(HttpResponse::Ok().json(wire::Team {
        members: team.members.into_iter().map(member_body).collect(),
        limit: team.limit,
    }))
}

/// Adds an account to the team by the key it signs in with (from its join
/// code); the owner keeps that key sealed in its vault as `pin`.
#[utoipa::path(post, path = "/team/members", tag = "teams", security(("session" = [])),
    request_body = wire::AddMemberRequest,
    responses((status = 201, body = wire::TeamMemberReply),
        (status = 400, body = wire::ErrorBody, description = "invalid_id, invalid_key, invalid_box, invalid_field (the owner itself)"),
        (status = 402, body = wire::ErrorBody, description = "plan_capability_required"),
        (status = 403, body = wire::ErrorBody, description = "session_required"),
        (status = 404, body = wire::ErrorBody, description = "no such account, or publicKey is not the key it signs in with"),
        (status = 409, body = wire::ErrorBody, description = "already_member, team_limit_reached"),
        (status = 413, body = wire::ErrorBody)))]
pub async fn add_member(
    state: Data<AppState>,
    caller: SessionCaller,
    Json(body): Json<wire::AddMemberRequest>,
) -> Result<HttpResponse, ApiError> {
    let member = AccountId::parse(&body.member_id)
        .map_err(|error| ApiError::invalid_id("memberId", error))?;
    let public_key = sealpost_seal::parse_public_key(&body.public_key)
        .map_err(|_| ApiError::invalid_key("publicKey"))?;
    let pin = check_box_field("pin", &body.pin, GRANT_BOX_LIMIT)?;
    // The body's shape first (400), then the plan (402), as everywhere.
    state.teams.limit(&caller.account).await?;
    state
        .teams
        .add_member(&caller.account, member.clone(), public_key, pin)
        .await?;
    let reply = member_reply(&state, &caller.account, &member).await?;
    Ok(HttpResponse::Created().json(reply))
}

/// Removes a member and every grant it holds; its access ends at once.
#[utoipa::path(delete, path = "/team/members/{memberId}", tag = "teams", security(("session" = [])),
    params(("memberId" = String, Path)),
    responses((status = 204),
        (status = 402, body = wire::ErrorBody, description = "plan_capability_required"),
        (status = 403, body = wire::ErrorBody, description = "session_required"),
        (status = 404, body = wire::ErrorBody)))]
pub async fn remove_member(
    state: Data<AppState>,
    caller: SessionCaller,
    member: Path<String>,
) -> Result<HttpResponse, ApiError> {
    // The plan before the path: a malformed id below Fleet still answers 402.
    state.teams.limit(&caller.account).await?;
    let member = path_id::<AccountId>(&member)?;
    state.teams.remove_member(&caller.account, &member).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Stores up to 500 grants, all or nothing: each one address's keys at one
/// epoch (0 up to its `keyEpoch`) sealed to the member. The access given
/// for an address becomes the access of every epoch the member holds for it.
#[utoipa::path(post, path = "/team/members/{memberId}/grants", operation_id = "grant_inboxes", tag = "teams", security(("session" = [])),
    params(("memberId" = String, Path)), request_body = wire::GrantsRequest,
    responses((status = 200, body = wire::TeamMemberReply),
        (status = 400, body = wire::ErrorBody, description = "invalid_field (none, more than 500, an address twice at one epoch or with two accesses), invalid_id, invalid_box"),
        (status = 402, body = wire::ErrorBody, description = "plan_capability_required"),
        (status = 403, body = wire::ErrorBody, description = "session_required"),
        (status = 404, body = wire::ErrorBody, description = "no such member, or an address that is not the owner's"),
        (status = 409, body = wire::ErrorBody, description = "epoch_conflict: an epoch above the address's keyEpoch"),
        (status = 413, body = wire::ErrorBody)))]
pub async fn grant(
    state: Data<AppState>,
    caller: SessionCaller,
    member: Path<String>,
    Json(body): Json<wire::GrantsRequest>,
) -> Result<HttpResponse, ApiError> {
    let grants = body
        .grants
        .iter()
        .enumerate()
        .map(|(n, grant)| {
            Ok(GrantInput {
                address: AddressId::parse(&grant.address_id).map_err(|error| {
                    ApiError::invalid_id(&format!("grants[{n}].inboxId"), error)
                })?,
                epoch: epoch_of(grant.epoch, &format!("grants[{n}].epoch"))?,
                access: access_of(&grant.access, &format!("grants[{n}].access"))?,
                sealed: check_box_field(
                    &format!("grants[{n}].sealed"),
                    &grant.sealed,
                    GRANT_BOX_LIMIT,
                )?,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    state.teams.limit(&caller.account).await?;
    let member = path_id::<AccountId>(&member)?;
    state.teams.grant(&caller.account, &member, grants).await?;
    let reply = member_reply(&state, &caller.account, &member).await?;
    Ok(HttpResponse::Ok().json(reply))
}

/// Takes one address back from a member (every epoch); its access ends at once.
#[utoipa::path(delete, path = "/team/members/{memberId}/grants/{inboxId}", operation_id = "revoke_grant", tag = "teams", security(("session" = [])),
    params(("memberId" = String, Path), ("inboxId" = String, Path)),
    responses((status = 204),
        (status = 402, body = wire::ErrorBody, description = "plan_capability_required"),
        (status = 403, body = wire::ErrorBody, description = "session_required"),
        (status = 404, body = wire::ErrorBody)))]
pub async fn revoke(
    state: Data<AppState>,
    caller: SessionCaller,
    path: Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    state.teams.limit(&caller.account).await?;
    let (member, address) = path.into_inner();
    let member = path_id::<AccountId>(&member)?;
    let address = path_id::<AddressId>(&address)?;
    state
        .teams
        .revoke(&caller.account, &member, &address)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Key rotation is not available yet. Checked in this order: session
/// (403), the body (400), plan (402), the path (404), the address (404),
/// the epoch (409 `epoch_conflict` unless it is `keyEpoch + 1`), then 503
/// `feature_disabled`.
#[utoipa::path(post, path = "/inboxes/{id}/rotate", operation_id = "rotate_inbox_key", tag = "teams", security(("session" = [])),
    params(("id" = String, Path)), request_body = wire::RotateRequest,
    responses(
        (status = 400, body = wire::ErrorBody, description = "invalid_key, invalid_id, invalid_box, invalid_field"),
        (status = 402, body = wire::ErrorBody, description = "plan_capability_required"),
        (status = 403, body = wire::ErrorBody, description = "session_required"),
        (status = 404, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody, description = "epoch_conflict: the epoch is not keyEpoch + 1"),
        (status = 413, body = wire::ErrorBody),
        (status = 503, body = wire::ErrorBody, description = "feature_disabled: rotating address keys is unavailable")))]
pub async fn rotate(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
    Json(body): Json<wire::RotateRequest>,
) -> Result<HttpResponse, ApiError> {
    let epoch = epoch_of(body.epoch, "epoch")?;
    sealpost_seal::parse_public_key(&body.public_key)
        .map_err(|_| ApiError::invalid_key("publicKey"))?;
    for (n, grant) in body.grants.iter().enumerate() {
        AccountId::parse(&grant.member_id)
            .map_err(|error| ApiError::invalid_id(&format!("grants[{n}].memberId"), error))?;
        access_of(&grant.access, &format!("grants[{n}].access"))?;
        check_box_field(
            &format!("grants[{n}].sealed"),
            &grant.sealed,
            GRANT_BOX_LIMIT,
        )?;
    }
    state.teams.limit(&caller.account).await?;
    let address = path_id::<AddressId>(&id)?;
    state.teams.rotate(&caller.account, &address, epoch).await?;
    // `rotate` refuses every request today; nothing was stored.
    Err(ApiError::new(
        ErrorCode::FeatureDisabled,
        "rotating address keys is not available yet",
    ))
}

/// The teams the caller is in, with the addresses shared with it and their
/// keys sealed to it. Any plan.
#[utoipa::path(get, path = "/memberships", operation_id = "list_memberships", tag = "teams", security(("session" = [])),
    responses((status = 200, body = wire::MembershipList),
        (status = 403, body = wire::ErrorBody, description = "session_required")))]
pub async fn memberships(
    state: Data<AppState>,
    caller: SessionCaller,
) -> Result<HttpResponse, ApiError> {
    let memberships = state.teams.memberships(&caller.account).await?;
    Ok(HttpResponse::Ok().json(wire::MembershipList {
        memberships: memberships.into_iter().map(membership_body).collect(),
    }))
}

/// Leaves a team: the grants to the caller go with it.
#[utoipa::path(delete, path = "/memberships/{ownerId}", operation_id = "leave_team", tag = "teams", security(("session" = [])),
    params(("ownerId" = String, Path)),
    responses((status = 204),
        (status = 403, body = wire::ErrorBody, description = "session_required"),
        (status = 404, body = wire::ErrorBody)))]
pub async fn leave(
    state: Data<AppState>,
    caller: SessionCaller,
    owner: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let owner = path_id::<AccountId>(&owner)?;
    state.teams.leave(&caller.account, &owner).await?;
    Ok(HttpResponse::NoContent().finish())
}
