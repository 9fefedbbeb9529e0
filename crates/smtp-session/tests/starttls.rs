//! STARTTLS with an rcgen certificate and a tokio-rustls client that trusts it.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::sync::Arc;

use common::{CLIENT_IP, Client, Recorder, config};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use sealpost_smtp_session::{Delivery, SmtpConfig, TlsAcceptor, serve, serve_session};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

const HOST: &str = "mx.sealpost.test";

struct Tls {
    acceptor: TlsAcceptor,
    connector: TlsConnector,
}

fn tls() -> Tls {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certified = rcgen::generate_simple_self_signed(vec![HOST.to_owned()]).unwrap();
    let cert: CertificateDer<'static> = certified.cert.der().clone();
    let key = PrivateKeyDer::from(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));

    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .unwrap();

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();

    Tls {
        acceptor: TlsAcceptor::from(Arc::new(server)),
        connector: TlsConnector::from(Arc::new(client)),
    }
}

fn tls_config(acceptor: TlsAcceptor) -> SmtpConfig {
    SmtpConfig {
        tls: Some(acceptor),
        ..config()
    }
}

/// Sends STARTTLS (plus anything pipelined after it), expects 220 2.0.0 and
/// runs the handshake.
async fn upgrade<S>(
    mut client: Client<S>,
    connector: &TlsConnector,
    pipelined: &str,
) -> Client<TlsStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    client.send(&format!("STARTTLS\r\n{pipelined}")).await;
    client.reply().await.assert(220, "2.0.0");
    assert!(client.stream.buffer().is_empty(), "bytes after the 220");
    let stream = client.stream.into_inner();
    let name = ServerName::try_from(HOST).unwrap();
    Client::new(connector.connect(name, stream).await.unwrap())
}

#[tokio::test]
async fn starttls_then_a_message_goes_through() {
    let tls = tls();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let delivery = Recorder::new();
    let server = tokio::spawn(serve(
        listener,
        Arc::new(tls_config(tls.acceptor.clone())),
        delivery.clone() as Arc<dyn Delivery>,
    ));

    let mut client = Client::new(TcpStream::connect(addr).await.unwrap());
    assert_eq!(client.reply().await.code, 220);
    let ehlo = client.command("EHLO client.example", 250, "").await;
    assert_eq!(ehlo.lines.last().map(String::as_str), Some("STARTTLS"));

    let mut client = upgrade(client, &tls.connector, "").await;
    let ehlo = client.command("EHLO client.example", 250, "").await;
    assert!(
        !ehlo.lines.iter().any(|line| line == "STARTTLS"),
        "{ehlo:?}"
    );
    assert!(ehlo.lines.iter().any(|line| line == "PIPELINING"));

    client
        .send(concat!(
            "MAIL FROM:<sender@example.org>\r\n",
            "RCPT TO:<secure@mail.localhost>\r\n",
            "DATA\r\n",
        ))
        .await;
    client.reply().await.assert(250, "2.1.0");
    client.reply().await.assert(250, "2.1.5");
    assert_eq!(client.reply().await.code, 354);
    client.send("Subject: tls\r\n\r\nsecret\r\n.\r\n").await;
    client.reply().await.assert(250, "2.0.0");
    client.command("STARTTLS", 503, "5.5.1").await;
    client.command("QUIT", 221, "2.0.0").await;

    let delivered = delivery.delivered();
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0].0.recipients, ["secure@mail.localhost"]);
    assert_eq!(delivered[0].1, b"Subject: tls\r\n\r\nsecret\r\n");
    server.abort();
}

#[tokio::test]
async fn state_and_plaintext_injection_do_not_survive_starttls() {
    let tls = tls();
    let (client, server) = tokio::io::duplex(64 * 1024);
    let delivery = Recorder::new();
    let config = tls_config(tls.acceptor.clone());
    let task = tokio::spawn({
        let delivery = delivery.clone();
        async move { serve_session(server, CLIENT_IP, &config, delivery.as_ref()).await }
    });

    let mut client = Client::new(client);
    assert_eq!(client.reply().await.code, 220);
    client.command("EHLO client.example", 250, "").await;
    client
        .command("MAIL FROM:<before@example.org>", 250, "2.1.0")
        .await;
    // A command pipelined in plain text behind STARTTLS (CVE-2011-0411)
    // must not be executed inside TLS.
    let mut client = upgrade(
        client,
        &tls.connector,
        "RCPT TO:<injected@mail.localhost>\r\n",
    )
    .await;

    // Fresh state: EHLO again, and no transaction carried over.
    client
        .command("MAIL FROM:<after@example.org>", 503, "5.5.1")
        .await;
    client.command("EHLO client.example", 250, "").await;
    client
        .command("RCPT TO:<a@mail.localhost>", 503, "5.5.1")
        .await;
    client
        .command("MAIL FROM:<after@example.org>", 250, "2.1.0")
        .await;
    client
        .command("RCPT TO:<a@mail.localhost>", 250, "2.1.5")
        .await;
    client.command("DATA", 354, "").await;
    client.send("x\r\n.\r\n").await;
    client.reply().await.assert(250, "2.0.0");
    client.command("QUIT", 221, "2.0.0").await;
    task.await.unwrap().unwrap();

    assert_eq!(delivery.checked(), ["a@mail.localhost"]);
    let delivered = delivery.delivered();
    assert_eq!(delivered[0].0.mail_from, "after@example.org");
}

