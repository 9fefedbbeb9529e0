//! Configuration, read once from the environment. Every variable has a
//! default that works for local use; [`VARIABLES`] lists them all and
//! `docs/configuration.md` is kept equal to it by a test.

use std::collections::HashMap;
use std::path::PathBuf;
use zeroize::Zeroizing;

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/sealpost_dev";

/// One environment variable the service reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variable {
    pub name: &'static str,
    /// What applies when it is unset or empty.
    pub default: &'static str,
    pub meaning: &'static str,
}

/// Every variable the service reads, in the order `docs/configuration.md`
/// shows them.
pub const VARIABLES: &[Variable] = &[
    Variable {
        name: "DATABASE_URL",
        default: DEFAULT_DATABASE_URL,
        meaning: "PostgreSQL connection URL. TLS per libpq's `sslmode` (`disable`, `prefer` (default), `require`, `verify-ca`, `verify-full`) and `sslrootcert` (a PEM file, or `system`) in its query; see the notes below. `cargo xtask dev` finds or starts a server and sets it.",
    },
    Variable {
        name: "SEALPOST_HTTP_ADDR",
        default: "127.0.0.1:8080",
        meaning: "Address the API listens on.",
    },
    Variable {
        name: "SEALPOST_TRUSTED_PROXIES",
        default: "(none: the peer is the client)",
        meaning: "Comma list of reverse proxies (CIDR or single addresses) whose forwarding header (`SEALPOST_FORWARDED_HEADER`) is believed; the right-most hop that is not one of them is the client the limits and logs use.",
    },
    Variable {
        name: "SEALPOST_FORWARDED_HEADER",
        default: "x-forwarded-for",
        meaning: "The one header the trusted proxies write the client into: `x-forwarded-for` (nginx's `$proxy_add_x_forwarded_for`, most load balancers) or `forwarded` (RFC 7239 `for=`). The other header is never read: a proxy passes it through as the client wrote it.",
    },
    Variable {
        name: "SEALPOST_TLS_CERT",
        default: "(none: plain HTTP behind a TLS proxy)",
        meaning: "PEM file of the API's certificate chain (leaf first). Set with `SEALPOST_TLS_KEY`, the API serves HTTPS only (rustls, TLS 1.2 and 1.3) on `SEALPOST_HTTP_ADDR`; one without the other stops start-up.",
    },
    Variable {
        name: "SEALPOST_TLS_KEY",
        default: "(none)",
        meaning: "PEM file of the private key of `SEALPOST_TLS_CERT` (PKCS#8, PKCS#1 or SEC1).",
    },
    Variable {
        name: "SEALPOST_PUBLIC_URL",
        default: "http://<SEALPOST_HTTP_ADDR>",
        meaning: "Where people reach the API; the sandbox checkout page and the payment providers' return pages live under it.",
    },
    Variable {
        name: "SEALPOST_SMTP_ADDR",
        default: "127.0.0.1:2525",
        meaning: "Address the SMTP ingest (`sealpost-smtp`) listens on.",
    },
    Variable {
        name: "SEALPOST_SMTP_MAX_SESSIONS",
        default: "1000",
        meaning: "SMTP sessions the ingest holds at once; a connection over it is answered 421 4.3.2 and closed.",
    },
    Variable {
        name: "SEALPOST_SMTP_MAX_SESSIONS_PER_IP",
        default: "50",
        meaning: "SMTP sessions at once from one client (an IPv4 address or an IPv6 /64); over it: 421 4.7.0 and close.",
    },
    Variable {
        name: "SEALPOST_SMTP_CONNECT_RATE",
        default: "600",
        meaning: "New SMTP connections a minute from one client (a token bucket of that size, refilled evenly); over it: 421 4.7.0 and close. 0 turns the rate off (benchmarks).",
    },
    Variable {
        name: "SEALPOST_SMTP_DATA_MEMORY",
        default: "512",
        meaning: "MiB of message data all SMTP sessions hold at once (above 0); over it: 452 4.3.1 at DATA, or at the end of a message that outgrew it. Parsing and sealing take a few times a message's size on top, so leave the process about four times this.",
    },
    Variable {
        name: "SEALPOST_SMTP_SPOOL_THRESHOLD",
        default: "1024",
        meaning: "KiB (64 to 1048576) of one message's data the SMTP ingest keeps in memory while it arrives; beyond it the message goes on into an encrypted temporary file in `SEALPOST_SMTP_SPOOL_DIR` (ChaCha20-Poly1305 in 64 KiB chunks, a random key per message held only in memory, the file deleted once the delivery is answered), and is read back under `SEALPOST_SMTP_DATA_MEMORY` when it is delivered. Plaintext never reaches the disk.",
    },
    Variable {
        name: "SEALPOST_SMTP_SPOOL_DIR",
        default: "(the system's temporary directory)/sealpost-smtp-spool",
        meaning: "Directory of the SMTP ingest's encrypted spool files (created with mode 0700, files 0600). Files a crashed ingest left are unreadable without their keys and are deleted when the ingest starts.",
    },
    Variable {
        name: "SEALPOST_SMTP_TLS_CERT",
        default: "(none: no STARTTLS)",
        meaning: "PEM file of the SMTP ingest's certificate chain (leaf first). Set with `SEALPOST_SMTP_TLS_KEY`, EHLO offers STARTTLS; one without the other stops start-up. Both files are looked at again every 10 seconds and a changed pair is used for new sessions without a restart (sessions already running keep theirs); a pair that does not load is logged and the previous one kept.",
    },
    Variable {
        name: "SEALPOST_SMTP_TLS_KEY",
        default: "(none)",
        meaning: "PEM file of the private key of `SEALPOST_SMTP_TLS_CERT` (PKCS#8, PKCS#1 or SEC1).",
    },
    Variable {
        name: "SEALPOST_DOMAINS",
        default: "mail.localhost",
        meaning: "Comma list of the shared domains addresses are created on and mail is accepted for.",
    },
    Variable {
        name: "SEALPOST_BLOB_DIR",
        default: "target/dev/blobs",
        meaning: "Directory of sealed message bodies and attachments (ciphertext only).",
    },
    Variable {
        name: "SEALPOST_EDGE_RATE",
        default: "600",
        meaning: "Edge limit: requests per minute per IP and per account (above 0). The tighter limits, such as pairing-code lookups, do not change with it.",
    },
    Variable {
        name: "SEALPOST_SMTP_RELAY",
        default: "(unset: sending is off)",
        meaning: "Outbound relay for `POST /messages/send`: `smtp://host[:port]` (plain), `smtp://host[:port]?tls=required` or `?tls=opportunistic` (STARTTLS), `smtps://host[:port]` (TLS at once); credentials as `user:password@` (percent-encoded).",
    },
    Variable {
        name: "SEALPOST_SMTP_RELAY_TIMEOUT",
        default: "60",
        meaning: "Seconds one whole relay submission may take (connect, greeting, every command, the message); a relay that has not finished in time fails the send with 502 `send_failed`.",
    },
    Variable {
        name: "SEALPOST_DKIM_KEY",
        default: "(unset: sent mail is not signed)",
        meaning: "PEM file of the shared domains' DKIM key (RSA, 2048 to 4096 bits, PKCS#1 `BEGIN RSA PRIVATE KEY` or PKCS#8 `BEGIN PRIVATE KEY`); mail is signed `d=` the sending address's domain. Publish the public key as `<selector>._domainkey.<domain>` TXT for every shared domain.",
    },
    Variable {
        name: "SEALPOST_DKIM_SELECTOR",
        default: "sealpost",
        meaning: "The DKIM selector (`s=`) the key is published under.",
    },
    Variable {
        name: "SEALPOST_SERVER_KEY",
        default: "(unset: the API and the jobs refuse to start)",
        meaning: "32 random bytes as base64url without padding (43 characters): seals webhook signing secrets at rest and derives sign-in challenge secrets. Keep it outside the database and give every API and jobs process the same one (the SMTP ingest needs none); `cargo xtask dev` generates one.",
    },
    Variable {
        name: "SEALPOST_SERVER_KEYS_OLD",
        default: "(none)",
        meaning: "Comma list of earlier server keys, still accepted for opening what they sealed while a rotation is under way; each API or jobs start seals such rows again under the current key.",
    },
    Variable {
        name: "SEALPOST_SUPPORT_KEY",
        default: "(unset: in-app support is off)",
        meaning: "The support team's X25519 public key (base64url).",
    },
    Variable {
        name: "SEALPOST_DNS_RESOLVER",
        default: "(unset: the system's resolvers)",
        meaning: "`ip:port` (or `ip`, port 53) of the DNS resolver the own-domain checks ask for TXT, NS and MX records; answers are not cached.",
    },
    Variable {
        name: "SEALPOST_DNS_NAMESERVERS",
        default: "ns1.mail.localhost,ns2.mail.localhost",
        meaning: "The service's two nameservers (comma list of host names): own domains are delegated to exactly these, and `sealpost-dns` serves them as the zones' NS records.",
    },
    Variable {
        name: "SEALPOST_MX_HOST",
        default: "(the first of SEALPOST_DOMAINS)",
        meaning: "The host own domains' MX record names; a domain is live once its MX shows this host.",
    },
    Variable {
        name: "SEALPOST_DNS_ADDR",
        default: "127.0.0.1:5353",
        meaning: "Where `sealpost-dns`, the authoritative DNS of own domains, listens (UDP and TCP).",
    },
    Variable {
        name: "SEALPOST_LOG",
        default: "info",
        meaning: "Log filter in `tracing` syntax, e.g. `info,sealpost_store_pg=debug`.",
    },
    Variable {
        name: "SEALPOST_LOG_JSON",
        default: "false",
        meaning: "`true` writes log lines as JSON for collectors.",
    },
    Variable {
        name: "SEALPOST_BILLING_SANDBOX",
        default: "false",
        meaning: "`true` enables the sandbox payment provider, whose checkout page the API serves itself (development and tests only).",
    },
    Variable {
        name: "SEALPOST_BILLING_DISABLED",
        default: "(none)",
        meaning: "Comma list of payment providers (`stripe`, `btcpay`, `sandbox`) that take no new checkouts; notices of checkouts already started are still settled.",
    },
    Variable {
        name: "SEALPOST_STRIPE_SECRET_KEY",
        default: "(unset: card payments off)",
        meaning: "Stripe secret API key; set together with `SEALPOST_STRIPE_WEBHOOK_SECRET`.",
    },
    Variable {
        name: "SEALPOST_STRIPE_WEBHOOK_SECRET",
        default: "(unset)",
        meaning: "Stripe's signing secret for payment notices.",
    },
    Variable {
        name: "SEALPOST_STRIPE_API_URL",
        default: "https://api.stripe.com",
        meaning: "Stripe's API base; changed only to point at a test double. https, or plain http to this machine only.",
    },
    Variable {
        name: "SEALPOST_BTCPAY_URL",
        default: "(unset: crypto payments off)",
        meaning: "BTCPay Server base URL (https, or plain http to this machine only); set together with the three variables below.",
    },
    Variable {
        name: "SEALPOST_BTCPAY_API_KEY",
        default: "(unset)",
        meaning: "BTCPay Greenfield API key.",
    },
    Variable {
        name: "SEALPOST_BTCPAY_STORE_ID",
        default: "(unset)",
        meaning: "BTCPay store id.",
    },
    Variable {
        name: "SEALPOST_BTCPAY_WEBHOOK_SECRET",
        default: "(unset)",
        meaning: "BTCPay's signing secret for payment notices.",
    },
    Variable {
        name: "SEALPOST_WEBHOOK_RESOLVE",
        default: "(unset)",
        meaning: "`host=ip:port` pairs, comma separated, pinning webhook hosts to an address (tests). Only pinned hosts may resolve to loopback or private addresses.",
    },
    Variable {
        name: "SEALPOST_WEBHOOK_CA_FILE",
        default: "(unset)",
        meaning: "PEM file of extra trusted roots for webhook delivery (tests).",
    },
    Variable {
        name: "SEALPOST_APNS_KEY_FILE",
        default: "(unset: no pushes to iOS)",
        meaning: "Apple's token-signing key (`AuthKey_<id>.p8`, PKCS#8 PEM, ES256); set together with the three variables below.",
    },
    Variable {
        name: "SEALPOST_APNS_KEY_ID",
        default: "(unset)",
        meaning: "The key's id (10 characters), sent as the JWT `kid`.",
    },
    Variable {
        name: "SEALPOST_APNS_TEAM_ID",
        default: "(unset)",
        meaning: "The Apple developer team id, sent as the JWT `iss`.",
    },
    Variable {
        name: "SEALPOST_APNS_TOPIC",
        default: "(unset)",
        meaning: "The iOS app's bundle id, sent as `apns-topic`.",
    },
    Variable {
        name: "SEALPOST_APNS_URL",
        default: "https://api.push.apple.com",
        meaning: "APNs base URL; `https://api.sandbox.push.apple.com` for development builds of the app, or a test double.",
    },
    Variable {
        name: "SEALPOST_FCM_CREDENTIALS_FILE",
        default: "(unset: no pushes to Android)",
        meaning: "A Firebase service-account JSON key file (`project_id`, `client_email`, `private_key`, `token_uri`).",
    },
    Variable {
        name: "SEALPOST_FCM_PROJECT_ID",
        default: "(the file's `project_id`)",
        meaning: "The Firebase project messages are sent through.",
    },
    Variable {
        name: "SEALPOST_FCM_URL",
        default: "https://fcm.googleapis.com",
        meaning: "FCM base URL; changed only to point at a test double.",
    },
    Variable {
        name: "SEALPOST_FCM_TOKEN_URL",
        default: "(the file's `token_uri`)",
        meaning: "OAuth 2.0 token endpoint the service-account assertion is exchanged at; changed only to point at a test double.",
    },
    Variable {
        name: "SEALPOST_PUSH_CA_FILE",
        default: "(unset)",
        meaning: "PEM file of extra trusted roots for APNs and FCM (tests).",
    },
];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub database_url: String,
    pub http_addr: String,
    pub smtp_addr: String,
    /// SMTP sessions at once (`SEALPOST_SMTP_MAX_SESSIONS`).
    pub smtp_max_sessions: usize,
    /// SMTP sessions at once per client (`SEALPOST_SMTP_MAX_SESSIONS_PER_IP`).
    pub smtp_max_sessions_per_ip: usize,
    /// New SMTP connections a minute per client, 0 for none (`SEALPOST_SMTP_CONNECT_RATE`).
    pub smtp_connect_rate: u32,
    /// Bytes of DATA held at once by all SMTP sessions (`SEALPOST_SMTP_DATA_MEMORY`, in MiB).
    pub smtp_data_memory: usize,
    /// Bytes of one message kept in memory before the rest is spooled
    /// encrypted (`SEALPOST_SMTP_SPOOL_THRESHOLD`, in KiB).
    pub smtp_spool_threshold: usize,
    /// Where encrypted spool files go (`SEALPOST_SMTP_SPOOL_DIR`).
    pub smtp_spool_dir: PathBuf,
    /// STARTTLS's certificate and key (`SEALPOST_SMTP_TLS_CERT`, `SEALPOST_SMTP_TLS_KEY`).
    pub smtp_tls: Option<TlsFiles>,
    /// Shared domains addresses can be created on.
    pub domains: Vec<String>,
    pub blob_dir: PathBuf,
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
    /// `SEALPOST_SERVER_KEY` and `SEALPOST_SERVER_KEYS_OLD`; the processes
    /// that need it refuse to start without it.
    pub server_keys: Option<sealpost_seal::ServerKeys>,
    /// The support team's X25519 public key; in-app support needs it.
    pub support_key: Option<String>,
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
}

