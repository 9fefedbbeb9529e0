//! The commands. Each prints its result to stdout and returns errors to
//! `main`, which reports them.

mod account;
mod addresses;
mod agent;
mod api_keys;
mod billing;
mod devices;
mod domains;
mod events;
mod mail;
mod notifications;
mod sessions;
mod staff;
mod support;
mod teams;
mod vault;

use std::path::PathBuf;

use anyhow::{Result, bail};
use chrono::{TimeDelta, Utc};
use sealpost_client::{Client, ClientError};
use sealpost_kernel::Timestamp;
use url::Url;

use crate::cli::{
    AddressCommand, AgentCommand, ApiKeyCommand, BillingCommand, Cli, Command, DEFAULT_API_URL,
    DeviceCommand, DomainCommand, EventsCommand, MailCommand, MembershipCommand,
    NotificationsCommand, PlanCommand, SessionsCommand, StaffAbuseCommand, StaffCommand,
    StaffKeyCommand, StoredCredential, SupportCommand, TeamCommand, TrashCommand,
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
        if let Some(given) = &self.api_url
            && !same_service(given, &session.api_url)
        {
            bail!(
                "the stored session is for {}, not {}; run `sealpost login` to sign in there",
                session.api_url,
                normalise_url(given)
            );
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
        if let Some(given) = &self.api_url
            && !same_service(given, &device.api_url)
        {
            bail!(
                "this device is paired with {}, not {}; run `sealpost agent pair --force` to pair it there",
                device.api_url,
                normalise_url(given)
            );
        }
        let client = Client::new(&device.api_url)?.with_token(device.credential.clone());
        Ok((device, client))
    }

    /// A client holding the stored session's token, else this device's
    /// credential, for what either may read (the `mail` commands' choice).
    fn session_else_device(&self) -> Result<Client> {
        match mail::session_else_device(&self.state)? {
            StoredCredential::Device => Ok(self.device()?.1),
            _ => Ok(self.signed_in()?.1),
        }
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
        Command::ApiKey(command) => match command {
            ApiKeyCommand::Create { label } => api_keys::create(&ctx, &label).await,
            ApiKeyCommand::List => api_keys::list(&ctx).await,
            ApiKeyCommand::Revoke { id } => api_keys::revoke(&ctx, &id).await,
        },
        Command::Device(command) => match command {
            DeviceCommand::Pair { code, name } => devices::pair(&ctx, &code, name).await,
            DeviceCommand::List => devices::list(&ctx).await,
            DeviceCommand::Rename { id, name } => devices::rename(&ctx, &id, &name).await,
            DeviceCommand::Disable { id } => devices::disable(&ctx, &id).await,
            DeviceCommand::Remove { id } => devices::remove(&ctx, &id).await,
        },
        Command::Address(command) => match command {
            AddressCommand::Create {
                prefix,
                local_part,
                domain,
                retention,
                label,
                export_key,
            } => {
                let new = addresses::NewAddress {
                    prefix,
                    local_part,
                    domain,
                    retention,
                    label,
                    export_key,
                };
                addresses::create(&ctx, new).await
            }
            AddressCommand::List => addresses::list(&ctx).await,
            AddressCommand::Label { id, text } => addresses::label(&ctx, &id, &text).await,
            AddressCommand::Retention { id, days } => addresses::retention(&ctx, &id, days).await,
            AddressCommand::Assign { id, device_id } => {
                addresses::assign(&ctx, &id, &device_id).await
            }
            AddressCommand::Unassign { id, device_id } => {
                addresses::unassign(&ctx, &id, &device_id).await
            }
            AddressCommand::Delete { id } => addresses::delete(&ctx, &id).await,
        },
        Command::Domains => addresses::domains(&ctx).await,
        Command::Domain(command) => match command {
            DomainCommand::Available => addresses::domains(&ctx).await,
            DomainCommand::Add { domain } => domains::add(&ctx, &domain).await,
            DomainCommand::List => domains::list(&ctx).await,
            DomainCommand::Check { domain } => domains::check(&ctx, &domain).await,
            DomainCommand::Remove { domain } => domains::remove(&ctx, &domain).await,
        },
        Command::Agent(command) => match command {
            AgentCommand::Pair {
                name,
                platform,
                kind,
                force,
            } => agent::pair(&ctx, name, &platform, &kind, force).await,
            AgentCommand::Status => agent::status(&ctx).await,
            AgentCommand::Keys => agent::keys(&ctx).await,
        },
        Command::Plan(command) => match command {
            PlanCommand::List => billing::plan_list(&ctx).await,
            PlanCommand::Show => billing::plan_show(&ctx).await,
            PlanCommand::Change { plan, yes } => billing::plan_change(&ctx, &plan, yes).await,
        },
        Command::Usage => billing::usage(&ctx).await,
        Command::Events(command) => match command {
            EventsCommand::Follow { after } => events::follow(&ctx, after).await,
        },
        Command::Billing(command) => match command {
            BillingCommand::Providers => billing::providers(&ctx).await,
            BillingCommand::Checkout { plan, provider } => {
                billing::checkout(&ctx, &plan, provider.as_deref()).await
            }
            BillingCommand::Payment { id } => billing::payment(&ctx, &id).await,
            BillingCommand::Portal => billing::portal(&ctx).await,
        },
        Command::Team(command) => match command {
            TeamCommand::Show => teams::show(&ctx).await,
            TeamCommand::Add { join_code } => teams::add(&ctx, &join_code).await,
            TeamCommand::Remove { member } => teams::remove(&ctx, &member).await,
            TeamCommand::Grant {
                address,
                to,
                access,
            } => teams::grant(&ctx, &address, &to, &access).await,
            TeamCommand::JoinCode => teams::join_code(&ctx).await,
        },
        Command::Membership(command) => match command {
            MembershipCommand::List => teams::memberships(&ctx).await,
            MembershipCommand::Leave { owner } => teams::leave(&ctx, &owner).await,
        },
        Command::Notifications(command) => match command {
            NotificationsCommand::Show => notifications::show(&ctx).await,
            NotificationsCommand::Set { kind, state } => {
                notifications::set(&ctx, &kind, &state).await
            }
            NotificationsCommand::Mute { address } => {
                notifications::mute(&ctx, &address, true).await
            }
            NotificationsCommand::Unmute { address } => {
                notifications::mute(&ctx, &address, false).await
            }
        },
        Command::Support(command) => match command {
            SupportCommand::List => support::list(&ctx).await,
            SupportCommand::Open {
                subject,
                category,
                priority,
                body,
            } => support::open(&ctx, &subject, &category, &priority, body).await,
            SupportCommand::Show { id } => support::show(&ctx, &id).await,
            SupportCommand::Reply { id, body } => support::reply(&ctx, &id, body).await,
            SupportCommand::Close { id } => support::set_open(&ctx, &id, false).await,
            SupportCommand::Reopen { id } => support::set_open(&ctx, &id, true).await,
        },
        Command::ReportAbuse {
            address,
            message,
            reason,
            details,
            contact,
        } => {
            let report = sealpost_client::support::AbuseReportRequest {
                email_address: address,
                message_id: message,
                reason,
                details,
                contact,
            };
            support::report_abuse(&ctx, report).await
        }
        Command::Staff(args) => {
            let keys = staff::key_file(&ctx, args.key_file.as_deref())?;
            match args.command {
                StaffCommand::Key(StaffKeyCommand::Init) => staff::key_init(&keys),
                StaffCommand::Key(StaffKeyCommand::Show) => staff::key_show(&ctx, &keys).await,
                StaffCommand::Key(StaffKeyCommand::Rotate) => staff::key_rotate(&ctx, &keys).await,
                StaffCommand::Tickets { status } => staff::tickets(&ctx, &keys, status).await,
                StaffCommand::Show { id } => staff::show(&ctx, &keys, &id).await,
                StaffCommand::Reply {
                    id,
                    text,
                    text_file,
                } => staff::reply(&ctx, &keys, &id, text, text_file).await,
                StaffCommand::Resolve { id } => staff::resolve(&ctx, &id).await,
                StaffCommand::Abuse(StaffAbuseCommand::List { status }) => {
                    staff::abuse_list(&ctx, status).await
                }
                StaffCommand::Abuse(StaffAbuseCommand::Resolve { id, resolution }) => {
                    staff::abuse_resolve(&ctx, &id, &resolution).await
                }
                StaffCommand::Suspend { account, reason } => {
                    staff::set_suspended(&ctx, &account, true, &reason).await
                }
                StaffCommand::Unsuspend { account, reason } => {
                    staff::set_suspended(&ctx, &account, false, &reason).await
                }
                StaffCommand::Switches {
                    support,
                    new_webhooks,
                } => staff::switches(&ctx, support.as_deref(), new_webhooks.as_deref()).await,
                StaffCommand::Audit { limit } => staff::audit(&ctx, limit).await,
            }
        }
        Command::Mail(args) => {
            let device = args.device;
            match args.command {
                MailCommand::List {
                    address_id,
                    folder,
                    starred,
                    unread,
                    limit,
                    all,
                } => {
                    let filter = mail::ListFilter {
                        folder,
                        starred,
                        unread,
                    };
                    mail::list(&ctx, device, address_id.as_deref(), &filter, limit, all).await
                }
                MailCommand::Send {
                    from,
                    from_name,
                    to,
                    cc,
                    subject,
                    text,
                    text_file,
                    html_file,
                } => {
                    let outgoing = mail::Outgoing {
                        from,
                        from_name,
                        to,
                        cc,
                        subject,
                        text,
                        text_file,
                        html_file,
                    };
                    mail::send(&ctx, device, outgoing).await
                }
                MailCommand::Star { message_id, off } => {
                    mail::star(&ctx, device, &message_id, !off).await
                }
                MailCommand::Move { message_id, folder } => {
                    mail::move_to(&ctx, device, &message_id, &folder).await
                }
                MailCommand::Delete { message_id } => mail::delete(&ctx, device, &message_id).await,
                MailCommand::Trash {
                    command: TrashCommand::Empty,
                } => mail::empty_trash(&ctx, device).await,
                MailCommand::Read { message_id, show } => {
                    mail::read(&ctx, device, &message_id, show).await
                }
                MailCommand::Wait {
                    address_id,
                    timeout,
                    show,
                } => mail::wait(&ctx, device, &address_id, timeout, show).await,
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

/// The form an API URL is stored in: scheme and host in lower case, no
/// default port, no trailing slash. Left as typed (trimmed) when it does not
/// parse; the request then reports it.
fn normalise_url(url: &str) -> String {
    match Url::parse(url.trim()) {
        Ok(parsed) => parsed.as_str().trim_end_matches('/').to_owned(),
        Err(_) => url.trim().trim_end_matches('/').to_owned(),
    }
}

/// Whether two API URLs name the same service: equal once normalised, with
/// `localhost` taken for `127.0.0.1` (the same server on this machine).
fn same_service(a: &str, b: &str) -> bool {
    let key = |url: &str| {
        let mut normal = normalise_url(url);
        if let Ok(mut parsed) = Url::parse(&normal)
            && parsed.host_str() == Some("localhost")
            && parsed.set_host(Some("127.0.0.1")).is_ok()
        {
            normal = normalise_url(parsed.as_str());
        }
        normal
    };
    key(a) == key(b)
}

/// The service's error with its message replaced by one that names the
/// `sealpost` command to use (the service's names its API routes); the
/// code and status stay.
fn reworded(err: ClientError, message: String) -> ClientError {
    match err {
        ClientError::Api {
            status,
            code,
            retry_after,
            ..
        } => ClientError::Api {
            status,
            code,
            message,
            retry_after,
        },
        other => other,
    }
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

/// When a device was last active, from its `lastActiveAt`: the service
/// keeps only the start of the hour it was active in, so "within the last
/// hour" while that hour is not over, then whole hours (or days) since.
fn active_ago(at: Timestamp, now: Timestamp) -> String {
    let since = now - at;
    if since < TimeDelta::hours(1) {
        return "within the last hour".to_owned();
    }
    let (count, unit) = if since.num_hours() >= 48 {
        (since.num_days(), "day")
    } else {
        (since.num_hours(), "hour")
    };
    let plural = if count == 1 { "" } else { "s" };
    format!("{count} {unit}{plural} ago")
}

#[cfg(test)]
mod tests {
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
        assert_eq!(
            normalise_url("HTTP://Example.COM:80/api/"),
            "http://example.com/api"
        );
        assert_eq!(normalise_url("not a url/"), "not a url");
    }

    #[test]
    fn localhost_and_its_address_are_one_service() {
        assert!(same_service(
            "http://localhost:8080",
            "http://127.0.0.1:8080/"
        ));
        assert!(same_service(
            "http://LOCALHOST:8080/",
            "http://localhost:8080"
        ));
        assert!(!same_service(
            "http://localhost:8080",
            "http://127.0.0.1:8081"
        ));
        assert!(!same_service(
            "https://localhost:8080",
            "http://127.0.0.1:8080"
        ));
        assert!(!same_service("http://example.com", "http://127.0.0.1"));
    }

    #[test]
    fn activity_is_shown_to_the_hour() {
        let now = Timestamp::parse("2026-01-01T10:40:00.000Z").unwrap();
        let at = |text: &str| Timestamp::parse(text).unwrap();
        assert_eq!(
            active_ago(at("2026-01-01T10:00:00.000Z"), now),
            "within the last hour"
        );
        // Clocks that disagree a little are no reason for a negative time.
        assert_eq!(
            active_ago(at("2026-01-01T11:00:00.000Z"), now),
            "within the last hour"
        );
        assert_eq!(
            active_ago(at("2026-01-01T09:00:00.000Z"), now),
            "1 hour ago"
        );
        assert_eq!(
            active_ago(at("2026-01-01T05:00:00.000Z"), now),
            "5 hours ago"
        );
        assert_eq!(
            active_ago(at("2025-12-30T11:00:00.000Z"), now),
            "47 hours ago"
        );
        assert_eq!(
            active_ago(at("2025-12-30T10:00:00.000Z"), now),
            "2 days ago"
        );
    }

    #[test]
    fn reworded_errors_keep_their_code() {
        let err = ClientError::Api {
            status: 402,
            code: "payment_required".to_owned(),
            message: "see POST /x".to_owned(),
            retry_after: None,
        };
        let err = reworded(err, "use `sealpost x`".to_owned());
        assert_eq!(err.to_string(), "use `sealpost x`");
        assert_eq!(err.code(), "payment_required");
        assert_eq!(err.status(), Some(402));
    }
}
