//! The account's sign-in sessions (`sessions`).

use clap::{Args, Subcommand};

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
    use clap::Parser;

    use crate::cli::*;

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
}