/// `SEALPOST_FORWARDED_HEADER`: the header trusted proxies name the client in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForwardedHeader {
    /// `x-forwarded-for`.
    XForwardedFor,
    /// `forwarded` (RFC 7239).
    Forwarded,
}

impl ForwardedHeader {
    fn read(text: &str) -> Result<Self, ConfigError> {
        match text.to_ascii_lowercase().as_str() {
            "x-forwarded-for" => Ok(Self::XForwardedFor),
            "forwarded" => Ok(Self::Forwarded),
            _ => Err(ConfigError::Invalid {
                name: "SEALPOST_FORWARDED_HEADER",
                reason: "expected x-forwarded-for or forwarded".into(),
            }),
        }
    }
}

/// The default a variable's [`VARIABLES`] entry gives, written only there.
fn default_of(name: &str) -> &'static str {
    VARIABLES
        .iter()
        .find(|variable| variable.name == name)
        .map_or("", |variable| variable.default)
}

/// `SEALPOST_DNS_RESOLVER`, `SEALPOST_DNS_NAMESERVERS`, `SEALPOST_MX_HOST`, `SEALPOST_DNS_ADDR`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsSettings {
    /// `None`: the system's resolvers.
    pub resolver: Option<std::net::SocketAddr>,
    pub nameservers: Vec<String>,
    pub mx_host: String,
    pub addr: String,
}

