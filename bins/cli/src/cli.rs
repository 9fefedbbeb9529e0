//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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

/// The reasons `POST /abuse/reports` takes.
const ABUSE_REASONS: [&str; 7] = [
    "spam",
    "phishing",
    "malware",
    "harassment",
    "illegal_content",
    "impersonation",
    "other",
];

/// A message's text: given inline or read from a file.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct TextArgs {
    #[arg(long)]
    pub text: Option<String>,
    /// A file holding the text (UTF-8).
    #[arg(long, value_name = "FILE")]
    pub text_file: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum SupportCommand {
    /// Your tickets, newest first, with their subjects decrypted here.
    List,
    /// Open a ticket; support reads it with its own key, nobody else can.
    Open {
        #[arg(long)]
        subject: String,
        /// What it is about (billing, technical, abuse, other, ...).
        #[arg(long, default_value = "other")]
        category: String,
        #[arg(long, default_value = "normal", value_parser = ["low", "normal", "high", "urgent"])]
        priority: String,
        #[command(flatten)]
        body: TextArgs,
    },
    /// Show a ticket and every message, decrypted (marks support's replies read).
    Show {
        /// The ticket id (tkt_...).
        id: String,
    },
    /// Add a message to an open ticket.
    Reply {
        /// The ticket id (tkt_...).
        id: String,
        #[command(flatten)]
        body: TextArgs,
    },
    /// Mark a ticket resolved.
    Close {
        /// The ticket id (tkt_...).
        id: String,
    },
    /// Open a resolved ticket again (counts against the 5 open tickets).
    Reopen {
        /// The ticket id (tkt_...).
        id: String,
    },
}

/// `staff`: where the support keyring is kept, and the command.
#[derive(Debug, Args)]
pub struct StaffArgs {
    /// The support keyring (X25519 key pairs, never sent to the service)
    /// [default: staff-keys.json in the configuration directory]
    #[arg(
        long,
        env = "SEALPOST_STAFF_KEY_FILE",
        global = true,
        value_name = "FILE"
    )]
    pub key_file: Option<PathBuf>,

    #[command(subcommand)]
    pub command: StaffCommand,
}

/// Ticket lists and abuse report lists: which ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StaffListStatus {
    Open,
    Resolved,
    All,
}

#[derive(Debug, Subcommand)]
pub enum StaffCommand {
    /// The support key pairs: make the first, show them, rotate.
    #[command(subcommand)]
    Key(StaffKeyCommand),
    /// Tickets of every account, most recently active first, with their
    /// headers decrypted and the account's binding checked.
    Tickets {
        #[arg(long, value_enum, default_value_t = StaffListStatus::Open)]
        status: StaffListStatus,
    },
    /// Show a ticket: its header, the binding checks and every message,
    /// decrypted.
    Show {
        /// The ticket id (tkt_...).
        id: String,
    },
    /// Answer a ticket: sealed here to the support key and to the account's
    /// key.
    Reply {
        /// The ticket id (tkt_...).
        id: String,
        #[arg(
            long,
            conflicts_with = "text_file",
            required_unless_present = "text_file"
        )]
        text: Option<String>,
        /// A file holding the answer (UTF-8).
        #[arg(long, value_name = "FILE")]
        text_file: Option<PathBuf>,
    },
    /// Mark a ticket resolved (the account is told).
    Resolve {
        /// The ticket id (tkt_...).
        id: String,
    },
    /// Abuse reports: list them, resolve one.
    #[command(subcommand)]
    Abuse(StaffAbuseCommand),
    /// Suspend an account: 403 account_suspended everywhere but support;
    /// nothing is deleted.
    Suspend {
        /// The account id (acct_...).
        account: String,
        /// Why, kept in the audit log (1 to 1000 characters).
        #[arg(long)]
        reason: String,
    },
    /// Lift an account's suspension.
    Unsuspend {
        /// The account id (acct_...).
        account: String,
        /// Why, kept in the audit log (1 to 1000 characters).
        #[arg(long)]
        reason: String,
    },
    /// The operator switches; with options, change them.
    Switches {
        /// In-app support: on, or off (writes answer 503).
        #[arg(long, value_parser = ["on", "off"])]
        support: Option<String>,
        /// Adding webhooks: on, or off (503 feature_disabled; existing
        /// webhooks keep delivering).
        #[arg(long, value_parser = ["on", "off"])]
        new_webhooks: Option<String>,
    },
    /// The audit log, newest first.
    Audit {
        /// Entries to show (1 to 200).
        #[arg(long, value_name = "N", default_value_t = 50, value_parser = page_size())]
        limit: u32,
    },
}

