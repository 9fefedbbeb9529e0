//! `device pair CODE`, `device list`, `device rename`, `device disable`,
//! `device remove` (operator side).

use anyhow::{Context, Result, bail};
use sealpost_client::sealing::{self, DeviceProfile, KeyBundle};
use sealpost_client::types::{DeviceKind, UpdateDeviceRequest};

use super::vault::{self, parse_device_id};
use super::{Ctx, active_ago, now};
use crate::escape;
use crate::output;
use crate::table::{Align, Table};

/// Digits in a pairing code.
const CODE_LEN: usize = 8;

/// The code as the service expects it: 8 digits, with the spaces and
/// dashes people type between groups removed.
fn normalise_code(code: &str) -> Result<String> {
    let digits: String = code
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect();
    if digits.len() != CODE_LEN || !digits.bytes().all(|b| b.is_ascii_digit()) {
        bail!("a pairing code is {CODE_LEN} digits, as `sealpost agent pair` shows it");
    }
    Ok(digits)
}

/// Looks the code up, claims the device with a new id and a sealed profile
/// (holding the device's key), and sends it an empty key bundle.
pub async fn pair(ctx: &Ctx, code: &str, name: Option<String>) -> Result<()> {
    let code = normalise_code(code)?;
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let found = client.lookup_pairing(&code).await.map_err(|e| {
        if e.status() == Some(404) {
            anyhow::Error::new(e).context("no device is waiting with that code")
        } else {
            e.into()
        }
    })?;
    // The kind, name and platform are what the waiting device reported.
    let agent = found.kind == DeviceKind::Agent;
    outln!(
        "{}{} ({})",
        if agent {
            "Agent        "
        } else {
            "Device       "
        },
        escape::line(&found.device_name),
        escape::line(&found.platform.to_string())
    );
    outln!(
        "Fingerprint  {}  (the device shows the same; if not, remove the device)",
        sealing::key_fingerprint(&found.public_key)
    );

    let id = sealing::new_device_id();
    let name = name.unwrap_or_else(|| found.device_name.clone());
    let profile = DeviceProfile::new(name.clone(), found.public_key);
    client
        .claim_device(&found.id, &id, &profile.seal(&keys, &id))
        .await
        .map_err(|e| {
            if agent && e.status() == Some(403) {
                anyhow::Error::new(e).context(
                    "agents need the Operator plan or higher: `sealpost billing checkout operator`, \
                     or pair the machine as a device with `sealpost agent pair --kind device`",
                )
            } else {
                e.into()
            }
        })?;
    // No address yet: an empty bundle, so the device finds one at once.
    client
        .set_device_keys(&id, &KeyBundle::default().seal(&found.public_key, &id))
        .await
        .context("paired, but the key bundle could not be sent")?;
    outln!("Paired {id} \"{}\".", escape::line(&name));
    outln!("Give it an address with `sealpost address assign ADDRESS_ID {id}`.");
    Ok(())
}

/// Lists the devices and agents, newest first, with their kinds and names.
pub async fn list(ctx: &Ctx) -> Result<()> {
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let devices = vault::all_devices(&client).await?;
    if devices.is_empty() {
        outln!("No devices. Pair one with `sealpost device pair CODE`.");
        return Ok(());
    }
    let now = now();
    let mut table = Table::headless(&[Align::Left; 6]);
    for device in &devices {
        let last_active = device
            .last_active_at
            .map_or_else(|| "never".to_owned(), |at| active_ago(at, now));
        table.row(vec![
            device.id.to_string(),
            device.status.as_str().to_owned(),
            escape::line(device.kind.as_str()).into_owned(),
            escape::line(device.platform.as_str()).into_owned(),
            vault::device_name(&keys, device),
            format!("(last active {last_active})"),
        ]);
    }
    output::stdout_fmt(format_args!("{}", table.render()));
    Ok(())
}

/// Re-seals the profile with a new name, keeping everything else in it.
pub async fn rename(ctx: &Ctx, id: &str, name: &str) -> Result<()> {
    let id = parse_device_id(id)?;
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let device = client.get_device(&id).await?;
    let mut profile = vault::profile(&keys, &device)?;
    name.clone_into(&mut profile.name);
    client
        .update_device(
            &id,
            &UpdateDeviceRequest::profile(&profile.seal(&keys, &id)),
        )
        .await?;
    outln!("Renamed {id} to \"{}\".", escape::line(name));
    Ok(())
}

pub async fn disable(ctx: &Ctx, id: &str) -> Result<()> {
    let id = parse_device_id(id)?;
    let (_, client) = ctx.signed_in()?;
    client
        .update_device(&id, &UpdateDeviceRequest::disable())
        .await?;
    outln!("Disabled {id}; its credential no longer works.");
    Ok(())
}

pub async fn remove(ctx: &Ctx, id: &str) -> Result<()> {
    let id = parse_device_id(id)?;
    let (_, client) = ctx.signed_in()?;
    client.remove_device(&id).await?;
    outln!("Removed {id}; its addresses are unassigned.");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_eight_digits_typed_loosely() {
        assert_eq!(normalise_code("12345678").unwrap(), "12345678");
        assert_eq!(normalise_code(" 1234 5678 ").unwrap(), "12345678");
        assert_eq!(normalise_code("1234-5678").unwrap(), "12345678");
        assert!(normalise_code("1234567").is_err());
        assert!(normalise_code("1234567a").is_err());
        assert!(normalise_code("123456789").is_err());
    }
}
