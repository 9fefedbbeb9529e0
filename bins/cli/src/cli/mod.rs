//! Command-line arguments: the top level (`Cli`, `Command`) and which
//! stored credential each command works with. Each command group's
//! definitions live in a module of their own and are re-exported here.

mod addresses;
mod api_keys;
mod devices;
mod events;
mod mail;
mod notifications;
mod plans;
mod sessions;
mod staff;
mod support;
mod teams;

pub use addresses::{AddressCommand, DomainCommand};
pub use api_keys::ApiKeyCommand;
pub use devices::{AgentCommand, DeviceCommand};
pub use events::EventsCommand;
pub use mail::{MailArgs, MailCommand, ShowArgs, TrashCommand};
pub use notifications::NotificationsCommand;
pub use plans::{BillingCommand, PlanCommand};
pub use sessions::{SessionsArgs, SessionsCommand};
pub use staff::{StaffAbuseCommand, StaffArgs, StaffCommand, StaffKeyCommand, StaffListStatus};
use support::ABUSE_REASONS;
pub use support::{SupportCommand, TextArgs};
pub use teams::{MembershipCommand, TeamCommand};

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Where `init`, `login` and `agent pair` connect when neither `--api-url`
/// nor `SEALPOST_API_URL` is given.
pub const DEFAULT_API_URL: &str = "http://127.0.0.1:8080";

/// Sealpost: end-to-end encrypted disposable email, from the command line.
#[derive(Debug, Parser)]
#[command(name = "sealpost", version)]
pub struct Cli {
    /// Base URL of the Sealpost API [default: http://127.0.0.1:8080]
    #[arg(long, env = "SEALPOST_API_URL", global = true, value_name = "URL")]
    pub api_url: Option<String>,

    /// Directory holding the stored session and device [default: the
    /// platform's configuration directory + /sealpost]
    #[arg(long, env = "SEALPOST_CONFIG_DIR", global = true, value_name = "DIR")]
    pub config_dir: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create an account: shows a new recovery phrase once, registers and
    /// signs in.
    Init,
    /// Sign in with a recovery phrase (from SEALPOST_PHRASE, the terminal
    /// without echo, or stdin).
    Login,
    /// Show the signed-in account, its plan and the session's expiry.
    Whoami,
    /// List the account's sessions, or revoke them.
    Sessions(SessionsArgs),
    /// Sign out and delete the stored session.
    Logout,
    /// Long-lived API keys for scripts (Operator plan and up): create one
    /// (its token is shown once), list them, revoke one.
    #[command(subcommand)]
    ApiKey(ApiKeyCommand),
    /// Pair devices and manage them (needs the recovery phrase where names
    /// or keys are involved).
    #[command(subcommand)]
    Device(DeviceCommand),
    /// Create addresses and manage them (needs the recovery phrase where
    /// labels or keys are involved). Wherever an address id is asked for,
    /// the email address does as well. (`inbox` is the older name.)
    #[command(subcommand, alias = "inbox")]
    Address(AddressCommand),
    /// The older spelling of `domain available`, kept for scripts.
    #[command(hide = true)]
    Domains,
    /// Domains: those addresses can be created on, and your own (Scale and
    /// up): claim one, prove it with a TXT record, delegate it to the
    /// service's nameservers, check, remove.
    #[command(subcommand)]
    Domain(DomainCommand),
    /// This machine as a device: pair it with an account, check it, list the
    /// address keys it holds.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Read the mail of an address: list, read, wait for new mail, save
    /// attachments (as the operator with the recovery phrase, or as this
    /// machine's paired device).
    Mail(MailArgs),
    /// The plans, the account's plan, and moving to a cheaper one.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// What the account has used of its plan, as a table.
    Usage,
    /// The account's events (the ones webhooks get), as they happen.
    #[command(subcommand)]
    Events(EventsCommand),
    /// Pay for a plan: providers, checkout, payments.
    #[command(subcommand)]
    Billing(BillingCommand),
    /// Which pushes the account's phones get, and addresses whose new mail
    /// is not pushed.
    #[command(subcommand)]
    Notifications(NotificationsCommand),
    /// Share addresses with other accounts (Fleet and up): members, grants
    /// sealed on this machine, and the join code others give you.
    #[command(subcommand)]
    Team(TeamCommand),
    /// The teams this account is in.
    #[command(subcommand)]
    Membership(MembershipCommand),
    /// Ask the support team: tickets sealed on this machine to the support
    /// key and to your own key, so only the two of you can read them.
    #[command(subcommand)]
    Support(SupportCommand),
    /// Report an abusive address or message to the service's staff (no
    /// account needed; the answer never says whether the address exists).
    ReportAbuse {
        /// The email address reported.
        #[arg(long, conflicts_with = "message", required_unless_present = "message")]
        address: Option<String>,
        /// A message id reported (for example from the mail's headers).
        #[arg(long)]
        message: Option<String>,
        #[arg(long, value_parser = ABUSE_REASONS)]
        reason: String,
        /// What happened (up to 4000 characters).
        #[arg(long)]
        details: Option<String>,
        /// How staff can reach you (up to 320 characters).
        #[arg(long)]
        contact: Option<String>,
    },
    /// The support team's side: sealed tickets read and answered with the
    /// support key held on this machine, abuse reports, suspension, the
    /// audit log. Authenticated by a staff token in SEALPOST_STAFF_TOKEN.
    Staff(StaffArgs),
}

