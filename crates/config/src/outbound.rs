//! Outbound mail (`POST /messages/send`): the relay it is submitted to, the
//! bound on one submission, and the shared domains' DKIM key.

use crate::ConfigError;
use crate::variables::{Variable, Vars};
use std::path::PathBuf;

pub(crate) const SMTP_RELAY: Variable = Variable {
    name: "SEALPOST_SMTP_RELAY",
    default: "(unset: sending is off)",
    meaning: "Outbound relay for `POST /messages/send`: `smtp://host[:port]` (plain), `smtp://host[:port]?tls=required` or `?tls=opportunistic` (STARTTLS), `smtps://host[:port]` (TLS at once); credentials as `user:password@` (percent-encoded).",
};

pub(crate) const SMTP_RELAY_TIMEOUT: Variable = Variable {
    name: "SEALPOST_SMTP_RELAY_TIMEOUT",
    default: "60",
    meaning: "Seconds one whole relay submission may take (connect, greeting, every command, the message); a relay that has not finished in time fails the send with 502 `send_failed`.",
};

pub(crate) const DKIM_KEY: Variable = Variable {
    name: "SEALPOST_DKIM_KEY",
    default: "(unset: sent mail is not signed)",
    meaning: "PEM file of the shared domains' DKIM key (RSA, 2048 to 4096 bits, PKCS#1 `BEGIN RSA PRIVATE KEY` or PKCS#8 `BEGIN PRIVATE KEY`); mail is signed `d=` the sending address's domain. Publish the public key as `<selector>._domainkey.<domain>` TXT for every shared domain.",
};

pub(crate) const DKIM_SELECTOR: Variable = Variable {
    name: "SEALPOST_DKIM_SELECTOR",
    default: "sealpost",
    meaning: "The DKIM selector (`s=`) the key is published under.",
};

/// `SEALPOST_SMTP_RELAY`: it may carry the relay's password, so it is
/// wiped on drop ([`crate::Secret`]) and `Debug` shows it without the
/// credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct RelayUrl(crate::Secret);

impl RelayUrl {
    pub fn new(url: impl Into<String>) -> Self {
        Self(crate::Secret::new(url))
    }

    /// The URL, credentials included, for the transport that uses it.
    pub fn expose(&self) -> &str {
        self.0.expose()
    }
}

impl std::fmt::Debug for RelayUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.expose().split_once("://") {
            Some((scheme, rest)) if rest.contains('@') => {
                let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
                write!(f, "RelayUrl({scheme}://<credentials>@{host})")
            }
            _ => write!(f, "RelayUrl({})", self.expose()),
        }
    }
}

pub(crate) struct Outbound {
    pub(crate) smtp_relay: Option<RelayUrl>,
    pub(crate) smtp_relay_timeout: std::time::Duration,
    pub(crate) dkim_key_file: Option<PathBuf>,
    pub(crate) dkim_selector: String,
}

pub(crate) fn read(vars: Vars<'_>) -> Result<Outbound, ConfigError> {
    Ok(Outbound {
        smtp_relay: vars.get(&SMTP_RELAY).map(RelayUrl::new),
        smtp_relay_timeout: std::time::Duration::from_secs(vars.whole(
            &SMTP_RELAY_TIMEOUT,
            1,
            600,
        )?),
        dkim_key_file: vars.path(&DKIM_KEY),
        dkim_selector: vars.text(&DKIM_SELECTOR).to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::RelayUrl;
    use crate::variables::vars;
    use crate::{Config, ConfigError};
    use std::path::PathBuf;

    #[test]
    fn the_relay_timeout_is_bounded() {
        for bad in ["0", "601", "ten"] {
            let error =
                Config::from_vars(&vars(&[("SEALPOST_SMTP_RELAY_TIMEOUT", bad)])).unwrap_err();
            assert!(matches!(
                error,
                ConfigError::Invalid {
                    name: "SEALPOST_SMTP_RELAY_TIMEOUT",
                    ..
                }
            ));
        }
        let config = Config::from_vars(&vars(&[
            (
                "SEALPOST_SMTP_RELAY",
                "smtp://relay.example:587?tls=required",
            ),
            ("SEALPOST_SMTP_RELAY_TIMEOUT", "5"),
            ("SEALPOST_DKIM_KEY", "/etc/sealpost/dkim.pem"),
            ("SEALPOST_DKIM_SELECTOR", "mail2026"),
        ]))
        .unwrap();
        assert_eq!(config.smtp_relay_timeout.as_secs(), 5);
        assert_eq!(
            format!(
                "{:?}",
                RelayUrl::new("smtps://user:s3cret@relay.example:465")
            ),
            "RelayUrl(smtps://<credentials>@relay.example:465)",
            "the password never reaches a log through Debug"
        );
        assert_eq!(
            config.dkim_key_file,
            Some(PathBuf::from("/etc/sealpost/dkim.pem"))
        );
        assert_eq!(config.dkim_selector, "mail2026");
    }
}
