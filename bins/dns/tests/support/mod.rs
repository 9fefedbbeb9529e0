//! What the `sealpost-dns` tests share: the built binary as a child process,
//! DNS messages encoded and read by hickory's wire format over UDP and TCP,
//! and an own domain made live through the API.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    dead_code,
    reason = "tests fail loudly; each test file uses part of this"
)]

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use sealpost_client::Client;
use sealpost_client::domains::DomainStep;
use sealpost_dns_server::proto::op::{Edns, Message, MessageType, OpCode, Query};
use sealpost_dns_server::proto::rr::{Name, RData, RecordType};
use sealpost_seal::RecoveryPhrase;
use sealpost_testkit::TestApp;
use sealpost_testkit::dns::PublicDns;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, UdpSocket};
use tokio::process::{Child, Command};

pub const NS: [&str; 2] = ["ns1.sealpost.test", "ns2.sealpost.test"];
pub const MX: &str = "mx.sealpost.test";

/// The `sealpost-dns` process and where it answers.
pub struct DnsProcess {
    pub addr: SocketAddr,
    child: Child,
}

impl DnsProcess {
    /// Starts the binary on a port of its choosing; its log line says which.
    pub async fn start(database_url: &str) -> DnsProcess {
        Self::start_with(database_url, &[]).await
    }

    /// [`DnsProcess::start`] with more environment variables.
    pub async fn start_with(database_url: &str, env: &[(&str, &str)]) -> DnsProcess {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sealpost-dns"));
        command
            .env("DATABASE_URL", database_url)
            .env("SEALPOST_DNS_ADDR", "127.0.0.1:0")
            .env("SEALPOST_DNS_NAMESERVERS", NS.join(","))
            .env("SEALPOST_MX_HOST", MX)
            .env("SEALPOST_LOG", "info")
            .env_remove("SEALPOST_LOG_JSON");
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(rest) = line.split("udp=").nth(1) {
                    let addr = rest.split_whitespace().next().unwrap();
                    return addr.parse::<SocketAddr>().unwrap();
                }
            }
            panic!("sealpost-dns ended without saying where it listens");
        })
        .await
        .expect("sealpost-dns starts within 30 s");
        // Keep reading its log so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        DnsProcess { addr, child }
    }

    /// Kills the process and waits for it: its database connections close.
    pub async fn kill(mut self) {
        self.child.kill().await.unwrap();
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let pid = self.child.id().expect("still running");
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -TERM");
    }

    /// The exit status once the process ended by itself (at most `within`).
    pub async fn exited(mut self, within: Duration) -> std::process::ExitStatus {
        tokio::time::timeout(within, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("sealpost-dns still running {within:?} after SIGTERM"))
            .unwrap()
    }
}

pub fn question(name: &str, kind: RecordType) -> Message {
    let mut message = Message::new(0x5150, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.add_query(Query::query(Name::from_ascii(name).unwrap(), kind));
    message
}

/// [`question`] advertising an EDNS buffer of `size` bytes.
pub fn question_with_edns(name: &str, kind: RecordType, size: u16) -> Message {
    let mut message = question(name, kind);
    let mut edns = Edns::new();
    edns.set_max_payload(size);
    message.edns = Some(edns);
    message
}

/// The answer over UDP from `from` (an address on loopback), with its size
/// in bytes; `None` when nothing comes within `wait`.
pub async fn over_udp_from(
    from: &str,
    addr: SocketAddr,
    bytes: &[u8],
    wait: Duration,
) -> Option<(Message, usize)> {
    let socket = UdpSocket::bind(from).await.unwrap();
    socket.send_to(bytes, addr).await.unwrap();
    let mut buffer = vec![0u8; 65_535];
    let read = tokio::time::timeout(wait, socket.recv(&mut buffer)).await;
    let read = read.ok()?.unwrap();
    Some((Message::from_vec(&buffer[..read]).unwrap(), read))
}

pub async fn over_udp(addr: SocketAddr, bytes: &[u8]) -> Option<Message> {
    over_udp_from("127.0.0.1:0", addr, bytes, Duration::from_secs(3))
        .await
        .map(|(message, _)| message)
}

pub async fn over_tcp(addr: SocketAddr, bytes: &[u8]) -> Message {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let length = u16::try_from(bytes.len()).unwrap().to_be_bytes();
    stream.write_all(&length).await.unwrap();
    stream.write_all(bytes).await.unwrap();
    let mut length = [0u8; 2];
    stream.read_exact(&mut length).await.unwrap();
    let mut answer = vec![0u8; usize::from(u16::from_be_bytes(length))];
    stream.read_exact(&mut answer).await.unwrap();
    Message::from_vec(&answer).unwrap()
}

pub fn texts(message: &Message) -> Vec<String> {
    message
        .answers
        .iter()
        .filter_map(|record| match &record.data {
            RData::TXT(txt) => Some(
                txt.txt_data
                    .iter()
                    .map(|part| String::from_utf8_lossy(part).into_owned())
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

/// `domain` made live through the API, as a person would.
pub async fn live_domain(public: &PublicDns, client: &Client, domain: &str) {
    let added = client.add_domain(domain).await.unwrap();
    public.publish_txt(&added.record.name, &added.record.value);
    public.delegate(domain, &NS);
    public.set_mx(domain, &[MX]);
    let checked = client.check_domain(domain).await.unwrap();
    assert_eq!(checked.step, DomainStep::Live, "{checked:?}");
}

pub async fn scale_client(app: &TestApp) -> Client {
    use diesel_async::RunQueryDsl;
    let keys = RecoveryPhrase::generate().keys();
    let client = Client::new(&app.base_url).unwrap();
    let signed_in = client.register(&keys).await.unwrap();
    let mut conn = app.db.connect().await;
    diesel::sql_query("UPDATE accounts SET plan_id = 'scale' WHERE id = $1")
        .bind::<diesel::sql_types::Text, _>(keys.account_id())
        .execute(&mut conn)
        .await
        .unwrap();
    client.with_token(signed_in.token)
}

/// The API with the public DNS stand-in, an account on Scale and
/// `domains` made live (the stand-in must serve them).
pub async fn app_with_live(domains: &[&str]) -> (TestApp, PublicDns, Client) {
    let public = PublicDns::start(domains).await;
    let resolver = public.addr();
    let app = TestApp::spawn_with(move |config| {
        config.dns.resolver = Some(resolver);
        config.dns.nameservers = NS.iter().map(|ns| ns.to_string()).collect();
        config.dns.mx_host = MX.into();
    })
    .await;
    let client = scale_client(&app).await;
    for domain in domains {
        live_domain(&public, &client, domain).await;
    }
    (app, public, client)
}
