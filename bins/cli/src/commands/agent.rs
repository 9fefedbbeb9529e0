//! `agent pair`, `agent status`, `agent keys`: this machine as an agent (or,
//! with `agent pair --kind device`, a device).

use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use sealpost_client::sealing::{self, KeyBundle};
use sealpost_client::types::{DeviceKind, PairingState, Platform};
use sealpost_client::{Client, ClientError};
use sealpost_kernel::{DeviceId, Timestamp};
use sealpost_seal::{PublicKey, StaticSecret, b64, random_bytes};
use tokio::signal::unix::{SignalKind, signal};

use super::vault::addresses;
use super::{Ctx, active_ago, now};
use crate::escape;
use crate::state::DeviceState;

/// How often a waiting device polls its pairing session.
const POLL_EVERY: Duration = Duration::from_secs(2);

/// The name a device reports when `--name` is not given.
fn default_name() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "sealpost agent".to_owned())
}

/// `12345678` as `1234 5678`.
fn spaced(code: &str) -> String {
    if code.len() == 8 && code.is_ascii() {
        format!("{} {}", &code[..4], &code[4..])
    } else {
        code.to_owned()
    }
}

/// A failure worth polling again after: the network, a rate limit, the
/// service's side.
pub(super) fn is_transient(err: &ClientError) -> bool {
    match err {
        ClientError::Transport(_) => true,
        ClientError::Api { status, .. } => *status == 429 || *status >= 500,
        ClientError::Decode(_) => false,
    }
}

/// Opens a pairing session of `kind` (`agent` or `device`) with a new
/// X25519 key, shows the code, waits for the operator's claim and stores
/// the credential. Ctrl-C cancels the session.
pub async fn pair(
    ctx: &Ctx,
    name: Option<String>,
    platform: &str,
    kind: &str,
    force: bool,
) -> Result<()> {
    if !force && let Some(existing) = ctx.state.load_device()? {
        bail!(
            "this machine is already paired as {} with {}; `sealpost agent pair --force` pairs it again and discards that credential",
            existing.device_id,
            existing.api_url
        );
    }
    let api_url = ctx.api_url();
    let client = Client::new(&api_url)?;
    let secret = random_bytes::<32>();
    let public = PublicKey::from(&StaticSecret::from(secret)).to_bytes();
    let name = name.unwrap_or_else(default_name);
    // Listening from before the code is shown, so no Ctrl-C goes unhandled.
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot watch for Ctrl-C")?;
    let kind = DeviceKind::from(kind);
    let opened = client
        .open_pairing_as(kind.clone(), Platform::from(platform), &name, &public)
        .await
        .context("cannot open a pairing session")?;

    outln!();
    outln!("    Pairing code:  {}", spaced(&opened.code));
    outln!();
    outln!("On the operator's machine, run:");
    outln!("    sealpost device pair {}", opened.code);
    outln!(
        "Fingerprint  {}  (the operator sees the same)",
        sealing::key_fingerprint(&public)
    );
    outln!("Waiting for the operator; Ctrl-C cancels.");

    let (device_id, credential) = tokio::select! {
        claimed = wait_for_claim(&client, &opened.token) => claimed?,
        _ = interrupt.recv() => {
            return Err(match client.cancel_pairing(&opened.token).await {
                Ok(()) => anyhow!("pairing cancelled"),
                Err(e) if e.status() == Some(409) => anyhow!(
                    "pairing interrupted after the operator claimed this device; \
                     remove it with `sealpost device remove` and pair again"
                ),
                Err(e) => anyhow::Error::new(e).context("pairing interrupted; the session could not be cancelled"),
            });
        }
    };

    ctx.state
        .save_device(&DeviceState {
            api_url,
            device_id: device_id.clone(),
            credential,
            secret_key: b64::encode(&secret),
        })
        .context(
            "paired, but the credential could not be stored; remove the device and pair again",
        )?;
    match kind {
        DeviceKind::Agent => outln!("Paired as agent {device_id}."),
        _ => outln!("Paired as {device_id}."),
    }
    outln!(
        "The credential is stored in {}.",
        ctx.state.device_path().display()
    );
    Ok(())
}