#[derive(Debug, Subcommand)]
pub enum StaffKeyCommand {
    /// Make the first support key pair; prints the public key to set as
    /// SEALPOST_SUPPORT_KEY on the service. Needs no token.
    Init,
    /// The public keys in the keyring, the newest marked, and the service's
    /// current one when SEALPOST_STAFF_TOKEN is set.
    Show,
    /// Make a new key pair, keep it in the keyring beside the old ones and
    /// publish its public key: tickets sealed to an old key stay readable;
    /// new ones must be sealed to the new key.
    Rotate,
}

#[derive(Debug, Subcommand)]
pub enum StaffAbuseCommand {
    /// The reports, newest first.
    List {
        #[arg(long, value_enum, default_value_t = StaffListStatus::Open)]
        status: StaffListStatus,
    },
    /// Resolve a report with a note of what was done.
    Resolve {
        /// The report id.
        id: String,
        /// What was done (1 to 1000 characters).
        #[arg(long)]
        resolution: String,
    },
}

/// The account's own domains.
#[derive(Debug, Subcommand)]
pub enum DomainCommand {
    /// The domains addresses can be created on (`address create --domain`):
    /// the shared ones and your own that are live.
    Available,
    /// Claim a domain; prints the TXT record that proves you own it.
    Add {
        /// The domain, e.g. example.org (Unicode names are fine).
        domain: String,
    },
    /// The account's own domains and the step each is at.
    List,
    /// Check the domain's DNS now; prints its step and what to do next.
    Check { domain: String },
    /// Remove the domain (refused while addresses exist on it).
    Remove { domain: String },
}

/// The owner's team.
#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// The members, their fingerprints and what each may use.
    Show,
    /// Add the account of a join code (shows the six words to compare).
    Add {
        /// service-team-1.<account id>.<key>, from `sealpost team join-code`.
        join_code: String,
    },
    /// Remove a member and everything shared with it.
    Remove {
        /// The member's account id (acct_...).
        member: String,
    },
    /// Share an address with a member, or take it back.
    Grant {
        /// The address id or email address.
        address: String,
        /// The member's account id (acct_...).
        #[arg(long)]
        to: String,
        /// read, send or revoke.
        #[arg(long)]
        access: String,
    },
    /// This account's join code and its six-word fingerprint.
    JoinCode,
}

/// Teams this account is a member of.
#[derive(Debug, Subcommand)]
pub enum MembershipCommand {
    /// The teams, whether each is active, and the shared addresses.
    List,
    /// Leave a team.
    Leave {
        /// The owner's account id (acct_...).
        owner: String,
    },
}

/// Push notification preferences and muted addresses.
#[derive(Debug, Subcommand)]
pub enum NotificationsCommand {
    /// Each kind on or off, and the muted addresses.
    Show,
    /// Switch one kind on or off.
    Set {
        /// new-mail, device-paired, device-offline, new-sign-in, billing,
        /// support or webhook-failures.
        kind: String,
        /// on or off.
        state: String,
    },
    /// Stop pushing new mail of one address (its id or email address).
    Mute { address: String },
    /// Push new mail of the address again.
    Unmute { address: String },
}

