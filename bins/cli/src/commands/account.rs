//! `init`, `login`, `whoami`, `logout`.

use anyhow::{Context, Result, bail};
use sealpost_client::types::SignedIn;
use sealpost_client::{Client, ClientError};
use sealpost_seal::RecoveryPhrase;

use super::{Ctx, now, relative};
use crate::phrase;
use crate::state::StoredSession;

/// Creates an account with a fresh phrase, shows the phrase once, stores the
/// session.
pub async fn init(ctx: &Ctx) -> Result<()> {
    if let Some(existing) = ctx.state.load_session()? {
        bail!(
            "already signed in as {}; run `sealpost logout` first to create another account",
            existing.account_id
        );
    }
    let api_url = ctx.api_url();
    let client = Client::new(&api_url)?;
    let phrase = RecoveryPhrase::generate();
    let keys = phrase.keys();
    let signed_in = client
        .register(&keys)
        .await
        .context("cannot create the account")?;

    // The account exists now: show the phrase before anything else can fail.
    outln!("Account created: {}", signed_in.account.id);
    outln!();
    outln!("Your recovery phrase (shown only this once; it is never stored or sent):");
    outln!();
    outln!("    {}", phrase.words().as_str());
    outln!();
    outln!("Write it down and keep it somewhere safe. It is the only way to sign in");
    outln!("and to read your mail. Nobody, not even Sealpost, can recover or reset it.");
    outln!();

    store(ctx, &api_url, &signed_in)?;
    outln!(
        "Signed in; the session expires {} ({}).",
        signed_in.expires_at,
        relative(signed_in.expires_at, now())
    );
    Ok(())
}

/// Signs in with a phrase and stores the session, replacing (and revoking)
/// any stored one.
pub async fn login(ctx: &Ctx) -> Result<()> {
    let keys = phrase::read_from_process()?.keys();
    let api_url = ctx.api_url();
    let client = Client::new(&api_url)?;
    let signed_in = client.sign_in(&keys).await.map_err(|e| match e {
        ClientError::Api { status: 401, .. } => anyhow::Error::new(e)
            .context("sign-in refused: wrong recovery phrase, or no account with it"),
        other => anyhow::Error::new(other).context("cannot sign in"),
    })?;

    // The CLI keeps one session; the previous token would be lost, so end it.
    if let Ok(Some(previous)) = ctx.state.load_session()
        && let Ok(old) = Client::new(&previous.api_url)
    {
        let _ = old.with_token(previous.token).sign_out().await;
    }
    store(ctx, &api_url, &signed_in)?;
    outln!(
        "Signed in as {} ({} plan); the session expires {} ({}).",
        signed_in.account.id,
        signed_in.account.plan.name,
        signed_in.expires_at,
        relative(signed_in.expires_at, now())
    );
    Ok(())
}

/// Shows the account, its plan and the session's expiry.
pub async fn whoami(ctx: &Ctx) -> Result<()> {
    let (session, client) = ctx.signed_in()?;
    let me = client.me().await?;
    outln!("Account  {}", me.account.id);
    outln!("Plan     {} ({})", me.account.plan.name, me.account.plan.id);
    outln!(
        "Session  expires {} ({})",
        session.expires_at,
        relative(session.expires_at, now())
    );
    outln!("Server   {}", session.api_url);
    Ok(())
}

/// Ends the session on the service and deletes the stored one. A session
/// the service no longer knows (401) is simply forgotten; on any other
/// failure the file is kept so that `logout` can be tried again.
pub async fn logout(ctx: &Ctx) -> Result<()> {
    if ctx.state.load_session()?.is_none() {
        outln!("Not signed in.");
        return Ok(());
    }
    let (_, client) = ctx.signed_in()?;
    let ended_here = match client.sign_out().await {
        Ok(()) => true,
        Err(ClientError::Api { status: 401, .. }) => false,
        Err(e) => return Err(anyhow::Error::new(e).context("cannot sign out")),
    };
    ctx.state.delete_session()?;
    if ended_here {
        outln!("Signed out.");
    } else {
        outln!("The session had already ended; removed it.");
    }
    Ok(())
}

fn store(ctx: &Ctx, api_url: &str, signed_in: &SignedIn) -> Result<()> {
    ctx.state
        .save_session(&StoredSession {
            api_url: api_url.to_owned(),
            account_id: signed_in.account.id.clone(),
            token: signed_in.token.clone(),
            expires_at: signed_in.expires_at,
        })
        .context("signed in, but the session could not be stored")
}
