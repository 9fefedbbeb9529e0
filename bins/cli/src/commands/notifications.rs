//! `notifications show`, `notifications set KIND on|off`,
//! `notifications mute|unmute ADDRESS`.

use anyhow::{Result, bail};
use sealpost_client::notifications::{NotificationPreferences, UpdatePreferencesRequest};

use super::Ctx;
use super::vault::resolve_address;
use crate::escape;

/// The kinds, as the CLI names them and as the API does.
const KINDS: [(&str, &str); 7] = [
    ("new-mail", "newMail"),
    ("device-paired", "devicePaired"),
    ("device-offline", "deviceOffline"),
    ("new-sign-in", "newSignIn"),
    ("billing", "billing"),
    ("support", "support"),
    ("webhook-failures", "webhookFailures"),
];

fn switch(preferences: &NotificationPreferences, key: &str) -> bool {
    match key {
        "newMail" => preferences.new_mail,
        "devicePaired" => preferences.device_paired,
        "deviceOffline" => preferences.device_offline,
        "newSignIn" => preferences.new_sign_in,
        "billing" => preferences.billing,
        "support" => preferences.support,
        _ => preferences.webhook_failures,
    }
}

/// A kind by its CLI name (`new-mail`) or API key (`newMail`), any case.
fn kind(text: &str) -> Result<&'static str> {
    let wanted = text.trim().to_ascii_lowercase().replace('_', "-");
    KINDS
        .iter()
        .find(|(cli, api)| *cli == wanted || api.to_ascii_lowercase() == wanted)
        .map(|(_, api)| *api)
        .ok_or_else(|| {
            let names: Vec<&str> = KINDS.iter().map(|(cli, _)| *cli).collect();
            anyhow::anyhow!(
                "{} is not a notification kind; one of {}",
                escape::line(text),
                names.join(", ")
            )
        })
}

fn update(key: &str, on: bool) -> UpdatePreferencesRequest {
    let mut update = UpdatePreferencesRequest::default();
    let slot = match key {
        "newMail" => &mut update.new_mail,
        "devicePaired" => &mut update.device_paired,
        "deviceOffline" => &mut update.device_offline,
        "newSignIn" => &mut update.new_sign_in,
        "billing" => &mut update.billing,
        "support" => &mut update.support,
        _ => &mut update.webhook_failures,
    };
    *slot = Some(on);
    update
}

/// Each kind on or off, then the muted addresses by email address.
pub async fn show(ctx: &Ctx) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    let settings = client.notification_settings().await?;
    for (cli, api) in KINDS {
        let on = switch(&settings.preferences, api);
        outln!("{cli:<18} {}", if on { "on" } else { "off" });
    }
    if settings.muted_addresses.is_empty() {
        outln!("Muted addresses: none");
        return Ok(());
    }
    let addresses = client.list_addresses().await?.addresses;
    outln!("Muted addresses (no new-mail pushes):");
    for id in &settings.muted_addresses {
        let address = addresses
            .iter()
            .find(|address| &address.id == id)
            .map(|address| escape::line(&address.email_address).into_owned())
            .unwrap_or_default();
        outln!("  {id}  {address}");
    }
    Ok(())
}

/// Switches one kind on or off.
pub async fn set(ctx: &Ctx, kind_name: &str, state: &str) -> Result<()> {
    let key = kind(kind_name)?;
    let on = match state.trim().to_ascii_lowercase().as_str() {
        "on" => true,
        "off" => false,
        _ => bail!("{} is neither on nor off", escape::line(state)),
    };
    let (_, client) = ctx.signed_in()?;
    let settings = client
        .update_notification_preferences(&update(key, on))
        .await?;
    let now_on = switch(&settings.preferences, key);
    let cli = KINDS
        .iter()
        .find(|(_, api)| *api == key)
        .map_or(key, |(cli, _)| *cli);
    outln!(
        "{cli} notifications are {}.",
        if now_on { "on" } else { "off" }
    );
    Ok(())
}

/// Mutes or unmutes new-mail pushes for one address (id or email address).
pub async fn mute(ctx: &Ctx, address: &str, muted: bool) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    let id = resolve_address(&client, address).await?;
    let mute = client.mute_address(&id, muted).await?;
    if mute.muted {
        outln!("New mail to {} is no longer pushed.", mute.address_id);
    } else {
        outln!("New mail to {} is pushed again.", mute.address_id);
    }
    Ok(())
}
