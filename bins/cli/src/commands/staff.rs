//! `sealpost staff ...`: the support team's side. The support key pairs
//! live in a keyring file on this machine (never sent to the service);
//! the staff token comes from `SEALPOST_STAFF_TOKEN`. Tickets are opened
//! and replies sealed with the SDK's support helpers, so both sides follow
//! one convention.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use sealpost_client::Client;
use sealpost_client::support::{self, StaffTicket, SwitchesRequest};
use sealpost_kernel::TicketId;
use sealpost_seal::{PublicKey, StaticSecret, b64, random_bytes};

use super::{Ctx, now};
use crate::cli::StaffListStatus;
use crate::escape;
use crate::state::{StaffKeyFile, StaffKeyPair, StaffKeyring};
use crate::table::{Align, Table};

const TOKEN_VAR: &str = "SEALPOST_STAFF_TOKEN";

/// The keyring named by `--key-file` / `SEALPOST_STAFF_KEY_FILE`, else the
/// one in the configuration directory.
pub fn key_file(ctx: &Ctx, explicit: Option<&Path>) -> Result<StaffKeyFile> {
    match explicit {
        Some(path) => StaffKeyFile::at(path),
        None => Ok(ctx.state.staff_key_file()),
    }
}

/// The staff token from the environment, if set.
fn staff_token() -> Option<String> {
    std::env::var(TOKEN_VAR)
        .ok()
        .map(|token| token.trim().to_owned())
        .filter(|token| !token.is_empty())
}

/// A client holding the staff token, talking to `--api-url` (or the
/// default).
fn staff_client(ctx: &Ctx) -> Result<Client> {
    let token = staff_token().ok_or_else(|| {
        anyhow!(
            "set {TOKEN_VAR} to a staff token (an operator makes one with \
             `sealpost-api staff-token create NAME`)"
        )
    })?;
    Ok(Client::new(ctx.api_url())?.with_token(token))
}

fn load_keyring(file: &StaffKeyFile) -> Result<StaffKeyring> {
    match file.load()? {
        Some(keyring) if !keyring.keys.is_empty() => Ok(keyring),
        _ => bail!(
            "no support keys in {}; `sealpost staff key init` makes the first pair \
             (or point --key-file / SEALPOST_STAFF_KEY_FILE at the team's keyring)",
            file.path().display()
        ),
    }
}

/// The secret of the pair whose public key is `public` (base64url), if
/// the keyring holds it.
fn secret_for(keyring: &StaffKeyring, public: &str) -> Option<StaticSecret> {
    let wanted = b64::decode_32(public).ok()?;
    keyring
        .keys
        .iter()
        .filter(|pair| b64::decode_32(&pair.public_key).ok() == Some(wanted))
        .find_map(|pair| b64::decode_32(&pair.secret_key).ok())
        .map(StaticSecret::from)
}

/// A new key pair and its public key.
fn new_pair() -> (StaffKeyPair, [u8; 32]) {
    let secret = random_bytes::<32>();
    let public = PublicKey::from(&StaticSecret::from(secret)).to_bytes();
    let pair = StaffKeyPair {
        public_key: b64::encode(&public),
        secret_key: b64::encode(&secret),
        created_at: now(),
    };
    (pair, public)
}

fn parse_ticket(text: &str) -> Result<TicketId> {
    TicketId::parse(text.trim())
        .with_context(|| format!("{} is not a ticket id (tkt_...)", escape::line(text)))
}

/// `staff key init`.
pub fn key_init(file: &StaffKeyFile) -> Result<()> {
    if file.load()?.is_some_and(|keyring| !keyring.keys.is_empty()) {
        bail!(
            "{} already holds support keys; `sealpost staff key rotate` adds a new pair",
            file.path().display()
        );
    }
    let (pair, _) = new_pair();
    let public = pair.public_key.clone();
    file.save(&StaffKeyring { keys: vec![pair] })?;
    outln!(
        "Support key pair made; the private key is in {}.",
        file.path().display()
    );
    outln!("Public key: {public}");
    outln!("Set SEALPOST_SUPPORT_KEY={public} on the service. Keep a backup of the keyring:");
    outln!("without it no ticket sealed to this key can be read.");
    Ok(())
}

