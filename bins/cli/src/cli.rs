//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Where `init` and `login` connect when neither `--api-url` nor
/// `SEALPOST_API_URL` is given.
pub const DEFAULT_API_URL: &str = "http://127.0.0.1:8080";

/// Sealpost: end-to-end encrypted disposable email, from the command line.
#[derive(Debug, Parser)]
#[command(name = "sealpost", version)]
pub struct Cli {
    /// Base URL of the Sealpost API [default: http://127.0.0.1:8080]
    #[arg(long, env = "SEALPOST_API_URL", global = true, value_name = "URL")]
    pub api_url: Option<String>,

    /// Directory holding the stored session [default: the platform's
    /// configuration directory + /sealpost]
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
}

impl Command {
    /// Whether the command works with the stored session (a 401 then means
    /// it has ended and `sealpost login` is the way out).
    pub fn uses_stored_session(&self) -> bool {
        matches!(self, Self::Whoami | Self::Sessions(_) | Self::Logout)
    }
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
    fn api_url_flag_is_global() {
        let cli = Cli::try_parse_from(["sealpost", "whoami", "--api-url", "http://x"]).unwrap();
        assert_eq!(cli.api_url.as_deref(), Some("http://x"));
    }
}