fn dns_settings<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
    domains: &[String],
) -> Result<DnsSettings, ConfigError> {
    let resolver = match get("SEALPOST_DNS_RESOLVER") {
        None => None,
        Some(text) => Some(
            text.parse::<std::net::SocketAddr>()
                .or_else(|_| {
                    text.parse::<std::net::IpAddr>()
                        .map(|ip| std::net::SocketAddr::new(ip, 53))
                })
                .map_err(|_| ConfigError::Invalid {
                    name: "SEALPOST_DNS_RESOLVER",
                    reason: "expected ip:port or ip".into(),
                })?,
        ),
    };
    let host = |text: &str| text.trim().trim_end_matches('.').to_ascii_lowercase();
    let nameservers: Vec<String> = get("SEALPOST_DNS_NAMESERVERS")
        .unwrap_or("ns1.mail.localhost,ns2.mail.localhost")
        .split(',')
        .map(host)
        .filter(|name| !name.is_empty())
        .collect();
    if nameservers.len() != 2 {
        return Err(ConfigError::Invalid {
            name: "SEALPOST_DNS_NAMESERVERS",
            reason: "expected two host names, comma separated".into(),
        });
    }
    Ok(DnsSettings {
        resolver,
        nameservers,
        mx_host: get("SEALPOST_MX_HOST")
            .map(host)
            .or_else(|| domains.first().cloned())
            .unwrap_or_else(|| "mail.localhost".into()),
        addr: get("SEALPOST_DNS_ADDR")
            .unwrap_or("127.0.0.1:5353")
            .to_owned(),
    })
}

