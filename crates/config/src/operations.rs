//! Running the processes: how long the SMTP ingest drains at SIGTERM, and
//! where each process serves its Prometheus metrics (off unless set).

use std::net::SocketAddr;
use std::time::Duration;

use crate::ConfigError;
use crate::variables::{Variable, Vars};

pub(crate) const SMTP_DRAIN_SECS: Variable = Variable {
    name: "SEALPOST_SMTP_DRAIN_SECS",
    default: "30",
    meaning: "Seconds (0 to 3600) `sealpost-smtp` drains at SIGTERM or Ctrl-C: its listener is closed at once, idle sessions are answered 421 4.3.2 and closed, and messages already in DATA are finished (sealed, committed, answered) within this time; sessions still running then are cut and the process exits.",
};

pub(crate) const METRICS_ADDR: Variable = Variable {
    name: "SEALPOST_METRICS_ADDR",
    default: "(none: no metrics listener)",
    meaning: "`ip:port` where `sealpost-api` (and `--jobs-only`) serves Prometheus metrics at `/metrics`, on a listener of its own; keep it off the public network.",
};

pub(crate) const SMTP_METRICS_ADDR: Variable = Variable {
    name: "SEALPOST_SMTP_METRICS_ADDR",
    default: "(none: no metrics listener)",
    meaning: "`ip:port` where `sealpost-smtp` serves Prometheus metrics at `/metrics`.",
};

pub(crate) const DNS_METRICS_ADDR: Variable = Variable {
    name: "SEALPOST_DNS_METRICS_ADDR",
    default: "(none: no metrics listener)",
    meaning: "`ip:port` where `sealpost-dns` serves Prometheus metrics at `/metrics`.",
};

/// How the processes are run and watched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operations {
    /// The SMTP ingest's drain at SIGTERM (`SEALPOST_SMTP_DRAIN_SECS`).
    pub smtp_drain: Duration,
    /// `SEALPOST_METRICS_ADDR`: the API's and the jobs' metrics listener.
    pub metrics_addr: Option<SocketAddr>,
    /// `SEALPOST_SMTP_METRICS_ADDR`.
    pub smtp_metrics_addr: Option<SocketAddr>,
    /// `SEALPOST_DNS_METRICS_ADDR`.
    pub dns_metrics_addr: Option<SocketAddr>,
}

fn address(vars: Vars<'_>, variable: &Variable) -> Result<Option<SocketAddr>, ConfigError> {
    vars.get(variable)
        .map(|text| {
            text.parse().map_err(|_| ConfigError::Invalid {
                name: variable.name,
                reason: "expected ip:port".into(),
            })
        })
        .transpose()
}

pub(crate) fn read(vars: Vars<'_>) -> Result<Operations, ConfigError> {
    Ok(Operations {
        smtp_drain: Duration::from_secs(vars.whole(&SMTP_DRAIN_SECS, 0, 3600)?),
        metrics_addr: address(vars, &METRICS_ADDR)?,
        smtp_metrics_addr: address(vars, &SMTP_METRICS_ADDR)?,
        dns_metrics_addr: address(vars, &DNS_METRICS_ADDR)?,
    })
}

#[cfg(test)]
mod tests {
    use crate::variables::vars;
    use crate::{Config, ConfigError};
    use std::time::Duration;

    #[test]
    fn drain_and_metrics_listeners_default_off_and_are_read() {
        let config = Config::from_vars(&vars(&[])).unwrap();
        assert_eq!(config.operations.smtp_drain, Duration::from_secs(30));
        assert_eq!(config.operations.metrics_addr, None);
        assert_eq!(config.operations.smtp_metrics_addr, None);
        assert_eq!(config.operations.dns_metrics_addr, None);

        let config = Config::from_vars(&vars(&[
            ("SEALPOST_SMTP_DRAIN_SECS", "5"),
            ("SEALPOST_METRICS_ADDR", "127.0.0.1:9100"),
            ("SEALPOST_SMTP_METRICS_ADDR", "127.0.0.1:9101"),
            ("SEALPOST_DNS_METRICS_ADDR", "[::1]:9102"),
        ]))
        .unwrap();
        assert_eq!(config.operations.smtp_drain, Duration::from_secs(5));
        assert_eq!(
            config.operations.metrics_addr,
            Some("127.0.0.1:9100".parse().unwrap())
        );
        assert_eq!(
            config.operations.smtp_metrics_addr,
            Some("127.0.0.1:9101".parse().unwrap())
        );
        assert_eq!(
            config.operations.dns_metrics_addr,
            Some("[::1]:9102".parse().unwrap())
        );

        for (name, value) in [
            ("SEALPOST_SMTP_DRAIN_SECS", "3601"),
            ("SEALPOST_METRICS_ADDR", "localhost"),
            ("SEALPOST_DNS_METRICS_ADDR", "9102"),
        ] {
            let error = Config::from_vars(&vars(&[(name, value)])).unwrap_err();
            assert!(
                matches!(error, ConfigError::Invalid { name: refused, .. } if refused == name),
                "{name}={value}: {error:?}"
            );
        }
    }
}
