//! Configuration, read once from the environment. Every variable has a
//! default that works for local use; [`VARIABLES`] lists them all and
//! `docs/configuration.md` is kept equal to it by a test.
//!
//! Each concern's module owns its variables (their table entries, defaults
//! included) and reads them: `storage`, `http`, `smtp` (the ingest),
//! `domains` (shared domains and own domains' DNS), `accounts` (new
//! accounts' limits), `outbound` (outbound
//! mail), `keys`, `logging`, `billing`, `webhooks`, `push`. `variables`
//! assembles the table and holds the one reader they all use.

use std::collections::HashMap;
use std::path::PathBuf;

mod accounts;
mod billing;
mod domains;
mod http;
mod keys;
mod logging;
mod operations;
mod outbound;
mod push;
mod secret;
mod smtp;
mod storage;
mod variables;
mod webhooks;

pub use billing::{BtcpayKeys, StripeKeys};
pub use domains::DnsSettings;
pub use http::{ForwardedHeader, TlsFiles};
#[cfg(feature = "logging")]
pub use logging::init_tracing;
pub use operations::Operations;
pub use outbound::RelayUrl;
pub use push::{ApnsKeys, FcmKeys};
pub use secret::Secret;
pub use storage::{BlobBucket, DEFAULT_DATABASE_URL};
pub use variables::{VARIABLES, Variable, variables_table};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// May hold the database password: wiped on drop, never in `Debug`.
    pub database_url: Secret,
    pub http_addr: String,
    pub smtp_addr: String,
    /// SMTP sessions at once (`SEALPOST_SMTP_MAX_SESSIONS`).
    pub smtp_max_sessions: usize,
    /// SMTP sessions at once per client (`SEALPOST_SMTP_MAX_SESSIONS_PER_IP`).
    pub smtp_max_sessions_per_ip: usize,
    /// SMTP sessions at once per IPv4 /24 (`SEALPOST_SMTP_MAX_SESSIONS_PER_IPV4_24`).
    pub smtp_max_sessions_per_ipv4_24: usize,
    /// SMTP sessions at once per IPv6 /48 (`SEALPOST_SMTP_MAX_SESSIONS_PER_IPV6_48`).
    pub smtp_max_sessions_per_ipv6_48: usize,
    /// Percent of the SMTP sessions kept for known senders (`SEALPOST_SMTP_RESERVED_SHARE`).
    pub smtp_reserved_share: u8,
    /// Networks remembered as known senders (`SEALPOST_SMTP_KNOWN_SENDERS`).
    pub smtp_known_senders: usize,
    /// How long a network stays known (`SEALPOST_SMTP_KNOWN_SENDER_HOURS`).
    pub smtp_known_sender_for: std::time::Duration,
    /// From connection to the first MAIL (`SEALPOST_SMTP_MAIL_DEADLINE`, in seconds).
    pub smtp_mail_deadline: std::time::Duration,
    /// New SMTP connections a minute per client, 0 for none (`SEALPOST_SMTP_CONNECT_RATE`).
    pub smtp_connect_rate: u32,
    /// Bytes of DATA held at once by all SMTP sessions (`SEALPOST_SMTP_DATA_MEMORY`, in MiB).
    pub smtp_data_memory: usize,
    /// Bytes of one message kept in memory before the rest is spooled
    /// encrypted (`SEALPOST_SMTP_SPOOL_THRESHOLD`, in KiB).
    pub smtp_spool_threshold: usize,
    /// Bytes all spool files take at once (`SEALPOST_SMTP_SPOOL_BUDGET`, in MiB).
    pub smtp_spool_budget: usize,
    /// Where encrypted spool files go (`SEALPOST_SMTP_SPOOL_DIR`).
    pub smtp_spool_dir: PathBuf,
    /// STARTTLS's certificate and key (`SEALPOST_SMTP_TLS_CERT`, `SEALPOST_SMTP_TLS_KEY`).
    pub smtp_tls: Option<TlsFiles>,
    /// Shared domains addresses can be created on.
    pub domains: Vec<String>,
    /// Names kept off the shared domains beside the built-in role names
    /// (`SEALPOST_RESERVED_NAMES`).
    pub reserved_names: Vec<String>,
    /// Sealed blobs in this directory (`SEALPOST_BLOB_DIR`) unless
    /// `blob_bucket` is set; then it is not used.
    pub blob_dir: PathBuf,
    /// Sealed blobs in this S3 bucket (`SEALPOST_BLOB_URL`, `AWS_*`).
    pub blob_bucket: Option<BlobBucket>,
    pub billing_sandbox: bool,
    /// Outbound relay URL; sending is off without one.
    pub smtp_relay: Option<RelayUrl>,
    /// Bound on one whole relay submission.
    pub smtp_relay_timeout: std::time::Duration,
    /// PEM file of the shared domains' DKIM key.
    pub dkim_key_file: Option<PathBuf>,
    pub dkim_selector: String,
    /// Edge limit: requests per minute per IP and per account.
    pub edge_rate_per_minute: u32,
    /// Accounts one client network may register an hour
    /// (`SEALPOST_REGISTRATIONS_PER_NETWORK`).
    pub registrations_per_network: u32,
    /// Sends a day of a Free account in its first day (`SEALPOST_NEW_ACCOUNT_SENDS`).
    pub new_account_sends: u32,
    /// `SEALPOST_SERVER_KEY` and `SEALPOST_SERVER_KEYS_OLD`; the processes
    /// that need it refuse to start without it.
    pub server_keys: Option<sealpost_seal::ServerKeys>,
    /// The support team's X25519 public key; in-app support needs it.
    pub support_key: Option<String>,
    /// Days a staff token lives unless its creator says otherwise.
    pub staff_token_days: u32,
    pub log_filter: String,
    /// Log lines as JSON (`SEALPOST_LOG_JSON=true`) for collectors.
    pub log_json: bool,
    /// `host=ip:port,...`: webhook hosts pinned to an address (tests).
    pub webhook_resolve: Option<String>,
    /// A PEM file of extra trusted roots for webhook delivery (tests).
    pub webhook_ca_file: Option<PathBuf>,
    /// Proxies whose forwarding headers name the client (`SEALPOST_TRUSTED_PROXIES`).
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// The one header they write (`SEALPOST_FORWARDED_HEADER`).
    pub forwarded_header: ForwardedHeader,
    /// The API's own TLS (`SEALPOST_TLS_CERT` and `SEALPOST_TLS_KEY`): HTTPS only when set.
    pub tls: Option<TlsFiles>,
    /// Where people reach the service (`SEALPOST_PUBLIC_URL`, default
    /// `http://<SEALPOST_HTTP_ADDR>`): the sandbox checkout page and the
    /// providers' return pages are under it.
    pub public_url: String,
    /// Providers an operator switched off (`SEALPOST_BILLING_DISABLED`,
    /// comma list of `stripe`, `btcpay`, `sandbox`).
    pub billing_disabled: Vec<String>,
    /// The card provider, enabled when its keys are set.
    pub stripe: Option<StripeKeys>,
    /// The crypto provider, enabled when its keys are set.
    pub btcpay: Option<BtcpayKeys>,
    /// Pushes to iOS, enabled when its keys are set.
    pub apns: Option<ApnsKeys>,
    /// Pushes to Android, enabled when a service-account file is set.
    pub fcm: Option<FcmKeys>,
    /// A PEM file of extra trusted roots for APNs and FCM (tests).
    pub push_ca_file: Option<PathBuf>,
    /// Own domains: the resolver the checks ask, the nameservers and MX
    /// host they expect, and where `sealpost-dns` listens.
    pub dns: DnsSettings,
    /// The SMTP drain and the metrics listeners.
    pub operations: Operations,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("{name} is not valid: {reason}")]
    Invalid { name: &'static str, reason: String },
}

