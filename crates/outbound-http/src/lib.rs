//! Outbound HTTPS, set up once for every adapter that calls out (webhook
//! deliveries, payment providers, and push and mail relays to come):
//!
//! - TLS: rustls with the *ring* provider, given to each client explicitly
//!   (no process-wide default is needed); the Mozilla roots compiled in
//!   (`webpki-root-certs`, so it works the same in a container without
//!   system certificates) plus optional extra roots from a PEM file
//!   ([`tls_config`]). ALPN offers HTTP/2 and HTTP/1.1.
//! - The client ([`client_builder`]): no redirects followed, no `Referer`,
//!   no proxy from the environment, a total and a connect limit. Adapters add
//!   what is theirs (a resolver, a `User-Agent`, https only) and build.
//! - Requests and answers: [`header_map`] checks `(name, value)` pairs and
//!   marks `Authorization` sensitive; [`read_capped`] reads a body up to a
//!   limit and no further; [`error_text`] and [`one_line`] make the short
//!   texts kept in errors and logs.

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::redirect::Policy;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// Why the TLS configuration could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The extra roots are not PEM, or hold no certificate rustls accepts.
    #[error("extra root certificates: {0}")]
    ExtraRoots(String),
    #[error(transparent)]
    Rustls(#[from] rustls::Error),
}

/// The client TLS configuration: *ring*, the Mozilla roots and the
/// certificates of `extra_root_pem` (at least one when given).
pub fn tls_config(extra_root_pem: Option<&[u8]>) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned());
    if let Some(pem) = extra_root_pem {
        let certs = parse_pem_certs(pem).map_err(TlsError::ExtraRoots)?;
        if certs.is_empty() {
            return Err(TlsError::ExtraRoots("no PEM certificate".to_owned()));
        }
        for cert in certs {
            roots
                .add(cert)
                .map_err(|error| TlsError::ExtraRoots(error.to_string()))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tls)
}

/// The certificates of a PEM text (other sections are skipped), for
/// checking an extra-roots file when configuration is read.
pub fn parse_pem_certs(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("invalid PEM: {error}"))
}

/// A client builder with [`tls_config`], no redirects (a 3xx is returned
/// as it is and its target never contacted), no `Referer`, no proxy from
/// the environment, `timeout` for a whole request and `connect_timeout` for
/// the TCP connect.
pub fn client_builder(
    extra_root_pem: Option<&[u8]>,
    timeout: Duration,
    connect_timeout: Duration,
) -> Result<reqwest::ClientBuilder, TlsError> {
    Ok(reqwest::Client::builder()
        .tls_backend_preconfigured(tls_config(extra_root_pem)?)
        .redirect(Policy::none())
        .referer(false)
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(connect_timeout))
}

/// The request headers, in order (a name may repeat). `Authorization` is
/// marked sensitive. The error says which name or value is not valid.
pub fn header_map<N: AsRef<str>, V: AsRef<str>>(headers: &[(N, V)]) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let name = name.as_ref();
        let header_name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("invalid request header name {name:?}"))?;
        let mut header_value = HeaderValue::from_str(value.as_ref())
            .map_err(|_| format!("invalid value of request header {name}"))?;
        if header_name == reqwest::header::AUTHORIZATION {
            header_value.set_sensitive(true);
        }
        map.append(header_name, header_value);
    }
    Ok(map)
}

/// A body read that failed part-way: what was read, and why it stopped.
#[derive(Debug)]
pub struct PartialBody {
    pub read: Vec<u8>,
    pub error: reqwest::Error,
}

/// Up to `max_bytes` of the body, streamed; the rest is never read.
pub async fn read_capped(
    mut response: reqwest::Response,
    max_bytes: usize,
) -> Result<Vec<u8>, PartialBody> {
    let mut body = Vec::new();
    while body.len() < max_bytes {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let take = chunk.len().min(max_bytes - body.len());
                body.extend_from_slice(chunk.get(..take).unwrap_or_default());
            }
            Ok(None) => break,
            Err(error) => return Err(PartialBody { read: body, error }),
        }
    }
    Ok(body)
}

