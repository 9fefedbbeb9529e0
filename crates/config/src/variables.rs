//! The variable table: what a [`Variable`] is, [`VARIABLES`] (assembled, in
//! the order `docs/configuration.md` shows them, from the entries each
//! concern's module owns), the table rendered from it, and [`Vars`], the one
//! reader every concern reads its entries through: an unset or empty value
//! falls back to the entry's own default, so each default is written once.

use crate::{
    ConfigError, accounts, billing, domains, http, keys, logging, operations, outbound, push, smtp,
    storage, webhooks,
};
use std::collections::HashMap;
use std::path::PathBuf;

/// One environment variable the service reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variable {
    pub name: &'static str,
    /// What applies when it is unset or empty.
    pub default: &'static str,
    pub meaning: &'static str,
}

impl Variable {
    /// The default when it is a value; a default in parentheses describes
    /// what applies instead (nothing, or something worked out elsewhere).
    pub(crate) fn default_value(&self) -> Option<&'static str> {
        (!self.default.starts_with('(')).then_some(self.default)
    }
}

/// Every variable the service reads, in the order `docs/configuration.md`
/// shows them.
pub const VARIABLES: &[Variable] = &[
    storage::DATABASE_URL,
    http::HTTP_ADDR,
    http::TRUSTED_PROXIES,
    http::FORWARDED_HEADER,
    http::TLS_CERT,
    http::TLS_KEY,
    http::PUBLIC_URL,
    smtp::SMTP_ADDR,
    smtp::SMTP_MAX_SESSIONS,
    smtp::SMTP_MAX_SESSIONS_PER_IP,
    smtp::SMTP_MAX_SESSIONS_PER_IPV4_24,
    smtp::SMTP_MAX_SESSIONS_PER_IPV6_48,
    smtp::SMTP_RESERVED_SHARE,
    smtp::SMTP_KNOWN_SENDERS,
    smtp::SMTP_KNOWN_SENDER_HOURS,
    smtp::SMTP_MAIL_DEADLINE,
    smtp::SMTP_CONNECT_RATE,
    smtp::SMTP_DATA_MEMORY,
    smtp::SMTP_SPOOL_THRESHOLD,
    smtp::SMTP_SPOOL_BUDGET,
    smtp::SMTP_SPOOL_DIR,
    smtp::SMTP_TLS_CERT,
    smtp::SMTP_TLS_KEY,
    operations::SMTP_DRAIN_SECS,
    domains::DOMAINS,
    domains::RESERVED_NAMES,
    storage::BLOB_DIR,
    storage::BLOB_URL,
    storage::AWS_ENDPOINT_URL,
    storage::AWS_REGION,
    storage::AWS_ACCESS_KEY_ID,
    storage::AWS_SECRET_ACCESS_KEY,
    http::EDGE_RATE,
    accounts::REGISTRATIONS_PER_NETWORK,
    accounts::NEW_ACCOUNT_SENDS,
    outbound::SMTP_RELAY,
    outbound::SMTP_RELAY_TIMEOUT,
    outbound::DKIM_KEY,
    outbound::DKIM_SELECTOR,
    keys::SERVER_KEY,
    keys::SERVER_KEYS_OLD,
    keys::SUPPORT_KEY,
    keys::STAFF_TOKEN_DAYS,
    domains::DNS_RESOLVER,
    domains::DNS_NAMESERVERS,
    domains::MX_HOST,
    domains::DNS_ADDR,
    domains::DNS_ZONE_CACHE_SECS,
    domains::DNS_RATE,
    domains::DNS_RATE_SLIP,
    domains::DNS_RATE_IPV4_PREFIX,
    domains::DNS_RATE_IPV6_PREFIX,
    domains::DNS_UDP_MAX,
    logging::LOG,
    logging::LOG_JSON,
    operations::METRICS_ADDR,
    operations::SMTP_METRICS_ADDR,
    operations::DNS_METRICS_ADDR,
    billing::BILLING_SANDBOX,
    billing::BILLING_DISABLED,
    billing::STRIPE_SECRET_KEY,
    billing::STRIPE_WEBHOOK_SECRET,
    billing::STRIPE_API_URL,
    billing::BTCPAY_URL,
    billing::BTCPAY_API_KEY,
    billing::BTCPAY_STORE_ID,
    billing::BTCPAY_WEBHOOK_SECRET,
    webhooks::WEBHOOK_RESOLVE,
    webhooks::WEBHOOK_CA_FILE,
    push::APNS_KEY_FILE,
    push::APNS_KEY_ID,
    push::APNS_TEAM_ID,
    push::APNS_TOPIC,
    push::APNS_URL,
    push::FCM_CREDENTIALS_FILE,
    push::FCM_PROJECT_ID,
    push::FCM_URL,
    push::FCM_TOKEN_URL,
    push::PUSH_CA_FILE,
];

