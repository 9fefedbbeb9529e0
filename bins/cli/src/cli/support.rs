//! Support and abuse: tickets sealed to the support key (`support`),
//! and the reasons an abuse report (`report-abuse`) may give.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// The reasons `POST /abuse/reports` takes.
pub(super) const ABUSE_REASONS: [&str; 7] = [
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
