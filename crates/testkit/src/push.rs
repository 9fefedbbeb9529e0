//! Stand-ins for the push providers, on loopback with a test CA: APNs
//! (HTTP/2, what Apple requires) and FCM (HTTP/1.1: the OAuth 2.0 token
//! endpoint and `messages:send`). Each records what it received and answers
//! what the test chose, so tests check the real requests: JWTs, headers,
//! payloads, and the sender's reaction to each answer.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The FCM test service account's RSA key (see `data/README.md`).
pub const FCM_TEST_KEY: &str = include_str!("../data/fcm-test-key.pem");
pub const FCM_TEST_PUBLIC_KEY: &str = include_str!("../data/fcm-test-key.pub.pem");

/// One request a stand-in received.
#[derive(Clone, Debug)]
pub struct PushRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl PushRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A CA and a certificate for `127.0.0.1` signed by it.
pub struct TestCa {
    pub ca_pem: String,
    /// The `127.0.0.1` certificate and its private key (PKCS#8), as PEM.
    pub cert_pem: String,
    pub key_pem: String,
    acceptor_parts: (Vec<u8>, Vec<u8>),
}

impl TestCa {
    pub fn new() -> TestCa {
        let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "Sealpost push test CA");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&leaf_key, &ca)
            .unwrap();
        TestCa {
            ca_pem: ca.pem(),
            cert_pem: leaf.pem(),
            key_pem: leaf_key.serialize_pem(),
            acceptor_parts: (leaf.der().to_vec(), leaf_key.serialize_der()),
        }
    }

    fn acceptor(&self, alpn: &[&[u8]]) -> TlsAcceptor {
        let mut config = ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(self.acceptor_parts.0.clone())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.acceptor_parts.1.clone())),
            )
            .unwrap();
        config.alpn_protocols = alpn.iter().map(|proto| proto.to_vec()).collect();
        TlsAcceptor::from(Arc::new(config))
    }
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

/// Answers to give, in order; when none is queued, 200 with an empty body.
#[derive(Clone, Default)]
struct Answers(Arc<Mutex<VecDeque<(u16, String)>>>);

impl Answers {
    fn next(&self) -> (u16, String) {
        self.0
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or((200, String::new()))
    }
}

/// APNs over HTTP/2: records each push and answers the queued answers.
pub struct ApnsStandIn {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<PushRequest>>>,
    answers: Answers,
}

impl ApnsStandIn {
    pub async fn start(ca: &TestCa) -> ApnsStandIn {
        let acceptor = ca.acceptor(&[b"h2"]);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let answers = Answers::default();
        let (log, replies) = (received.clone(), answers.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (acceptor, log, replies) = (acceptor.clone(), log.clone(), replies.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let Ok(mut connection) = h2::server::handshake(tls).await else {
                        return;
                    };
                    while let Some(Ok((request, respond))) = connection.accept().await {
                        let (log, replies) = (log.clone(), replies.clone());
                        tokio::spawn(serve_h2(request, respond, log, replies));
                    }
                });
            }
        });
        ApnsStandIn {
            addr,
            received,
            answers,
        }
    }

    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// Queues an answer: a status and APNs's `{"reason": ...}` when given.
    pub fn answer(&self, status: u16, reason: Option<&str>) {
        let body = reason
            .map(|reason| serde_json::json!({ "reason": reason }).to_string())
            .unwrap_or_default();
        self.answers.0.lock().unwrap().push_back((status, body));
    }

    pub fn requests(&self) -> Vec<PushRequest> {
        self.received.lock().unwrap().clone()
    }
}

async fn serve_h2(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<bytes::Bytes>,
    log: Arc<Mutex<Vec<PushRequest>>>,
    replies: Answers,
) {
    let (parts, mut body) = request.into_parts();
    let mut bytes = Vec::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                value.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    log.lock().unwrap().push(PushRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        headers,
        body: bytes,
    });
    let (status, text) = replies.next();
    let response = http::Response::builder()
        .status(status)
        .header("apns-id", "00000000-0000-0000-0000-000000000000")
        .body(())
        .unwrap();
    let Ok(mut stream) = respond.send_response(response, text.is_empty()) else {
        return;
    };
    if !text.is_empty() {
        let _ = stream.send_data(bytes::Bytes::from(text), true);
    }
}

/// FCM over HTTP/1.1: `POST /token` (the OAuth 2.0 token endpoint, handing
/// out `test-access-N` valid for an hour) and
/// `POST /v1/projects/<project>/messages:send` (answering the queued answers).
pub struct FcmStandIn {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<PushRequest>>>,
    answers: Answers,
}

impl FcmStandIn {
    pub async fn start(ca: &TestCa) -> FcmStandIn {
        let acceptor = ca.acceptor(&[b"http/1.1"]);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let answers = Answers::default();
        let (log, replies) = (received.clone(), answers.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (acceptor, log, replies) = (acceptor.clone(), log.clone(), replies.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let mut reader = BufReader::new(tls);
                    while let Some(request) = read_request(&mut reader).await {
                        let (status, body) = if request.path == "/token" {
                            let issued = log
                                .lock()
                                .unwrap()
                                .iter()
                                .filter(|r: &&PushRequest| r.path == "/token")
                                .count();
                            let token = serde_json::json!({
                                "access_token": format!("test-access-{}", issued + 1),
                                "expires_in": 3600,
                                "token_type": "Bearer",
                            });
                            (200, token.to_string())
                        } else {
                            replies.next()
                        };
                        log.lock().unwrap().push(request);
                        let reply = format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if reader.get_mut().write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        FcmStandIn {
            addr,
            received,
            answers,
        }
    }

    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    pub fn token_url(&self) -> String {
        format!("https://{}/token", self.addr)
    }

    /// Queues an answer to `messages:send`: a status and, when given, FCM's
    /// error body with that `errorCode`.
    pub fn answer(&self, status: u16, error_code: Option<&str>) {
        let body = error_code
            .map(|code| {
                serde_json::json!({ "error": {
                    "code": status,
                    "message": "stand-in error",
                    "status": "ERROR",
                    "details": [{
                        "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
                        "errorCode": code,
                    }],
                }})
                .to_string()
            })
            .unwrap_or_else(|| "{}".to_owned());
        self.answers.0.lock().unwrap().push_back((status, body));
    }

    /// `messages:send` requests.
    pub fn sends(&self) -> Vec<PushRequest> {
        self.requests_to(|path| path.ends_with("/messages:send"))
    }

    /// Token endpoint requests.
    pub fn token_requests(&self) -> Vec<PushRequest> {
        self.requests_to(|path| path == "/token")
    }

    fn requests_to(&self, which: impl Fn(&str) -> bool) -> Vec<PushRequest> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|request| which(&request.path))
            .cloned()
            .collect()
    }
}

async fn read_request<S: tokio::io::AsyncRead + Unpin>(
    reader: &mut BufReader<S>,
) -> Option<PushRequest> {
    let request = crate::receiver::read_http_request(reader).await?;
    Some(PushRequest {
        method: request.method,
        path: request.path,
        headers: request.headers,
        body: request.body,
    })
}
