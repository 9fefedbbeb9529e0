//! Names kept off the shared domains: the role names of RFC 2142 and those
//! certificate authorities validate a domain by (the CA/Browser Forum's
//! `admin`, `administrator`, `webmaster`, `hostmaster`, `postmaster`), a few
//! more every mail host answers for, and the operator's own list
//! (`SEALPOST_RESERVED_NAMES`). Nobody creates them on a shared domain, so
//! no customer can prove control of the service's own hosts or speak for
//! them; an own domain is its owner's to name.

use std::collections::BTreeSet;

/// The names reserved on every deployment.
pub const ROLE_NAMES: &[&str] = &[
    // RFC 2142: business, network operations and service mailboxes.
    "info",
    "marketing",
    "sales",
    "support",
    "abuse",
    "noc",
    "security",
    "postmaster",
    "hostmaster",
    "usenet",
    "news",
    "webmaster",
    "www",
    "uucp",
    "ftp",
    // The CA/Browser Forum's domain-validation addresses not above.
    "admin",
    "administrator",
    // What mail systems and the service itself answer as.
    "root",
    "mailer-daemon",
    "noreply",
    "no-reply",
    "ssl-admin",
];

/// The reserved names of a deployment: [`ROLE_NAMES`] and the operator's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReservedNames(BTreeSet<String>);

impl ReservedNames {
    /// The role names plus `extra` (compared without case).
    pub fn new(extra: impl IntoIterator<Item = String>) -> Self {
        let names = ROLE_NAMES
            .iter()
            .map(|name| (*name).to_owned())
            .chain(
                extra
                    .into_iter()
                    .map(|name| name.trim().to_ascii_lowercase()),
            )
            .filter(|name| !name.is_empty())
            .collect();
        Self(names)
    }

    /// Whether `local_part` is reserved: a name itself, or a name with a
    /// `+` subaddress (`admin+x`).
    pub fn contains(&self, local_part: &str) -> bool {
        let local_part = local_part.to_ascii_lowercase();
        let base = local_part.split('+').next().unwrap_or_default();
        self.0.contains(&local_part) || self.0.contains(base)
    }

    /// The names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }
}

impl Default for ReservedNames {
    fn default() -> Self {
        Self::new([])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_names_subaddresses_and_the_operators_are_reserved() {
        let reserved = ReservedNames::new(["Billing ".to_owned(), String::new()]);
        for name in [
            "postmaster",
            "Admin",
            "admin+certs",
            "abuse",
            "billing",
            "noreply",
        ] {
            assert!(reserved.contains(name), "{name}");
        }
        for name in ["hello", "admin.x7k2q9", "postmasters", "+admin"] {
            assert!(!reserved.contains(name), "{name}");
        }
    }
}
