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

pub(crate) const DNS_ZONE_CACHE_SECS: Variable = Variable {
    name: "SEALPOST_DNS_ZONE_CACHE_SECS",
    default: "5",
    meaning: "Seconds `sealpost-dns` keeps the proved own domains' zones, read from PostgreSQL in one query, before reading them again (1 to 3600): a domain proved, changed or removed shows within that; names under no zone never reach the database.",
};

pub(crate) const DNS_RATE: Variable = Variable {
    name: "SEALPOST_DNS_RATE",
    default: "100",
    meaning: "UDP answers a second `sealpost-dns` sends one client network (`SEALPOST_DNS_RATE_IPV4_PREFIX`, `SEALPOST_DNS_RATE_IPV6_PREFIX`; a bucket holding one second's worth); over it, answers are slipped or dropped (`SEALPOST_DNS_RATE_SLIP`). TCP is not limited. 0 turns the limit off (load tests).",
};

pub(crate) const DNS_RATE_SLIP: Variable = Variable {
    name: "SEALPOST_DNS_RATE_SLIP",
    default: "2",
    meaning: "Of the UDP answers over `SEALPOST_DNS_RATE`, every n-th goes out empty with TC=1, so a real resolver asks again over TCP; the rest are dropped. 1: all slipped; 0: all dropped.",
};

pub(crate) const DNS_RATE_IPV4_PREFIX: Variable = Variable {
    name: "SEALPOST_DNS_RATE_IPV4_PREFIX",
    default: "24",
    meaning: "IPv4 addresses sharing this many leading bits count as one client network for `SEALPOST_DNS_RATE` (8 to 32).",
};

pub(crate) const DNS_RATE_IPV6_PREFIX: Variable = Variable {
    name: "SEALPOST_DNS_RATE_IPV6_PREFIX",
    default: "56",
    meaning: "IPv6 addresses sharing this many leading bits count as one client network for `SEALPOST_DNS_RATE` (16 to 128).",
};

pub(crate) const DNS_UDP_MAX: Variable = Variable {
    name: "SEALPOST_DNS_UDP_MAX",
    default: "1232",
    meaning: "Largest UDP answer of `sealpost-dns` in bytes (512 to 4096), whatever larger EDNS buffer a client offers (512 without EDNS); a larger answer (a DKIM key of 4096 bits) goes out empty with TC=1 and comes whole over TCP.",
};

/// `SEALPOST_DNS_RESOLVER`, `SEALPOST_DNS_NAMESERVERS`, `SEALPOST_MX_HOST`,
/// `SEALPOST_DNS_ADDR` and the limits of `sealpost-dns`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsSettings {
    /// `None`: the system's resolvers.
    pub resolver: Option<std::net::SocketAddr>,
    pub nameservers: Vec<String>,
    pub mx_host: String,
    pub addr: String,
    pub zone_cache: std::time::Duration,
    /// UDP answers a second per client network; 0: no limit.
    pub rate_per_second: u32,
    pub rate_slip: u32,
    pub rate_ipv4_prefix: u8,
    pub rate_ipv6_prefix: u8,
    pub udp_max: u16,
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
        zone_cache: std::time::Duration::from_secs(vars.whole(&DNS_ZONE_CACHE_SECS, 1, 3600)?),
        rate_per_second: vars.whole(&DNS_RATE, 0, 1_000_000)? as u32,
        rate_slip: vars.whole(&DNS_RATE_SLIP, 0, 1_000)? as u32,
        rate_ipv4_prefix: vars.whole(&DNS_RATE_IPV4_PREFIX, 8, 32)? as u8,
        rate_ipv6_prefix: vars.whole(&DNS_RATE_IPV6_PREFIX, 16, 128)? as u8,
        udp_max: vars.whole(&DNS_UDP_MAX, 512, 4096)? as u16,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use crate::variables::vars;
    use crate::{Config, ConfigError};

    #[test]
    fn dns_limits_default_and_read_and_refuse_nonsense() {
        let dns = Config::from_vars(&vars(&[])).unwrap().dns;
        assert_eq!(dns.zone_cache.as_secs(), 5);
        assert_eq!(
            (dns.rate_per_second, dns.rate_slip),
            (100, 2),
            "limited by default"
        );
        assert_eq!((dns.rate_ipv4_prefix, dns.rate_ipv6_prefix), (24, 56));
        assert_eq!(dns.udp_max, 1232);

        let dns = Config::from_vars(&vars(&[
            ("SEALPOST_DNS_ZONE_CACHE_SECS", "1"),
            ("SEALPOST_DNS_RATE", "0"),
            ("SEALPOST_DNS_RATE_SLIP", "0"),
            ("SEALPOST_DNS_RATE_IPV4_PREFIX", "32"),
            ("SEALPOST_DNS_RATE_IPV6_PREFIX", "64"),
            ("SEALPOST_DNS_UDP_MAX", "512"),
        ]))
        .unwrap()
        .dns;
        assert_eq!(dns.zone_cache.as_secs(), 1);
        assert_eq!((dns.rate_per_second, dns.rate_slip), (0, 0));
        assert_eq!((dns.rate_ipv4_prefix, dns.rate_ipv6_prefix), (32, 64));
        assert_eq!(dns.udp_max, 512);

        for (name, bad) in [
            ("SEALPOST_DNS_ZONE_CACHE_SECS", "0"),
            ("SEALPOST_DNS_RATE", "-1"),
            ("SEALPOST_DNS_RATE_SLIP", "often"),
            ("SEALPOST_DNS_RATE_IPV4_PREFIX", "33"),
            ("SEALPOST_DNS_RATE_IPV6_PREFIX", "8"),
            ("SEALPOST_DNS_UDP_MAX", "511"),
        ] {
            let error = Config::from_vars(&vars(&[(name, bad)])).unwrap_err();
            assert!(
                matches!(error, ConfigError::Invalid { name: got, .. } if got == name),
                "{name}={bad}: {error:?}"
            );
        }
    }
}
