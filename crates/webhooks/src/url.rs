//! Which URLs a webhook may point at (docs/webhooks.md "Registering an
//! endpoint"): the URL must be https with a hostname; IP addresses, local
//! names (localhost, *.local) and the service's own domains are refused (400
//! invalid_url).
//!
//! Parsing is the WHATWG URL standard's (the `url` crate), the same parser
//! the sender's HTTP client uses, so what is checked here is what is
//! connected to later. In particular the integer and dotted forms of IPv4
//! (`https://2130706433/`, `https://0x7f.1/`, `https://0177.0.0.1/`,
//! `https://127.1/`) parse as IPv4 addresses and are refused like
//! `https://127.0.0.1/`.
//!
//! This check is about what is *registered*. Where a registered name
//! *resolves* is checked again by the sender at delivery time (loopback,
//! private, link-local and multicast addresses are refused there, unless
//! pinned by `SEALPOST_WEBHOOK_RESOLVE`: docs/configuration.md).

use std::fmt;

use ::url::{Host, Url};

/// Longest URL accepted, in characters (Unicode scalar values) of the URL as
/// sent: what JSON Schema's `maxLength` counts, and the OpenAPI document
/// takes its `maxLength` from here. The normalised form can be longer (a `/`
/// for a URL without a path, percent-encoding); it is not limited again,
/// since a client can only check what it sends.
pub const MAX_URL_LEN: usize = 2048;

/// The URLs [`validate_url`] takes, as the OpenAPI document's `pattern`
/// (ECMA-262, so generated clients and API testers agree with the
/// validator): https, a host name of two or more labels whose last is
/// alphabetic and is not `local` or `localhost` in any case, an optional
/// path. It cannot know the deployment's own domains, which the validator
/// also refuses (`invalid_url`).
pub const URL_PATTERN: &str = "^https://(?![^/]*\\.[Ll][Oo][Cc][Aa][Ll]([Hh][Oo][Ss][Tt])?(/|$))[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*\\.[A-Za-z]{2,63}(/[A-Za-z0-9._~/-]*)?$";

/// Why a URL was refused. Every variant is 400 `invalid_url`; the message
/// says which rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("the URL is longer than {MAX_URL_LEN} characters")]
    TooLong,
    #[error("the URL must not contain spaces or control characters")]
    Whitespace,
    #[error("the URL is not valid: {0}")]
    Unparsable(String),
    #[error("the URL must use https")]
    NotHttps,
    #[error("the URL must not contain a user name or password")]
    UserInfo,
    #[error("the URL must name a host")]
    NoHost,
    #[error("the URL must name a host, not an IP address")]
    IpAddress,
    #[error("{0} is a single-label name, reachable only inside a network; use a full domain name")]
    SingleLabel(String),
    #[error("local names such as {0} are not allowed")]
    LocalName(String),
    #[error("{0} belongs to this service; webhooks must point elsewhere")]
    ServiceDomain(String),
}

impl UrlError {
    /// The API error code (400).
    #[must_use]
    pub fn code(&self) -> &'static str {
        "invalid_url"
    }
}

/// A URL that passed [`validate_url`]: https, a hostname, no user info.
/// Holds the normalised form (lower-case host, IDNA in ASCII, `/` path
/// when none was given), which is what is stored, shown and requested.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct WebhookUrl(Url);

impl WebhookUrl {
    /// A URL this service stored after [`validate_url`] (a database row):
    /// parsed again, the rules not re-applied (the service's domains may
    /// have changed since).
    pub fn from_stored(text: &str) -> Result<Self, UrlError> {
        Url::parse(text)
            .map(Self)
            .map_err(|e| UrlError::Unparsable(e.to_string()))
    }

    /// The normalised URL text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The parsed URL, for the sender's HTTP client.
    #[must_use]
    pub fn as_url(&self) -> &Url {
        &self.0
    }

    /// The hostname (ASCII, lower case), for resolving and pinning.
    #[must_use]
    pub fn host(&self) -> &str {
        self.0.host_str().unwrap_or_default()
    }

    /// The port, 443 unless the URL names another.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.0.port_or_known_default().unwrap_or(443)
    }

    #[must_use]
    pub fn into_string(self) -> String {
        self.0.into()
    }
}

impl fmt::Display for WebhookUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for WebhookUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WebhookUrl({})", self.as_str())
    }
}