/// The table of `docs/configuration.md`, rendered from [`VARIABLES`].
pub fn variables_table() -> String {
    let mut table = String::from("| variable | default | meaning |\n|---|---|---|\n");
    for variable in VARIABLES {
        let default = match variable.default_value() {
            Some(value) => format!("`{value}`"),
            None => variable.default.to_owned(),
        };
        table.push_str(&format!(
            "| `{}` | {default} | {} |\n",
            variable.name, variable.meaning
        ));
    }
    table
}

/// The listed variables out of an environment, refusing a value that is not UTF-8.
pub(crate) fn read_environment(
    environment: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Result<HashMap<String, String>, ConfigError> {
    let mut read = HashMap::new();
    for (key, value) in environment {
        let Some(variable) = VARIABLES.iter().find(|variable| key == variable.name) else {
            continue;
        };
        let value = value.into_string().map_err(|_| ConfigError::Invalid {
            name: variable.name,
            reason: "is not valid UTF-8".into(),
        })?;
        read.insert(variable.name.to_owned(), value);
    }
    Ok(read)
}

/// The variables given, read entry by entry.
#[derive(Clone, Copy)]
pub(crate) struct Vars<'a>(&'a HashMap<String, String>);

impl<'a> Vars<'a> {
    pub(crate) fn new(vars: &'a HashMap<String, String>) -> Self {
        Self(vars)
    }

    /// The value set, trimmed; unset or empty is `None`.
    pub(crate) fn get(self, variable: &Variable) -> Option<&'a str> {
        debug_assert!(
            VARIABLES.contains(variable),
            "{} is read but not listed in VARIABLES",
            variable.name
        );
        self.0
            .get(variable.name)
            .map(|value| value.trim())
            .filter(|value| !value.is_empty())
    }

    /// The value set, else the entry's default when that is a value.
    pub(crate) fn value(self, variable: &Variable) -> Option<&'a str> {
        self.get(variable).or(variable.default_value())
    }

    /// [`Vars::value`], or empty text for an entry whose default is none.
    pub(crate) fn text(self, variable: &Variable) -> &'a str {
        self.value(variable).unwrap_or("")
    }

    /// A path, when one is set or defaulted.
    pub(crate) fn path(self, variable: &Variable) -> Option<PathBuf> {
        self.value(variable).map(PathBuf::from)
    }

    /// The non-empty items of a comma list, trimmed.
    pub(crate) fn list(self, variable: &Variable) -> impl Iterator<Item = &'a str> {
        self.text(variable)
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
    }

    /// A whole number from `min` to `max`.
    pub(crate) fn whole(self, variable: &Variable, min: u64, max: u64) -> Result<u64, ConfigError> {
        match self.text(variable).parse::<u64>() {
            Ok(value) if (min..=max).contains(&value) => Ok(value),
            _ => Err(ConfigError::Invalid {
                name: variable.name,
                reason: format!("expected a whole number from {min} to {max}"),
            }),
        }
    }

    /// A yes or no; unset is no.
    pub(crate) fn flag(self, variable: &Variable) -> Result<bool, ConfigError> {
        match self.value(variable).map(str::to_ascii_lowercase).as_deref() {
            None | Some("false" | "0" | "no" | "off") => Ok(false),
            Some("true" | "1" | "yes" | "on") => Ok(true),
            Some(other) => Err(ConfigError::Invalid {
                name: variable.name,
                reason: format!("expected true or false, got {other:?}"),
            }),
        }
    }

    /// Reads a group of variables that only work together: all set, or none.
    pub(crate) fn all_or_none<const N: usize>(
        self,
        variables: [&Variable; N],
    ) -> Result<Option<[String; N]>, ConfigError> {
        let values = variables.map(|variable| self.get(variable).map(str::to_owned));
        if values.iter().all(Option::is_none) {
            return Ok(None);
        }
        if let Some((missing, _)) = variables.iter().zip(&values).find(|(_, v)| v.is_none()) {
            let names: Vec<&str> = variables.iter().map(|variable| variable.name).collect();
            return Err(ConfigError::Invalid {
                name: missing.name,
                reason: format!("needed together with {}", names.join(", ")),
            });
        }
        Ok(Some(values.map(Option::unwrap_or_default)))
    }
}

