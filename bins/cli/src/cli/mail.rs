//! Reading mail (`mail`): who reads, lists, single messages, waiting,
//! attachments, marks, folders and the trash.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// Messages a list page holds: 1 to 200.
pub(super) fn page_size() -> clap::builder::RangedI64ValueParser<u32> {
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
        /// to 50 with --cc).
        #[arg(long, required = true, value_name = "ADDRESS")]
        to: Vec<String>,
        /// A copy to: as --to; repeat for more.
        #[arg(long, value_name = "ADDRESS")]
        cc: Vec<String>,
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::*;

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
}