/// `staff key show`.
pub async fn key_show(ctx: &Ctx, file: &StaffKeyFile) -> Result<()> {
    let keyring = load_keyring(file)?;
    let current = match staff_token() {
        Some(_) => staff_client(ctx)?.switches().await?.staff_key,
        None => None,
    };
    let current = current.and_then(|key| b64::decode_32(&key).ok());
    let newest = keyring.keys.len() - 1;
    let mut table = Table::new(&[("PUBLIC KEY", Align::Left), ("CREATED", Align::Left)]);
    for (index, pair) in keyring.keys.iter().enumerate() {
        let mut notes = Vec::new();
        if index == newest {
            notes.push("newest");
        }
        if current.is_some() && b64::decode_32(&pair.public_key).ok() == current {
            notes.push("the service's current key");
        }
        let key = if notes.is_empty() {
            pair.public_key.clone()
        } else {
            format!("{} ({})", pair.public_key, notes.join(", "))
        };
        table.row(vec![key, pair.created_at.to_string()]);
    }
    crate::output::stdout_fmt(format_args!("{}", table.render()));
    Ok(())
}

/// `staff key rotate`: the new pair is stored before it is published, so a
/// published key always has its secret here; old pairs stay. The service
/// takes it only with a proof by the key in force, whose secret the
/// keyring must hold.
pub async fn key_rotate(ctx: &Ctx, file: &StaffKeyFile) -> Result<()> {
    let mut keyring = load_keyring(file)?;
    let client = staff_client(ctx)?;
    let challenge = client.support_key_challenge().await?;
    let Some(current) = challenge.staff_key.as_deref() else {
        bail!(
            "the service has no support key to rotate from; an operator sets the first one \
             as SEALPOST_SUPPORT_KEY (`sealpost staff key init` prints it)"
        );
    };
    let Some(current_secret) = secret_for(&keyring, current) else {
        bail!(
            "{} does not hold the secret of the service's current support key {current}; \
             only its holder can rotate it",
            file.path().display()
        );
    };
    let (pair, public) = new_pair();
    keyring.keys.push(pair);
    file.save(&keyring)?;
    client
        .rotate_support_key(&public, &challenge, &current_secret)
        .await
        .with_context(|| {
            format!(
                "the new key is kept in {} but was not published",
                file.path().display()
            )
        })?;
    outln!("New support key: {}", b64::encode(&public));
    outln!(
        "The {} older key(s) stay in {}: tickets sealed to them stay readable.",
        keyring.keys.len() - 1,
        file.path().display()
    );
    outln!("New tickets and messages must be sealed to the new key.");
    Ok(())
}

/// What the check of a ticket's binding found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Binding {
    Verified,
    Mismatch,
    Missing,
    /// Sealed to a support key this keyring does not hold.
    UnknownKey,
}

impl Binding {
    fn of(keyring: &StaffKeyring, ticket: &StaffTicket) -> Self {
        if ticket.binding.is_none() {
            return Self::Missing;
        }
        match secret_for(keyring, &ticket.staff_key) {
            None => Self::UnknownKey,
            Some(secret) if support::verify_ticket_binding(&secret, ticket) => Self::Verified,
            Some(_) => Self::Mismatch,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Self::Verified => "ok",
            Self::Mismatch => "MISMATCH",
            Self::Missing => "none",
            Self::UnknownKey => "unknown key",
        }
    }
}

const MISMATCH_WARNING: &str = "the account did not bind this account key to the support key: \
     it may not be the account's key (the service or someone in between may have replaced it)";

fn list_filter(status: StaffListStatus) -> Option<&'static str> {
    match status {
        StaffListStatus::Open => Some("open"),
        StaffListStatus::Resolved => Some("resolved"),
        StaffListStatus::All => None,
    }
}

/// The ticket's header opened with the key it was sealed to.
fn open_header(keyring: &StaffKeyring, ticket: &StaffTicket) -> Result<support::TicketHeader> {
    let secret = secret_for(keyring, &ticket.staff_key).ok_or_else(|| {
        anyhow!(
            "sealed to the support key {}, which is not in the keyring",
            ticket.staff_key
        )
    })?;
    support::open_header(&secret, &ticket.ticket.id, &ticket.ticket.header)
        .context("the header does not open")
}