/// The test's own variables, as the environment would hold them.
#[cfg(test)]
pub(crate) fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every source file of the crate.
    const SOURCES: &[(&str, &str)] = &[
        ("lib.rs", include_str!("lib.rs")),
        ("variables.rs", include_str!("variables.rs")),
        ("storage.rs", include_str!("storage.rs")),
        ("http.rs", include_str!("http.rs")),
        ("smtp.rs", include_str!("smtp.rs")),
        ("domains.rs", include_str!("domains.rs")),
        ("outbound.rs", include_str!("outbound.rs")),
        ("keys.rs", include_str!("keys.rs")),
        ("logging.rs", include_str!("logging.rs")),
        ("billing.rs", include_str!("billing.rs")),
        ("webhooks.rs", include_str!("webhooks.rs")),
        ("push.rs", include_str!("push.rs")),
        ("accounts.rs", include_str!("accounts.rs")),
        ("operations.rs", include_str!("operations.rs")),
        ("secret.rs", include_str!("secret.rs")),
    ];

    #[test]
    fn docs_configuration_lists_every_variable() {
        let docs = include_str!("../../../docs/configuration.md");
        let table = variables_table();
        assert!(
            docs.contains(&table),
            "docs/configuration.md must contain this table, rendered from VARIABLES:\n\n{table}"
        );
    }

    #[test]
    fn every_variable_read_is_listed() {
        // Every quoted `SEALPOST_...` name in the crate is one of VARIABLES,
        // and every entry is listed once.
        let prefix = concat!("\"", "SEALPOST_");
        for (file, source) in SOURCES {
            for (at, _) in source.match_indices(prefix) {
                let rest = &source[at + 1..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                    .collect();
                if name.len() > "SEALPOST_".len() && rest[name.len()..].starts_with('"') {
                    assert!(
                        VARIABLES.iter().any(|variable| variable.name == name),
                        "{name} ({file}) is not in VARIABLES"
                    );
                }
            }
        }
        for (at, variable) in VARIABLES.iter().enumerate() {
            assert!(
                !VARIABLES[..at]
                    .iter()
                    .any(|earlier| earlier.name == variable.name),
                "{} is listed twice",
                variable.name
            );
        }
    }

    #[test]
    fn a_value_that_is_not_utf8_is_named() {
        use std::os::unix::ffi::OsStringExt;
        let bad = std::ffi::OsString::from_vec(vec![0x66, 0xff, 0x6f]);
        let error = read_environment([("SEALPOST_DOMAINS".into(), bad.clone())]).unwrap_err();
        assert_eq!(
            error,
            ConfigError::Invalid {
                name: "SEALPOST_DOMAINS",
                reason: "is not valid UTF-8".into()
            }
        );
        // Variables the service does not read may hold anything.
        let read = read_environment([
            ("SOMETHING_ELSE".into(), bad),
            ("SEALPOST_EDGE_RATE".into(), "5".into()),
        ])
        .unwrap();
        assert_eq!(read.len(), 1);
        assert_eq!(read["SEALPOST_EDGE_RATE"], "5");
    }
}
