//! The commands. Each prints its result to stdout and returns errors to
//! `main`, which reports them.

mod account;
mod agent;
mod billing;
mod devices;
mod inboxes;
mod mail;
mod sessions;
mod vault;

use std::path::PathBuf;

use anyhow::{Result, bail};
use chrono::Utc;
use sealpost_client::Client;
use sealpost_kernel::Timestamp;

use crate::cli::{
    AgentCommand, BillingCommand, Cli, Command, DEFAULT_API_URL, DeviceCommand, InboxCommand,
    MailCommand, PlanCommand, SessionsCommand, StoredCredential,
};
use crate::state::{DeviceState, StateDir, StoredSession};

/// What every command gets: the configuration and the state directory.
pub struct Ctx {
    /// `--api-url` / `SEALPOST_API_URL`, when given.
    api_url: Option<String>,
    state: StateDir,
}

impl Ctx {
    /// The URL a new session is opened at.
    fn api_url(&self) -> String {
        normalise_url(self.api_url.as_deref().unwrap_or(DEFAULT_API_URL))
    }

    /// The stored session and a client holding its token, talking to the
    /// service that issued it. A different explicit API URL is refused
    /// rather than sending the token elsewhere.
    fn signed_in(&self) -> Result<(StoredSession, Client)> {
        let Some(session) = self.state.load_session()? else {
            bail!("not signed in; run `sealpost login` (or `sealpost init` for a new account)");
        };
        if let Some(given) = &self.api_url {
            let given = normalise_url(given);
            if given != normalise_url(&session.api_url) {
                bail!(
                    "the stored session is for {}, not {given}; run `sealpost login` to sign in there",
                    session.api_url
                );
            }
        }
        let client = Client::new(&session.api_url)?.with_token(session.token.clone());
        Ok((session, client))
    }

    /// A client for endpoints that need no token: the stored session's
    /// service when signed in, else `--api-url` (or the default).
    fn public_client(&self) -> Result<Client> {
        let url = match (&self.api_url, self.state.load_session()?) {
            (None, Some(session)) => session.api_url,
            _ => self.api_url(),
        };
        Ok(Client::new(&url)?)
    }

    /// This machine's device state and a client holding its credential,
    /// talking to the service that issued it (a different explicit API URL
    /// is refused, as for the session).
    fn device(&self) -> Result<(DeviceState, Client)> {
        let Some(device) = self.state.load_device()? else {
            bail!("this machine is not paired as a device; run `sealpost agent pair`");
        };
        if let Some(given) = &self.api_url {
            let given = normalise_url(given);
            if given != normalise_url(&device.api_url) {
                bail!(
                    "this device is paired with {}, not {given}; run `sealpost agent pair --force` to pair it there",
                    device.api_url
                );
            }
        }
        let client = Client::new(&device.api_url)?.with_token(device.credential.clone());
        Ok((device, client))
    }
}