/// `staff tickets`.
pub async fn tickets(ctx: &Ctx, file: &StaffKeyFile, status: StaffListStatus) -> Result<()> {
    let keyring = load_keyring(file)?;
    let client = staff_client(ctx)?;
    // Every page: the list is read whole, as one table.
    let mut tickets = Vec::new();
    let mut cursor = None;
    loop {
        let page = client
            .staff_tickets(list_filter(status), cursor.as_deref())
            .await?;
        tickets.extend(page.tickets);
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    if tickets.is_empty() {
        outln!("No tickets.");
        return Ok(());
    }
    let mut table = Table::new(&[
        ("ID", Align::Left),
        ("STATUS", Align::Left),
        ("LAST", Align::Left),
        ("UPDATED", Align::Left),
        ("ACCOUNT", Align::Left),
        ("BINDING", Align::Left),
        ("PRIORITY", Align::Left),
        ("CATEGORY", Align::Left),
        ("SUBJECT", Align::Left),
    ]);
    for ticket in &tickets {
        let mut row = vec![
            ticket.ticket.id.to_string(),
            ticket.ticket.status.to_string(),
            ticket.ticket.last_author.to_string(),
            ticket.ticket.updated_at.to_string(),
            ticket.account_id.to_string(),
            Binding::of(&keyring, ticket).word().to_owned(),
        ];
        match open_header(&keyring, ticket) {
            Ok(header) => row.extend([
                escape::line(&header.priority).into_owned(),
                escape::line(&header.category).into_owned(),
                escape::line(&header.subject).into_owned(),
            ]),
            Err(err) => row.extend([String::new(), String::new(), format!("({err:#})")]),
        }
        table.row(row);
    }
    crate::output::stdout_fmt(format_args!("{}", table.render()));
    Ok(())
}

/// `staff show`.
pub async fn show(ctx: &Ctx, file: &StaffKeyFile, id: &str) -> Result<()> {
    let id = parse_ticket(id)?;
    let keyring = load_keyring(file)?;
    let detail = staff_client(ctx)?.staff_ticket(&id).await?;
    let ticket = &detail.ticket;
    outln!(
        "Ticket {id} ({}, last message by {})",
        ticket.ticket.status,
        ticket.ticket.last_author
    );
    outln!("Account: {}", ticket.account_id);
    match &ticket.ticket.closed_at {
        Some(closed) => outln!(
            "Opened {}, updated {}, closed {closed}",
            ticket.ticket.created_at,
            ticket.ticket.updated_at
        ),
        None => outln!(
            "Opened {}, updated {}",
            ticket.ticket.created_at,
            ticket.ticket.updated_at
        ),
    }
    match open_header(&keyring, ticket) {
        Ok(header) => {
            outln!("Category: {}", escape::line(&header.category));
            outln!("Priority: {}", escape::line(&header.priority));
            outln!("Subject: {}", escape::line(&header.subject));
        }
        Err(err) => outln!("Header: ({err:#})"),
    }
    match Binding::of(&keyring, ticket) {
        Binding::Verified => outln!("Binding: ok (the account bound its key to the support key)"),
        Binding::Mismatch => outln!("Binding: MISMATCH: {MISMATCH_WARNING}"),
        Binding::Missing => outln!("Binding: none (the ticket came without one)"),
        Binding::UnknownKey => outln!("Binding: not checked (support key not in the keyring)"),
    }
    if let Some(bound) = &detail.key_binding {
        let verdict = match secret_for(&keyring, &bound.staff_key) {
            None => "not checked (support key not in the keyring)".to_owned(),
            Some(secret) if !support::verify_key_binding(&secret, &ticket.account_id, bound) => {
                "MISMATCH: the binding does not verify".to_owned()
            }
            Some(_) if bound.account_key != ticket.account_key => {
                "ok, but for another account key than this ticket's".to_owned()
            }
            Some(_) => "ok".to_owned(),
        };
        outln!("Key binding ({}): {verdict}", bound.at);
    }
    for message in &detail.messages {
        outln!();
        outln!(
            "--- {} from {} at {}",
            message.id,
            message.author,
            message.at
        );
        let text = secret_for(&keyring, &message.staff_key)
            .ok_or_else(|| anyhow!("sealed to a support key not in the keyring"))
            .and_then(|secret| {
                support::open_message(&secret, &id, &message.id, &message.sealed)
                    .context("does not open")
            });
        match text {
            Ok(text) => outln!("{}", escape::block(&text)),
            Err(err) => outln!("({err:#})"),
        }
    }
    Ok(())
}

/// `staff reply`: sealed to the service's current support key (which this
/// keyring must hold) and to the ticket's account key, once the account's
/// binding of that key checks out.
pub async fn reply(
    ctx: &Ctx,
    file: &StaffKeyFile,
    id: &str,
    text: Option<String>,
    text_file: Option<PathBuf>,
) -> Result<()> {
    let id = parse_ticket(id)?;
    let text = match (text, text_file) {
        (Some(text), _) => text,
        (None, Some(path)) => super::mail::read_body(&path)?,
        (None, None) => bail!("give the answer with --text or --text-file"),
    };
    let keyring = load_keyring(file)?;
    let client = staff_client(ctx)?;
    let current = client
        .switches()
        .await?
        .staff_key
        .ok_or_else(|| anyhow!("the service has no support key"))?;
    if secret_for(&keyring, &current).is_none() {
        bail!(
            "the service's support key {current} is not in {}; nothing was sent",
            file.path().display()
        );
    }
    let detail = client.staff_ticket(&id).await?;
    match Binding::of(&keyring, &detail.ticket) {
        Binding::Mismatch => bail!("{MISMATCH_WARNING}; nothing was sent"),
        Binding::Missing | Binding::UnknownKey => {
            errln!("warning: the ticket's account key could not be checked against a binding");
        }
        Binding::Verified => {}
    }
    let account_key = b64::decode_32(&detail.ticket.account_key)
        .context("the ticket's account key is malformed")?;
    let staff_key = b64::decode_32(&current).context("the service's support key is malformed")?;
    let request = support::seal_message(&staff_key, &account_key, &id, &text);
    client.staff_reply(&id, &request).await?;
    outln!("Replied to {id} as {}.", request.id);
    Ok(())
}

/// `staff resolve`.
pub async fn resolve(ctx: &Ctx, id: &str) -> Result<()> {
    let id = parse_ticket(id)?;
    staff_client(ctx)?.staff_resolve(&id).await?;
    outln!("Resolved {id}.");
    Ok(())
}

/// `staff abuse list`.
pub async fn abuse_list(ctx: &Ctx, status: StaffListStatus) -> Result<()> {
    let client = staff_client(ctx)?;
    let mut reports = Vec::new();
    let mut cursor = None;
    loop {
        let page = client
            .abuse_reports(list_filter(status), cursor.as_deref())
            .await?;
        reports.extend(page.reports);
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    if reports.is_empty() {
        outln!("No reports.");
        return Ok(());
    }
    for report in &reports {
        let target = report
            .email_address
            .as_deref()
            .or(report.message_id.as_deref())
            .unwrap_or("-");
        let account = report
            .account_id
            .as_ref()
            .map_or_else(|| "no account".to_owned(), ToString::to_string);
        outln!(
            "{}  {}  {}  {}  {}  {account}",
            escape::line(&report.id),
            escape::line(&report.status),
            escape::line(&report.reason),
            report.created_at,
            escape::line(target)
        );
        for (label, value) in [
            ("details", &report.details),
            ("contact", &report.contact),
            ("resolution", &report.resolution),
        ] {
            if let Some(value) = value {
                outln!("    {label}: {}", escape::line(value));
            }
        }
    }
    Ok(())
}

/// `staff abuse resolve`.
pub async fn abuse_resolve(ctx: &Ctx, id: &str, resolution: &str) -> Result<()> {
    staff_client(ctx)?
        .resolve_abuse_report(id.trim(), resolution)
        .await?;
    outln!("Resolved report {}.", escape::line(id.trim()));
    Ok(())
}

/// `staff suspend` and `staff unsuspend`.
pub async fn set_suspended(ctx: &Ctx, account: &str, suspend: bool, reason: &str) -> Result<()> {
    let body = staff_client(ctx)?
        .set_suspended(account.trim(), suspend, reason)
        .await?;
    match (body.suspended, body.since) {
        (true, Some(since)) => outln!("{} is suspended since {since}.", body.account_id),
        (true, None) => outln!("{} is suspended.", body.account_id),
        (false, _) => outln!("{} is not suspended.", body.account_id),
    }
    Ok(())
}

/// `staff switches`: changes what is given, then shows them all.
pub async fn switches(ctx: &Ctx, support: Option<&str>, new_webhooks: Option<&str>) -> Result<()> {
    let client = staff_client(ctx)?;
    let body = if support.is_none() && new_webhooks.is_none() {
        client.switches().await?
    } else {
        client
            .update_switches(&SwitchesRequest {
                support_off: support.map(|state| state == "off"),
                webhooks_paused: new_webhooks.map(|state| state == "off"),
            })
            .await?
    };
    let on_off = |off: bool| if off { "off" } else { "on" };
    outln!("Support: {}", on_off(body.support_off));
    outln!("New webhooks: {}", on_off(body.webhooks_paused));
    outln!(
        "Support key: {}",
        body.staff_key.as_deref().unwrap_or("none")
    );
    Ok(())
}

/// `staff audit`.
pub async fn audit(ctx: &Ctx, limit: u32) -> Result<()> {
    let log = staff_client(ctx)?.audit_log(limit).await?;
    let mut table = Table::new(&[
        ("AT", Align::Left),
        ("ACTOR", Align::Left),
        ("ACTION", Align::Left),
        ("TARGET", Align::Left),
        ("NOTE", Align::Left),
    ]);
    for entry in &log.entries {
        table.row(vec![
            entry.at.to_string(),
            escape::line(&entry.actor).into_owned(),
            escape::line(&entry.action).into_owned(),
            escape::line(entry.target.as_deref().unwrap_or("")).into_owned(),
            escape::line(entry.note.as_deref().unwrap_or("")).into_owned(),
        ]);
    }
    crate::output::stdout_fmt(format_args!("{}", table.render()));
    Ok(())
}
