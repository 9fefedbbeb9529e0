//! A real HTTPS webhook receiver for tests and benchmarks: a test CA, a
//! certificate for `hooks.test` (and `*.hooks.test`), rustls, and a minimal
//! HTTP/1.1 reader that records each request's headers, raw body and arrival
//! time, and answers a chosen status, or never answers.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

#[derive(Clone, Debug)]
pub struct Received {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: std::time::SystemTime,
}

/// What the receiver answers: a status, or nothing at all (the sender times out).
pub const NEVER_ANSWER: u16 = 0;

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

pub struct Receiver {
    pub addr: SocketAddr,
    /// PEM of the CA that signed the receiver's certificate.
    pub ca_pem: String,
    pub received: Arc<Mutex<Vec<Received>>>,
    status: Arc<Mutex<u16>>,
}

impl Receiver {
    pub async fn start(status: u16) -> Receiver {
        let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "Sealpost test CA");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["hooks.test".to_owned(), "*.hooks.test".to_owned()])
            .unwrap()
            .signed_by(&leaf_key, &ca)
            .unwrap();
        let config = ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(leaf.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
            )
            .unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let status = Arc::new(Mutex::new(status));
        let (log, answer) = (received.clone(), status.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (acceptor, log, answer) = (acceptor.clone(), log.clone(), answer.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let mut reader = BufReader::new(tls);
                    // Keep-alive: requests on one connection until the client closes it.
                    while let Some(request) = read_request(&mut reader).await {
                        log.lock().unwrap().push(request);
                        let code = *answer.lock().unwrap();
                        if code == NEVER_ANSWER {
                            // Hold the connection open past any sender's limit.
                            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
                            return;
                        }
                        let reply = format!("HTTP/1.1 {code} X\r\ncontent-length: 2\r\n\r\nok");
                        if reader.get_mut().write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Receiver {
            addr,
            ca_pem: ca.pem(),
            received,
            status,
        }
    }

    pub fn answer(&self, status: u16) {
        *self.status.lock().unwrap() = status;
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.received.lock().unwrap().len()
    }
}

async fn read_request<S: tokio::io::AsyncRead + Unpin>(
    reader: &mut BufReader<S>,
) -> Option<Received> {
    let request = read_http_request(reader).await?;
    Some(Received {
        headers: request.headers,
        body: request.body,
        at: std::time::SystemTime::now(),
    })
}

/// One HTTP/1.1 request as the stand-ins on loopback see it.
pub(crate) struct HttpRequest {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

/// Reads one request (request line, headers, a `Content-Length` body) from
/// a keep-alive connection; `None` when the peer closed it.
pub(crate) async fn read_http_request<S: tokio::io::AsyncRead + Unpin>(
    reader: &mut BufReader<S>,
) -> Option<HttpRequest> {
    let mut line = String::new();
    if reader.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut words = line.split_whitespace();
    let method = words.next()?.to_owned();
    let path = words.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((key, value)) = trimmed.split_once(':') {
            headers.push((key.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    Some(HttpRequest {
        method,
        path,
        headers,
        body,
    })
}
