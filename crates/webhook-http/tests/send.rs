//! Real HTTPS attempts against loopback receivers: an rcgen test CA issues
//! the receiver's certificate for `hooks.test`, tokio-rustls terminates TLS
//! and a tiny HTTP/1.1 responder reads the request (headers, then the body
//! by Content-Length) and answers as told.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sealpost_kernel::{Timestamp, WebhookId};
use sealpost_webhook_http::{WebhookHttp, WebhookHttpConfig};
use sealpost_webhooks::{AttemptOutcome, Delivery, WebhookEvent};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};
use tokio_rustls::TlsAcceptor;

/// Upper bound of any single test step.
const BOUND: Duration = Duration::from_secs(20);

struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl TestCa {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Self { issuer }
    }

    fn pem(&self) -> Vec<u8> {
        self.issuer.pem().into_bytes()
    }

    /// A server certificate chain and key for `names`.
    fn issue(&self, names: &[&str]) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
                .unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let chain = vec![cert.der().clone(), self.issuer.der().clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        (chain, key)
    }
}

#[derive(Clone)]
enum Answer {
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Reads the request, then never answers.
    Silent,
}

fn status(code: u16) -> Answer {
    Answer::Status {
        code,
        headers: vec![],
        body: String::new(),
    }
}

#[derive(Debug)]
struct Received {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

struct Receiver {
    addr: SocketAddr,
    /// TCP connections accepted, whatever happened next.
    connections: Arc<AtomicUsize>,
    requests: mpsc::UnboundedReceiver<Received>,
}

impl Receiver {
    async fn start(ca: &TestCa, answer: Answer) -> Self {
        let (chain, key) = ca.issue(&["hooks.test", "target.test", "localhost"]);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let (sender, requests) = mpsc::unbounded_channel();
        let counter = connections.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                let sender = sender.clone();
                let answer = answer.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let Some(request) = read_request(&mut tls).await else {
                        return;
                    };
                    let _ = sender.send(request);
                    match answer {
                        Answer::Silent => {
                            tokio::time::sleep(Duration::from_secs(60)).await;
                        }
                        Answer::Status {
                            code,
                            headers,
                            body,
                        } => {
                            let mut response = format!(
                                "HTTP/1.1 {code} Test\r\nContent-Length: {}\r\nConnection: close\r\n",
                                body.len()
                            );
                            for (name, value) in headers {
                                response.push_str(&format!("{name}: {value}\r\n"));
                            }
                            response.push_str("\r\n");
                            response.push_str(&body);
                            let _ = tls.write_all(response.as_bytes()).await;
                            let _ = tls.shutdown().await;
                        }
                    }
                });
            }
        });
        Self {
            addr,
            connections,
            requests,
        }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    async fn next_request(&mut self) -> Received {
        timeout(BOUND, self.requests.recv()).await.unwrap().unwrap()
    }
}

