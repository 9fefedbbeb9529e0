//! The one way the service opens a PostgreSQL connection: the pool (through
//! diesel-async's `ManagerConfig::custom_setup`), migrations, database
//! creation and the LISTEN connection all call [`connect`].
//!
//! TLS goes through rustls with *ring*, honouring libpq's `sslmode` and
//! `sslrootcert` in the database URL:
//!
//! | `sslmode` | TLS | certificate checked |
//! |---|---|---|
//! | `disable` | never | - |
//! | `prefer` (the default) | when the server offers it | no, unless `sslrootcert` is given: then as `verify-ca` |
//! | `require` | always | no, unless `sslrootcert` is given: then as `verify-ca` (as libpq does) |
//! | `verify-ca` | always | chains to a root; any host name |
//! | `verify-full` | always | chains to a root and names the host |
//!
//! Roots: the PEM file named by `sslrootcert`, or with `sslrootcert=system`
//! (and for `verify-*` without `sslrootcert`) the Mozilla roots compiled in.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::task::{Context, Poll};

use diesel::ConnectionError;
use diesel_async::AsyncPgConnection;
use futures_util::future::BoxFuture;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::SslMode as WireSslMode;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

/// libpq's `sslmode` values (`allow` is not offered: it only ever falls
/// back from plain to TLS, which no deployment of ours wants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(text: &str) -> Result<Self, String> {
        Ok(match text {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode `{other}` is not one of disable, prefer, require, verify-ca, verify-full"
                ));
            }
        })
    }
}

/// A parsed database URL with its TLS set-up, made once and cheap to clone:
/// the pool keeps one and opens every connection through it.
#[derive(Clone)]
pub struct PgConnector {
    config: tokio_postgres::Config,
    mode: SslMode,
    tls: Option<RustlsConnect>,
    shown: String,
}

impl fmt::Debug for PgConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgConnector")
            .field("url", &self.shown)
            .field("sslmode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl PgConnector {
    /// Reads `database_url` (`postgres://` URL with libpq's query options),
    /// `sslmode` and `sslrootcert` included; reads the root file now, so a
    /// missing or unreadable one is reported at start-up.
    pub fn new(database_url: &str) -> Result<Self, ConnectionError> {
        let invalid = |why: String| ConnectionError::InvalidConnectionUrl(why);
        let mut url = url::Url::parse(database_url.trim())
            .map_err(|error| invalid(format!("the database URL is not a URL: {error}")))?;
        let mut mode = None;
        let mut root = None;
        let mut rest = Vec::new();
        for (key, value) in url.query_pairs() {
            match &*key {
                "sslmode" => mode = Some(SslMode::parse(&value).map_err(invalid)?),
                "sslrootcert" => root = Some(value.into_owned()),
                _ => rest.push((key.into_owned(), value.into_owned())),
            }
        }
        if rest.is_empty() {
            url.set_query(None);
        } else {
            url.query_pairs_mut().clear().extend_pairs(rest);
        }
        let shown = {
            let mut shown = url.clone();
            if shown.password().is_some() {
                let _ = shown.set_password(Some("***"));
            }
            shown.set_query(None);
            shown.to_string()
        };
        let mut config = tokio_postgres::Config::from_str(url.as_str())
            .map_err(|error| invalid(format!("the database URL: {error}")))?;
        let mode = mode.unwrap_or(SslMode::Prefer);
        let verify = match mode {
            SslMode::Disable => None,
            // With a root file `prefer` and `require` check the chain (libpq
            // does so for `require`).
            SslMode::Prefer | SslMode::Require if root.is_none() => Some(Verify::Nothing),
            SslMode::Prefer | SslMode::Require | SslMode::VerifyCa => Some(Verify::Chain),
            SslMode::VerifyFull => Some(Verify::ChainAndName),
        };
        config.ssl_mode(match mode {
            SslMode::Disable => WireSslMode::Disable,
            SslMode::Prefer => WireSslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => WireSslMode::Require,
        });
        let tls = match verify {
            None => None,
            Some(verify) => Some(RustlsConnect {
                config: Arc::new(client_config(verify, root.as_deref())?),
            }),
        };
        Ok(Self {
            config,
            mode,
            tls,
            shown,
        })
    }

    /// The `sslmode` in force (`prefer` when the URL names none).
    pub fn ssl_mode(&self) -> SslMode {
        self.mode
    }

    /// Why the connection to the database can be read or altered on the
    /// way, when it can: `sslmode` below `verify-full` to a host that is not
    /// this machine. `None` for `verify-full`, a Unix socket, `localhost`
    /// or a loopback address. Names the host and the mode, never the
    /// password.
    pub fn weak_tls(&self) -> Option<WeakTls> {
        if self.mode == SslMode::VerifyFull {
            return None;
        }
        // `hostaddr`, when given, is where the connection goes.
        let addresses = self.config.get_hostaddrs();
        let remote = if addresses.is_empty() {
            self.config.get_hosts().iter().find_map(|host| match host {
                tokio_postgres::config::Host::Tcp(name) => {
                    (!is_this_machine(name)).then(|| name.clone())
                }
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(_) => None,
            })
        } else {
            addresses
                .iter()
                .find(|address| !address.is_loopback())
                .map(ToString::to_string)
        };
        remote.map(|host| WeakTls {
            host,
            mode: self.mode,
        })
    }

    /// Opens one connection (TLS as configured); errors name the server
    /// (password masked) and the TLS failure, if that is what failed.
    pub async fn connect(&self) -> Result<AsyncPgConnection, ConnectionError> {
        let failed = |error: tokio_postgres::Error| {
            let mut text = format!("cannot connect to {}: {error}", self.shown);
            let mut cause = std::error::Error::source(&error);
            while let Some(inner) = cause {
                text.push_str(&format!(": {inner}"));
                cause = inner.source();
            }
            if text.contains("not valid for name") {
                text.push_str(
                    " (sslmode=verify-full: connect by a name the certificate holds, \
                     or use verify-ca to check the issuer alone)",
                );
            } else if text.contains("invalid peer certificate") {
                text.push_str(" (is sslrootcert the CA that issued the server's certificate?)");
            }
            ConnectionError::BadConnection(text)
        };
        match &self.tls {
            None => {
                let (client, connection) = self
                    .config
                    .connect(tokio_postgres::NoTls)
                    .await
                    .map_err(failed)?;
                AsyncPgConnection::try_from_client_and_connection(client, connection).await
            }
            Some(tls) => {
                let (client, connection) =
                    self.config.connect(tls.clone()).await.map_err(failed)?;
                AsyncPgConnection::try_from_client_and_connection(client, connection).await
            }
        }
    }
}

