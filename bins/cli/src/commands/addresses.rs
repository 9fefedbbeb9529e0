//! `address create`, `address list`, `address label`, `address retention`,
//! `address assign`, `address unassign`, `address delete` (operator side).

use anyhow::{Context, Result, bail};
use sealpost_client::sealing;
use sealpost_client::types::{CreateAddressRequest, Domain, UpdateAddressRequest};

use super::Ctx;
use super::vault::{self, addresses, find_address, parse_device_id, resolve_address};
use crate::table::{Align, Table};
use crate::{escape, output};

/// The options of `address create`.
pub struct NewAddress {
    pub prefix: Option<String>,
    pub local_part: Option<String>,
    pub domain: Option<String>,
    pub retention: Option<u8>,
    pub label: Option<String>,
    /// Print the address's epoch 0 keys once, as JSON.
    pub export_key: bool,
}

fn days(count: u8) -> String {
    if count == 1 {
        "1 day".to_owned()
    } else {
        format!("{count} days")
    }
}

/// The domain to create an address on: `wanted` when the service offers
/// it, else the first it offers.
fn pick_domain(offered: &[Domain], wanted: Option<&str>) -> Result<String> {
    let Some(first) = offered.first() else {
        bail!("the service offers no domain to create addresses on");
    };
    let Some(wanted) = wanted else {
        return Ok(first.domain.clone());
    };
    let name = wanted.trim().trim_end_matches('.');
    match offered.iter().find(|d| d.domain.eq_ignore_ascii_case(name)) {
        Some(found) => Ok(found.domain.clone()),
        None => {
            let names: Vec<&str> = offered.iter().map(|d| d.domain.as_str()).collect();
            bail!(
                "addresses cannot be created on {}; the domains offered are {} (`sealpost domain available`)",
                escape::line(wanted),
                escape::line(&names.join(", "))
            )
        }
    }
}

/// Lists the domains addresses can be created on; the account's own are
/// marked.
pub async fn domains(ctx: &Ctx) -> Result<()> {
    let client = ctx.session_else_device()?;
    let domains = client.domains().await?.domains;
    if domains.is_empty() {
        outln!("The service offers no domain to create addresses on.");
    }
    for domain in &domains {
        let own = if domain.reserved {
            "  (this account's own)"
        } else {
            ""
        };
        outln!("{}{own}", escape::line(&domain.domain));
    }
    Ok(())
}

/// Creates an address with its public key (so it can receive mail) and,
/// when given, a sealed label.
pub async fn create(ctx: &Ctx, new: NewAddress) -> Result<()> {
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let domain = pick_domain(&client.domains().await?.domains, new.domain.as_deref())?;
    let id = sealing::new_address_id();
    let mut request = CreateAddressRequest::new(&id, domain)
        .with_public_key(&keys.address_public_key(id.as_str(), 0));
    request.prefix = new.prefix;
    request.local_part = new.local_part;
    request.retention_days = new.retention.map(i64::from);
    if let Some(label) = &new.label {
        request = request.with_meta(&sealing::seal_label(&keys, &id, label));
    }
    let address = client.create_address(&request).await?;
    outln!(
        "Created {}: {}",
        address.id,
        escape::line(&address.email_address)
    );
    outln!("Keeps mail for {}.", days(address.retention_days));
    if let Some(label) = &new.label {
        outln!("Label: {}", escape::line(label));
    }
    if new.export_key {
        let secret = sealing::AddressKeys::derive(&keys, &address.id);
        outln!("Address key (shown once; it opens this address's mail, keep it secret):");
        outln!("{}", serde_json::to_string(&secret)?);
    }
    Ok(())
}

/// Lists the addresses, newest first: id, address, status, device,
/// retention and label.
pub async fn list(ctx: &Ctx) -> Result<()> {
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let addresses = client.list_addresses().await?.addresses;
    if addresses.is_empty() {
        outln!("No addresses. Create one with `sealpost address create`.");
        return Ok(());
    }
    let mut table = Table::headless(&[Align::Left; 6]);
    for address in &addresses {
        let device = address
            .assigned_device_id
            .as_ref()
            .map_or("-", |id| id.as_str());
        let status = if address.paused_at.is_some() {
            format!("{} (paused)", address.status.as_str())
        } else {
            address.status.as_str().to_owned()
        };
        table.row(vec![
            address.id.to_string(),
            escape::line(&address.email_address).into_owned(),
            status,
            device.to_owned(),
            days(address.retention_days),
            vault::address_label(&keys, address),
        ]);
    }
    output::stdout_fmt(format_args!("{}", table.render()));
    Ok(())
}