/// `SEALPOST_APNS_KEY_FILE`, `_KEY_ID`, `_TEAM_ID` and `_TOPIC` (all or none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApnsKeys {
    pub key_file: PathBuf,
    pub key_id: String,
    pub team_id: String,
    pub topic: String,
    pub url: String,
}

/// `SEALPOST_FCM_CREDENTIALS_FILE` and what overrides the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FcmKeys {
    pub credentials_file: PathBuf,
    pub project_id: Option<String>,
    pub url: String,
    pub token_url: Option<String>,
}

/// `SEALPOST_SMTP_RELAY`: it may carry the relay's password, so `Debug`
/// shows it without the credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct RelayUrl(pub String);

impl std::fmt::Debug for RelayUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.split_once("://") {
            Some((scheme, rest)) if rest.contains('@') => {
                let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
                write!(f, "RelayUrl({scheme}://<credentials>@{host})")
            }
            _ => write!(f, "RelayUrl({})", self.0),
        }
    }
}

/// `SEALPOST_STRIPE_SECRET_KEY` and `SEALPOST_STRIPE_WEBHOOK_SECRET` (both or
/// neither); `SEALPOST_STRIPE_API_URL` only to point at a test double.
#[derive(Clone, PartialEq, Eq)]
pub struct StripeKeys {
    pub secret_key: Zeroizing<String>,
    pub webhook_secret: Zeroizing<String>,
    pub api_url: String,
}

/// `SEALPOST_BTCPAY_URL`, `SEALPOST_BTCPAY_API_KEY`, `SEALPOST_BTCPAY_STORE_ID`
/// and `SEALPOST_BTCPAY_WEBHOOK_SECRET` (all or none).
#[derive(Clone, PartialEq, Eq)]
pub struct BtcpayKeys {
    pub server_url: String,
    pub api_key: Zeroizing<String>,
    pub store_id: String,
    pub webhook_secret: Zeroizing<String>,
}

// Keys never reach a log line through `{:?}`; they are held in `Zeroizing`
// so the copies the configuration owns are wiped when dropped.
impl std::fmt::Debug for StripeKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeKeys")
            .field("api_url", &self.api_url)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for BtcpayKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BtcpayKeys")
            .field("server_url", &self.server_url)
            .field("store_id", &self.store_id)
            .finish_non_exhaustive()
    }
}

