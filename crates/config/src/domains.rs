//! Mail domains: the shared domains addresses are created on, and what
//! own domains are checked against and served from (the resolver the
//! checks ask, the nameservers and MX host they expect, where
//! `sealpost-dns` listens).

use crate::ConfigError;
use crate::variables::{Variable, Vars};

pub(crate) const DOMAINS: Variable = Variable {
    name: "SEALPOST_DOMAINS",
    default: "mail.localhost",
    meaning: "Comma list of the shared domains addresses are created on and mail is accepted for.",
};

pub(crate) const RESERVED_NAMES: Variable = Variable {
    name: "SEALPOST_RESERVED_NAMES",
    default: "(none: only the built-in role names)",
    meaning: "Comma list of names nobody may create on a shared domain, beside the built-in ones (RFC 2142's role names, the CA/Browser Forum's `admin`, `administrator`, `webmaster`, `hostmaster`, `postmaster`, and `root`, `mailer-daemon`, `noreply`, `no-reply`, `ssl-admin`); a name with a `+` subaddress counts as the name. An attempt answers 400 `invalid_field`. Addresses issued under such a name before it was reserved stay with their owners; the API lists their ids at start.",
};

pub(crate) const DNS_RESOLVER: Variable = Variable {
    name: "SEALPOST_DNS_RESOLVER",
    default: "(unset: the system's resolvers)",
    meaning: "`ip:port` (or `ip`, port 53) of the DNS resolver the own-domain checks ask for TXT, NS and MX records; answers are not cached.",
};

pub(crate) const DNS_NAMESERVERS: Variable = Variable {
    name: "SEALPOST_DNS_NAMESERVERS",
    default: "ns1.mail.localhost,ns2.mail.localhost",
    meaning: "The service's two nameservers (comma list of host names): own domains are delegated to exactly these, and `sealpost-dns` serves them as the zones' NS records.",
};

pub(crate) const MX_HOST: Variable = Variable {
    name: "SEALPOST_MX_HOST",
    default: "(the first of SEALPOST_DOMAINS)",
    meaning: "The host own domains' MX record names; a domain is live once its MX shows this host.",
};

pub(crate) const DNS_ADDR: Variable = Variable {
    name: "SEALPOST_DNS_ADDR",
    default: "127.0.0.1:5353",
    meaning: "Where `sealpost-dns`, the authoritative DNS of own domains, listens (UDP and TCP).",
};

/// `SEALPOST_DNS_RESOLVER`, `SEALPOST_DNS_NAMESERVERS`, `SEALPOST_MX_HOST`, `SEALPOST_DNS_ADDR`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsSettings {
    /// `None`: the system's resolvers.
    pub resolver: Option<std::net::SocketAddr>,
    pub nameservers: Vec<String>,
    pub mx_host: String,
    pub addr: String,
}

pub(crate) struct Domains {
    pub(crate) domains: Vec<String>,
    pub(crate) reserved_names: Vec<String>,
    pub(crate) dns: DnsSettings,
}

/// A host name as the service compares them: lower case, no final dot.
fn host(text: &str) -> String {
    text.trim().trim_end_matches('.').to_ascii_lowercase()
}

pub(crate) fn read(vars: Vars<'_>) -> Result<Domains, ConfigError> {
    let domains: Vec<String> = vars
        .list(&DOMAINS)
        .map(host)
        .filter(|domain| !domain.is_empty())
        .collect();
    if domains.is_empty() {
        return Err(ConfigError::Invalid {
            name: DOMAINS.name,
            reason: "needs at least one domain".into(),
        });
    }
    let reserved_names = vars
        .list(&RESERVED_NAMES)
        .map(str::to_ascii_lowercase)
        .collect();
    let dns = dns_settings(vars, &domains)?;
    Ok(Domains {
        domains,
        reserved_names,
        dns,
    })
}

/// `domains`: the shared domains, at least one.
fn dns_settings(vars: Vars<'_>, domains: &[String]) -> Result<DnsSettings, ConfigError> {
    let resolver = match vars.get(&DNS_RESOLVER) {
        None => None,
        Some(text) => Some(
            text.parse::<std::net::SocketAddr>()
                .or_else(|_| {
                    text.parse::<std::net::IpAddr>()
                        .map(|ip| std::net::SocketAddr::new(ip, 53))
                })
                .map_err(|_| ConfigError::Invalid {
                    name: DNS_RESOLVER.name,
                    reason: "expected ip:port or ip".into(),
                })?,
        ),
    };
    let nameservers: Vec<String> = vars
        .list(&DNS_NAMESERVERS)
        .map(host)
        .filter(|name| !name.is_empty())
        .collect();
    if nameservers.len() != 2 {
        return Err(ConfigError::Invalid {
            name: DNS_NAMESERVERS.name,
            reason: "expected two host names, comma separated".into(),
        });
    }
    Ok(DnsSettings {
        resolver,
        nameservers,
        mx_host: vars
            .get(&MX_HOST)
            .map(host)
            .or_else(|| domains.first().cloned())
            .unwrap_or_else(|| host(DOMAINS.default)),
        addr: vars.text(&DNS_ADDR).to_owned(),
    })
}