/// Polls every two seconds until the claim hands the credential over.
async fn wait_for_claim(client: &Client, token: &str) -> Result<(DeviceId, String)> {
    let mut detected = false;
    loop {
        tokio::time::sleep(POLL_EVERY).await;
        let poll = match client.poll_pairing(token).await {
            Ok(poll) => poll,
            Err(e) if is_transient(&e) => continue,
            Err(e) if e.status() == Some(404) => {
                return Err(anyhow::Error::new(e).context("the pairing session is gone"));
            }
            Err(e) => return Err(e.into()),
        };
        if let (Some(device_id), Some(credential)) = (poll.device_id, poll.credential) {
            return Ok((device_id, credential));
        }
        match poll.state {
            PairingState::OperatorDetected if !detected => {
                outln!("The operator found this device; waiting for the claim.");
                detected = true;
            }
            PairingState::AwaitingAddress | PairingState::AddressAssigned => {
                bail!("the session was claimed, but its credential was already collected");
            }
            _ => {}
        }
    }
}

/// Reports the device active, then shows it as the service sees it.
pub async fn status(ctx: &Ctx) -> Result<()> {
    let (device, client) = ctx.device()?;
    client.heartbeat().await?;
    let seen = client.get_device(&device.device_id).await?;
    outln!("Device       {}", seen.id);
    outln!("Kind         {}", escape::line(seen.kind.as_str()));
    outln!("Status       {}", seen.status);
    outln!("Platform     {}", escape::line(seen.platform.as_str()));
    outln!("Paired       {}", seen.created_at);
    if let Some(at) = seen.last_active_at {
        outln!("Last active  {}", active_ago(at, now()));
    }
    if let Some(at) = seen.paused_at {
        outln!("Paused       since {at}");
    }
    outln!("Server       {}", device.api_url);
    Ok(())
}

/// This device's key bundle, opened with its pairing secret, and when the
/// operator sent it; `None` while the operator has sent none.
pub(super) async fn open_key_bundle(
    ctx: &Ctx,
    device: &DeviceState,
    client: &Client,
) -> Result<Option<(KeyBundle, Timestamp)>> {
    let secret = b64::decode_32(&device.secret_key).map_err(|_| {
        anyhow!(
            "{} is damaged (secretKey); pair again with `sealpost agent pair --force`",
            ctx.state.device_path().display()
        )
    })?;
    let sealed = match client.get_device_keys(&device.device_id).await {
        Ok(keys) => keys,
        Err(e) if e.status() == Some(404) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let bundle = KeyBundle::open(&StaticSecret::from(secret), &device.device_id, &sealed.keys)
        .context("the key bundle cannot be opened with this device's key")?;
    Ok(Some((bundle, sealed.updated_at)))
}

/// Opens the key bundle and lists the addresses it holds keys for, checked
/// against the addresses the service says this device holds.
pub async fn keys(ctx: &Ctx) -> Result<()> {
    let (device, client) = ctx.device()?;
    let Some((bundle, sent_at)) = open_key_bundle(ctx, &device, &client).await? else {
        outln!("No key bundle yet: the operator has not sent one.");
        return Ok(());
    };
    let assigned = client.list_addresses().await?.addresses;
    let colon = if bundle.addresses.is_empty() {
        "."
    } else {
        ":"
    };
    outln!(
        "Keys of {} (bundle sent {sent_at}){colon}",
        addresses(bundle.addresses.len()),
    );
    for entry in &bundle.addresses {
        let note = match assigned
            .iter()
            .find(|address| address.id == entry.address_id)
        {
            None => "(not assigned to this device)".to_owned(),
            Some(address) if address.public_key.is_none() => format!(
                "{}  (has no public key: refuses mail)",
                escape::line(&address.email_address)
            ),
            Some(address) if address.public_key != Some(entry.public_key()) => {
                format!(
                    "{}  (KEY MISMATCH: mail to it cannot be read)",
                    escape::line(&address.email_address)
                )
            }
            Some(address) => escape::line(&address.email_address).into_owned(),
        };
        outln!("{}  epoch {}  {note}", entry.address_id, entry.epoch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_shown_in_two_groups() {
        assert_eq!(spaced("12345678"), "1234 5678");
        assert_eq!(spaced("123"), "123");
    }

    #[test]
    fn only_passing_failures_are_retried() {
        let api = |status: u16| ClientError::Api {
            status,
            code: String::new(),
            message: String::new(),
            retry_after: None,
        };
        assert!(is_transient(&api(429)));
        assert!(is_transient(&api(503)));
        assert!(!is_transient(&api(404)));
        assert!(!is_transient(&api(401)));
    }
}
