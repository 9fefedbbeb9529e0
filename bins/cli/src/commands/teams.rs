//! `team show|add|remove|grant|join-code` (the owner, Fleet and up) and
//! `membership list|leave` (the member, any plan). Grants are sealed here,
//! to the member's key as pinned in the owner's vault; the service never
//! sees an address key.

use anyhow::{Context, Result, bail};
use sealpost_client::teams::{JoinCode, fingerprint, grant_request};
use sealpost_client::types::{GrantAccess, TeamMember};
use sealpost_kernel::AccountId;
use sealpost_seal::{AccountKeys, b64};

use super::Ctx;
use super::vault::{self, resolve_address};
use crate::escape;

fn parse_account(text: &str, what: &str) -> Result<AccountId> {
    AccountId::parse(text.trim())
        .with_context(|| format!("{} is not {what} (acct_...)", escape::line(text)))
}

/// A member's key as the owner pinned it: the pin opened with the owner's
/// vault key must be the key the service shows, else the service (or
/// someone in between) changed it and nothing is sealed to it.
fn pinned_key(keys: &AccountKeys, member: &TeamMember) -> Result<[u8; 32]> {
    let shown = b64::decode_32(&member.public_key).context("the member's key is malformed")?;
    let pinned = member
        .pin
        .open(&keys.vault_secret(), "")
        .context("the member's pin does not open with this account's vault key")?;
    if pinned.as_slice() != shown.as_slice() {
        bail!(
            "the key the service shows for {} is not the key you added; nothing was shared",
            member.member_id
        );
    }
    Ok(shown)
}

fn access_name(access: &GrantAccess) -> &str {
    match access {
        GrantAccess::Read => "read",
        GrantAccess::Send => "send",
        GrantAccess::Other(other) => other.as_str(),
    }
}

/// `team join-code`: what to give an owner, and the words to compare.
pub async fn join_code(ctx: &Ctx) -> Result<()> {
    let (session, _) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let code = JoinCode::for_keys(&keys);
    outln!("Join code: {code}");
    outln!("Fingerprint: {}", code.fingerprint());
    outln!("Give the join code to the team's owner; both of you compare the six words.");
    Ok(())
}

/// `team show`.
pub async fn show(ctx: &Ctx) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    let team = client.team().await?;
    outln!("Members: {} of {}", team.members.len(), team.limit);
    for member in &team.members {
        let words = b64::decode_32(&member.public_key)
            .map(|key| fingerprint(&key))
            .unwrap_or_else(|_| "(malformed key)".to_owned());
        outln!("{}  joined {}  {words}", member.member_id, member.joined_at);
        for grant in &member.grants {
            outln!(
                "  {}  epoch {}  {}",
                grant.address_id,
                grant.epoch,
                access_name(&grant.access)
            );
        }
    }
    Ok(())
}

/// `team add JOIN-CODE`: shows the fingerprint and adds the member.
pub async fn add(ctx: &Ctx, join_code: &str) -> Result<()> {
    let code = JoinCode::parse(join_code)
        .with_context(|| format!("{} is not a join code", escape::line(join_code)))?;
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    outln!("Fingerprint: {}", code.fingerprint());
    outln!(
        "These six words must match the ones {} sees.",
        code.account_id
    );
    let member = client.add_team_member(&keys, &code).await?;
    outln!("Added {} to the team.", member.member_id);
    Ok(())
}

/// `team remove MEMBER`.
pub async fn remove(ctx: &Ctx, member: &str) -> Result<()> {
    let member = parse_account(member, "an account id")?;
    let (_, client) = ctx.signed_in()?;
    client.remove_team_member(&member).await?;
    outln!("Removed {member} and every address shared with it.");
    Ok(())
}

/// `team grant ADDRESS --to MEMBER --access read|send|revoke`.
pub async fn grant(ctx: &Ctx, address: &str, to: &str, access: &str) -> Result<()> {
    let member_id = parse_account(to, "an account id")?;
    let access = match access.trim().to_ascii_lowercase().as_str() {
        "read" => Some(GrantAccess::Read),
        "send" => Some(GrantAccess::Send),
        "revoke" => None,
        _ => bail!("{} is not read, send or revoke", escape::line(access)),
    };
    let (session, client) = ctx.signed_in()?;
    let address = resolve_address(&client, address).await?;
    let Some(access) = access else {
        client.revoke_grant(&member_id, &address).await?;
        outln!("{member_id} no longer has {address}.");
        return Ok(());
    };
    let keys = vault::unlock(&session)?;
    let team = client.team().await?;
    let Some(member) = team.members.iter().find(|m| m.member_id == member_id) else {
        bail!("{member_id} is not a member of your team; add it with `sealpost team add`");
    };
    let member_key = pinned_key(&keys, member)?;
    let key_epoch = client
        .list_addresses()
        .await?
        .addresses
        .iter()
        .find(|candidate| candidate.id == address)
        .map_or(0, |found| found.key_epoch);
    let grants = (0..=key_epoch)
        .map(|epoch| {
            grant_request(
                &keys,
                &member_id,
                &member_key,
                &address,
                epoch,
                access.clone(),
            )
        })
        .collect();
    let member = client.grant(&member_id, grants).await?;
    outln!(
        "{} now has {address} ({}), {} epoch(s).",
        member.member_id,
        access_name(&access),
        member
            .grants
            .iter()
            .filter(|g| g.address_id == address)
            .count()
    );
    Ok(())
}

/// `membership list`.
pub async fn memberships(ctx: &Ctx) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    let memberships = client.memberships().await?;
    if memberships.is_empty() {
        outln!("You are in no team.");
    }
    for membership in &memberships {
        let state = if membership.active {
            "active"
        } else {
            "inactive (the owner's plan has no teams)"
        };
        outln!(
            "{}  joined {}  {state}",
            membership.owner_id,
            membership.joined_at
        );
        for address in &membership.addresses {
            outln!(
                "  {}  {}  {}",
                address.address_id,
                escape::line(&address.email_address),
                access_name(&address.access)
            );
        }
    }
    Ok(())
}

/// `membership leave OWNER`.
pub async fn leave(ctx: &Ctx, owner: &str) -> Result<()> {
    let owner = parse_account(owner, "an owner's account id")?;
    let (_, client) = ctx.signed_in()?;
    client.leave_team(&owner).await?;
    outln!("You left the team of {owner}.");
    Ok(())
}
