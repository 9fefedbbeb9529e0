//! Shared test fixtures: a recording `Delivery` and a line-oriented client.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    dead_code,
    unreachable_pub,
    reason = "tests"
)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use sealpost_smtp_session::{
    Delivery, DeliveryOutcome, Envelope, RecipientDecision, SmtpConfig, serve, serve_session,
};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinHandle;

pub const CLIENT_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7));

/// Decides by local part: `unknown@` 550 5.1.1, `refused@` 550 5.7.1,
/// `later@` 452; everything else is accepted. Records every message.
#[derive(Default)]
pub struct Recorder {
    pub outcome: Mutex<Option<DeliveryOutcome>>,
    pub checked: Mutex<Vec<String>>,
    pub delivered: Mutex<Vec<(Envelope, Vec<u8>)>>,
}

impl Recorder {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn answering(outcome: DeliveryOutcome) -> Arc<Self> {
        let recorder = Self::default();
        *recorder.outcome.lock().unwrap() = Some(outcome);
        Arc::new(recorder)
    }

    pub fn delivered(&self) -> Vec<(Envelope, Vec<u8>)> {
        self.delivered.lock().unwrap().clone()
    }

    pub fn checked(&self) -> Vec<String> {
        self.checked.lock().unwrap().clone()
    }
}

#[async_trait]
impl Delivery for Recorder {
    async fn check_recipient(&self, address: &str) -> RecipientDecision {
        self.checked.lock().unwrap().push(address.to_owned());
        let local = address.split('@').next().unwrap_or_default();
        match local {
            "unknown" => RecipientDecision::UnknownAddress,
            "refused" => RecipientDecision::Refused("Address takes no mail".into()),
            "later" => RecipientDecision::TryLater("Mailbox over quota, try later".into()),
            _ => RecipientDecision::Accept,
        }
    }

    async fn deliver(&self, envelope: &Envelope, data: &[u8]) -> DeliveryOutcome {
        let outcome = self
            .outcome
            .lock()
            .unwrap()
            .clone()
            .unwrap_or(DeliveryOutcome::Accepted);
        if outcome == DeliveryOutcome::Accepted {
            self.delivered
                .lock()
                .unwrap()
                .push((envelope.clone(), data.to_vec()));
        }
        outcome
    }
}

pub fn config() -> SmtpConfig {
    SmtpConfig {
        hostname: "mx.sealpost.test".into(),
        max_message_size: 64 * 1024,
        max_recipients: 100,
        idle_timeout: Duration::from_secs(60),
        session_timeout: Duration::from_secs(600),
        tls: None,
        ..SmtpConfig::new("mx.sealpost.test")
    }
}

/// One reply: its code and every line's text after the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub code: u16,
    pub lines: Vec<String>,
}

impl Reply {
    /// The text of the last line (after "ddd ").
    pub fn text(&self) -> &str {
        self.lines.last().map(String::as_str).unwrap_or_default()
    }

    pub fn assert(&self, code: u16, status: &str) {
        assert_eq!(self.code, code, "reply {self:?}");
        assert!(
            self.text().starts_with(status),
            "expected {code} {status}, got {self:?}"
        );
    }
}

pub struct Client<S> {
    pub stream: BufReader<S>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Client<S> {
    pub fn new(stream: S) -> Self {
        Self {
            stream: BufReader::new(stream),
        }
    }

    pub async fn send(&mut self, text: &str) {
        self.send_bytes(text.as_bytes()).await;
    }

    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        let stream = self.stream.get_mut();
        stream.write_all(bytes).await.unwrap();
        stream.flush().await.unwrap();
    }

    /// Sends, ignoring a connection the server already closed.
    pub async fn try_send(&mut self, text: &str) {
        let stream = self.stream.get_mut();
        if stream.write_all(text.as_bytes()).await.is_ok() {
            let _ = stream.flush().await;
        }
    }

    /// Reads one (possibly multi-line) reply; panics on EOF.
    pub async fn reply(&mut self) -> Reply {
        self.try_reply()
            .await
            .expect("connection closed before a reply")
    }

    pub async fn try_reply(&mut self) -> Option<Reply> {
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            let n = self.stream.read_line(&mut line).await.unwrap();
            if n == 0 {
                return None;
            }
            assert!(line.ends_with("\r\n"), "reply line without CRLF: {line:?}");
            let line = line.trim_end_matches("\r\n");
            assert!(line.len() >= 4, "short reply line {line:?}");
            let code: u16 = line[..3].parse().unwrap();
            let more = &line[3..4] == "-";
            lines.push(line[4..].to_owned());
            if !more {
                return Some(Reply { code, lines });
            }
        }
    }

    /// Sends a command and checks the reply's code and enhanced status.
    pub async fn command(&mut self, command: &str, code: u16, status: &str) -> Reply {
        self.send(&format!("{command}\r\n")).await;
        let reply = self.reply().await;
        reply.assert(code, status);
        reply
    }

    /// True when the server has closed the connection.
    pub async fn closed(&mut self) -> bool {
        let mut line = String::new();
        matches!(self.stream.read_line(&mut line).await, Ok(0))
    }
}

/// A session on an in-memory pipe: the client end and the server task.
pub async fn start(
    config: SmtpConfig,
    delivery: Arc<Recorder>,
) -> (Client<DuplexStream>, JoinHandle<std::io::Result<()>>) {
    let (client, server) = tokio::io::duplex(256 * 1024);
    let task =
        tokio::spawn(
            async move { serve_session(server, CLIENT_IP, &config, delivery.as_ref()).await },
        );
    let mut client = Client::new(client);
    let greeting = client.reply().await;
    assert_eq!(greeting.code, 220);
    (client, task)
}

/// `serve` on a loopback port: its address and the accept loop's task.
pub async fn listen(config: SmtpConfig, delivery: Arc<Recorder>) -> (SocketAddr, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(serve(
        listener,
        Arc::new(config),
        delivery as Arc<dyn Delivery>,
    ));
    (addr, server)
}

/// A connection from `from` (any 127.0.0.0/8 address is this host).
pub async fn connect_from(from: &str, addr: SocketAddr) -> Client<TcpStream> {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    Client::new(socket.connect(addr).await.unwrap())
}

/// EHLO, MAIL, RCPT: ready for DATA.
pub async fn envelope(client: &mut Client<TcpStream>, mail_from: &str) {
    client.command("EHLO client.example", 250, "").await;
    client.command(mail_from, 250, "2.1.0").await;
    client
        .command("RCPT TO:<inbox@mail.localhost>", 250, "2.1.5")
        .await;
}

pub fn body(bytes: usize, tag: &str) -> String {
    let line = format!("{tag} {}\r\n", "x".repeat(70));
    let mut text = format!("Subject: {tag}\r\n\r\n");
    while text.len() < bytes {
        text.push_str(&line);
    }
    text
}
