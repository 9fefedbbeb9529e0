//! Configuration, read once from the environment (CONTRACT.md section 10).
//! Every variable has a default that works for local use.

use std::collections::HashMap;
use std::path::PathBuf;

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/sealpost_dev";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub database_url: String,
    pub http_addr: String,
    pub smtp_addr: String,
    /// Shared domains addresses can be created on.
    pub domains: Vec<String>,
    pub blob_dir: PathBuf,
    pub billing_sandbox: bool,
    pub smtp_relay: Option<String>,
    /// Edge limit: requests per minute per IP and per account.
    pub edge_rate_per_minute: u32,
    /// The support team's X25519 public key; in-app support needs it.
    pub support_key: Option<String>,
    pub log_filter: String,
    /// Log lines as JSON (`SEALPOST_LOG_JSON=true`) for collectors.
    pub log_json: bool,
    /// `host=ip:port,...`: webhook hosts pinned to an address (tests).
    pub webhook_resolve: Option<String>,
    /// A PEM file of extra trusted roots for webhook delivery (tests).
    pub webhook_ca_file: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("{name} is not valid: {reason}")]
    Invalid { name: &'static str, reason: String },
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(&std::env::vars().collect())
    }

    /// Reads from the given variables (tests pass their own).
    pub fn from_vars(vars: &HashMap<String, String>) -> Result<Self, ConfigError> {
        let get = |name: &str| vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        let domains: Vec<String> = get("SEALPOST_DOMAINS")
            .unwrap_or("mail.localhost")
            .split(',')
            .map(|domain| domain.trim().trim_end_matches('.').to_ascii_lowercase())
            .filter(|domain| !domain.is_empty())
            .collect();
        if domains.is_empty() {
            return Err(ConfigError::Invalid {
                name: "SEALPOST_DOMAINS",
                reason: "needs at least one domain".into(),
            });
        }
        let edge_rate_per_minute = match get("SEALPOST_EDGE_RATE") {
            None => 600,
            Some(text) => match text.parse::<u32>() {
                Ok(rate) if rate > 0 => rate,
                _ => {
                    return Err(ConfigError::Invalid {
                        name: "SEALPOST_EDGE_RATE",
                        reason: "expected a whole number of requests per minute above 0".into(),
                    });
                }
            },
        };
        Ok(Self {
            database_url: get("DATABASE_URL")
                .unwrap_or(DEFAULT_DATABASE_URL)
                .to_owned(),
            http_addr: get("SEALPOST_HTTP_ADDR")
                .unwrap_or("127.0.0.1:8080")
                .to_owned(),
            smtp_addr: get("SEALPOST_SMTP_ADDR")
                .unwrap_or("127.0.0.1:2525")
                .to_owned(),
            domains,
            blob_dir: PathBuf::from(get("SEALPOST_BLOB_DIR").unwrap_or("target/dev/blobs")),
            billing_sandbox: flag(get("SEALPOST_BILLING_SANDBOX"), "SEALPOST_BILLING_SANDBOX")?,
            smtp_relay: get("SEALPOST_SMTP_RELAY").map(str::to_owned),
            edge_rate_per_minute,
            support_key: get("SEALPOST_SUPPORT_KEY").map(str::to_owned),
            log_filter: get("SEALPOST_LOG").unwrap_or("info").to_owned(),
            log_json: flag(get("SEALPOST_LOG_JSON"), "SEALPOST_LOG_JSON")?,
            webhook_resolve: get("SEALPOST_WEBHOOK_RESOLVE").map(str::to_owned),
            webhook_ca_file: get("SEALPOST_WEBHOOK_CA_FILE").map(PathBuf::from),
        })
    }
}

/// Logs to stderr, filtered by `SEALPOST_LOG`, as JSON when `SEALPOST_LOG_JSON` is on.
#[cfg(feature = "logging")]
pub fn init_tracing(config: &Config) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_new(&config.log_filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if config.log_json {
        builder.json().init();
    } else {
        builder.init();
    }
}

fn flag(value: Option<&str>, name: &'static str) -> Result<bool, ConfigError> {
    match value.map(str::to_ascii_lowercase).as_deref() {
        None | Some("false" | "0" | "no" | "off") => Ok(false),
        Some("true" | "1" | "yes" | "on") => Ok(true),
        Some(other) => Err(ConfigError::Invalid {
            name,
            reason: format!("expected true or false, got {other:?}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_work_for_local_use() {
        let config = Config::from_vars(&HashMap::new()).unwrap();
        assert_eq!(config.http_addr, "127.0.0.1:8080");
        assert_eq!(config.smtp_addr, "127.0.0.1:2525");
        assert_eq!(config.domains, vec!["mail.localhost"]);
        assert_eq!(config.edge_rate_per_minute, 600);
        assert!(!config.billing_sandbox);
        assert_eq!(config.support_key, None);
    }

    #[test]
    fn reads_and_checks_values() {
        let config = Config::from_vars(&vars(&[
            ("SEALPOST_DOMAINS", "A.example, b.example."),
            ("SEALPOST_EDGE_RATE", "5"),
            ("SEALPOST_BILLING_SANDBOX", "true"),
        ]))
        .unwrap();
        assert_eq!(config.domains, vec!["a.example", "b.example"]);
        assert_eq!(config.edge_rate_per_minute, 5);
        assert!(config.billing_sandbox);
        assert!(Config::from_vars(&vars(&[("SEALPOST_EDGE_RATE", "0")])).is_err());
        assert!(Config::from_vars(&vars(&[("SEALPOST_BILLING_SANDBOX", "maybe")])).is_err());
    }
}
