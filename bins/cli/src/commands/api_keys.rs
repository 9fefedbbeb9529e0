//! `api-key create`, `api-key list`, `api-key revoke`.

use anyhow::{Context, Result};
use sealpost_client::api_keys::seal_label;
use sealpost_client::sealing;
use sealpost_kernel::ApiKeyId;
use sealpost_seal::context;

use super::{Ctx, vault};
use crate::table::{Align, Table};
use crate::{escape, output};

/// Creates a key with a sealed label; prints its token, once.
pub async fn create(ctx: &Ctx, label: &str) -> Result<()> {
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let id = sealing::new_api_key_id();
    let created = client
        .create_api_key(&id, &seal_label(&keys, &id, label))
        .await?;
    outln!("Created {}: {}", created.api_key.id, escape::line(label));
    outln!("Token (shown once; keep it secret, revoke it with `sealpost api-key revoke`):");
    outln!("{}", created.token);
    Ok(())
}

/// Lists the keys, oldest first, never their tokens.
pub async fn list(ctx: &Ctx) -> Result<()> {
    let (session, client) = ctx.signed_in()?;
    let keys = client.api_keys().await?;
    if keys.is_empty() {
        outln!("No API keys. Create one with `sealpost api-key create --label TEXT`.");
        return Ok(());
    }
    let vault = vault::unlock(&session)?;
    let mut table = Table::new(&[
        ("ID", Align::Left),
        ("LABEL", Align::Left),
        ("CREATED", Align::Left),
        ("LAST USED", Align::Left),
        ("STATUS", Align::Left),
    ]);
    for key in &keys {
        let label = key
            .label
            .open(
                &vault.vault_secret(),
                &context::api_key_label(key.id.as_str()),
            )
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .map_or_else(
                || "(unreadable)".to_owned(),
                |text| escape::line(&text).into_owned(),
            );
        table.row(vec![
            key.id.to_string(),
            label,
            key.created_at.to_string(),
            key.last_used_at
                .map_or_else(|| "never".to_owned(), |at| at.to_string()),
            if key.paused { "paused" } else { "active" }.to_owned(),
        ]);
    }
    output::stdout_fmt(format_args!("{}", table.render()));
    Ok(())
}

/// Revokes one key.
pub async fn revoke(ctx: &Ctx, id: &str) -> Result<()> {
    let id = ApiKeyId::parse(id.trim())
        .with_context(|| format!("{id:?} is not an API key id (key_...)"))?;
    let (_, client) = ctx.signed_in()?;
    client.revoke_api_key(&id).await?;
    outln!("Revoked {id}; its token no longer works.");
    Ok(())
}
