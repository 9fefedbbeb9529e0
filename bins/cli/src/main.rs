//! `sealpost`: the command-line client.
// Output goes through `outln!` and `errln!` (module `output`), which never
// panic on a closed pipe.
#![warn(clippy::print_stderr)]

#[macro_use]
mod output;

mod cli;
mod commands;
mod escape;
mod mailtext;
mod phrase;
mod state;
mod table;

use std::process::ExitCode;

use clap::Parser;
use sealpost_client::ClientError;

use crate::cli::{Cli, StoredCredential};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let credential =
        commands::resolve_credential(cli.command.stored_credential(), cli.config_dir.clone());
    let result = commands::run(cli).await;
    let unwritten = output::finish();
    match (result, unwritten) {
        (Ok(()), None) => ExitCode::SUCCESS,
        (Ok(()), Some(err)) => {
            errln!("error: cannot write to stdout: {err}");
            ExitCode::FAILURE
        }
        (Err(err), _) => {
            errln!("{}", report(&err, credential));
            ExitCode::FAILURE
        }
    }
}

/// `error: <message> (<code>)`, plus a hint where one helps. The message
/// may carry the service's text, so it is escaped.
fn report(err: &anyhow::Error, credential: StoredCredential) -> String {
    let mut out = format!("error: {}", escape::line(&format!("{err:#}")));
    if let Some(client_err) = err.downcast_ref::<ClientError>() {
        out.push_str(&format!(" ({})", client_err.code()));
        if client_err.status() == Some(401) {
            match credential {
                StoredCredential::Session => out.push_str(
                    "\nhint: the session has ended; run `sealpost login` to sign in again",
                ),
                StoredCredential::Device => out.push_str(
                    "\nhint: this device's credential no longer works (the device was disabled or removed); \
                     pair it again with `sealpost agent pair --force`",
                ),
                StoredCredential::StaffToken => out.push_str(
                    "\nhint: the staff token in SEALPOST_STAFF_TOKEN was refused (revoked or mistyped); \
                     an operator makes a new one with `sealpost-api staff-token create NAME`",
                ),
                StoredCredential::None | StoredCredential::SessionElseDevice => {}
            }
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
            report(&api(401, "session_expired"), StoredCredential::Session),
            "error: nope (session_expired)\nhint: the session has ended; run `sealpost login` to sign in again"
        );
        assert_eq!(
            report(
                &api(401, "unauthenticated").context("sign-in refused"),
                StoredCredential::None
            ),
            "error: sign-in refused: nope (unauthenticated)"
        );
        assert_eq!(
            report(&api(404, "not_found"), StoredCredential::Session),
            "error: nope (not_found)"
        );
    }

    #[test]
    fn revoked_device_credentials_point_at_pairing() {
        let shown = report(&api(401, "unauthenticated"), StoredCredential::Device);
        assert!(
            shown.starts_with("error: nope (unauthenticated)\nhint: "),
            "{shown}"
        );
        assert!(shown.contains("sealpost agent pair --force"), "{shown}");
        assert!(!shown.contains("sealpost login"), "{shown}");
    }

    #[test]
    fn service_messages_cannot_drive_the_terminal() {
        let err: anyhow::Error = ClientError::Api {
            status: 400,
            code: "invalid_field".to_owned(),
            message: "bad\u{1b}]0;title\u{7}\nline".to_owned(),
            retry_after: None,
        }
        .into();
        assert_eq!(
            report(&err, StoredCredential::None),
            "error: bad\\x1b]0;title\\x07\\x0aline (invalid_field)"
        );
    }

    #[test]
    fn other_errors_show_the_chain() {
        let err = anyhow::anyhow!("inner").context("outer");
        assert_eq!(
            report(&err, StoredCredential::Session),
            "error: outer: inner"
        );
    }
}