/// Plans and the account's subscription.
#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Every plan with its price and limits.
    List,
    /// The account's plan, when its paid period ends, and any pause after a
    /// missed payment.
    Show,
    /// Move to a plan priced the same or lower (a dearer one goes through
    /// `sealpost billing checkout`). Moving down while a paid period runs
    /// asks first, saying what is lost.
    Change {
        /// free, operator, scale or fleet.
        plan: String,
        /// Do not ask: accept losing what remains of the paid period.
        #[arg(long, short)]
        yes: bool,
    },
}

/// Paying for a plan.
#[derive(Debug, Subcommand)]
pub enum BillingCommand {
    /// The payment providers this service takes.
    Providers,
    /// Start paying for one 30-day period of PLAN; prints the checkout url.
    Checkout {
        /// operator, scale or fleet.
        plan: String,
        /// stripe (card), btcpay (crypto), or sandbox (development)
        /// [default: the only provider the service takes]
        #[arg(long)]
        provider: Option<String>,
    },
    /// Show a payment and its status.
    Payment {
        /// The payment id (pay_...).
        id: String,
    },
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
            | Self::Device(_)
            | Self::Address(_)
            | Self::Usage
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
            | Self::Billing(BillingCommand::Checkout { .. } | BillingCommand::Payment { .. }) => {
                StoredCredential::Session
            }
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

/// Operator side: the account's devices.
#[derive(Debug, Subcommand)]
pub enum DeviceCommand {
    /// Pair the device showing CODE (`sealpost agent pair` on the device
    /// prints one) and send it its key bundle.
    Pair {
        /// The 8-digit pairing code; spaces and dashes are ignored.
        code: String,
        /// The name to give the device [default: the name it reports].
        #[arg(long)]
        name: Option<String>,
    },
    /// List the devices with their names.
    List,
    /// Rename a device.
    Rename {
        /// The device id (wkr_...).
        id: String,
        name: String,
    },
    /// Disable a device: its credential stops working at once.
    Disable {
        /// The device id (wkr_...).
        id: String,
    },
    /// Remove a device: its credential goes, its addresses become unassigned.
    Remove {
        /// The device id (wkr_...).
        id: String,
    },
}

/// Days an address keeps mail: 1 to 90.
fn retention_days() -> clap::builder::RangedI64ValueParser<u8> {
    clap::value_parser!(u8).range(1..=90)
}

/// Operator side: the account's addresses.
#[derive(Debug, Subcommand)]
pub enum AddressCommand {
    /// Create an address that can receive mail.
    Create {
        /// Start of the address; the service appends a random ending.
        #[arg(long, conflicts_with = "local_part")]
        prefix: Option<String>,
        /// The exact name before the @ (Scale plan and up).
        #[arg(long)]
        local_part: Option<String>,
        /// The domain [default: the first one the service offers].
        #[arg(long)]
        domain: Option<String>,
        /// Days mail is kept, 1 to 90 [default: 7].
        #[arg(long, value_name = "DAYS", value_parser = retention_days())]
        retention: Option<u8>,
        /// A label only you can read.
        #[arg(long, value_name = "TEXT")]
        label: Option<String>,
    },
    /// List the addresses with their labels, devices and retention.
    List,
    /// Change an address's label.
    Label {
        /// The address id (ibx_...) or the email address.
        id: String,
        text: String,
    },
    /// Change how many days an address keeps mail; a shorter retention
    /// deletes stored mail past it.
    Retention {
        /// The address id (ibx_...) or the email address.
        id: String,
        #[arg(value_parser = retention_days())]
        days: u8,
    },
    /// Give an address to a device and send the device its keys.
    Assign {
        /// The address id (ibx_...) or the email address.
        id: String,
        /// The device id (wkr_...).
        device_id: String,
    },
    /// Take an address off a device and send the device its remaining keys.
    Unassign {
        /// The address id (ibx_...) or the email address.
        id: String,
        /// The device id (wkr_...).
        device_id: String,
    },
    /// Delete an address with its mail; it is never issued again.
    Delete {
        /// The address id (ibx_...) or the email address.
        id: String,
    },
}

/// Device side: this machine as a device of an account.
#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Pair this machine: prints a code for the operator's
    /// `sealpost device pair`, waits for it and stores the credential.
    Pair {
        /// The name the operator sees [default: this machine's host name].
        #[arg(long)]
        name: Option<String>,
        /// The platform reported to the service.
        #[arg(long, default_value = "unknown",
              value_parser = ["ios", "android", "web", "unknown"])]
        platform: String,
        /// Replace an existing pairing (its credential is discarded).
        #[arg(long)]
        force: bool,
    },
    /// Show this device as the service sees it, and report it active.
    Status,
    /// List the addresses this device holds keys for.
    Keys,
}