pub async fn label(ctx: &Ctx, id: &str, text: &str) -> Result<()> {
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let id = resolve_address(&client, id).await?;
    let update = UpdateAddressRequest::default().with_meta(&sealing::seal_label(&keys, &id, text));
    let address = client.update_address(&id, &update).await?;
    outln!(
        "Labelled {} ({}) \"{}\".",
        address.id,
        escape::line(&address.email_address),
        escape::line(text)
    );
    Ok(())
}

pub async fn retention(ctx: &Ctx, id: &str, count: u8) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    let id = resolve_address(&client, id).await?;
    let update = UpdateAddressRequest::default().with_retention_days(count);
    let address = client.update_address(&id, &update).await?;
    outln!(
        "{} ({}) keeps mail for {}.",
        address.id,
        escape::line(&address.email_address),
        days(address.retention_days)
    );
    Ok(())
}

/// Assigns, then re-sends the key bundle of the device and, when the address
/// moved off another device, of that one too.
pub async fn assign(ctx: &Ctx, id: &str, device_id: &str) -> Result<()> {
    let device_id = parse_device_id(device_id)?;
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let listed = client.list_addresses().await?.addresses;
    let id = find_address(&listed, id)?;
    let previous = listed
        .into_iter()
        .find(|address| address.id == id)
        .and_then(|address| address.assigned_device_id);
    let address = client.assign_address(&device_id, &id).await?;
    outln!(
        "Assigned {} ({}) to {device_id}.",
        address.id,
        escape::line(&address.email_address)
    );
    let held = vault::send_key_bundle(&client, &keys, &device_id)
        .await
        .context("assigned, but the device's keys could not be sent")?;
    outln!("Sent {device_id} the keys of {}.", addresses(held));
    if let Some(previous) = previous.filter(|previous| *previous != device_id) {
        let held = vault::send_key_bundle(&client, &keys, &previous)
            .await
            .with_context(|| {
                format!("assigned, but the keys of {previous} could not be updated")
            })?;
        outln!(
            "Sent {previous}, which held it before, the keys of {}.",
            addresses(held)
        );
    }
    Ok(())
}

/// Unassigns, then re-sends the device's key bundle without the address.
pub async fn unassign(ctx: &Ctx, id: &str, device_id: &str) -> Result<()> {
    let device_id = parse_device_id(device_id)?;
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let id = resolve_address(&client, id).await?;
    client.unassign_address(&device_id, &id).await?;
    outln!("Unassigned {id} from {device_id}.");
    let held = vault::send_key_bundle(&client, &keys, &device_id)
        .await
        .context("unassigned, but the device's keys could not be updated")?;
    outln!("Sent {device_id} the keys of {}.", addresses(held));
    Ok(())
}

pub async fn delete(ctx: &Ctx, id: &str) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    let id = resolve_address(&client, id).await?;
    client.delete_address(&id).await?;
    outln!("Deleted {id} and its mail; the address is never issued again.");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(names: &[&str]) -> Vec<Domain> {
        names
            .iter()
            .map(|name| Domain {
                domain: (*name).to_owned(),
                reserved: false,
            })
            .collect()
    }

    #[test]
    fn the_domain_is_one_offered() {
        let two = offered(&["mail.example", "drop.example"]);
        assert_eq!(pick_domain(&two, None).unwrap(), "mail.example");
        assert_eq!(
            pick_domain(&two, Some("DROP.example.")).unwrap(),
            "drop.example"
        );
        let err = pick_domain(&two, Some("other.example"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("mail.example, drop.example"), "{err}");
        assert!(err.contains("`sealpost domain available`"), "{err}");
        assert!(pick_domain(&[], None).is_err());
    }
}
