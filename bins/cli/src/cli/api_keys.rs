//! API keys (`api-key`): long-lived tokens for scripts.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum ApiKeyCommand {
    /// Create a key (Operator plan and up) and print its token once; a
    /// script then uses it as its bearer token, without the recovery phrase.
    Create {
        /// A label only you can read (sealed with the recovery phrase).
        #[arg(long, value_name = "TEXT")]
        label: String,
    },
    /// List the keys: id, label, created, last used (to the hour), paused.
    List,
    /// Revoke a key: its token stops working at once.
    Revoke {
        /// The key id (key_...), as `sealpost api-key list` shows it.
        id: String,
    },
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::*;

    #[test]
    fn api_key_forms_parse() {
        let cli = Cli::try_parse_from(["sealpost", "api-key", "create", "--label", "ci"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::ApiKey(ApiKeyCommand::Create { ref label }) if label == "ci"
        ));
        assert_eq!(cli.command.stored_credential(), StoredCredential::Session);
        let cli = Cli::try_parse_from(["sealpost", "api-key", "revoke", "key_x1y2"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::ApiKey(ApiKeyCommand::Revoke { ref id }) if id == "key_x1y2"
        ));
        assert!(Cli::try_parse_from(["sealpost", "api-key", "create"]).is_err());
    }
}
