//! Own-domain names: what a person may bring, in the one form the service
//! stores and compares.
//!
//! The rule (docs/domains.md): the input is trimmed and one trailing dot is
//! removed; it is mapped to ASCII with IDNA (UTS 46, so `Bücher.DE` becomes
//! `xn--bcher-kva.de`), which also lower-cases it; it must not be an IP
//! literal; every label is 1 to 63 letters, digits and inner hyphens and the
//! whole at most 253 characters; and it must be a *registrable* name: exactly
//! one label under a suffix of the public suffix list (`example.com`,
//! `example.co.uk`; not `com`, not `mail.example.com`, not a name under an
//! unlisted top-level domain).

use std::fmt;
use std::net::IpAddr;

/// A checked own-domain name: ASCII, lower case, no trailing dot.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DomainName(String);

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Not a domain name at all, an IP literal, or not registrable.
    #[error("{0}")]
    Invalid(String),
    /// One of the service's own domains, or a name above one.
    #[error("{0} is one of the service's own domains")]
    ServiceDomain(String),
}

fn invalid(reason: impl Into<String>) -> NameError {
    NameError::Invalid(reason.into())
}

impl DomainName {
    /// Checks and normalises `input`. `service_domains` are the names the
    /// service itself uses (shared domains, nameservers, MX host): none of
    /// them, and no name they are under, can be brought.
    pub fn parse(input: &str, service_domains: &[String]) -> Result<DomainName, NameError> {
        let text = input.trim();
        let text = text.strip_suffix('.').unwrap_or(text);
        if text.is_empty() {
            return Err(invalid("a domain name is required"));
        }
        let bare = text.trim_start_matches('[').trim_end_matches(']');
        if bare.parse::<IpAddr>().is_ok() {
            return Err(invalid("an IP address is not a domain name"));
        }
        let ascii =
            idna::domain_to_ascii(text).map_err(|_| invalid("not a valid domain name (IDNA)"))?;
        if ascii.len() > 253 {
            return Err(invalid("longer than 253 characters"));
        }
        for label in ascii.split('.') {
            let valid = (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-');
            if !valid {
                return Err(invalid(
                    "each label is 1 to 63 letters, digits or inner hyphens",
                ));
            }
        }
        if ascii
            .rsplit('.')
            .next()
            .is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(invalid("an IP address is not a domain name"));
        }
        let registrable = psl::domain(ascii.as_bytes())
            .filter(|domain| domain.suffix().is_known())
            .ok_or_else(|| invalid("not a registrable domain name under a public suffix"))?;
        if registrable.as_bytes() != ascii.as_bytes() {
            let parent = String::from_utf8_lossy(registrable.as_bytes()).into_owned();
            return Err(invalid(format!(
                "bring the registered domain ({parent}), not a name under it"
            )));
        }
        for own in service_domains {
            let own = own.trim_end_matches('.').to_ascii_lowercase();
            if own == ascii || own.ends_with(&format!(".{ascii}")) {
                return Err(NameError::ServiceDomain(ascii));
            }
        }
        Ok(DomainName(ascii))
    }

    /// A name read back from the store, checked when it was written.
    pub fn from_trusted(name: impl Into<String>) -> DomainName {
        DomainName(name.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Where the ownership token is published: `_service-verify.<domain>`.
    pub fn verification_name(&self) -> String {
        format!("{VERIFY_LABEL}.{}", self.0)
    }
}

impl fmt::Display for DomainName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The label of the ownership TXT record.
pub const VERIFY_LABEL: &str = "_service-verify";
/// The prefix of the ownership TXT record's value.
pub const VERIFY_PREFIX: &str = "service-verify=";

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(input: &str) -> Result<String, NameError> {
        DomainName::parse(
            input,
            &["mail.sealpost.example".into(), "ns1.sealpost.net".into()],
        )
        .map(|name| name.0)
    }

    #[test]
    fn names_are_normalised() {
        assert_eq!(parse("Example.COM.").unwrap(), "example.com");
        assert_eq!(parse("  example.co.uk ").unwrap(), "example.co.uk");
        assert_eq!(parse("Bücher.de").unwrap(), "xn--bcher-kva.de");
        assert_eq!(parse("xn--bcher-kva.de").unwrap(), "xn--bcher-kva.de");
    }

    #[test]
    fn ip_literals_and_junk_are_refused() {
        for bad in [
            "",
            ".",
            "127.0.0.1",
            "[::1]",
            "::1",
            "10.0.0.1.",
            "exa mple.com",
            "-example.com",
            "example-.com",
            "ex_ample.com",
            "example..com",
            "com",
            "co.uk",
            "localhost",
            "mail.localhost",
            "example.invalidtld",
            "www.example.com",
            &format!("{}.com", "a".repeat(64)),
        ] {
            assert!(
                matches!(parse(bad), Err(NameError::Invalid(_))),
                "{bad:?} should be refused, got {:?}",
                parse(bad)
            );
        }
    }

    #[test]
    fn the_service_domains_and_their_parents_are_refused() {
        assert_eq!(
            parse("sealpost.example"),
            Err(NameError::Invalid(
                "not a registrable domain name under a public suffix".into()
            )),
            "example is not a public suffix"
        );
        assert_eq!(
            parse("SEALPOST.net"),
            Err(NameError::ServiceDomain("sealpost.net".into()))
        );
        assert!(parse("other.net").is_ok());
    }

    #[test]
    fn the_verification_record_lives_under_the_domain() {
        let name = DomainName::parse("example.org", &[]).unwrap();
        assert_eq!(name.verification_name(), "_service-verify.example.org");
    }
}