/// Runs the parsed command line.
pub async fn run(cli: Cli) -> Result<()> {
    let ctx = Ctx {
        api_url: cli.api_url,
        state: StateDir::locate(cli.config_dir)?,
    };
    match cli.command {
        Command::Init => account::init(&ctx).await,
        Command::Login => account::login(&ctx).await,
        Command::Whoami => account::whoami(&ctx).await,
        Command::Logout => account::logout(&ctx).await,
        Command::Sessions(args) => match (args.command, args.others) {
            (Some(SessionsCommand::Revoke { id }), _) => sessions::revoke(&ctx, &id).await,
            (None, true) => sessions::revoke_others(&ctx).await,
            (None, false) => sessions::list(&ctx).await,
        },
        Command::Device(command) => match command {
            DeviceCommand::Pair { code, name } => devices::pair(&ctx, &code, name).await,
            DeviceCommand::List => devices::list(&ctx).await,
            DeviceCommand::Rename { id, name } => devices::rename(&ctx, &id, &name).await,
            DeviceCommand::Disable { id } => devices::disable(&ctx, &id).await,
            DeviceCommand::Remove { id } => devices::remove(&ctx, &id).await,
        },
        Command::Inbox(command) => match command {
            InboxCommand::Create {
                prefix,
                local_part,
                domain,
                retention,
                label,
            } => {
                let new = inboxes::NewInbox {
                    prefix,
                    local_part,
                    domain,
                    retention,
                    label,
                };
                inboxes::create(&ctx, new).await
            }
            InboxCommand::List => inboxes::list(&ctx).await,
            InboxCommand::Label { id, text } => inboxes::label(&ctx, &id, &text).await,
            InboxCommand::Retention { id, days } => inboxes::retention(&ctx, &id, days).await,
            InboxCommand::Assign { id, device_id } => inboxes::assign(&ctx, &id, &device_id).await,
            InboxCommand::Unassign { id, device_id } => {
                inboxes::unassign(&ctx, &id, &device_id).await
            }
            InboxCommand::Delete { id } => inboxes::delete(&ctx, &id).await,
        },
        Command::Agent(command) => match command {
            AgentCommand::Pair {
                name,
                platform,
                force,
            } => agent::pair(&ctx, name, &platform, force).await,
            AgentCommand::Status => agent::status(&ctx).await,
            AgentCommand::Keys => agent::keys(&ctx).await,
        },
        Command::Plan(command) => match command {
            PlanCommand::List => billing::plan_list(&ctx).await,
            PlanCommand::Show => billing::plan_show(&ctx).await,
            PlanCommand::Change { plan } => billing::plan_change(&ctx, &plan).await,
        },
        Command::Usage => billing::usage(&ctx).await,
        Command::Billing(command) => match command {
            BillingCommand::Providers => billing::providers(&ctx).await,
            BillingCommand::Checkout { plan, provider } => {
                billing::checkout(&ctx, &plan, &provider).await
            }
            BillingCommand::Payment { id } => billing::payment(&ctx, &id).await,
        },
        Command::Mail(args) => {
            let device = args.device;
            match args.command {
                MailCommand::List {
                    inbox_id,
                    limit,
                    all,
                } => mail::list(&ctx, device, &inbox_id, limit, all).await,
                MailCommand::Read { message_id, show } => {
                    mail::read(&ctx, device, &message_id, show).await
                }
                MailCommand::Wait {
                    inbox_id,
                    timeout,
                    show,
                } => mail::wait(&ctx, device, &inbox_id, timeout, show).await,
                MailCommand::Attachment {
                    message_id,
                    index,
                    output,
                } => mail::attachment(&ctx, device, &message_id, index, output).await,
                MailCommand::Mark {
                    message_id, read, ..
                } => mail::mark(&ctx, device, &message_id, read).await,
            }
        }
    }
}

/// The credential a command uses, with `SessionElseDevice` resolved against
/// the state directory as the `mail` commands resolve it (for the hint shown
/// with a 401).
pub fn resolve_credential(
    credential: StoredCredential,
    config_dir: Option<PathBuf>,
) -> StoredCredential {
    match credential {
        StoredCredential::SessionElseDevice => StateDir::locate(config_dir)
            .and_then(|state| mail::session_else_device(&state))
            .unwrap_or(StoredCredential::Session),
        other => other,
    }
}

fn normalise_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_owned()
}

fn now() -> Timestamp {
    Timestamp::from(Utc::now())
}

/// `at` relative to `now`, for people: "in 29 days", "in 5 hours", "expired".
fn relative(at: Timestamp, now: Timestamp) -> String {
    let left = at - now;
    let (count, unit) = if left <= chrono::TimeDelta::zero() {
        return "expired".to_owned();
    } else if left.num_days() >= 2 {
        (left.num_days(), "day")
    } else if left.num_hours() >= 2 {
        (left.num_hours(), "hour")
    } else {
        (left.num_minutes().max(1), "minute")
    };
    let plural = if count == 1 { "" } else { "s" };
    format!("in {count} {unit}{plural}")
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;

    use super::*;

    #[test]
    fn relative_times() {
        let now = Timestamp::parse("2026-01-01T00:00:00.000Z").unwrap();
        assert_eq!(relative(now + TimeDelta::days(30), now), "in 30 days");
        assert_eq!(relative(now + TimeDelta::hours(30), now), "in 30 hours");
        assert_eq!(relative(now + TimeDelta::seconds(10), now), "in 1 minute");
        assert_eq!(relative(now + TimeDelta::minutes(90), now), "in 90 minutes");
        assert_eq!(relative(now, now), "expired");
        assert_eq!(relative(now - TimeDelta::days(1), now), "expired");
    }

    #[test]
    fn urls_compare_without_trailing_slash() {
        assert_eq!(normalise_url(" http://h:1/ "), "http://h:1");
    }
}
