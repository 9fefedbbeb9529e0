//! Name resolution with the address rules applied at connect time.
//!
//! The HTTP client asks this resolver for every connection it opens, so the
//! addresses checked are exactly the ones connected to (no gap between a
//! check and a second lookup).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::address::{AddressClass, classify};

/// Why a name gave no address a delivery may connect to. Shown as the
/// attempt's error.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// Every address the name resolved to is refused.
    #[error("address not allowed: {}", list_refused(.refused))]
    NotAllowed {
        host: String,
        refused: Vec<(IpAddr, AddressClass)>,
    },
    #[error("no address found for {host}")]
    NoAddress { host: String },
    #[error("could not resolve {host}: {source}")]
    Lookup {
        host: String,
        source: std::io::Error,
    },
    #[error("address not allowed: {host} (the URL names an IP address, not a host)")]
    IpLiteral { host: String },
}

fn list_refused(refused: &[(IpAddr, AddressClass)]) -> String {
    refused
        .iter()
        .map(|(ip, class)| format!("{ip} ({class})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Keeps the allowed addresses of what `host` resolved to; an error if none
/// is left.
pub fn allowed_addresses(
    host: &str,
    resolved: impl IntoIterator<Item = SocketAddr>,
) -> Result<Vec<SocketAddr>, ResolveError> {
    let mut allowed = Vec::new();
    let mut refused: Vec<(IpAddr, AddressClass)> = Vec::new();
    for addr in resolved {
        let class = classify(addr.ip());
        if class.is_allowed() {
            if !allowed.contains(&addr) {
                allowed.push(addr);
            }
        } else if !refused.iter().any(|(ip, _)| *ip == addr.ip()) {
            refused.push((addr.ip(), class));
        }
    }
    if !allowed.is_empty() {
        return Ok(allowed);
    }
    if refused.is_empty() {
        return Err(ResolveError::NoAddress {
            host: host.to_owned(),
        });
    }
    Err(ResolveError::NotAllowed {
        host: host.to_owned(),
        refused,
    })
}

/// A host name compared the way pins are matched: ASCII lowercase, without
/// a trailing dot.
pub(crate) fn normalise_host(host: &str) -> String {
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

/// The client's resolver: pinned hosts get exactly their pinned addresses;
/// every other name is looked up and filtered by [`allowed_addresses`].
#[derive(Clone, Debug)]
pub(crate) struct GuardedResolver {
    pinned: Arc<Vec<(String, SocketAddr)>>,
}

impl GuardedResolver {
    pub(crate) fn new(pinned: &[(String, SocketAddr)]) -> Self {
        Self {
            pinned: Arc::new(
                pinned
                    .iter()
                    .map(|(host, addr)| (normalise_host(host), *addr))
                    .collect(),
            ),
        }
    }

    pub(crate) fn pinned(&self, host: &str) -> Vec<SocketAddr> {
        let host = normalise_host(host);
        self.pinned
            .iter()
            .filter(|(pinned, _)| *pinned == host)
            .map(|(_, addr)| *addr)
            .collect()
    }

    pub(crate) async fn lookup(&self, name: &str) -> Result<Vec<SocketAddr>, ResolveError> {
        let pinned = self.pinned(name);
        if !pinned.is_empty() {
            return Ok(pinned);
        }
        let host = normalise_host(name);
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if bare.parse::<IpAddr>().is_ok() {
            return Err(ResolveError::IpLiteral { host });
        }
        // Port 0: the client puts the URL's port (or 443) in its place.
        let resolved = tokio::net::lookup_host((host.as_str(), 0))
            .await
            .map_err(|source| ResolveError::Lookup {
                host: host.clone(),
                source,
            })?;
        allowed_addresses(&host, resolved)
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let resolver = self.clone();
        Box::pin(async move {
            let addrs = resolver.lookup(name.as_str()).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn keeps_only_public_addresses() {
        let kept = allowed_addresses(
            "example.test",
            [
                addr("10.0.0.1:0"),
                addr("93.184.215.14:0"),
                addr("[::1]:0"),
                addr("[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:0"),
                addr("93.184.215.14:0"),
            ],
        )
        .unwrap();
        assert_eq!(
            kept,
            vec![
                addr("93.184.215.14:0"),
                addr("[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:0")
            ]
        );
    }

    #[test]
    fn refuses_when_nothing_allowed_is_left() {
        let error = allowed_addresses(
            "localhost",
            [
                addr("127.0.0.1:0"),
                addr("[::1]:0"),
                addr("127.0.0.1:0"),
                addr("[::ffff:192.168.0.1]:0"),
            ],
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "address not allowed: 127.0.0.1 (loopback), ::1 (loopback), ::ffff:192.168.0.1 (private)"
        );
        let error = allowed_addresses("empty.test", []).unwrap_err();
        assert_eq!(error.to_string(), "no address found for empty.test");
    }

    #[tokio::test]
    async fn pinned_hosts_get_their_pin_and_others_are_checked() {
        let resolver = GuardedResolver::new(&[
            ("Hooks.Test".to_owned(), addr("127.0.0.1:4443")),
            ("two.test".to_owned(), addr("127.0.0.1:1")),
            ("two.test".to_owned(), addr("[::1]:2")),
        ]);
        assert_eq!(
            resolver.lookup("hooks.test").await.unwrap(),
            vec![addr("127.0.0.1:4443")]
        );
        assert_eq!(
            resolver.lookup("HOOKS.test.").await.unwrap(),
            vec![addr("127.0.0.1:4443")]
        );
        assert_eq!(resolver.lookup("two.test").await.unwrap().len(), 2);

        let error = resolver.lookup("localhost").await.unwrap_err();
        assert!(matches!(error, ResolveError::NotAllowed { .. }), "{error}");
        assert!(error.to_string().contains("(loopback)"), "{error}");

        let error = resolver.lookup("127.0.0.1").await.unwrap_err();
        assert!(matches!(error, ResolveError::IpLiteral { .. }), "{error}");
        let error = resolver.lookup("[::1]").await.unwrap_err();
        assert!(matches!(error, ResolveError::IpLiteral { .. }), "{error}");
    }
}
