//! What the operator commands share: the account's keys from the recovery
//! phrase, reading sealed names and labels, parsing ids, and re-sending a
//! device's key bundle. The sealing itself follows the conventions in
//! `sealpost_client::sealing` (docs/cli.md).

use anyhow::{Context, Result, anyhow, bail};
use sealpost_client::Client;
use sealpost_client::sealing::{self, DeviceProfile, KeyBundle};
use sealpost_client::types::{Address, Device, PageParams};
use sealpost_kernel::{AddressId, DeviceId};
use sealpost_seal::AccountKeys;

use crate::state::StoredSession;
use crate::{escape, phrase};

/// The largest page `GET /workers` allows.
const DEVICES_PAGE: u32 = 200;

/// The account's keys, from the phrase (SEALPOST_PHRASE, the prompt or
/// stdin), checked to be the signed-in account's: a wrong phrase would seal
/// labels nobody can read and create addresses whose mail nobody can open.
pub fn unlock(session: &StoredSession) -> Result<AccountKeys> {
    let keys = phrase::read_from_process()?.keys();
    if keys.account_id() != session.account_id.as_str() {
        bail!(
            "that recovery phrase belongs to another account, not {}",
            session.account_id
        );
    }
    Ok(keys)
}

pub fn parse_device_id(text: &str) -> Result<DeviceId> {
    DeviceId::parse(text.trim()).with_context(|| format!("{text:?} is not a device id (wkr_...)"))
}

pub fn parse_address_id(text: &str) -> Result<AddressId> {
    AddressId::parse(text.trim())
        .with_context(|| format!("{text:?} is not an address id (ibx_...) or an email address"))
}

/// An address named by its id, or by its email address (anything with an
/// `@`), looked up in `GET /inboxes` as the client's credential sees it.
pub async fn resolve_address(client: &Client, text: &str) -> Result<AddressId> {
    if !text.contains('@') {
        return parse_address_id(text);
    }
    find_address(&client.list_addresses().await?.addresses, text)
}

/// The id of the address `text` (an id, or an email address) among
/// `inboxes`.
pub fn find_address(addresses: &[Address], text: &str) -> Result<AddressId> {
    let wanted = text.trim();
    if !wanted.contains('@') {
        return parse_address_id(wanted);
    }
    addresses
        .iter()
        .find(|address| address.email_address.eq_ignore_ascii_case(wanted))
        .map(|address| address.id.clone())
        .ok_or_else(|| {
            anyhow!(
                "no address {} here; `sealpost address list` shows them",
                escape::line(wanted)
            )
        })
}

/// Every device on the account, newest first.
pub async fn all_devices(client: &Client) -> Result<Vec<Device>> {
    let mut devices = Vec::new();
    let mut page = PageParams::first(DEVICES_PAGE);
    loop {
        let answer = client.list_devices(&page).await?;
        devices.extend(answer.devices);
        match page.next(answer.next_cursor.as_deref()) {
            Some(next) => page = next,
            None => return Ok(devices),
        }
    }
}

/// A device's opened profile.
pub fn profile(keys: &AccountKeys, device: &Device) -> Result<DeviceProfile> {
    let sealed = device
        .profile
        .as_ref()
        .ok_or_else(|| anyhow!("device {} has no profile", device.id))?;
    DeviceProfile::open(keys, &device.id, sealed)
        .with_context(|| format!("the profile of device {} cannot be read", device.id))
}

/// A device's name for display, escaped (the device chose it): `(no name)`
/// or `(unreadable)` when there is none to show.
pub fn device_name(keys: &AccountKeys, device: &Device) -> String {
    match profile(keys, device) {
        Ok(profile) if profile.name.is_empty() => "(no name)".to_owned(),
        Ok(profile) => escape::line(&profile.name).into_owned(),
        Err(_) => "(unreadable)".to_owned(),
    }
}

/// An address's label for display: `-` without one, `(unreadable)` when it
/// does not open.
pub fn address_label(keys: &AccountKeys, address: &Address) -> String {
    match &address.meta {
        None => "-".to_owned(),
        Some(meta) => match sealing::open_label(keys, &address.id, meta) {
            Ok(label) => escape::line(&label).into_owned(),
            Err(_) => "(unreadable)".to_owned(),
        },
    }
}

/// Seals the keys of every address assigned to `worker_id` to the device's
/// pairing key (kept in its profile) and sends them, replacing its bundle.
/// Returns how many addresses the bundle holds.
pub async fn send_key_bundle(
    client: &Client,
    keys: &AccountKeys,
    device_id: &DeviceId,
) -> Result<usize> {
    let device = client.get_device(device_id).await?;
    let device_key = profile(keys, &device)?.device_public_key().ok_or_else(|| {
        anyhow!("the profile of device {device_id} holds no device key; pair the device again")
    })?;
    let assigned: Vec<AddressId> = client
        .list_addresses()
        .await?
        .addresses
        .into_iter()
        .filter(|address| address.assigned_device_id.as_ref() == Some(device_id))
        .map(|address| address.id)
        .collect();
    let bundle = KeyBundle::for_addresses(keys, &assigned);
    client
        .set_device_keys(device_id, &bundle.seal(&device_key, device_id))
        .await?;
    Ok(assigned.len())
}

/// "1 address", "2 addresses".
pub fn addresses(count: usize) -> String {
    if count == 1 {
        "1 address".to_owned()
    } else {
        format!("{count} addresses")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_found_by_id_or_by_email() {
        let addresses: Vec<Address> = serde_json::from_value(serde_json::json!([{
            "id": "ibx_abcdefghijklmnop",
            "operatorId": "acct_abcdefghijklmnopqrstuvwx",
            "emailAddress": "shop.x1@mail.example",
            "status": "active",
            "createdAt": "2026-01-01T00:00:00.000Z",
            "retentionDays": 7,
            "keyEpoch": 0
        }]))
        .unwrap();
        let id = AddressId::parse("ibx_abcdefghijklmnop").unwrap();
        assert_eq!(
            find_address(&addresses, " Shop.X1@mail.example ").unwrap(),
            id
        );
        assert_eq!(
            find_address(&addresses, "ibx_abcdefghijklmnop").unwrap(),
            id
        );
        let err = find_address(&addresses, "other@mail.example")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no address other@mail.example"), "{err}");
        assert!(err.contains("sealpost address list"), "{err}");
        let err = find_address(&addresses, "nonsense")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not an address id"), "{err}");
    }
}
