//! `inbox create`, `inbox list`, `inbox label`, `inbox retention`,
//! `inbox assign`, `inbox unassign`, `inbox delete` (operator side).

use anyhow::{Context, Result, anyhow};
use sealpost_client::sealing;
use sealpost_client::types::{CreateInboxRequest, UpdateInboxRequest};

use super::Ctx;
use super::vault::{self, addresses, parse_inbox_id, parse_worker_id};

/// The options of `inbox create`.
pub struct NewInbox {
    pub prefix: Option<String>,
    pub local_part: Option<String>,
    pub domain: Option<String>,
    pub retention: Option<u8>,
    pub label: Option<String>,
}

fn days(count: u8) -> String {
    if count == 1 {
        "1 day".to_owned()
    } else {
        format!("{count} days")
    }
}

/// Creates an address with its public key (so it can receive mail) and,
/// when given, a sealed label.
pub async fn create(ctx: &Ctx, new: NewInbox) -> Result<()> {
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let domain = match new.domain {
        Some(domain) => domain,
        None => client
            .domains()
            .await?
            .domains
            .into_iter()
            .next()
            .map(|d| d.domain)
            .ok_or_else(|| anyhow!("the service offers no domain to create addresses on"))?,
    };
    let id = sealing::new_inbox_id();
    let mut request = CreateInboxRequest::new(&id, domain)
        .with_public_key(&keys.inbox_public_key(id.as_str(), 0));
    request.prefix = new.prefix;
    request.local_part = new.local_part;
    request.retention_days = new.retention.map(i64::from);
    if let Some(label) = &new.label {
        request = request.with_meta(&sealing::seal_label(&keys, &id, label));
    }
    let inbox = client.create_inbox(&request).await?;
    println!("Created {}: {}", inbox.id, inbox.email_address);
    println!("Keeps mail for {}.", days(inbox.retention_days));
    if let Some(label) = &new.label {
        println!("Label: {label}");
    }
    Ok(())
}

/// Lists the addresses, newest first: id, address, status, device,
/// retention and label.
pub async fn list(ctx: &Ctx) -> Result<()> {
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let inboxes = client.list_inboxes().await?.inboxes;
    if inboxes.is_empty() {
        println!("No addresses. Create one with `sealpost inbox create`.");
        return Ok(());
    }
    for inbox in &inboxes {
        let device = inbox
            .assigned_worker_id
            .as_ref()
            .map_or("-", |id| id.as_str());
        let paused = if inbox.paused_at.is_some() {
            "  (paused)"
        } else {
            ""
        };
        println!(
            "{}  {}  {:<10}  {device}  {}  {}{paused}",
            inbox.id,
            inbox.email_address,
            inbox.status.as_str(),
            days(inbox.retention_days),
            vault::inbox_label(&keys, inbox),
        );
    }
    Ok(())
}

pub async fn label(ctx: &Ctx, id: &str, text: &str) -> Result<()> {
    let id = parse_inbox_id(id)?;
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let update = UpdateInboxRequest::default().with_meta(&sealing::seal_label(&keys, &id, text));
    let inbox = client.update_inbox(&id, &update).await?;
    println!(
        "Labelled {} ({}) \"{text}\".",
        inbox.id, inbox.email_address
    );
    Ok(())
}

pub async fn retention(ctx: &Ctx, id: &str, count: u8) -> Result<()> {
    let id = parse_inbox_id(id)?;
    let (_, client) = ctx.signed_in()?;
    let update = UpdateInboxRequest::default().with_retention_days(count);
    let inbox = client.update_inbox(&id, &update).await?;
    println!(
        "{} ({}) keeps mail for {}.",
        inbox.id,
        inbox.email_address,
        days(inbox.retention_days)
    );
    Ok(())
}

/// Assigns, then re-sends the key bundle of the device and, when the address
/// moved off another device, of that one too.
pub async fn assign(ctx: &Ctx, id: &str, device_id: &str) -> Result<()> {
    let id = parse_inbox_id(id)?;
    let worker_id = parse_worker_id(device_id)?;
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let previous = client
        .list_inboxes()
        .await?
        .inboxes
        .into_iter()
        .find(|inbox| inbox.id == id)
        .and_then(|inbox| inbox.assigned_worker_id);
    let inbox = client.assign_inbox(&worker_id, &id).await?;
    println!(
        "Assigned {} ({}) to {worker_id}.",
        inbox.id, inbox.email_address
    );
    let held = vault::send_key_bundle(&client, &keys, &worker_id)
        .await
        .context("assigned, but the device's keys could not be sent")?;
    println!("Sent {worker_id} the keys of {}.", addresses(held));
    if let Some(previous) = previous.filter(|previous| *previous != worker_id) {
        let held = vault::send_key_bundle(&client, &keys, &previous)
            .await
            .with_context(|| {
                format!("assigned, but the keys of {previous} could not be updated")
            })?;
        println!(
            "Sent {previous}, which held it before, the keys of {}.",
            addresses(held)
        );
    }
    Ok(())
}

/// Unassigns, then re-sends the device's key bundle without the address.
pub async fn unassign(ctx: &Ctx, id: &str, device_id: &str) -> Result<()> {
    let id = parse_inbox_id(id)?;
    let worker_id = parse_worker_id(device_id)?;
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    client.unassign_inbox(&worker_id, &id).await?;
    println!("Unassigned {id} from {worker_id}.");
    let held = vault::send_key_bundle(&client, &keys, &worker_id)
        .await
        .context("unassigned, but the device's keys could not be updated")?;
    println!("Sent {worker_id} the keys of {}.", addresses(held));
    Ok(())
}

pub async fn delete(ctx: &Ctx, id: &str) -> Result<()> {
    let id = parse_inbox_id(id)?;
    let (_, client) = ctx.signed_in()?;
    client.delete_inbox(&id).await?;
    println!("Deleted {id} and its mail; the address is never issued again.");
    Ok(())
}
