//! The HTTP API: where it listens and is reached, its TLS, the proxies
//! whose forwarding headers are believed, and the edge rate limit.

use crate::ConfigError;
use crate::variables::{Variable, Vars};
use std::path::PathBuf;

pub(crate) const HTTP_ADDR: Variable = Variable {
    name: "SEALPOST_HTTP_ADDR",
    default: "127.0.0.1:8080",
    meaning: "Address the API listens on.",
};

pub(crate) const TRUSTED_PROXIES: Variable = Variable {
    name: "SEALPOST_TRUSTED_PROXIES",
    default: "(none: the peer is the client)",
    meaning: "Comma list of reverse proxies (CIDR or single addresses) whose forwarding header (`SEALPOST_FORWARDED_HEADER`) is believed; the right-most hop that is not one of them is the client the limits and logs use.",
};

pub(crate) const FORWARDED_HEADER: Variable = Variable {
    name: "SEALPOST_FORWARDED_HEADER",
    default: "x-forwarded-for",
    meaning: "The one header the trusted proxies write the client into: `x-forwarded-for` (nginx's `$proxy_add_x_forwarded_for`, most load balancers) or `forwarded` (RFC 7239 `for=`). The other header is never read: a proxy passes it through as the client wrote it.",
};

pub(crate) const TLS_CERT: Variable = Variable {
    name: "SEALPOST_TLS_CERT",
    default: "(none: plain HTTP behind a TLS proxy)",
    meaning: "PEM file of the API's certificate chain (leaf first). Set with `SEALPOST_TLS_KEY`, the API serves HTTPS only (rustls, TLS 1.2 and 1.3) on `SEALPOST_HTTP_ADDR`; one without the other stops start-up.",
};

pub(crate) const TLS_KEY: Variable = Variable {
    name: "SEALPOST_TLS_KEY",
    default: "(none)",
    meaning: "PEM file of the private key of `SEALPOST_TLS_CERT` (PKCS#8, PKCS#1 or SEC1).",
};

pub(crate) const PUBLIC_URL: Variable = Variable {
    name: "SEALPOST_PUBLIC_URL",
    default: "http://<SEALPOST_HTTP_ADDR>",
    meaning: "Where people reach the API; the sandbox checkout page and the payment providers' return pages live under it.",
};

pub(crate) const EDGE_RATE: Variable = Variable {
    name: "SEALPOST_EDGE_RATE",
    default: "600",
    meaning: "Edge limit: requests per minute per IP and per account (above 0). The tighter limits, such as pairing-code lookups, do not change with it.",
};

/// The PEM files of a TLS server's certificate chain and key (the API's,
/// the SMTP ingest's STARTTLS).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TlsFiles {
    /// A certificate variable and its key variable, both or neither.
    pub(crate) fn read(
        vars: Vars<'_>,
        cert: &Variable,
        key: &Variable,
    ) -> Result<Option<Self>, ConfigError> {
        Ok(vars.all_or_none([cert, key])?.map(|[cert, key]| Self {
            cert: PathBuf::from(cert),
            key: PathBuf::from(key),
        }))
    }
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
                name: FORWARDED_HEADER.name,
                reason: "expected x-forwarded-for or forwarded".into(),
            }),
        }
    }
}

pub(crate) struct Http {
    pub(crate) http_addr: String,
    pub(crate) trusted_proxies: Vec<ipnet::IpNet>,
    pub(crate) forwarded_header: ForwardedHeader,
    pub(crate) tls: Option<TlsFiles>,
    pub(crate) public_url: String,
    pub(crate) edge_rate_per_minute: u32,
}

pub(crate) fn read(vars: Vars<'_>) -> Result<Http, ConfigError> {
    let http_addr = vars.text(&HTTP_ADDR).to_owned();
    let edge_rate_per_minute = match vars.text(&EDGE_RATE).parse::<u32>() {
        Ok(rate) if rate > 0 => rate,
        _ => {
            return Err(ConfigError::Invalid {
                name: EDGE_RATE.name,
                reason: "expected a whole number of requests per minute above 0".into(),
            });
        }
    };
    let trusted_proxies = vars
        .list(&TRUSTED_PROXIES)
        .map(|entry| {
            entry
                .parse::<ipnet::IpNet>()
                .or_else(|_| entry.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| ConfigError::Invalid {
                    name: TRUSTED_PROXIES.name,
                    reason: format!("{entry:?} is neither an address nor a CIDR network"),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let forwarded_header = ForwardedHeader::read(vars.text(&FORWARDED_HEADER))?;
    let tls = TlsFiles::read(vars, &TLS_CERT, &TLS_KEY)?;
    // The default names the listening address in its place.
    let public_url = match vars.get(&PUBLIC_URL) {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => PUBLIC_URL
            .default
            .replace(&format!("<{}>", HTTP_ADDR.name), &http_addr),
    };
    Ok(Http {
        http_addr,
        trusted_proxies,
        forwarded_header,
        tls,
        public_url,
        edge_rate_per_minute,
    })
}

#[cfg(test)]
mod tests {
    use crate::variables::vars;
    use crate::{Config, TlsFiles};
    use std::collections::HashMap;

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
        use crate::ForwardedHeader;
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
}