impl AsRef<str> for WebhookUrl {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl serde::Serialize for WebhookUrl {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Checks a URL to register (POST and PATCH `/webhook-endpoints`).
///
/// Refused: anything but `https`; user name or password; a host that is an
/// IP address (IPv4 in any of its forms, IPv6 in brackets); `localhost`,
/// `*.localhost`, `local` and `*.local` (a trailing dot changes nothing);
/// `service_domains` and their subdomains (pass the shared mail domains and
/// the API's own host); spaces or control characters anywhere; over
/// [`MAX_URL_LEN`]; a single-label hostname (`https://intranet/`). A port
/// is allowed, and the sender's resolve check still applies to what passes.
pub fn validate_url(url: &str, service_domains: &[String]) -> Result<WebhookUrl, UrlError> {
    if url.chars().count() > MAX_URL_LEN {
        return Err(UrlError::TooLong);
    }
    // The WHATWG parser would silently trim or drop these; refuse instead so
    // what is stored is what was sent.
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(UrlError::Whitespace);
    }
    let parsed = Url::parse(url).map_err(|e| UrlError::Unparsable(e.to_string()))?;
    if parsed.scheme() != "https" {
        return Err(UrlError::NotHttps);
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(UrlError::UserInfo);
    }
    let host = match parsed.host() {
        None => return Err(UrlError::NoHost),
        Some(Host::Ipv4(_) | Host::Ipv6(_)) => return Err(UrlError::IpAddress),
        Some(Host::Domain(domain)) => domain.trim_end_matches('.').to_owned(),
    };
    if host.is_empty() {
        return Err(UrlError::NoHost);
    }
    if is_local_name(&host) {
        return Err(UrlError::LocalName(host));
    }
    if !host.contains('.') {
        return Err(UrlError::SingleLabel(host));
    }
    if service_domains
        .iter()
        .filter_map(|domain| normalise_domain(domain))
        .any(|domain| is_same_or_subdomain(&host, &domain))
    {
        return Err(UrlError::ServiceDomain(host));
    }
    Ok(WebhookUrl(parsed))
}

fn is_local_name(host: &str) -> bool {
    ["localhost", "local"]
        .iter()
        .any(|name| is_same_or_subdomain(host, name))
}

fn is_same_or_subdomain(host: &str, domain: &str) -> bool {
    host == domain
        || host
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// A configured domain in the form the parser gives hosts: ASCII (IDNA),
/// lower case, no trailing dot. `None` for an empty entry or an IP address.
fn normalise_domain(domain: &str) -> Option<String> {
    let trimmed = domain.trim().trim_end_matches('.');
    if trimmed.is_empty() {
        return None;
    }
    match Host::parse(trimmed) {
        Ok(Host::Domain(ascii)) => Some(ascii),
        Ok(Host::Ipv4(_) | Host::Ipv6(_)) => None,
        Err(_) => Some(trimmed.to_ascii_lowercase()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service() -> Vec<String> {
        vec!["mail.localhost".to_owned(), "Sealpost.Example".to_owned()]
    }

    fn check(url: &str) -> Result<WebhookUrl, UrlError> {
        validate_url(url, &service())
    }

    #[test]
    fn accepts_https_hostnames() {
        for url in [
            "https://hooks.example.com/sealpost",
            "https://example.com",
            "https://example.com:8443/in?x=1&y=2",
            "https://a.b.c.example.org/path/to/hook",
            "https://xn--bcher-kva.example/",
            "https://sealpost.example.com/",
            "https://notsealpost.example/",
            "https://localhost.example.com/",
            "https://local.example.com/",
        ] {
            assert!(check(url).is_ok(), "{url} should be accepted");
        }
    }

    #[test]
    fn normalises_what_it_accepts() {
        let url = check("https://Hooks.EXAMPLE.com").unwrap();
        assert_eq!(url.as_str(), "https://hooks.example.com/");
        assert_eq!(url.host(), "hooks.example.com");
        assert_eq!(url.port(), 443);
        let url = check("https://bücher.example:8443/x").unwrap();
        assert_eq!(url.as_str(), "https://xn--bcher-kva.example:8443/x");
        assert_eq!(url.port(), 8443);
        assert_eq!(WebhookUrl::from_stored(url.as_str()).unwrap(), url);
        assert_eq!(
            serde_json::to_string(&url).unwrap(),
            "\"https://xn--bcher-kva.example:8443/x\""
        );
    }

    #[test]
    fn refuses_other_schemes() {
        for url in [
            "http://example.com/",
            "ftp://example.com/",
            "HTTP://example.com/",
            "wss://example.com/",
            "mailto:someone@example.com",
        ] {
            assert_eq!(check(url), Err(UrlError::NotHttps), "{url}");
        }
        assert!(check("HTTPS://example.com/").is_ok());
    }

    #[test]
    fn refuses_what_is_not_a_url() {
        for url in [
            "",
            "example.com",
            "/relative",
            "https://",
            "https://exa mple.com/",
            "https://example.com:99999/",
        ] {
            assert!(check(url).is_err(), "{url}");
        }
        assert!(matches!(
            check("example.com/hook"),
            Err(UrlError::Unparsable(_))
        ));
    }

    #[test]
    fn refuses_whitespace_and_control_characters() {
        for url in [
            " https://example.com/",
            "https://example.com/ ",
            "https://exam\tple.com/",
            "https://example.com/\n",
            "https://example.com/a b",
        ] {
            assert_eq!(check(url), Err(UrlError::Whitespace), "{url:?}");
        }
    }

    #[test]
    fn refuses_ip_addresses_in_every_form() {
        for url in [
            "https://127.0.0.1/",
            "https://10.0.0.8:8443/hook",
            "https://8.8.8.8/",
            "https://127.0.0.1./",
            "https://2130706433/",
            "https://0x7f000001/",
            "https://0x7f.0.0.1/",
            "https://0177.0.0.1/",
            "https://017700000001/",
            "https://127.1/",
            "https://[::1]/",
            "https://[::1]:8443/",
            "https://[2001:db8::1]/",
            "https://[::ffff:127.0.0.1]/",
            "https://[fe80::1]/",
        ] {
            assert_eq!(check(url), Err(UrlError::IpAddress), "{url}");
        }
        // A bare IPv6 address without brackets is not a URL at all.
        assert!(matches!(
            check("https://::1/"),
            Err(UrlError::Unparsable(_))
        ));
    }

    #[test]
    fn refuses_single_label_hosts() {
        for url in [
            "https://intranet/",
            "https://intranet./hook",
            "https://router:8443/",
        ] {
            assert!(matches!(check(url), Err(UrlError::SingleLabel(_))), "{url}");
        }
        assert!(check("https://hooks.example/").is_ok());
    }

    #[test]
    fn refuses_local_names() {
        for url in [
            "https://localhost/",
            "https://LOCALHOST:8443/",
            "https://localhost./",
            "https://api.localhost/",
            "https://a.b.localhost/",
            "https://printer.local/",
            "https://Printer.Local./",
            "https://local/",
        ] {
            assert!(
                matches!(check(url), Err(UrlError::LocalName(_))),
                "{url}: {:?}",
                check(url)
            );
        }
    }

    #[test]
    fn refuses_the_service_domains_and_their_subdomains() {
        for url in [
            "https://sealpost.example/",
            "https://api.sealpost.example/hook",
            "https://SEALPOST.EXAMPLE./",
            "https://a.b.sealpost.example:444/",
        ] {
            assert!(
                matches!(check(url), Err(UrlError::ServiceDomain(_))),
                "{url}: {:?}",
                check(url)
            );
        }
        // The default shared domain is refused as a local name before the
        // service-domain check.
        assert!(check("https://mail.localhost/").is_err());
        // Without configured domains only the general rules apply.
        assert!(validate_url("https://sealpost.example/", &[]).is_ok());
        // Blank or IP entries in the configuration are ignored.
        let odd = vec![String::new(), " ".to_owned(), "127.0.0.1".to_owned()];
        assert!(validate_url("https://example.com/", &odd).is_ok());
    }

    #[test]
    fn refuses_user_info() {
        for url in [
            "https://user@example.com/",
            "https://user:pass@example.com/",
            "https://:pass@example.com/",
        ] {
            assert_eq!(check(url), Err(UrlError::UserInfo), "{url}");
        }
    }

    #[test]
    fn length_limit_is_2048_characters_as_sent() {
        let base = "https://example.com/";
        let fits = format!("{base}{}", "a".repeat(MAX_URL_LEN - base.len()));
        assert_eq!(fits.len(), MAX_URL_LEN);
        assert!(check(&fits).is_ok());
        let over = format!("{fits}a");
        assert_eq!(check(&over), Err(UrlError::TooLong));
        // Characters, as JSON Schema's maxLength counts: 2048 of them in
        // more bytes still fit, and percent-encoding them when normalised
        // does not count.
        let wide = format!("{base}{}", "é".repeat(MAX_URL_LEN - base.len()));
        assert_eq!(wide.chars().count(), MAX_URL_LEN);
        assert!(check(&wide).is_ok());
        assert_eq!(check(&format!("{wide}é")), Err(UrlError::TooLong));
        // Normalisation adds the `/` of a URL without a path: still fits.
        let host_only = format!(
            "https://{}.example.com",
            "a".repeat(MAX_URL_LEN - "https://.example.com".len())
        );
        assert_eq!(host_only.len(), MAX_URL_LEN);
        assert!(
            check(&host_only).is_ok(),
            "a path-less URL of the limit's length"
        );
    }

    #[test]
    fn every_error_is_invalid_url() {
        assert_eq!(UrlError::NotHttps.code(), "invalid_url");
        assert_eq!(
            UrlError::LocalName("localhost".into()).to_string(),
            "local names such as localhost are not allowed"
        );
    }
}