/// The PEM files of a TLS server's certificate chain and key (the API's,
/// the SMTP ingest's STARTTLS).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    pub key: PathBuf,
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
        Self::from_vars(&read_environment(std::env::vars_os())?)
    }

    /// Reads from the given variables (tests pass their own).
    pub fn from_vars(vars: &HashMap<String, String>) -> Result<Self, ConfigError> {
        let get = |name: &str| {
            debug_assert!(
                VARIABLES.iter().any(|variable| variable.name == name),
                "{name} is read but not listed in VARIABLES"
            );
            vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
        };
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
        let whole = |name: &'static str, default: u64, min: u64, max: u64| match get(name) {
            None => Ok(default),
            Some(text) => match text.parse::<u64>() {
                Ok(value) if (min..=max).contains(&value) => Ok(value),
                _ => Err(ConfigError::Invalid {
                    name,
                    reason: format!("expected a whole number from {min} to {max}"),
                }),
            },
        };
        let smtp_max_sessions = whole("SEALPOST_SMTP_MAX_SESSIONS", 1000, 1, 1_000_000)? as usize;
        let smtp_max_sessions_per_ip =
            whole("SEALPOST_SMTP_MAX_SESSIONS_PER_IP", 50, 1, 1_000_000)? as usize;
        let smtp_connect_rate = whole("SEALPOST_SMTP_CONNECT_RATE", 600, 0, 1_000_000)? as u32;
        let smtp_data_memory =
            whole("SEALPOST_SMTP_DATA_MEMORY", 512, 1, 1024 * 1024)? as usize * 1024 * 1024;
        let smtp_spool_threshold =
            whole("SEALPOST_SMTP_SPOOL_THRESHOLD", 1024, 64, 1024 * 1024)? as usize * 1024;
        let smtp_relay_timeout = whole("SEALPOST_SMTP_RELAY_TIMEOUT", 60, 1, 600)?;
        let dns = dns_settings(&get, &domains)?;
        let http_addr = get("SEALPOST_HTTP_ADDR")
            .unwrap_or("127.0.0.1:8080")
            .to_owned();
        let stripe = all_or_none(
            &get,
            &[
                "SEALPOST_STRIPE_SECRET_KEY",
                "SEALPOST_STRIPE_WEBHOOK_SECRET",
            ],
        )?
        .map(|[secret_key, webhook_secret]| StripeKeys {
            secret_key: secret_key.into(),
            webhook_secret: webhook_secret.into(),
            api_url: get("SEALPOST_STRIPE_API_URL")
                .unwrap_or("https://api.stripe.com")
                .trim_end_matches('/')
                .to_owned(),
        });
        if let Some(stripe) = &stripe {
            provider_url("SEALPOST_STRIPE_API_URL", &stripe.api_url)?;
        }
        let btcpay = all_or_none(
            &get,
            &[
                "SEALPOST_BTCPAY_URL",
                "SEALPOST_BTCPAY_API_KEY",
                "SEALPOST_BTCPAY_STORE_ID",
                "SEALPOST_BTCPAY_WEBHOOK_SECRET",
            ],
        )?
        .map(|keys| {
            provider_url("SEALPOST_BTCPAY_URL", &keys[0])?;
            Ok::<_, ConfigError>(keys)
        })
        .transpose()?
        .map(
            |[server_url, api_key, store_id, webhook_secret]| BtcpayKeys {
                server_url: server_url.trim_end_matches('/').to_owned(),
                api_key: api_key.into(),
                store_id,
                webhook_secret: webhook_secret.into(),
            },
        );
        let apns = all_or_none(
            &get,
            &[
                "SEALPOST_APNS_KEY_FILE",
                "SEALPOST_APNS_KEY_ID",
                "SEALPOST_APNS_TEAM_ID",
                "SEALPOST_APNS_TOPIC",
            ],
        )?
        .map(|[key_file, key_id, team_id, topic]| ApnsKeys {
            key_file: PathBuf::from(key_file),
            key_id,
            team_id,
            topic,
            url: get("SEALPOST_APNS_URL")
                .unwrap_or("https://api.push.apple.com")
                .trim_end_matches('/')
                .to_owned(),
        });
        let fcm = get("SEALPOST_FCM_CREDENTIALS_FILE").map(|file| FcmKeys {
            credentials_file: PathBuf::from(file),
            project_id: get("SEALPOST_FCM_PROJECT_ID").map(str::to_owned),
            url: get("SEALPOST_FCM_URL")
                .unwrap_or("https://fcm.googleapis.com")
                .trim_end_matches('/')
                .to_owned(),
            token_url: get("SEALPOST_FCM_TOKEN_URL").map(str::to_owned),
        });
        let billing_disabled: Vec<String> = get("SEALPOST_BILLING_DISABLED")
            .unwrap_or("")
            .split(',')
            .map(|name| name.trim().to_ascii_lowercase())
            .filter(|name| !name.is_empty())
            .collect();
        if let Some(unknown) = billing_disabled
            .iter()
            .find(|name| !matches!(name.as_str(), "stripe" | "btcpay" | "sandbox"))
        {
            return Err(ConfigError::Invalid {
                name: "SEALPOST_BILLING_DISABLED",
                reason: format!("unknown provider {unknown:?}; expected stripe, btcpay or sandbox"),
            });
        }
        let trusted_proxies = get("SEALPOST_TRUSTED_PROXIES")
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                entry
                    .parse::<ipnet::IpNet>()
                    .or_else(|_| entry.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                    .map_err(|_| ConfigError::Invalid {
                        name: "SEALPOST_TRUSTED_PROXIES",
                        reason: format!("{entry:?} is neither an address nor a CIDR network"),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let forwarded_header = ForwardedHeader::read(
            get("SEALPOST_FORWARDED_HEADER").unwrap_or(default_of("SEALPOST_FORWARDED_HEADER")),
        )?;
        let server_keys = get("SEALPOST_SERVER_KEY")
            .map(|current| {
                let old: Vec<&str> = get("SEALPOST_SERVER_KEYS_OLD")
                    .unwrap_or("")
                    .split(',')
                    .map(str::trim)
                    .filter(|key| !key.is_empty())
                    .collect();
                sealpost_seal::ServerKeys::from_text(current, &old).map_err(|_| {
                    ConfigError::Invalid {
                        name: "SEALPOST_SERVER_KEY",
                        reason: "expected 32 bytes as base64url (43 characters), here and in SEALPOST_SERVER_KEYS_OLD".into(),
                    }
                })
            })
            .transpose()?;
        let tls =
            all_or_none(&get, &["SEALPOST_TLS_CERT", "SEALPOST_TLS_KEY"])?.map(|[cert, key]| {
                TlsFiles {
                    cert: PathBuf::from(cert),
                    key: PathBuf::from(key),
                }
            });
        let smtp_tls = all_or_none(&get, &["SEALPOST_SMTP_TLS_CERT", "SEALPOST_SMTP_TLS_KEY"])?
            .map(|[cert, key]| TlsFiles {
                cert: PathBuf::from(cert),
                key: PathBuf::from(key),
            });
        Ok(Self {
            server_keys,
            trusted_proxies,
            forwarded_header,
            tls,
            public_url: get("SEALPOST_PUBLIC_URL")
                .map(|url| url.trim_end_matches('/').to_owned())
                .unwrap_or_else(|| format!("http://{http_addr}")),
            billing_disabled,
            stripe,
            btcpay,
            apns,
            fcm,
            push_ca_file: get("SEALPOST_PUSH_CA_FILE").map(PathBuf::from),
            dns,
            database_url: get("DATABASE_URL")
                .unwrap_or(DEFAULT_DATABASE_URL)
                .to_owned(),
            http_addr,
            smtp_addr: get("SEALPOST_SMTP_ADDR")
                .unwrap_or("127.0.0.1:2525")
                .to_owned(),
            smtp_max_sessions,
            smtp_max_sessions_per_ip,
            smtp_connect_rate,
            smtp_data_memory,
            smtp_spool_threshold,
            smtp_spool_dir: get("SEALPOST_SMTP_SPOOL_DIR").map_or_else(
                || std::env::temp_dir().join("sealpost-smtp-spool"),
                PathBuf::from,
            ),
            smtp_tls,
            domains,
            blob_dir: PathBuf::from(get("SEALPOST_BLOB_DIR").unwrap_or("target/dev/blobs")),
            billing_sandbox: flag(get("SEALPOST_BILLING_SANDBOX"), "SEALPOST_BILLING_SANDBOX")?,
            smtp_relay: get("SEALPOST_SMTP_RELAY").map(|url| RelayUrl(url.to_owned())),
            smtp_relay_timeout: std::time::Duration::from_secs(smtp_relay_timeout),
            dkim_key_file: get("SEALPOST_DKIM_KEY").map(PathBuf::from),
            dkim_selector: get("SEALPOST_DKIM_SELECTOR")
                .unwrap_or("sealpost")
                .to_owned(),
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

/// The listed variables out of an environment, refusing a value that is not UTF-8.
fn read_environment(
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

/// The table of `docs/configuration.md`, rendered from [`VARIABLES`].
pub fn variables_table() -> String {
    let mut table = String::from("| variable | default | meaning |\n|---|---|---|\n");
    for variable in VARIABLES {
        let default = if variable.default.starts_with('(') {
            variable.default.to_owned()
        } else {
            format!("`{}`", variable.default)
        };
        table.push_str(&format!(
            "| `{}` | {default} | {} |\n",
            variable.name, variable.meaning
        ));
    }
    table
}

/// A payment provider's API address: https, or plain http to this machine
/// only (a test double); keys never travel in the clear to another host.
fn provider_url(name: &'static str, text: &str) -> Result<(), ConfigError> {
    let invalid = |reason: &str| ConfigError::Invalid {
        name,
        reason: reason.to_owned(),
    };
    let parsed = url::Url::parse(text).map_err(|error| invalid(&error.to_string()))?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(host)) => host == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err(invalid("the URL names no host")),
    };
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(invalid(
            "must be an https URL (plain http only to a test double on this machine)",
        )),
    }
}

/// Reads a group of variables that only work together: all set, or none.
fn all_or_none<'a, const N: usize>(
    get: &impl Fn(&str) -> Option<&'a str>,
    names: &[&'static str; N],
) -> Result<Option<[String; N]>, ConfigError> {
    let values = names.map(|name| get(name).map(str::to_owned));
    if values.iter().all(Option::is_none) {
        return Ok(None);
    }
    if let Some(missing) = names.iter().zip(&values).find(|(_, v)| v.is_none()) {
        return Err(ConfigError::Invalid {
            name: missing.0,
            reason: format!("needed together with {}", names.join(", ")),
        });
    }
    Ok(Some(values.map(Option::unwrap_or_default)))
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
        // Every quoted `SEALPOST_...` name in this file is one of VARIABLES.
        let source = include_str!("lib.rs");
        let prefix = concat!("\"", "SEALPOST_");
        for (at, _) in source.match_indices(prefix) {
            let rest = &source[at + 1..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                .collect();
            if name.len() > "SEALPOST_".len() && rest[name.len()..].starts_with('"') {
                assert!(
                    VARIABLES.iter().any(|variable| variable.name == name),
                    "{name} is not in VARIABLES"
                );
            }
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

    #[test]
    fn provider_urls_are_https_outside_this_machine() {
        let with_stripe = |url: &str| {
            Config::from_vars(&vars(&[
                ("SEALPOST_STRIPE_SECRET_KEY", "sk_test_1"),
                ("SEALPOST_STRIPE_WEBHOOK_SECRET", "whsec_1"),
                ("SEALPOST_STRIPE_API_URL", url),
            ]))
        };
        assert!(with_stripe("https://api.stripe.com").is_ok());
        assert!(with_stripe("http://127.0.0.1:9999").is_ok());
        assert!(with_stripe("http://localhost:9999").is_ok());
        let refused = with_stripe("http://api.stripe.example").unwrap_err();
        assert!(matches!(
            refused,
            ConfigError::Invalid {
                name: "SEALPOST_STRIPE_API_URL",
                ..
            }
        ));
        let btcpay = |url: &str| {
            Config::from_vars(&vars(&[
                ("SEALPOST_BTCPAY_URL", url),
                ("SEALPOST_BTCPAY_API_KEY", "k"),
                ("SEALPOST_BTCPAY_STORE_ID", "s"),
                ("SEALPOST_BTCPAY_WEBHOOK_SECRET", "w"),
            ]))
        };
        assert!(btcpay("https://pay.example").is_ok());
        assert!(btcpay("http://pay.example").is_err());
        assert!(btcpay("not a url").is_err());
    }

    #[test]
    fn trusted_proxies_are_networks_or_addresses() {
        let config = Config::from_vars(&vars(&[(
            "SEALPOST_TRUSTED_PROXIES",
            "10.0.0.0/8, 192.0.2.7 ,2001:db8::/48",
        )]))
        .unwrap();
        let shown: Vec<String> = config
            .trusted_proxies
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(shown, ["10.0.0.0/8", "192.0.2.7/32", "2001:db8::/48"]);
        assert!(Config::from_vars(&vars(&[("SEALPOST_TRUSTED_PROXIES", "proxy.local")])).is_err());
        assert!(
            Config::from_vars(&HashMap::new())
                .unwrap()
                .trusted_proxies
                .is_empty()
        );
    }

    #[test]
    fn one_forwarding_header_is_named() {
        let header = |text: &str| {
            Config::from_vars(&vars(&[("SEALPOST_FORWARDED_HEADER", text)]))
                .map(|config| config.forwarded_header)
        };
        assert_eq!(
            Config::from_vars(&HashMap::new()).unwrap().forwarded_header,
            ForwardedHeader::XForwardedFor
        );
        assert_eq!(header("Forwarded"), Ok(ForwardedHeader::Forwarded));
        assert_eq!(
            header("x-forwarded-for"),
            Ok(ForwardedHeader::XForwardedFor)
        );
        assert!(header("both").is_err());
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
        assert_eq!(config.smtp_relay, None);
        assert_eq!(config.smtp_relay_timeout.as_secs(), 60);
        assert_eq!(config.dkim_selector, "sealpost");
        assert_eq!(config.smtp_max_sessions, 1000);
        assert_eq!(config.smtp_max_sessions_per_ip, 50);
        assert_eq!(config.smtp_connect_rate, 600);
        assert_eq!(config.smtp_data_memory, 512 * 1024 * 1024);
        assert_eq!(config.smtp_spool_threshold, 1024 * 1024);
        assert_eq!(
            config.smtp_spool_dir,
            std::env::temp_dir().join("sealpost-smtp-spool")
        );
        assert_eq!(config.smtp_tls, None);
    }

    #[test]
    fn smtp_limits_are_read_and_bounded() {
        let config = Config::from_vars(&vars(&[
            ("SEALPOST_SMTP_MAX_SESSIONS", "20"),
            ("SEALPOST_SMTP_MAX_SESSIONS_PER_IP", "3"),
            ("SEALPOST_SMTP_CONNECT_RATE", "0"),
            ("SEALPOST_SMTP_DATA_MEMORY", "64"),
            ("SEALPOST_SMTP_SPOOL_THRESHOLD", "256"),
            ("SEALPOST_SMTP_SPOOL_DIR", "/var/spool/sealpost"),
            ("SEALPOST_SMTP_TLS_CERT", "/etc/smtp/cert.pem"),
            ("SEALPOST_SMTP_TLS_KEY", "/etc/smtp/key.pem"),
        ]))
        .unwrap();
        assert_eq!(config.smtp_spool_threshold, 256 * 1024);
        assert_eq!(config.smtp_spool_dir, PathBuf::from("/var/spool/sealpost"));
        assert_eq!(
            config.smtp_tls,
            Some(TlsFiles {
                cert: PathBuf::from("/etc/smtp/cert.pem"),
                key: PathBuf::from("/etc/smtp/key.pem"),
            })
        );
        assert_eq!(config.smtp_max_sessions, 20);
        assert_eq!(config.smtp_max_sessions_per_ip, 3);
        assert_eq!(config.smtp_connect_rate, 0);
        assert_eq!(config.smtp_data_memory, 64 * 1024 * 1024);
        for (name, bad) in [
            ("SEALPOST_SMTP_MAX_SESSIONS", "0"),
            ("SEALPOST_SMTP_MAX_SESSIONS_PER_IP", "many"),
            ("SEALPOST_SMTP_CONNECT_RATE", "-1"),
            ("SEALPOST_SMTP_DATA_MEMORY", "0"),
            ("SEALPOST_SMTP_SPOOL_THRESHOLD", "63"),
        ] {
            let error = Config::from_vars(&vars(&[(name, bad)])).unwrap_err();
            assert!(
                matches!(error, ConfigError::Invalid { name: got, .. } if got == name),
                "{name}={bad}: {error}"
            );
        }
    }

    #[test]
    fn the_smtp_certificate_needs_its_key() {
        let error = Config::from_vars(&vars(&[("SEALPOST_SMTP_TLS_CERT", "/etc/smtp/cert.pem")]))
            .unwrap_err();
        assert!(
            matches!(
                error,
                ConfigError::Invalid {
                    name: "SEALPOST_SMTP_TLS_KEY",
                    ..
                }
            ),
            "{error}"
        );
    }

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
                RelayUrl("smtps://user:s3cret@relay.example:465".into())
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

    #[test]
    fn the_api_tls_takes_a_certificate_and_a_key_together() {
        let config = Config::from_vars(&HashMap::new()).unwrap();
        assert_eq!(config.tls, None);
        let config = Config::from_vars(&vars(&[
            ("SEALPOST_TLS_CERT", "/etc/sealpost/api.crt"),
            ("SEALPOST_TLS_KEY", "/etc/sealpost/api.key"),
        ]))
        .unwrap();
        assert_eq!(
            config.tls,
            Some(TlsFiles {
                cert: "/etc/sealpost/api.crt".into(),
                key: "/etc/sealpost/api.key".into(),
            })
        );
        let error = Config::from_vars(&vars(&[("SEALPOST_TLS_CERT", "/etc/sealpost/api.crt")]))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "SEALPOST_TLS_KEY is not valid: needed together with SEALPOST_TLS_CERT, SEALPOST_TLS_KEY"
        );
        let error =
            Config::from_vars(&vars(&[("SEALPOST_TLS_KEY", "/etc/sealpost/api.key")])).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("SEALPOST_TLS_CERT is not valid"),
            "{error}"
        );
    }

    #[test]
    fn payment_providers_are_enabled_by_their_keys_all_or_none() {
        let config = Config::from_vars(&HashMap::new()).unwrap();
        assert_eq!(config.public_host().as_deref(), Some("127.0.0.1"));
        assert_eq!((config.stripe, config.btcpay), (None, None));
        assert_eq!(config.public_url, "http://127.0.0.1:8080");

        let config = Config::from_vars(&vars(&[
            ("SEALPOST_STRIPE_SECRET_KEY", "sk_test_1"),
            ("SEALPOST_STRIPE_WEBHOOK_SECRET", "whsec_1"),
            ("SEALPOST_PUBLIC_URL", "https://sealpost.example/"),
            ("SEALPOST_BILLING_DISABLED", "btcpay, Sandbox"),
        ]))
        .unwrap();
        assert_eq!(config.public_host().as_deref(), Some("sealpost.example"));
        let stripe = config.stripe.unwrap();
        assert_eq!(stripe.api_url, "https://api.stripe.com");
        assert_eq!(stripe.secret_key.as_str(), "sk_test_1");
        assert!(
            !format!("{stripe:?}").contains("sk_test_1"),
            "keys stay out of logs"
        );
        assert_eq!(config.public_url, "https://sealpost.example");
        assert_eq!(config.billing_disabled, vec!["btcpay", "sandbox"]);

        let half = Config::from_vars(&vars(&[
            ("SEALPOST_BTCPAY_URL", "https://pay.example"),
            ("SEALPOST_BTCPAY_API_KEY", "k"),
        ]));
        assert!(matches!(
            half,
            Err(ConfigError::Invalid {
                name: "SEALPOST_BTCPAY_STORE_ID",
                ..
            })
        ));
        assert!(Config::from_vars(&vars(&[("SEALPOST_BILLING_DISABLED", "paypal")])).is_err());
    }

    #[test]
    fn push_providers_are_enabled_by_their_keys() {
        let config = Config::from_vars(&HashMap::new()).unwrap();
        assert_eq!(
            (config.apns, config.fcm, config.push_ca_file),
            (None, None, None)
        );

        let config = Config::from_vars(&vars(&[
            ("SEALPOST_APNS_KEY_FILE", "/keys/AuthKey_ABC.p8"),
            ("SEALPOST_APNS_KEY_ID", "ABC"),
            ("SEALPOST_APNS_TEAM_ID", "TEAM"),
            ("SEALPOST_APNS_TOPIC", "net.example.app"),
            ("SEALPOST_FCM_CREDENTIALS_FILE", "/keys/firebase.json"),
            ("SEALPOST_FCM_URL", "https://fcm.example/"),
        ]))
        .unwrap();
        let apns = config.apns.unwrap();
        assert_eq!(apns.url, "https://api.push.apple.com");
        assert_eq!(apns.key_file, PathBuf::from("/keys/AuthKey_ABC.p8"));
        assert_eq!(
            (apns.key_id.as_str(), apns.team_id.as_str()),
            ("ABC", "TEAM")
        );
        let fcm = config.fcm.unwrap();
        assert_eq!(fcm.url, "https://fcm.example");
        assert_eq!((fcm.project_id, fcm.token_url), (None, None));

        let half = Config::from_vars(&vars(&[("SEALPOST_APNS_KEY_FILE", "/k.p8")]));
        assert!(matches!(
            half,
            Err(ConfigError::Invalid {
                name: "SEALPOST_APNS_KEY_ID",
                ..
            })
        ));
    }

    #[test]
    fn debug_output_never_holds_provider_secrets() {
        let config = Config::from_vars(&vars(&[
            ("SEALPOST_STRIPE_SECRET_KEY", "sk_live_stripe_secret"),
            ("SEALPOST_STRIPE_WEBHOOK_SECRET", "whsec_stripe_hook"),
            ("SEALPOST_BTCPAY_URL", "https://pay.example"),
            ("SEALPOST_BTCPAY_API_KEY", "btcpay_api_secret"),
            ("SEALPOST_BTCPAY_STORE_ID", "store1"),
            ("SEALPOST_BTCPAY_WEBHOOK_SECRET", "btcpay_hook_secret"),
        ]))
        .unwrap();
        let printed = format!("{config:?} {config:#?}");
        for secret in [
            "sk_live_stripe_secret",
            "whsec_stripe_hook",
            "btcpay_api_secret",
            "btcpay_hook_secret",
        ] {
            assert!(!printed.contains(secret), "{secret} in {printed}");
        }
        assert!(printed.contains("https://pay.example"), "{printed}");
        let btcpay = config.btcpay.unwrap();
        assert_eq!(btcpay.api_key.as_str(), "btcpay_api_secret");
        assert_eq!(btcpay.webhook_secret.as_str(), "btcpay_hook_secret");
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
