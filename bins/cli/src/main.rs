//! `sealpost`: the command-line client.
#![allow(
    clippy::print_stdout,
    reason = "a command-line tool's output is its interface"
)]

mod cli;
mod commands;
mod phrase;
mod state;

use std::process::ExitCode;

use clap::Parser;
use sealpost_client::ClientError;

use crate::cli::Cli;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let uses_stored_session = cli.command.uses_stored_session();
    match commands::run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{}", report(&err, uses_stored_session));
            ExitCode::FAILURE
        }
    }
}

/// `error: <message> (<code>)`, plus a hint where one helps.
fn report(err: &anyhow::Error, uses_stored_session: bool) -> String {
    let mut out = format!("error: {err:#}");
    if let Some(client_err) = err.downcast_ref::<ClientError>() {
        out.push_str(&format!(" ({})", client_err.code()));
        if client_err.status() == Some(401) && uses_stored_session {
            out.push_str("\nhint: the session has ended; run `sealpost login` to sign in again");
        }
        if let Some(seconds) = client_err.retry_after() {
            out.push_str(&format!("\nhint: rate limited; try again in {seconds} s"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16, code: &str) -> anyhow::Error {
        ClientError::Api {
            status,
            code: code.to_owned(),
            message: "nope".to_owned(),
            retry_after: None,
        }
        .into()
    }

    #[test]
    fn api_errors_show_code_and_hint() {
        assert_eq!(
            report(&api(401, "session_expired"), true),
            "error: nope (session_expired)\nhint: the session has ended; run `sealpost login` to sign in again"
        );
        assert_eq!(
            report(
                &api(401, "unauthenticated").context("sign-in refused"),
                false
            ),
            "error: sign-in refused: nope (unauthenticated)"
        );
        assert_eq!(
            report(&api(404, "not_found"), true),
            "error: nope (not_found)"
        );
    }

    #[test]
    fn other_errors_show_the_chain() {
        let err = anyhow::anyhow!("inner").context("outer");
        assert_eq!(report(&err, true), "error: outer: inner");
    }
}
