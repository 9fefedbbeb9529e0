//! The support team's side (`staff`): the support keyring, sealed tickets
//! read and answered, abuse reports, suspension, the audit log.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::mail::page_size;

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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::*;

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
}