/// Opens one connection to `database_url` (see [`PgConnector`]).
pub async fn connect(database_url: &str) -> Result<AsyncPgConnection, ConnectionError> {
    PgConnector::new(database_url)?.connect().await
}

/// `localhost` (and names under it) or a loopback address.
fn is_this_machine(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// A database reached over the network without `sslmode=verify-full`
/// ([`PgConnector::weak_tls`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeakTls {
    /// The first host that is not this machine, as the URL names it.
    pub host: String,
    pub mode: SslMode,
}

#[derive(Clone, Copy)]
enum Verify {
    Nothing,
    Chain,
    ChainAndName,
}

fn client_config(
    verify: Verify,
    root: Option<&str>,
) -> Result<rustls::ClientConfig, ConnectionError> {
    let invalid = |why: String| ConnectionError::InvalidConnectionUrl(why);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|error| invalid(format!("TLS set-up: {error}")))?;
    let verifier: Arc<dyn ServerCertVerifier> = match verify {
        Verify::Nothing => Arc::new(NoCheck(provider.signature_verification_algorithms)),
        Verify::Chain | Verify::ChainAndName => {
            let roots = Arc::new(root_store(root)?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|error| invalid(format!("TLS roots: {error}")))?;
            match verify {
                Verify::ChainAndName => webpki,
                _ => Arc::new(AnyName(webpki)),
            }
        }
    };
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

fn root_store(root: Option<&str>) -> Result<rustls::RootCertStore, ConnectionError> {
    let mut roots = rustls::RootCertStore::empty();
    match root {
        None | Some("system") => {
            roots.add_parsable_certificates(
                webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned(),
            );
        }
        Some(path) => {
            let invalid = |why: String| ConnectionError::InvalidConnectionUrl(why);
            let pem = std::fs::read(path).map_err(|error| {
                invalid(format!("sslrootcert `{path}` cannot be read: {error}"))
            })?;
            let certs = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| invalid(format!("sslrootcert `{path}` is not PEM: {error}")))?;
            if certs.is_empty() {
                return Err(invalid(format!(
                    "sslrootcert `{path}` holds no certificate"
                )));
            }
            for cert in certs {
                roots.add(cert).map_err(|error| {
                    invalid(format!(
                        "sslrootcert `{path}` holds a bad certificate: {error}"
                    ))
                })?;
            }
        }
    }
    Ok(roots)
}