impl Config {
    /// The host people reach the service at, out of `SEALPOST_PUBLIC_URL`
    /// (no brackets around an IPv6 address); none when it names no host.
    pub fn public_host(&self) -> Option<String> {
        url::Url::parse(&self.public_url)
            .ok()?
            .host()
            .map(|host| match host {
                url::Host::Domain(name) => name.to_ascii_lowercase(),
                url::Host::Ipv4(address) => address.to_string(),
                url::Host::Ipv6(address) => address.to_string(),
            })
    }

    /// Reads the process environment. Only the variables of [`VARIABLES`]
    /// are looked at; one of them holding bytes that are not UTF-8 is an
    /// error naming it, anything else in the environment is left alone.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(&variables::read_environment(std::env::vars_os())?)
    }

    /// Reads from the given variables (tests pass their own); each concern
    /// reads its own.
    pub fn from_vars(vars: &HashMap<String, String>) -> Result<Self, ConfigError> {
        let vars = variables::Vars::new(vars);
        let storage::Storage {
            database_url,
            blob_dir,
            blob_bucket,
        } = storage::read(vars)?;
        let domains::Domains {
            domains,
            reserved_names,
            dns,
        } = domains::read(vars)?;
        let http::Http {
            http_addr,
            trusted_proxies,
            forwarded_header,
            tls,
            public_url,
            edge_rate_per_minute,
        } = http::read(vars)?;
        let accounts::Accounts {
            registrations_per_network,
            new_account_sends,
        } = accounts::read(vars)?;
        let smtp::Smtp {
            smtp_addr,
            smtp_max_sessions,
            smtp_max_sessions_per_ip,
            smtp_max_sessions_per_ipv4_24,
            smtp_max_sessions_per_ipv6_48,
            smtp_reserved_share,
            smtp_known_senders,
            smtp_known_sender_for,
            smtp_mail_deadline,
            smtp_connect_rate,
            smtp_data_memory,
            smtp_spool_threshold,
            smtp_spool_budget,
            smtp_spool_dir,
            smtp_tls,
        } = smtp::read(vars)?;
        let outbound::Outbound {
            smtp_relay,
            smtp_relay_timeout,
            dkim_key_file,
            dkim_selector,
        } = outbound::read(vars)?;
        let billing::Billing {
            billing_sandbox,
            billing_disabled,
            stripe,
            btcpay,
        } = billing::read(vars)?;
        let push::Push {
            apns,
            fcm,
            push_ca_file,
        } = push::read(vars)?;
        let keys::Keys {
            server_keys,
            support_key,
            staff_token_days,
        } = keys::read(vars)?;
        let logging::Logging {
            log_filter,
            log_json,
        } = logging::read(vars)?;
        let operations = operations::read(vars)?;
        let webhooks::Webhooks {
            webhook_resolve,
            webhook_ca_file,
        } = webhooks::read(vars);
        Ok(Self {
            database_url,
            http_addr,
            smtp_addr,
            smtp_max_sessions,
            smtp_max_sessions_per_ip,
            smtp_max_sessions_per_ipv4_24,
            smtp_max_sessions_per_ipv6_48,
            smtp_reserved_share,
            smtp_known_senders,
            smtp_known_sender_for,
            smtp_mail_deadline,
            smtp_connect_rate,
            smtp_data_memory,
            smtp_spool_threshold,
            smtp_spool_budget,
            smtp_spool_dir,
            smtp_tls,
            domains,
            reserved_names,
            blob_dir,
            blob_bucket,
            billing_sandbox,
            smtp_relay,
            smtp_relay_timeout,
            dkim_key_file,
            dkim_selector,
            edge_rate_per_minute,
            registrations_per_network,
            new_account_sends,
            server_keys,
            support_key,
            staff_token_days,
            log_filter,
            log_json,
            operations,
            webhook_resolve,
            webhook_ca_file,
            trusted_proxies,
            forwarded_header,
            tls,
            public_url,
            billing_disabled,
            stripe,
            btcpay,
            apns,
            fcm,
            push_ca_file,
            dns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variables::vars;

    #[test]
    fn defaults_work_for_local_use() {
        let config = Config::from_vars(&HashMap::new()).unwrap();
        assert_eq!(config.http_addr, "127.0.0.1:8080");
        assert_eq!(config.smtp_addr, "127.0.0.1:2525");
        assert_eq!(config.domains, vec!["mail.localhost"]);
        assert_eq!(config.edge_rate_per_minute, 600);
        assert!(!config.billing_sandbox);
        assert_eq!(config.support_key, None);
        assert_eq!(config.smtp_relay, None);
        assert_eq!(config.smtp_relay_timeout.as_secs(), 60);
        assert_eq!(config.dkim_selector, "sealpost");
        assert_eq!(config.smtp_max_sessions, 1000);
        assert_eq!(config.smtp_max_sessions_per_ip, 50);
        assert_eq!(config.smtp_connect_rate, 600);
        assert_eq!(config.smtp_data_memory, 512 * 1024 * 1024);
        assert_eq!(config.smtp_spool_threshold, 1024 * 1024);
        assert_eq!(config.smtp_spool_budget, 2048 * 1024 * 1024);
        assert_eq!(config.smtp_max_sessions_per_ipv4_24, 100);
        assert_eq!(config.smtp_max_sessions_per_ipv6_48, 100);
        assert_eq!(config.smtp_reserved_share, 10);
        assert_eq!(config.smtp_known_senders, 10_000);
        assert_eq!(config.smtp_known_sender_for.as_secs(), 168 * 3600);
        assert_eq!(config.smtp_mail_deadline.as_secs(), 60);
        assert_eq!(
            config.smtp_spool_dir,
            std::env::temp_dir().join("sealpost-smtp-spool")
        );
        assert_eq!(config.smtp_tls, None);
    }

    #[test]
    fn debug_of_the_config_shows_no_secret() {
        let server_key = sealpost_seal::b64::encode(&[7u8; 32]);
        let config = Config::from_vars(&vars(&[
            ("DATABASE_URL", "postgres://app:dbpass1@db.example/sealpost"),
            (
                "SEALPOST_SMTP_RELAY",
                "smtps://mailer:relaypass2@relay.example:465",
            ),
            ("SEALPOST_SERVER_KEY", &server_key),
            ("SEALPOST_STRIPE_SECRET_KEY", "sk_test_stripepass3"),
            ("SEALPOST_STRIPE_WEBHOOK_SECRET", "whsec_stripepass4"),
        ]))
        .unwrap();
        let shown = format!("{config:?} {config:#?}");
        for secret in [
            "dbpass1",
            "relaypass2",
            server_key.as_str(),
            "stripepass3",
            "stripepass4",
        ] {
            assert!(!shown.contains(secret), "{secret} shown in {shown}");
        }
        assert!(!shown.contains("7, 7, 7"), "server key bytes in {shown}");
        assert_eq!(
            config.database_url.expose(),
            "postgres://app:dbpass1@db.example/sealpost"
        );
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