/// A certificate for `HOST` as PEM (chain, key) and DER.
fn pem_pair() -> (String, String, CertificateDer<'static>) {
    let certified = rcgen::generate_simple_self_signed(vec![HOST.to_owned()]).unwrap();
    (
        certified.cert.pem(),
        certified.signing_key.serialize_pem(),
        certified.cert.der().clone(),
    )
}

/// Replaces `path` as a renewal would: a new file renamed over the old.
fn replace(path: &std::path::Path, text: &str) {
    let next = path.with_extension("next");
    std::fs::write(&next, text).unwrap();
    std::fs::rename(&next, path).unwrap();
}

fn peer_certificate<S>(client: &Client<TlsStream<S>>) -> CertificateDer<'static>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    client
        .stream
        .get_ref()
        .get_ref()
        .1
        .peer_certificates()
        .unwrap()[0]
        .clone()
}

/// Issue 15, item 8: the certificate files are replaced while the ingest
/// runs. A new STARTTLS session gets the new certificate without a
/// restart, and a session opened before stays up (and delivers).
#[tokio::test]
async fn a_replaced_certificate_is_used_by_new_sessions_and_open_ones_stay_up() {
    let dir = std::env::temp_dir().join(format!("sealpost-smtp-cert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    let (cert_a, key_a, der_a) = pem_pair();
    let (cert_b, key_b, der_b) = pem_pair();
    std::fs::write(&cert_path, &cert_a).unwrap();
    std::fs::write(&key_path, &key_a).unwrap();

    let acceptor = sealpost_smtp_session::reloading_acceptor(
        &cert_path,
        &key_path,
        std::time::Duration::from_millis(50),
    )
    .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der_a.clone()).unwrap();
    roots.add(der_b.clone()).unwrap();
    let mut client_config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    // A resumed session shows the certificate it was first made with.
    client_config.resumption = rustls::client::Resumption::disabled();
    let connector = TlsConnector::from(Arc::new(client_config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let delivery = Recorder::new();
    let server = tokio::spawn(serve(
        listener,
        Arc::new(tls_config(acceptor)),
        delivery.clone() as Arc<dyn Delivery>,
    ));
    let open_tls = async || {
        let mut client = Client::new(TcpStream::connect(addr).await.unwrap());
        assert_eq!(client.reply().await.code, 220);
        client.command("EHLO client.example", 250, "").await;
        let mut client = upgrade(client, &connector, "").await;
        client.command("EHLO client.example", 250, "").await;
        client
    };

    let mut before = open_tls().await;
    assert!(peer_certificate(&before) == der_a);

    // Key first, then the certificate: between the two renames the pair
    // does not match, and a handshake then still gets A.
    replace(&key_path, &key_b);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let between = open_tls().await;
    assert!(
        peer_certificate(&between) == der_a,
        "a mismatched pair is not used"
    );
    replace(&cert_path, &cert_b);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;

    let mut after = open_tls().await;
    assert!(peer_certificate(&after) == der_b, "a new session sees B");
    after.command("QUIT", 221, "2.0.0").await;

    // The session from before is still up, on A, and delivers.
    assert!(peer_certificate(&before) == der_a);
    before.command("NOOP", 250, "2.0.0").await;
    before
        .command("MAIL FROM:<sender@example.org>", 250, "2.1.0")
        .await;
    before
        .command("RCPT TO:<renewal@mail.localhost>", 250, "2.1.5")
        .await;
    before.command("DATA", 354, "").await;
    before.send("Subject: still up\r\n\r\nhi\r\n.\r\n").await;
    before.reply().await.assert(250, "2.0.0");
    before.command("QUIT", 221, "2.0.0").await;
    assert_eq!(delivery.delivered().len(), 1);

    drop(between);
    server.abort();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn files_that_do_not_load_stop_start_up() {
    let dir = std::env::temp_dir().join(format!("sealpost-smtp-badcert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert_a, _, _) = pem_pair();
    let (_, key_b, _) = pem_pair();
    std::fs::write(dir.join("cert.pem"), cert_a).unwrap();
    std::fs::write(dir.join("key.pem"), key_b).unwrap();
    let Err(error) = sealpost_smtp_session::reloading_acceptor(
        dir.join("cert.pem"),
        dir.join("key.pem"),
        std::time::Duration::from_secs(10),
    ) else {
        panic!("a key that is not the certificate's was taken");
    };
    assert!(error.to_string().contains("is not the key of"), "{error}");
    assert!(
        sealpost_smtp_session::reloading_acceptor(
            dir.join("missing.pem"),
            dir.join("key.pem"),
            std::time::Duration::from_secs(10),
        )
        .is_err()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
