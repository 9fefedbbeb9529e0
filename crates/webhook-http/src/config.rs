//! docs/configuration.md: `SEALPOST_WEBHOOK_RESOLVE` (`host=ip:port`
//! pairs, comma separated) pins a host name to an address, and
//! `SEALPOST_WEBHOOK_CA_FILE` adds a trusted root (PEM).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use sealpost_outbound_http::parse_pem_certs;

/// The environment variable of [`WebhookHttpConfig::pinned`].
pub const RESOLVE_ENV: &str = "SEALPOST_WEBHOOK_RESOLVE";
/// The environment variable of [`WebhookHttpConfig::extra_root_pem`].
pub const CA_FILE_ENV: &str = "SEALPOST_WEBHOOK_CA_FILE";

/// How deliveries connect. The default (nothing pinned, public roots only)
/// is production's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WebhookHttpConfig {
    /// Host names that resolve to exactly these addresses, loopback and
    /// private ones included (tests). A host may appear more than once.
    /// The port is used when the URL names none.
    pub pinned: Vec<(String, SocketAddr)>,
    /// PEM certificates trusted as roots besides the public ones.
    pub extra_root_pem: Option<Vec<u8>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{RESOLVE_ENV}: {entry:?} is not host=ip:port")]
    MalformedPin { entry: String },
    #[error("{RESOLVE_ENV}: {entry:?}: {address:?} is not an ip:port address")]
    BadPinAddress { entry: String, address: String },
    #[error("{CA_FILE_ENV}: cannot read {}: {source}", path.display())]
    CaFileUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{CA_FILE_ENV}: {} holds no PEM certificate", path.display())]
    CaFileEmpty { path: PathBuf },
    #[error("{CA_FILE_ENV}: {}: {message}", path.display())]
    CaFileInvalid { path: PathBuf, message: String },
}

impl WebhookHttpConfig {
    /// Reads [`RESOLVE_ENV`] and [`CA_FILE_ENV`]; unset or empty means none.
    pub fn from_env() -> Result<Self, ConfigError> {
        let resolve = std::env::var(RESOLVE_ENV).ok();
        let ca_file = std::env::var_os(CA_FILE_ENV)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from);
        Self::from_env_values(resolve.as_deref(), ca_file.as_deref())
    }

    /// `resolve`: `host=ip:port` pairs, comma separated (blank entries are
    /// skipped; IPv6 as `[::1]:8443`). `ca_file`: a PEM file with at least
    /// one certificate.
    pub fn from_env_values(
        resolve: Option<&str>,
        ca_file: Option<&Path>,
    ) -> Result<Self, ConfigError> {
        let pinned = match resolve {
            Some(text) => parse_pins(text)?,
            None => Vec::new(),
        };
        let extra_root_pem = match ca_file {
            Some(path) => Some(read_ca_file(path)?),
            None => None,
        };
        Ok(Self {
            pinned,
            extra_root_pem,
        })
    }
}

fn parse_pins(text: &str) -> Result<Vec<(String, SocketAddr)>, ConfigError> {
    let mut pinned = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let malformed = || ConfigError::MalformedPin {
            entry: entry.to_owned(),
        };
        let (host, address) = entry.split_once('=').ok_or_else(malformed)?;
        let host = host.trim();
        let address = address.trim();
        let host_ok = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
        if !host_ok {
            return Err(malformed());
        }
        let addr = address
            .parse::<SocketAddr>()
            .map_err(|_| ConfigError::BadPinAddress {
                entry: entry.to_owned(),
                address: address.to_owned(),
            })?;
        pinned.push((host.to_ascii_lowercase(), addr));
    }
    Ok(pinned)
}

