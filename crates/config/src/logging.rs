//! Logging: the filter, JSON lines for collectors, and (behind the
//! `logging` feature) the binaries' log set-up.

use crate::ConfigError;
use crate::variables::{Variable, Vars};

pub(crate) const LOG: Variable = Variable {
    name: "SEALPOST_LOG",
    default: "info",
    meaning: "Log filter in `tracing` syntax, e.g. `info,sealpost_store_pg=debug`.",
};

pub(crate) const LOG_JSON: Variable = Variable {
    name: "SEALPOST_LOG_JSON",
    default: "false",
    meaning: "`true` writes log lines as JSON for collectors.",
};

pub(crate) struct Logging {
    pub(crate) log_filter: String,
    pub(crate) log_json: bool,
}

pub(crate) fn read(vars: Vars<'_>) -> Result<Logging, ConfigError> {
    Ok(Logging {
        log_filter: vars.text(&LOG).to_owned(),
        log_json: vars.flag(&LOG_JSON)?,
    })
}

/// Logs to stderr, filtered by `SEALPOST_LOG`, as JSON when `SEALPOST_LOG_JSON` is on.
#[cfg(feature = "logging")]
pub fn init_tracing(config: &crate::Config) {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_new(&config.log_filter).unwrap_or_else(|_| EnvFilter::new(LOG.default));
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never in files or pipes.
        .with_ansi(std::io::stderr().is_terminal());
    if config.log_json {
        builder.json().init();
    } else {
        builder.init();
    }
}
