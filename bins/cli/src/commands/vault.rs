//! What the operator commands share: the account's keys from the recovery
//! phrase, reading sealed names and labels, parsing ids, and re-sending a
//! device's key bundle. The sealing itself follows the conventions in
//! `sealpost_client::sealing` (docs/cli.md).

use anyhow::{Context, Result, anyhow, bail};
use sealpost_client::Client;
use sealpost_client::sealing::{self, DeviceProfile, KeyBundle};
use sealpost_client::types::{Inbox, PageParams, Worker};
use sealpost_kernel::{AddressId, DeviceId};
use sealpost_seal::AccountKeys;

use crate::state::StoredSession;
use crate::{escape, phrase};

/// The largest page `GET /workers` allows.
const WORKERS_PAGE: u32 = 200;

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
pub async fn resolve_inbox(client: &Client, text: &str) -> Result<AddressId> {
    if !text.contains('@') {
        return parse_address_id(text);
    }
    find_inbox(&client.list_addresses().await?.inboxes, text)
}

/// The id of the address `text` (an id, or an email address) among
/// `inboxes`.
pub fn find_inbox(inboxes: &[Inbox], text: &str) -> Result<AddressId> {
    let wanted = text.trim();
    if !wanted.contains('@') {
        return parse_address_id(wanted);
    }
    inboxes
        .iter()
        .find(|inbox| inbox.email_address.eq_ignore_ascii_case(wanted))
        .map(|inbox| inbox.id.clone())
        .ok_or_else(|| {
            anyhow!(
                "no address {} here; `sealpost inbox list` shows them",
                escape::line(wanted)
            )
        })
}

/// Every device on the account, newest first.
pub async fn all_workers(client: &Client) -> Result<Vec<Worker>> {
    let mut workers = Vec::new();
    let mut page = PageParams::first(WORKERS_PAGE);
    loop {
        let answer = client.list_devices(&page).await?;
        workers.extend(answer.workers);
        match page.next(answer.next_cursor.as_deref()) {
            Some(next) => page = next,
            None => return Ok(workers),
        }
    }
}

/// A device's opened profile.
pub fn profile(keys: &AccountKeys, worker: &Worker) -> Result<DeviceProfile> {
    let sealed = worker
        .profile
        .as_ref()
        .ok_or_else(|| anyhow!("device {} has no profile", worker.id))?;
    DeviceProfile::open(keys, &worker.id, sealed)
        .with_context(|| format!("the profile of device {} cannot be read", worker.id))
}

/// A device's name for display, escaped (the device chose it): `(no name)`
/// or `(unreadable)` when there is none to show.
pub fn device_name(keys: &AccountKeys, worker: &Worker) -> String {
    match profile(keys, worker) {
        Ok(profile) if profile.name.is_empty() => "(no name)".to_owned(),
        Ok(profile) => escape::line(&profile.name).into_owned(),
        Err(_) => "(unreadable)".to_owned(),
    }
}

/// An address's label for display: `-` without one, `(unreadable)` when it
/// does not open.
pub fn inbox_label(keys: &AccountKeys, inbox: &Inbox) -> String {
    match &inbox.meta {
        None => "-".to_owned(),
        Some(meta) => match sealing::open_label(keys, &inbox.id, meta) {
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
    worker_id: &DeviceId,
) -> Result<usize> {
    let worker = client.get_device(worker_id).await?;
    let device_key = profile(keys, &worker)?.device_public_key().ok_or_else(|| {
        anyhow!("the profile of device {worker_id} holds no device key; pair the device again")
    })?;
    let assigned: Vec<AddressId> = client
        .list_addresses()
        .await?
        .inboxes
        .into_iter()
        .filter(|inbox| inbox.assigned_worker_id.as_ref() == Some(worker_id))
        .map(|inbox| inbox.id)
        .collect();
    let bundle = KeyBundle::for_addresses(keys, &assigned);
    client
        .set_device_keys(worker_id, &bundle.seal(&device_key, worker_id))
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
        let inboxes: Vec<Inbox> = serde_json::from_value(serde_json::json!([{
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
        assert_eq!(find_inbox(&inboxes, " Shop.X1@mail.example ").unwrap(), id);
        assert_eq!(find_inbox(&inboxes, "ibx_abcdefghijklmnop").unwrap(), id);
        let err = find_inbox(&inboxes, "other@mail.example")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no address other@mail.example"), "{err}");
        assert!(err.contains("sealpost inbox list"), "{err}");
        let err = find_inbox(&inboxes, "nonsense").unwrap_err().to_string();
        assert!(err.contains("not an address id"), "{err}");
    }
}