/// The stored credential a command works with; a 401 means it has ended,
/// and the way out depends on which one it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredCredential {
    None,
    /// `session.json`: `sealpost login` again.
    Session,
    /// `device.json`: `sealpost agent pair --force` again.
    Device,
    /// `session.json` when there is one, else `device.json` (the `mail`
    /// commands without `--device`); resolved against the state directory.
    SessionElseDevice,
    /// `SEALPOST_STAFF_TOKEN`: an operator makes a new one.
    StaffToken,
}

impl Command {
    pub fn stored_credential(&self) -> StoredCredential {
        match self {
            Self::Whoami
            | Self::Sessions(_)
            | Self::Logout
            | Self::ApiKey(_)
            | Self::Device(_)
            | Self::Address(_)
            | Self::Usage
            | Self::Events(_)
            | Self::Notifications(_)
            | Self::Domain(
                DomainCommand::Add { .. }
                | DomainCommand::List
                | DomainCommand::Check { .. }
                | DomainCommand::Remove { .. },
            )
            | Self::Team(_)
            | Self::Membership(_)
            | Self::Support(_)
            | Self::Plan(PlanCommand::Show | PlanCommand::Change { .. })
            | Self::Billing(
                BillingCommand::Checkout { .. }
                | BillingCommand::Payment { .. }
                | BillingCommand::Portal,
            ) => StoredCredential::Session,
            Self::Domains | Self::Domain(DomainCommand::Available) => {
                StoredCredential::SessionElseDevice
            }
            Self::Plan(PlanCommand::List) | Self::Billing(BillingCommand::Providers) => {
                StoredCredential::None
            }
            Self::Agent(AgentCommand::Status | AgentCommand::Keys) => StoredCredential::Device,
            Self::Mail(MailArgs { device: true, .. }) => StoredCredential::Device,
            Self::Mail(MailArgs { device: false, .. }) => StoredCredential::SessionElseDevice,
            Self::Init
            | Self::Login
            | Self::ReportAbuse { .. }
            | Self::Agent(AgentCommand::Pair { .. })
            | Self::Staff(StaffArgs {
                command: StaffCommand::Key(StaffKeyCommand::Init),
                ..
            }) => StoredCredential::None,
            Self::Staff(_) => StoredCredential::StaffToken,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn device_address_and_agent_forms_parse() {
        let cli =
            Cli::try_parse_from(["sealpost", "device", "pair", "1234 5678", "--name", "Phone"])
                .unwrap();
        assert!(matches!(
            cli.command,
            Command::Device(DeviceCommand::Pair { ref code, name: Some(ref name) })
                if code == "1234 5678" && name == "Phone"
        ));
        assert_eq!(cli.command.stored_credential(), StoredCredential::Session);

        // `inbox` stays as the older name of `address`.
        let cli = Cli::try_parse_from(["sealpost", "address", "list"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Address(AddressCommand::List)
        ));
        let cli = Cli::try_parse_from(["sealpost", "domain", "available"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Domain(DomainCommand::Available)
        ));
        let cli = Cli::try_parse_from([
            "sealpost",
            "inbox",
            "create",
            "--prefix",
            "shop",
            "--retention",
            "30",
            "--label",
            "x",
        ])
        .unwrap();
        assert!(matches!(
            cli.command,
            Command::Address(AddressCommand::Create {
                retention: Some(30),
                local_part: None,
                ..
            })
        ));
        for refused in [
            &["sealpost", "inbox", "create", "--retention", "0"][..],
            &["sealpost", "inbox", "create", "--retention", "91"],
            &[
                "sealpost",
                "inbox",
                "create",
                "--prefix",
                "a",
                "--local-part",
                "b",
            ],
            &["sealpost", "inbox", "retention", "ibx_x", "100"],
            &["sealpost", "agent", "pair", "--platform", "windows"],
            &["sealpost", "agent", "pair", "--kind", "robot"],
            &["sealpost", "device"],
        ] {
            assert!(Cli::try_parse_from(refused).is_err(), "{refused:?}");
        }

        let cli = Cli::try_parse_from(["sealpost", "agent", "pair"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Agent(AgentCommand::Pair { ref platform, ref kind, force: false, name: None })
                if platform == "unknown" && kind == "agent"
        ));
        let cli = Cli::try_parse_from(["sealpost", "agent", "pair", "--kind", "device"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Agent(AgentCommand::Pair { ref kind, .. }) if kind == "device"
        ));
        assert_eq!(cli.command.stored_credential(), StoredCredential::None);
        let cli = Cli::try_parse_from(["sealpost", "agent", "status"]).unwrap();
        assert_eq!(cli.command.stored_credential(), StoredCredential::Device);
    }

    #[test]
    fn api_url_flag_is_global() {
        let cli = Cli::try_parse_from(["sealpost", "whoami", "--api-url", "http://x"]).unwrap();
        assert_eq!(cli.api_url.as_deref(), Some("http://x"));
    }
}