/// Messages a list page holds: 1 to 200.
fn page_size() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..=200)
}

/// `mail`: who reads, and what.
#[derive(Debug, Args)]
pub struct MailArgs {
    /// Read as this machine's paired device (`device.json`, keys from its
    /// key bundle) even when an operator session is stored. Without it the
    /// operator session is used, or the device when there is no session.
    #[arg(long, global = true)]
    pub device: bool,

    #[command(subcommand)]
    pub command: MailCommand,
}

/// The mail of an address, decrypted on this machine.
#[derive(Debug, Subcommand)]
pub enum MailCommand {
    /// List mail, newest first: id, time, folder, read flag, star, sender
    /// (recipients for sent mail), subject and attachment count. Every
    /// address without ADDRESS_ID; every folder but the trash without --folder.
    List {
        /// The address id (ibx_...) or the email address.
        address_id: Option<String>,
        /// Only this folder.
        #[arg(long, value_parser = ["inbox", "sent", "archive", "trash"])]
        folder: Option<String>,
        /// Only starred mail.
        #[arg(long)]
        starred: bool,
        /// Only unread mail.
        #[arg(long)]
        unread: bool,
        /// Messages to show (1 to 200) [default: 50; with --all, the page
        /// size]
        #[arg(long, value_name = "N", value_parser = page_size())]
        limit: Option<u32>,
        /// Every message, following the pages to the end.
        #[arg(long)]
        all: bool,
    },
    /// Send mail from one of your addresses through the service (operator
    /// session only); a copy is kept in the sent folder.
    Send {
        /// One of your email addresses (or its id, ibx_...).
        #[arg(long)]
        from: String,
        /// The name shown with the address.
        #[arg(long, value_name = "NAME")]
        from_name: Option<String>,
        /// A recipient: `address` or `Name <address>`; repeat for more (up
        /// to 50).
        #[arg(long, required = true, value_name = "ADDRESS")]
        to: Vec<String>,
        #[arg(long)]
        subject: String,
        /// The text body.
        #[arg(
            long,
            conflicts_with = "text_file",
            required_unless_present = "text_file"
        )]
        text: Option<String>,
        /// A file holding the text body (UTF-8).
        #[arg(long, value_name = "FILE")]
        text_file: Option<PathBuf>,
        /// A file holding an HTML body (UTF-8), sent beside the text.
        #[arg(long, value_name = "FILE")]
        html_file: Option<PathBuf>,
    },
    /// Star a message (or take the star off with --off).
    Star {
        /// The message id (msg_...).
        message_id: String,
        #[arg(long)]
        off: bool,
    },
    /// Move a message to another folder. Received mail never goes to sent,
    /// sent mail never to inbox.
    Move {
        /// The message id (msg_...).
        message_id: String,
        #[arg(value_parser = ["inbox", "sent", "archive", "trash"])]
        folder: String,
    },
    /// Move a message to the trash; a message already there is deleted for
    /// good, with its attachments.
    Delete {
        /// The message id (msg_...).
        message_id: String,
    },
    /// The trash.
    Trash {
        #[command(subcommand)]
        command: TrashCommand,
    },
    /// Show a message: its headers, attachments and text body; then mark it
    /// read.
    Read {
        /// The message id (msg_...).
        message_id: String,
        #[command(flatten)]
        show: ShowArgs,
    },
    /// Wait for mail and show it as `read` does: unread mail already in the
    /// address at once, else the next to arrive. Fails when nothing comes
    /// within the timeout.
    Wait {
        /// The address id (ibx_...) or the email address.
        address_id: String,
        /// Seconds to wait in all.
        #[arg(long, value_name = "SECONDS", default_value_t = 60)]
        timeout: u64,
        #[command(flatten)]
        show: ShowArgs,
    },
    /// Decrypt an attachment to a file.
    Attachment {
        /// The message id (msg_...).
        message_id: String,
        /// The attachment's index, as `mail read` lists it (from 0).
        index: u32,
        /// Where to write it; `-` for stdout [default: the attachment's own
        /// file name, in the current directory]. An existing file is never
        /// overwritten.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Mark a message read or unread.
    Mark {
        /// The message id (msg_...).
        message_id: String,
        #[arg(long, conflicts_with = "unread", required_unless_present = "unread")]
        read: bool,
        #[arg(long)]
        unread: bool,
    },
}