/// `verify-ca`: the chain is checked as for `verify-full`; only a name
/// mismatch, reported after the chain passed, is let through.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer`/`require` without a root: encrypted, the certificate taken as
/// it comes (libpq's meaning); the handshake's signatures are still checked.
#[derive(Debug)]
struct NoCheck(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for NoCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// tokio-postgres's TLS hook over tokio-rustls.
#[derive(Clone)]
struct RustlsConnect {
    config: Arc<rustls::ClientConfig>,
}

impl<S> MakeTlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsHandshake;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsHandshake, io::Error> {
        let name = ServerName::try_from(domain)
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("`{domain}` is not a host name or IP address TLS can check"),
                )
            })?
            .to_owned();
        Ok(RustlsHandshake {
            config: self.config.clone(),
            name,
        })
    }
}

struct RustlsHandshake {
    config: Arc<rustls::ClientConfig>,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for RustlsHandshake
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = BoxFuture<'static, io::Result<RustlsStream<S>>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            tokio_rustls::TlsConnector::from(self.config)
                .connect(self.name, stream)
                .await
                .map(|stream| RustlsStream(Box::new(stream)))
        })
    }
}

struct RustlsStream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S> tokio_postgres::tls::TlsStream for RustlsStream<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    /// No channel binding: SCRAM falls back to plain SCRAM (the server
    /// still proves it knows the password), as `channel_binding=prefer`.
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_are_read_and_removed() {
        let plain = PgConnector::new("postgres://u:pw@db:5433/app?sslmode=disable").unwrap();
        assert_eq!(plain.ssl_mode(), SslMode::Disable);
        assert!(plain.tls.is_none());
        assert!(!format!("{plain:?}").contains("pw"));
        let default = PgConnector::new("postgres://u@db/app?application_name=x").unwrap();
        assert_eq!(default.ssl_mode(), SslMode::Prefer);
        assert_eq!(default.config.get_application_name(), Some("x"));
        let full = PgConnector::new("postgres://u@db/app?sslmode=verify-full").unwrap();
        assert_eq!(full.ssl_mode(), SslMode::VerifyFull);
        assert_eq!(full.config.get_ssl_mode(), WireSslMode::Require);
        let error = PgConnector::new("postgres://u@db/app?sslmode=allow").unwrap_err();
        assert!(error.to_string().contains("sslmode `allow`"), "{error}");
        let error = PgConnector::new(
            "postgres://u@db/app?sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem",
        )
        .unwrap_err();
        assert!(error.to_string().contains("/nonexistent/ca.pem"), "{error}");
    }

    #[test]
    fn tls_below_verify_full_to_another_host_is_reported() {
        let weak = |url: &str| PgConnector::new(url).unwrap().weak_tls();
        // The default (`prefer`) and every mode below verify-full, off this machine.
        for (url, mode) in [
            ("postgres://u:secret@db.internal/app", SslMode::Prefer),
            (
                "postgres://u@db.internal/app?sslmode=disable",
                SslMode::Disable,
            ),
            (
                "postgres://u@db.internal/app?sslmode=require",
                SslMode::Require,
            ),
            (
                "postgres://u@10.0.0.7:5433/app?sslmode=verify-ca",
                SslMode::VerifyCa,
            ),
        ] {
            let found = weak(url).unwrap_or_else(|| panic!("no warning for {url}"));
            assert_eq!(found.mode, mode, "{url}");
            assert!(!format!("{found:?}").contains("secret"));
        }
        assert_eq!(
            weak("postgres://u:secret@db.internal/app").unwrap().host,
            "db.internal"
        );
        // One remote host among several is enough.
        assert_eq!(
            weak("postgres://u@127.0.0.1,db2.internal/app")
                .unwrap()
                .host,
            "db2.internal"
        );
        // verify-full, or a database on this machine: nothing to say.
        for url in [
            "postgres://u@db.internal/app?sslmode=verify-full",
            "postgres://u@127.0.0.1:5432/app",
            "postgres://u@localhost/app?sslmode=disable",
            "postgres://u@[::1]/app?sslmode=require",
            "postgres://u@%2Fvar%2Frun%2Fpostgresql/app",
        ] {
            assert_eq!(weak(url), None, "{url}");
        }
    }
}
