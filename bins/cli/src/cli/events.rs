//! The account's event stream (`events`).

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Follow the account's events as they commit, one line each: the
    /// event's stream id, its type and its payload's ids. Runs until
    /// interrupted; reconnects where it left off when the connection ends.
    Follow {
        /// Resume after this stream id (the first column of an earlier
        /// line) instead of starting now.
        #[arg(long, value_name = "ID")]
        after: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::*;

    #[test]
    fn events_follow_parses() {
        let cli = Cli::parse_from(["sealpost", "events", "follow", "--after", "ZTEuMg"]);
        assert!(matches!(
            cli.command,
            Command::Events(EventsCommand::Follow { after: Some(ref id) }) if id == "ZTEuMg"
        ));
        assert_eq!(cli.command.stored_credential(), StoredCredential::Session);
        let cli = Cli::parse_from(["sealpost", "events", "follow"]);
        assert!(matches!(
            cli.command,
            Command::Events(EventsCommand::Follow { after: None })
        ));
    }
}