fn read_ca_file(path: &Path) -> Result<Vec<u8>, ConfigError> {
    let pem = std::fs::read(path).map_err(|source| ConfigError::CaFileUnreadable {
        path: path.to_owned(),
        source,
    })?;
    match parse_pem_certs(&pem) {
        Ok(certs) if certs.is_empty() => Err(ConfigError::CaFileEmpty {
            path: path.to_owned(),
        }),
        Ok(_) => Ok(pem),
        Err(message) => Err(ConfigError::CaFileInvalid {
            path: path.to_owned(),
            message,
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    fn pins(text: &str) -> Result<Vec<(String, SocketAddr)>, ConfigError> {
        WebhookHttpConfig::from_env_values(Some(text), None).map(|c| c.pinned)
    }

    fn temp_file(name: &str, contents: &[u8]) -> PathBuf {
        let path = std::env::temp_dir().join(format!(
            "sealpost-webhook-http-{}-{name}",
            std::process::id()
        ));
        std::fs::write(&path, contents).unwrap();
        path
    }

    #[test]
    fn nothing_set_is_the_default() {
        let config = WebhookHttpConfig::from_env_values(None, None).unwrap();
        assert_eq!(config, WebhookHttpConfig::default());
        assert_eq!(pins("").unwrap(), vec![]);
        assert_eq!(pins(" , ,").unwrap(), vec![]);
    }

    #[test]
    fn parses_pins() {
        assert_eq!(
            pins("hooks.test=127.0.0.1:8443").unwrap(),
            vec![("hooks.test".to_owned(), "127.0.0.1:8443".parse().unwrap())]
        );
        assert_eq!(
            pins(" Hooks.Test = 127.0.0.1:8443 ,other-1.test=[::1]:9000,hooks.test=10.0.0.2:443,")
                .unwrap(),
            vec![
                ("hooks.test".to_owned(), "127.0.0.1:8443".parse().unwrap()),
                ("other-1.test".to_owned(), "[::1]:9000".parse().unwrap()),
                ("hooks.test".to_owned(), "10.0.0.2:443".parse().unwrap()),
            ]
        );
    }

    #[test]
    fn refuses_malformed_pins() {
        for text in [
            "hooks.test",
            "=127.0.0.1:1",
            "hooks test=127.0.0.1:1",
            "https://hooks.test=127.0.0.1:1",
        ] {
            assert!(
                matches!(pins(text), Err(ConfigError::MalformedPin { .. })),
                "{text}"
            );
        }
        for text in [
            "hooks.test=127.0.0.1",
            "hooks.test=",
            "hooks.test=localhost:8443",
            "hooks.test=::1:8443",
            "hooks.test=127.0.0.1:99999",
            "ok.test=127.0.0.1:1,hooks.test=nope",
            "hooks.test=127.0.0.1:1;other.test=127.0.0.1:2",
        ] {
            assert!(
                matches!(pins(text), Err(ConfigError::BadPinAddress { .. })),
                "{text}"
            );
        }
        let message = pins("hooks.test").unwrap_err().to_string();
        assert!(
            message.starts_with("SEALPOST_WEBHOOK_RESOLVE:"),
            "{message}"
        );
    }

    #[test]
    fn reads_the_ca_file() {
        let ca = rcgen::generate_simple_self_signed(vec!["ca.test".to_owned()]).unwrap();
        let pem = ca.cert.pem();
        let path = temp_file("good.pem", pem.as_bytes());
        let config = WebhookHttpConfig::from_env_values(None, Some(&path)).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(config.extra_root_pem.as_deref(), Some(pem.as_bytes()));
        assert!(config.pinned.is_empty());
    }

    #[test]
    fn refuses_bad_ca_files() {
        let missing = std::env::temp_dir().join("sealpost-webhook-http-does-not-exist.pem");
        assert!(matches!(
            WebhookHttpConfig::from_env_values(None, Some(&missing)),
            Err(ConfigError::CaFileUnreadable { .. })
        ));

        let path = temp_file("empty.pem", b"not a certificate\n");
        let result = WebhookHttpConfig::from_env_values(None, Some(&path));
        std::fs::remove_file(&path).unwrap();
        assert!(
            matches!(result, Err(ConfigError::CaFileEmpty { .. })),
            "{result:?}"
        );

        let path = temp_file(
            "broken.pem",
            b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
        );
        let result = WebhookHttpConfig::from_env_values(None, Some(&path));
        std::fs::remove_file(&path).unwrap();
        assert!(
            matches!(result, Err(ConfigError::CaFileInvalid { .. })),
            "{result:?}"
        );
    }
}