async fn read_request<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> Option<Received> {
    let mut data = Vec::new();
    let mut buf = [0_u8; 4096];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if data.len() > 64 * 1024 {
            return None;
        }
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8(data[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Some(Received {
        request_line,
        headers,
        body,
    })
}

fn pinned_config(ca: &TestCa, pins: &[(&str, SocketAddr)]) -> WebhookHttpConfig {
    WebhookHttpConfig {
        pinned: pins
            .iter()
            .map(|(host, addr)| ((*host).to_owned(), *addr))
            .collect(),
        extra_root_pem: Some(ca.pem()),
    }
}

fn sender(config: WebhookHttpConfig) -> WebhookHttp {
    WebhookHttp::with_timeout(config, Duration::from_secs(5)).unwrap()
}

fn delivery() -> Delivery {
    let now = Timestamp::from_unix_millis(1_790_000_000_000).unwrap();
    let webhook = WebhookId::from_trusted("whk_test1".to_owned());
    Delivery::new(webhook.clone(), &WebhookEvent::test(&webhook, now), now)
}

fn error_of(outcome: &AttemptOutcome) -> &str {
    match outcome {
        AttemptOutcome::Failure { error, .. } => error,
        AttemptOutcome::Success { .. } => panic!("expected a failure, got {outcome:?}"),
    }
}

async fn send(
    http: &WebhookHttp,
    url: &str,
    headers: &[(&str, String)],
    body: &str,
) -> AttemptOutcome {
    timeout(BOUND, http.send(url, headers, body.to_owned()))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn success_delivers_the_exact_body_and_every_header() {
    let ca = TestCa::new("Sealpost test CA");
    let mut receiver = Receiver::start(&ca, status(200)).await;
    let http = sender(pinned_config(&ca, &[("hooks.test", receiver.addr)]));
    let delivery = delivery();
    let headers = delivery.headers("whsec_test", 1_790_000_000);
    let header_refs: Vec<(&str, String)> = headers.iter().map(|(n, v)| (*n, v.clone())).collect();

    let outcome = send(
        &http,
        "https://hooks.test/hook?x=1",
        &header_refs,
        &delivery.body,
    )
    .await;
    assert_eq!(outcome, AttemptOutcome::Success { status: 200 });

    let request = receiver.next_request().await;
    assert_eq!(request.request_line, "POST /hook?x=1 HTTP/1.1");
    assert_eq!(request.body, delivery.body.as_bytes());
    for (name, value) in &headers {
        assert_eq!(request.header(name), Some(value.as_str()), "{name}");
    }
    assert_eq!(request.header("User-Agent"), Some("Service-Webhooks/1"));
    assert_eq!(request.header("Content-Type"), Some("application/json"));
    assert!(request.header("Cookie").is_none());
    assert_eq!(
        request.header("Content-Length"),
        Some(delivery.body.len().to_string().as_str())
    );
    assert_eq!(request.header("Host"), Some("hooks.test"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_2xx_is_success() {
    let ca = TestCa::new("Sealpost test CA");
    let receiver = Receiver::start(&ca, status(204)).await;
    let http = sender(pinned_config(&ca, &[("hooks.test", receiver.addr)]));
    let outcome = send(&http, "https://hooks.test/", &[], "{}").await;
    assert_eq!(outcome, AttemptOutcome::Success { status: 204 });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_error_is_a_failure_with_status_and_a_short_excerpt() {
    let ca = TestCa::new("Sealpost test CA");
    let body = format!("internal trouble\n{}", "x".repeat(5000));
    let mut receiver = Receiver::start(
        &ca,
        Answer::Status {
            code: 500,
            headers: vec![],
            body,
        },
    )
    .await;
    let http = sender(pinned_config(&ca, &[("hooks.test", receiver.addr)]));
    let outcome = send(&http, "https://hooks.test/hook", &[], "{}").await;
    assert_eq!(outcome.response_status(), Some(500));
    assert!(!outcome.is_success());
    let error = error_of(&outcome);
    assert!(
        error.starts_with("HTTP 500; response: internal trouble xxx"),
        "{error}"
    );
    let excerpt = error.trim_start_matches("HTTP 500; response: ");
    assert_eq!(excerpt.chars().count(), 200, "{error}");
    receiver.next_request().await;

    // No body: just the status.
    let receiver = Receiver::start(&ca, status(404)).await;
    let http = sender(pinned_config(&ca, &[("hooks.test", receiver.addr)]));
    let outcome = send(&http, "https://hooks.test/hook", &[], "{}").await;
    assert_eq!(
        outcome,
        AttemptOutcome::Failure {
            status: Some(404),
            error: "HTTP 404".to_owned()
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_not_followed() {
    let ca = TestCa::new("Sealpost test CA");
    let target = Receiver::start(&ca, status(200)).await;
    let mut redirecting = Receiver::start(
        &ca,
        Answer::Status {
            code: 302,
            headers: vec![(
                "Location".to_owned(),
                "https://target.test/elsewhere".to_owned(),
            )],
            body: String::new(),
        },
    )
    .await;
    let http = sender(pinned_config(
        &ca,
        &[
            ("hooks.test", redirecting.addr),
            ("target.test", target.addr),
        ],
    ));
    let outcome = send(&http, "https://hooks.test/hook", &[], "{}").await;
    assert_eq!(
        outcome,
        AttemptOutcome::Failure {
            status: Some(302),
            error: "HTTP 302: redirects are not followed".to_owned()
        }
    );
    redirecting.next_request().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(redirecting.connections(), 1);
    assert_eq!(target.connections(), 0, "the redirect target got nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_receiver_times_out() {
    let ca = TestCa::new("Sealpost test CA");
    let mut receiver = Receiver::start(&ca, Answer::Silent).await;
    let http = WebhookHttp::with_timeout(
        pinned_config(&ca, &[("hooks.test", receiver.addr)]),
        Duration::from_secs(1),
    )
    .unwrap();
    let started = Instant::now();
    let outcome = send(&http, "https://hooks.test/hook", &[], "{}").await;
    let elapsed = started.elapsed();
    assert_eq!(outcome, AttemptOutcome::timeout());
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    // The request itself did arrive.
    receiver.next_request().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinned_loopback_is_allowed_but_unpinned_localhost_is_refused() {
    let ca = TestCa::new("Sealpost test CA");
    let mut receiver = Receiver::start(&ca, status(200)).await;
    let http = sender(pinned_config(&ca, &[("hooks.test", receiver.addr)]));

    let outcome = send(&http, "https://hooks.test/hook", &[], "{}").await;
    assert_eq!(outcome, AttemptOutcome::Success { status: 200 });
    receiver.next_request().await;
    assert_eq!(receiver.connections(), 1);

    // localhost resolves to loopback: refused before any connection.
    let url = format!("https://localhost:{}/hook", receiver.addr.port());
    let outcome = send(&http, &url, &[], "{}").await;
    assert_eq!(outcome.response_status(), None);
    let error = error_of(&outcome);
    assert!(error.starts_with("address not allowed: "), "{error}");
    assert!(error.contains("(loopback)"), "{error}");

    // So is a URL naming the address itself.
    for url in [
        format!("https://127.0.0.1:{}/hook", receiver.addr.port()),
        format!("https://[::1]:{}/hook", receiver.addr.port()),
    ] {
        let outcome = send(&http, &url, &[], "{}").await;
        let error = error_of(&outcome);
        assert!(error.starts_with("address not allowed: "), "{url}: {error}");
    }

    // And plain http is never used.
    let outcome = send(&http, "http://hooks.test/hook", &[], "{}").await;
    assert_eq!(error_of(&outcome), "only https URLs are delivered to");

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        receiver.connections(),
        1,
        "nothing else reached the receiver"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_from_an_untrusted_ca_fails() {
    let trusted = TestCa::new("Sealpost test CA");
    let other = TestCa::new("Someone else's CA");
    let mut receiver = Receiver::start(&other, status(200)).await;
    let http = sender(pinned_config(&trusted, &[("hooks.test", receiver.addr)]));
    let outcome = send(&http, "https://hooks.test/hook", &[], "{}").await;
    assert_eq!(outcome.response_status(), None);
    let error = error_of(&outcome);
    assert!(error.starts_with("TLS error: "), "{error}");
    assert!(error.contains("UnknownIssuer"), "{error}");
    assert!(receiver.requests.try_recv().is_err(), "no request was read");

    // Without the extra root, the public roots do not know the test CA.
    let http = sender(WebhookHttpConfig {
        pinned: vec![("hooks.test".to_owned(), receiver.addr)],
        extra_root_pem: None,
    });
    let outcome = send(&http, "https://hooks.test/hook", &[], "{}").await;
    assert!(error_of(&outcome).starts_with("TLS error: "), "{outcome:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_another_name_fails() {
    let ca = TestCa::new("Sealpost test CA");
    let receiver = Receiver::start(&ca, status(200)).await;
    let http = sender(pinned_config(&ca, &[("wrong.test", receiver.addr)]));
    let outcome = send(&http, "https://wrong.test/hook", &[], "{}").await;
    let error = error_of(&outcome);
    assert!(error.starts_with("TLS error: "), "{error}");
    assert!(error.contains("not valid for name"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_refused_is_reported() {
    let ca = TestCa::new("Sealpost test CA");
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap()
    };
    let http = sender(pinned_config(&ca, &[("hooks.test", closed)]));
    let outcome = send(&http, "https://hooks.test/hook", &[], "{}").await;
    assert_eq!(
        outcome,
        AttemptOutcome::Failure {
            status: None,
            error: "connection refused".to_owned()
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_url_port_wins_over_the_pinned_port() {
    let ca = TestCa::new("Sealpost test CA");
    let receiver = Receiver::start(&ca, status(200)).await;
    let pin: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let http = sender(pinned_config(&ca, &[("hooks.test", pin)]));
    let url = format!("https://hooks.test:{}/hook", receiver.addr.port());
    let outcome = send(&http, &url, &[], "{}").await;
    assert_eq!(outcome, AttemptOutcome::Success { status: 200 });
}
