//! Teams (`team`) and the teams this account is in (`membership`).

use clap::Subcommand;

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
