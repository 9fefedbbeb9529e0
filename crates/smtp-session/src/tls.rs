//! STARTTLS's certificate from PEM files, reloaded when they change.
//!
//! [`reloading_acceptor`] builds the acceptor once; its certificate comes
//! from [`ReloadingCert`], which looks at the two files at most once per
//! interval (at a handshake) and loads them again when either changed
//! (modification time, length or inode: a renamed-over file counts). New
//! handshakes get the new certificate; a session already in TLS keeps the
//! one it was opened with, so nothing is dropped. A pair that does not load
//! (half-written, or a key that is not the certificate's) is logged and the
//! previous certificate kept, and is tried again once the files change.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::crypto::ring::{default_provider, sign::any_supported_type};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_rustls::rustls::{self, ServerConfig};

/// How often the production ingest looks at its certificate files.
pub const CERT_CHECK_INTERVAL: Duration = Duration::from_secs(10);

/// A STARTTLS acceptor (TLS 1.2 and 1.3, *ring*) whose certificate is
/// reloaded from `cert` (the chain, leaf first) and `key` when they change,
/// looked at no more often than `check_every`. Fails when the files do not
/// load now.
pub fn reloading_acceptor(
    cert: impl Into<PathBuf>,
    key: impl Into<PathBuf>,
    check_every: Duration,
) -> io::Result<TlsAcceptor> {
    let resolver = ReloadingCert::new(cert.into(), key.into(), check_every)?;
    let config = ServerConfig::builder_with_provider(Arc::new(default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(resolver));
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The certificate of [`reloading_acceptor`].
#[derive(Debug)]
pub struct ReloadingCert {
    cert: PathBuf,
    key: PathBuf,
    check_every: Duration,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    current: Arc<CertifiedKey>,
    /// The files as last loaded (or last found not to load).
    seen: Option<Stamp>,
    checked: Instant,
}

/// What tells a changed file: modification time, length, inode; for both.
type Stamp = [(SystemTime, u64, u64); 2];

impl ReloadingCert {
    /// Loads the pair now; an error when it does not load.
    pub fn new(cert: PathBuf, key: PathBuf, check_every: Duration) -> io::Result<Self> {
        let seen = stamp(&cert, &key).ok();
        let current = Arc::new(load(&cert, &key)?);
        Ok(Self {
            cert,
            key,
            check_every,
            state: Mutex::new(State {
                current,
                seen,
                checked: Instant::now(),
            }),
        })
    }

    /// The certificate for a new handshake, reloaded first when due and
    /// the files changed.
    pub fn current(&self) -> Arc<CertifiedKey> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.checked.elapsed() >= self.check_every {
            state.checked = Instant::now();
            match stamp(&self.cert, &self.key) {
                Ok(now) if Some(now) != state.seen => {
                    state.seen = Some(now);
                    match load(&self.cert, &self.key) {
                        Ok(loaded) => {
                            state.current = Arc::new(loaded);
                            tracing::info!("smtp tls certificate reloaded");
                        }
                        Err(error) => tracing::warn!(
                            %error,
                            "smtp tls certificate files changed but do not load; keeping the previous certificate"
                        ),
                    }
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(
                    kind = ?error.kind(),
                    "smtp tls certificate files unreadable; keeping the previous certificate"
                ),
            }
        }
        Arc::clone(&state.current)
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

fn stamp(cert: &Path, key: &Path) -> io::Result<Stamp> {
    let one = |path: &Path| -> io::Result<(SystemTime, u64, u64)> {
        let meta = std::fs::metadata(path)?;
        Ok((meta.modified()?, meta.len(), meta.ino()))
    };
    Ok([one(cert)?, one(key)?])
}

fn load(cert: &Path, key: &Path) -> io::Result<CertifiedKey> {
    let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|error| invalid(format!("{}: {error}", cert.display())))?;
    if chain.is_empty() {
        return Err(invalid(format!("{}: no certificate", cert.display())));
    }
    let key_der = PrivateKeyDer::from_pem_file(key)
        .map_err(|error| invalid(format!("{}: {error}", key.display())))?;
    let signing = any_supported_type(&key_der)
        .map_err(|error| invalid(format!("{}: {error}", key.display())))?;
    let certified = CertifiedKey::new(chain, signing);
    match certified.keys_match() {
        Ok(()) => Ok(certified),
        Err(rustls::Error::InconsistentKeys(_)) => Err(invalid(format!(
            "{} is not the key of {}",
            key.display(),
            cert.display()
        ))),
        // The key type cannot tell (no public key to compare): let it be.
        Err(_) => Ok(certified),
    }
}
