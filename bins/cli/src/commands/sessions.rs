//! `sessions`, `sessions revoke ID`, `sessions --others`.

use anyhow::{Context, Result};
use sealpost_kernel::SessionId;

use super::{Ctx, now, relative};

/// Lists the live sessions, oldest first, the current one marked `*`.
pub async fn list(ctx: &Ctx) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    let mut sessions = client.sessions().await?.sessions;
    sessions.sort_by_key(|s| s.created_at);
    let now = now();
    for s in &sessions {
        outln!(
            "{} {}  created {}  expires {} ({}){}",
            if s.current { '*' } else { ' ' },
            s.id,
            s.created_at,
            s.expires_at,
            relative(s.expires_at, now),
            if s.current { "  (current)" } else { "" }
        );
    }
    Ok(())
}

/// Revokes one session.
pub async fn revoke(ctx: &Ctx, id: &str) -> Result<()> {
    let id = SessionId::parse(id.trim())
        .with_context(|| format!("{id:?} is not a session id (ses_...)"))?;
    let (_, client) = ctx.signed_in()?;
    client.revoke_session(&id).await?;
    outln!("Revoked {id}.");
    Ok(())
}

/// Revokes every session but the current one.
pub async fn revoke_others(ctx: &Ctx) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    let count = client.revoke_other_sessions().await?;
    let plural = if count == 1 { "" } else { "s" };
    outln!("Revoked {count} other session{plural}.");
    Ok(())
}