/// At most `max_chars` characters of `text` on one line: runs of
/// whitespace and control characters become one space.
#[must_use]
pub fn one_line(text: &str, max_chars: usize) -> String {
    text.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(max_chars)
        .collect()
}

/// What failed, as one short line: `head`, then the text of `cause` and of
/// each of its sources that no earlier part already says, joined by `": "`,
/// cut to `max_chars` characters ([`one_line`]).
#[must_use]
pub fn error_text(
    head: &str,
    cause: Option<&(dyn StdError + 'static)>,
    max_chars: usize,
) -> String {
    let mut parts = vec![head.to_owned()];
    let mut current = cause;
    while let Some(error) = current {
        let text = error.to_string();
        if !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        current = error.source();
    }
    one_line(&parts.join(": "), max_chars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{text}")]
    struct Chain {
        text: &'static str,
        source: Option<Box<Chain>>,
    }

    fn chain(texts: &[&'static str]) -> Option<Box<Chain>> {
        texts
            .iter()
            .rev()
            .fold(None, |source, text| Some(Box::new(Chain { text, source })))
    }

    #[test]
    fn error_text_names_each_cause_once() {
        let causes = chain(&[
            "client error (Connect)",
            "tcp connect error: Connection refused (os error 111)",
            "Connection refused (os error 111)",
        ]);
        let cause = causes.as_deref().map(|c| c as &(dyn StdError + 'static));
        assert_eq!(
            error_text("could not connect", cause, 300),
            "could not connect: client error (Connect): tcp connect error: Connection refused (os error 111)"
        );
        assert_eq!(error_text("request failed", None, 300), "request failed");
        assert_eq!(error_text("request failed", cause, 9), "request f");
        let multiline = chain(&["line one\n  line two"]);
        let cause = multiline.as_deref().map(|c| c as &(dyn StdError + 'static));
        assert_eq!(error_text("x", cause, 300), "x: line one line two");
    }

    #[test]
    fn one_line_is_short_and_single() {
        assert_eq!(one_line("", 200), "");
        assert_eq!(
            one_line("  oops\r\n\tnot\x00 found  ", 200),
            "oops not found"
        );
        let long = "é".repeat(600);
        assert_eq!(one_line(&long, 200).chars().count(), 200);
    }

    #[test]
    fn headers_are_checked_and_credentials_hidden() {
        let map = header_map(&[
            ("User-Agent", "Service-Webhooks/1".to_owned()),
            ("Authorization", "Bearer sk_test".to_owned()),
            ("X-Twice", "1".to_owned()),
            ("X-Twice", "2".to_owned()),
        ])
        .unwrap();
        assert_eq!(map.get("user-agent").unwrap(), "Service-Webhooks/1");
        assert!(map.get("authorization").unwrap().is_sensitive());
        assert!(!map.get("user-agent").unwrap().is_sensitive());
        assert_eq!(map.get_all("x-twice").iter().count(), 2);
        assert_eq!(
            header_map(&[("Bad Name", "x")]).unwrap_err(),
            "invalid request header name \"Bad Name\""
        );
        assert_eq!(
            header_map(&[("X-Ok", "line\nbreak")]).unwrap_err(),
            "invalid value of request header X-Ok"
        );
    }

    #[test]
    fn extra_roots_must_be_certificates() {
        assert!(tls_config(None).is_ok());
        assert!(matches!(
            tls_config(Some(b"nothing here")),
            Err(TlsError::ExtraRoots(message)) if message == "no PEM certificate"
        ));
        assert!(matches!(
            tls_config(Some(
                b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n"
            )),
            Err(TlsError::ExtraRoots(message)) if message.starts_with("invalid PEM")
        ));
        let ca = rcgen::generate_simple_self_signed(vec!["ca.test".to_owned()]).unwrap();
        let tls = tls_config(Some(ca.cert.pem().as_bytes())).unwrap();
        assert_eq!(tls.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);
    }
}