/// `mail trash`.
#[derive(Debug, Subcommand)]
pub enum TrashCommand {
    /// Delete everything in the trash for good (operator session only).
    Empty,
}

/// How `mail read` and `mail wait` show a message.
#[derive(Clone, Copy, Debug, Args)]
pub struct ShowArgs {
    /// Show the HTML body as it came, instead of the text body.
    #[arg(long, conflicts_with = "codes")]
    pub html: bool,
    /// Print what the message holds byte for byte. Without it, control
    /// characters (terminal escape sequences, bidi overrides) in the
    /// sender's text are shown escaped (`\x1b`), so mail cannot drive the
    /// terminal.
    #[arg(long)]
    pub raw: bool,
    /// Print only the one-time codes, then the links, found in the message,
    /// one per line.
    #[arg(long)]
    pub codes: bool,
    /// Leave the message unread.
    #[arg(long)]
    pub keep_unread: bool,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SessionsArgs {
    /// Revoke every session except this one.
    #[arg(long)]
    pub others: bool,

    #[command(subcommand)]
    pub command: Option<SessionsCommand>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Revoke one session by id.
    Revoke {
        /// The session id (ses_...), as `sealpost sessions` shows it.
        id: String,
    },
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn sessions_forms_parse() {
        let cli = Cli::try_parse_from(["sealpost", "sessions", "--others"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Sessions(SessionsArgs {
                others: true,
                command: None
            })
        ));
        let cli = Cli::try_parse_from(["sealpost", "sessions", "revoke", "ses_x"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Sessions(SessionsArgs { others: false, command: Some(SessionsCommand::Revoke { ref id }) }) if id == "ses_x"
        ));
        assert!(Cli::try_parse_from(["sealpost", "sessions", "--others", "revoke", "x"]).is_err());
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
            &["sealpost", "device"],
        ] {
            assert!(Cli::try_parse_from(refused).is_err(), "{refused:?}");
        }

        let cli = Cli::try_parse_from(["sealpost", "agent", "pair"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Agent(AgentCommand::Pair { ref platform, force: false, name: None })
                if platform == "unknown"
        ));
        assert_eq!(cli.command.stored_credential(), StoredCredential::None);
        let cli = Cli::try_parse_from(["sealpost", "agent", "status"]).unwrap();
        assert_eq!(cli.command.stored_credential(), StoredCredential::Device);
    }

