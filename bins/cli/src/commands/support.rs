//! `sealpost support ...` and `sealpost report-abuse`: the account's side
//! of support. Tickets are sealed here, with the SDK's support helpers, to
//! the service's current support key and to the account's vault key, so the
//! service stores nothing it can read; the recovery phrase opens them again.

use anyhow::{Context, Result, anyhow, bail};
use sealpost_client::support::{self, AbuseReportRequest, Ticket, TicketHeader};
use sealpost_client::{Client, ClientError};
use sealpost_kernel::TicketId;
use sealpost_seal::{AccountKeys, b64};

use super::{Ctx, vault};
use crate::cli::TextArgs;
use crate::escape;

fn parse_ticket(text: &str) -> Result<TicketId> {
    TicketId::parse(text.trim())
        .with_context(|| format!("{} is not a ticket id (tkt_...)", escape::line(text)))
}

fn text_of(body: TextArgs) -> Result<String> {
    match (body.text, body.text_file) {
        (Some(text), _) => Ok(text),
        (None, Some(path)) => super::mail::read_body(&path),
        (None, None) => bail!("give the text with --text or --text-file"),
    }
}

/// The support key to seal to: the service's current one.
async fn support_key(client: &Client) -> Result<[u8; 32]> {
    let overview = client.support().await?;
    match (overview.available, overview.staff_key) {
        (true, Some(key)) => b64::decode_32(&key).context("the service's support key is malformed"),
        _ => bail!("in-app support is unavailable on this service right now; nothing was sent"),
    }
}

/// A 409 `staff_key_changed` in words a person can act on.
fn explain_key_change(err: ClientError) -> anyhow::Error {
    if err.code() == "staff_key_changed" {
        anyhow!("the support key changed while this was sealed; run the command again")
    } else {
        err.into()
    }
}

/// The subject, decrypted with the account's key (or why not).
fn subject(keys: &AccountKeys, ticket: &Ticket) -> String {
    support::open_header(&keys.vault_secret(), &ticket.id, &ticket.header).map_or_else(
        |_| "(does not open with this phrase)".to_owned(),
        |header| escape::line(&header.subject).into_owned(),
    )
}

/// `support list`.
pub async fn list(ctx: &Ctx) -> Result<()> {
    let (session, client) = ctx.signed_in()?;
    let overview = client.support().await?;
    if !overview.available {
        outln!("In-app support is unavailable on this service right now.");
    }
    if overview.tickets.is_empty() {
        outln!("No tickets. `sealpost support open --subject ... --text ...` opens one.");
        return Ok(());
    }
    let keys = vault::unlock(&session)?;
    for ticket in &overview.tickets {
        outln!(
            "{}  {:<8}  last: {:<7}  {}{}  {}",
            ticket.id,
            ticket.status.as_str(),
            ticket.last_author.as_str(),
            ticket.updated_at,
            if ticket.unread {
                "  (unread reply)"
            } else {
                ""
            },
            subject(&keys, ticket)
        );
    }
    Ok(())
}

/// `support open`.
pub async fn open(
    ctx: &Ctx,
    subject: &str,
    category: &str,
    priority: &str,
    body: TextArgs,
) -> Result<()> {
    let text = text_of(body)?;
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let staff_key = support_key(&client).await?;
    // The binding lets staff check that this key is the account's own.
    client
        .bind_support_key(&support::key_binding(&keys, &staff_key))
        .await
        .map_err(explain_key_change)?;
    let sealed = support::seal_new_ticket(
        &keys,
        &staff_key,
        &TicketHeader::new(category, priority, subject),
        &text,
    );
    client
        .create_ticket(&sealed.request)
        .await
        .map_err(explain_key_change)?;
    outln!("Opened {}.", sealed.ticket_id);
    outln!(
        "Support's answer arrives as a push and in `sealpost support show {}`.",
        sealed.ticket_id
    );
    Ok(())
}

/// `support show`.
pub async fn show(ctx: &Ctx, id: &str) -> Result<()> {
    let id = parse_ticket(id)?;
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let detail = client.get_ticket(&id).await?;
    let ticket = &detail.ticket;
    outln!("Ticket {}: {}", ticket.id, ticket.status.as_str());
    match support::open_header(&keys.vault_secret(), &id, &ticket.header) {
        Ok(header) => {
            outln!("Category: {}", escape::line(&header.category));
            outln!("Priority: {}", escape::line(&header.priority));
            outln!("Subject: {}", escape::line(&header.subject));
        }
        Err(err) => outln!("Header: (does not open: {err})"),
    }
    for message in &detail.messages {
        outln!();
        outln!(
            "--- {} from {} at {}",
            message.id,
            message.author.as_str(),
            message.at
        );
        match support::open_message(&keys.vault_secret(), &id, &message.id, &message.sealed) {
            Ok(text) => outln!("{}", escape::block(&text)),
            Err(err) => outln!("(does not open: {err})"),
        }
    }
    Ok(())
}

/// `support reply`.
pub async fn reply(ctx: &Ctx, id: &str, body: TextArgs) -> Result<()> {
    let id = parse_ticket(id)?;
    let text = text_of(body)?;
    let (session, client) = ctx.signed_in()?;
    let keys = vault::unlock(&session)?;
    let staff_key = support_key(&client).await?;
    let request = support::seal_message(&staff_key, &keys.vault_public_key(), &id, &text);
    client
        .add_ticket_message(&id, &request)
        .await
        .map_err(explain_key_change)?;
    outln!("Added {} to {id}.", request.id);
    Ok(())
}

/// `support close` and `support reopen`.
pub async fn set_open(ctx: &Ctx, id: &str, open: bool) -> Result<()> {
    let id = parse_ticket(id)?;
    let (_, client) = ctx.signed_in()?;
    let ticket = if open {
        client.reopen_ticket(&id).await?
    } else {
        client.close_ticket(&id).await?
    };
    outln!("{} is {}.", ticket.id, ticket.status.as_str());
    Ok(())
}

/// `report-abuse`: no account needed.
pub async fn report_abuse(ctx: &Ctx, report: AbuseReportRequest) -> Result<()> {
    ctx.public_client()?.report_abuse(&report).await?;
    outln!("Report received; the service's staff review every report.");
    Ok(())
}