    #[test]
    fn mail_forms_parse() {
        let cli =
            Cli::try_parse_from(["sealpost", "mail", "list", "ibx_x", "--limit", "5"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Mail(MailArgs {
                device: false,
                command: MailCommand::List {
                    limit: Some(5),
                    all: false,
                    ..
                }
            })
        ));
        assert_eq!(
            cli.command.stored_credential(),
            StoredCredential::SessionElseDevice
        );
        let cli = Cli::try_parse_from(["sealpost", "mail", "read", "msg_x", "--codes", "--device"])
            .unwrap();
        assert!(matches!(
            cli.command,
            Command::Mail(MailArgs {
                device: true,
                command: MailCommand::Read {
                    show: ShowArgs {
                        codes: true,
                        html: false,
                        raw: false,
                        keep_unread: false
                    },
                    ..
                }
            })
        ));
        assert_eq!(cli.command.stored_credential(), StoredCredential::Device);
        let cli = Cli::try_parse_from(["sealpost", "mail", "--device", "wait", "ibx_x"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Mail(MailArgs {
                device: true,
                command: MailCommand::Wait { timeout: 60, .. }
            })
        ));
        let cli = Cli::try_parse_from(["sealpost", "mail", "attachment", "msg_x", "1", "-o", "-"])
            .unwrap();
        assert!(matches!(
            cli.command,
            Command::Mail(MailArgs { command: MailCommand::Attachment { index: 1, output: Some(ref path), .. }, .. })
                if path.as_os_str() == "-"
        ));
        let cli = Cli::try_parse_from(["sealpost", "mail", "mark", "msg_x", "--unread"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Mail(MailArgs {
                command: MailCommand::Mark {
                    read: false,
                    unread: true,
                    ..
                },
                ..
            })
        ));
        for refused in [
            &["sealpost", "mail", "mark", "msg_x"][..],
            &["sealpost", "mail", "mark", "msg_x", "--read", "--unread"],
            &["sealpost", "mail", "list", "ibx_x", "--limit", "0"],
            &["sealpost", "mail", "list", "ibx_x", "--limit", "201"],
            &["sealpost", "mail", "read", "msg_x", "--html", "--codes"],
            &["sealpost", "mail", "attachment", "msg_x"],
        ] {
            assert!(Cli::try_parse_from(refused).is_err(), "{refused:?}");
        }
    }

    #[test]
    fn billing_forms_parse() {
        let cli = Cli::try_parse_from(["sealpost", "plan", "change", "free", "--yes"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Plan(PlanCommand::Change { ref plan, yes: true }) if plan == "free"
        ));
        let cli = Cli::try_parse_from(["sealpost", "plan", "change", "free"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Plan(PlanCommand::Change { yes: false, .. })
        ));
        let cli = Cli::try_parse_from(["sealpost", "billing", "checkout", "scale"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Billing(BillingCommand::Checkout { provider: None, .. })
        ));
        let cli = Cli::try_parse_from(["sealpost", "domains"]).unwrap();
        assert_eq!(
            cli.command.stored_credential(),
            StoredCredential::SessionElseDevice
        );
    }

    #[test]
    fn staff_forms_parse() {
        let cli = Cli::try_parse_from(["sealpost", "staff", "tickets"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Staff(StaffArgs {
                key_file: None,
                command: StaffCommand::Tickets {
                    status: StaffListStatus::Open
                }
            })
        ));
        assert_eq!(
            cli.command.stored_credential(),
            StoredCredential::StaffToken
        );
        let cli = Cli::try_parse_from([
            "sealpost",
            "staff",
            "reply",
            "tkt_x",
            "--text",
            "hi",
            "--key-file",
            "/k.json",
        ])
        .unwrap();
        assert!(matches!(
            cli.command,
            Command::Staff(StaffArgs { key_file: Some(ref path), command: StaffCommand::Reply { text: Some(ref text), .. } })
                if text == "hi" && path.as_os_str() == "/k.json"
        ));
        let cli = Cli::try_parse_from(["sealpost", "staff", "key", "init"]).unwrap();
        assert_eq!(cli.command.stored_credential(), StoredCredential::None);
        for refused in [
            &["sealpost", "staff", "reply", "tkt_x"][..],
            &["sealpost", "staff", "suspend", "acct_x"],
            &["sealpost", "staff", "tickets", "--status", "closed"],
            &["sealpost", "staff", "audit", "--limit", "0"],
            &["sealpost", "staff", "switches", "--support", "maybe"],
        ] {
            assert!(Cli::try_parse_from(refused).is_err(), "{refused:?}");
        }
    }

    #[test]
    fn api_url_flag_is_global() {
        let cli = Cli::try_parse_from(["sealpost", "whoami", "--api-url", "http://x"]).unwrap();
        assert_eq!(cli.api_url.as_deref(), Some("http://x"));
    }
}
