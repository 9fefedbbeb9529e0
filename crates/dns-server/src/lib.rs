//! An authoritative DNS server over UDP and TCP (hickory-server) that asks a
//! [`ZoneSource`] for every question: the service's own nameservers
//! (`sealpost-dns`, zones read from PostgreSQL) and the tests' stand-in for
//! the public DNS ([`MemoryZones`], edited while it runs) both run on it.
//!
//! Rules: only standard queries with exactly one question are answered;
//! names outside the source's zones get REFUSED; recursion is never offered;
//! zone transfers (AXFR, IXFR) are REFUSED and ANY is not implemented; a
//! message that does not parse is dropped by the server library. Over UDP
//! an answer larger than the client's EDNS buffer (512 bytes without EDNS)
//! or [`Limits::udp_max`] is truncated (TC=1) so the client asks again over
//! TCP, and [`Limits::rate`] bounds the answers one client network gets.

mod drain;
mod limits;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hickory_server::Server;
use hickory_server::net::runtime::Time;
use hickory_server::net::xfer::Protocol;
use hickory_server::proto::op::{Edns, MessageType, Metadata, OpCode, ResponseCode};
use hickory_server::proto::rr::{LowerName, Name, RData, Record, RecordType};
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::MessageResponseBuilder;

pub use hickory_server::proto;
pub use limits::{Limits, RateLimit, UDP_MAX_DEFAULT, Verdict};

use drain::InFlight;
use limits::ResponseLimiter;

/// The answer to one question.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// Not a name of any zone served here.
    Refused,
    /// The name exists; `records` of the asked type (empty: no data).
    Records {
        records: Vec<Record>,
        /// The zone's SOA, sent in the authority section of an empty answer.
        soa: Option<Record>,
    },
    /// The name does not exist in a zone served here.
    NoName { soa: Option<Record> },
}

#[async_trait]
pub trait ZoneSource: Send + Sync + 'static {
    /// `name` is lower case and fully qualified.
    async fn answer(&self, name: &Name, kind: RecordType) -> Answer;
}

/// Answers DNS requests from a [`ZoneSource`].
pub struct Handler<S> {
    source: Arc<S>,
    udp_max: u16,
    limiter: Option<Arc<ResponseLimiter>>,
    in_flight: Arc<InFlight>,
}

impl<S> Handler<S> {
    pub fn new(source: Arc<S>, limits: &Limits) -> Self {
        Self {
            source,
            udp_max: limits.udp_max.max(512),
            limiter: limits.rate.clone().map(ResponseLimiter::new).map(Arc::new),
            in_flight: Arc::default(),
        }
    }

    fn verdict(&self, request: &Request) -> Verdict {
        match &self.limiter {
            Some(limiter) if request.protocol() == Protocol::Udp => {
                limiter.verdict(request.src().ip())
            }
            _ => Verdict::Answer,
        }
    }
}

/// Counts a question by its transport and `answer`: an rcode, or
/// `dropped` (rate limit, stopping) or `truncated` (rate limit's slip).
fn count(request: &Request, answer: &'static str) {
    let transport = match request.protocol() {
        Protocol::Udp => "udp",
        Protocol::Tcp => "tcp",
        _ => "other",
    };
    metrics::counter!(
        sealpost_metrics::names::DNS_QUERIES,
        "transport" => transport,
        "rcode" => answer,
    )
    .increment(1);
}

fn rcode_label(code: ResponseCode) -> &'static str {
    match code {
        ResponseCode::NoError => "NOERROR",
        ResponseCode::FormErr => "FORMERR",
        ResponseCode::ServFail => "SERVFAIL",
        ResponseCode::NXDomain => "NXDOMAIN",
        ResponseCode::NotImp => "NOTIMP",
        ResponseCode::Refused => "REFUSED",
        _ => "OTHER",
    }
}

/// What the server reports for an answer it did not send.
fn unsent(request: &Request, code: ResponseCode) -> ResponseInfo {
    let mut metadata = Metadata::response_from_request(&request.metadata);
    metadata.response_code = code;
    ResponseInfo::from(hickory_server::proto::op::Header {
        metadata,
        counts: Default::default(),
    })
}

#[async_trait]
impl<S: ZoneSource> RequestHandler for Handler<S> {
    async fn handle_request<R: ResponseHandler, T: Time>(
        &self,
        request: &Request,
        response_handle: R,
    ) -> ResponseInfo {
        let Some(_answering) = self.in_flight.begin() else {
            // Stopping: left unanswered, so the client asks another server.
            count(request, "dropped");
            return unsent(request, ResponseCode::Refused);
        };
        let verdict = self.verdict(request);
        if verdict == Verdict::Drop {
            count(request, "dropped");
            return unsent(request, ResponseCode::Refused);
        }
        // A client that sent EDNS gets it back, its buffer capped at ours;
        // the encoder truncates a UDP answer to that size (512 without EDNS).
        let edns = request.edns.as_ref().map(|asked| {
            let mut edns = Edns::new();
            edns.set_max_payload(asked.max_payload().clamp(512, self.udp_max));
            edns
        });
        let builder = MessageResponseBuilder::new(&request.queries, edns.as_ref());
        if verdict == Verdict::Slip {
            count(request, "truncated");
            let mut metadata = Metadata::response_from_request(&request.metadata);
            metadata.truncation = true;
            metadata.recursion_available = false;
            return send(builder.build_no_records(metadata), response_handle, request).await;
        }
        let refuse = |code: ResponseCode| (code, Vec::new(), None::<Record>);
        let (code, records, soa) = if request.metadata.message_type != MessageType::Query
            || request.metadata.op_code != OpCode::Query
        {
            refuse(ResponseCode::NotImp)
        } else if request.queries.len() != 1 {
            refuse(ResponseCode::FormErr)
        } else {
            let query = &request.queries.queries()[0];
            let kind = query.query_type();
            match kind {
                RecordType::AXFR | RecordType::IXFR => refuse(ResponseCode::Refused),
                RecordType::ANY => refuse(ResponseCode::NotImp),
                _ => {
                    let name = Name::from(LowerName::clone(query.name()));
                    match self.source.answer(&name, kind).await {
                        Answer::Refused => refuse(ResponseCode::Refused),
                        Answer::Records { records, soa } => {
                            let soa = if records.is_empty() { soa } else { None };
                            (ResponseCode::NoError, records, soa)
                        }
                        Answer::NoName { soa } => (ResponseCode::NXDomain, Vec::new(), soa),
                    }
                }
            }
        };
        count(request, rcode_label(code));
        let mut metadata = Metadata::response_from_request(&request.metadata);
        metadata.response_code = code;
        metadata.recursion_available = false;
        metadata.authoritative = matches!(code, ResponseCode::NoError | ResponseCode::NXDomain);
        let response = builder.build(
            metadata,
            records.iter(),
            None.iter(),
            soa.iter(),
            None.iter(),
        );
        send(response, response_handle, request).await
    }
}

async fn send<'a, R: ResponseHandler>(
    response: hickory_server::zone_handler::MessageResponse<
        '_,
        'a,
        impl Iterator<Item = &'a Record> + Send + 'a,
        impl Iterator<Item = &'a Record> + Send + 'a,
        impl Iterator<Item = &'a Record> + Send + 'a,
        impl Iterator<Item = &'a Record> + Send + 'a,
    >,
    mut response_handle: R,
    request: &Request,
) -> ResponseInfo {
    match response_handle.send_response(response).await {
        Ok(info) => info,
        Err(error) => {
            tracing::warn!(%error, "sending a DNS answer failed");
            unsent(request, ResponseCode::ServFail)
        }
    }
}

/// How long a drain waits, once no answer is in flight, for the UDP task to
/// write the last answers out.
const UDP_FLUSH: Duration = Duration::from_millis(200);

/// A DNS server answering on one UDP socket and one TCP listener.
pub struct DnsServer {
    pub udp_addr: SocketAddr,
    pub tcp_addr: SocketAddr,
    server: Server<Handler<dyn_source::Boxed>>,
    forgetting: Option<tokio::task::JoinHandle<()>>,
    in_flight: Arc<InFlight>,
}

mod dyn_source {
    use super::*;

    /// A boxed source, so one server type serves any source.
    pub struct Boxed(pub Arc<dyn ZoneSource>);

    #[async_trait]
    impl ZoneSource for Boxed {
        async fn answer(&self, name: &Name, kind: RecordType) -> Answer {
            self.0.answer(name, kind).await
        }
    }
}

impl DnsServer {
    /// Serves `source` on `addr` over UDP and TCP (port 0: one free port,
    /// the same for both where possible) with the default [`Limits`]: no
    /// rate limit.
    pub async fn start(
        addr: SocketAddr,
        source: Arc<dyn ZoneSource>,
    ) -> std::io::Result<DnsServer> {
        Self::start_with(addr, source, &Limits::default()).await
    }

    /// [`DnsServer::start`] within `limits`.
    pub async fn start_with(
        addr: SocketAddr,
        source: Arc<dyn ZoneSource>,
        limits: &Limits,
    ) -> std::io::Result<DnsServer> {
        let tcp = tokio::net::TcpListener::bind(addr).await?;
        let tcp_addr = tcp.local_addr()?;
        let udp = match tokio::net::UdpSocket::bind(tcp_addr).await {
            Ok(socket) => socket,
            Err(_) if addr.port() == 0 => tokio::net::UdpSocket::bind(addr).await?,
            Err(error) => return Err(error),
        };
        let udp_addr = udp.local_addr()?;
        let handler = Handler::new(Arc::new(dyn_source::Boxed(source)), limits);
        let in_flight = Arc::clone(&handler.in_flight);
        let forgetting = handler.limiter.clone().map(|limiter| {
            tokio::spawn(async move {
                // A bucket refills in a second: forgetting full ones every
                // second bounds memory by the networks of the last seconds.
                let mut every = tokio::time::interval(Duration::from_secs(1));
                loop {
                    every.tick().await;
                    limiter.forget_idle();
                }
            })
        });
        let mut server = Server::new(handler);
        server.register_socket(udp);
        server.register_listener(tcp, Duration::from_secs(10), 64 * 1024);
        Ok(DnsServer {
            udp_addr,
            tcp_addr,
            server,
            forgetting,
            in_flight,
        })
    }

    /// Stops serving and waits for the tasks to end.
    pub async fn stop(mut self) {
        if let Some(forgetting) = self.forgetting.take() {
            forgetting.abort();
        }
        if let Err(error) = self.server.shutdown_gracefully().await {
            tracing::warn!(%error, "DNS server shut down with an error");
        }
    }

    /// Stops cleanly: takes no new question, waits (at most `within`) for
    /// the answers in flight to go out, then closes the sockets and waits
    /// for the server's tasks. Whether every answer in flight went out.
    pub async fn drain(self, within: Duration) -> bool {
        let finished = self.in_flight.drain(within).await;
        // A UDP answer is queued to the socket's task, which writes it when
        // next polled: give it that turn before the shutdown stops it.
        tokio::time::sleep(UDP_FLUSH).await;
        self.stop().await;
        finished
    }

    /// Serves until the server fails.
    pub async fn run(&mut self) -> Result<(), String> {
        self.server
            .block_until_done()
            .await
            .map_err(|error| error.to_string())
    }
}

/// TXT record data from one string of any length, split into the
/// 255-byte character strings DNS requires.
pub fn txt(value: &str) -> RData {
    let parts: Vec<String> = value
        .as_bytes()
        .chunks(255)
        .map(|chunk| String::from_utf8_lossy(chunk).into_owned())
        .collect();
    RData::TXT(hickory_server::proto::rr::rdata::TXT::new(parts))
}

/// A fully qualified, lower-case DNS name from text (a trailing dot optional).
pub fn fqdn(text: &str) -> Result<Name, String> {
    Name::from_ascii(format!(
        "{}.",
        text.trim_end_matches('.').to_ascii_lowercase()
    ))
    .map_err(|error| format!("{text:?} is not a DNS name: {error}"))
}

/// Zones held in memory and edited while the server runs: the tests' stand-in
/// for the public DNS. Every zone is authoritative for its apex and all names
/// under it; names outside any zone are refused.
#[derive(Default)]
pub struct MemoryZones {
    zones: Mutex<Vec<Name>>,
    records: Mutex<HashMap<(Name, RecordType), Vec<Record>>>,
}

impl MemoryZones {
    pub fn new() -> Arc<MemoryZones> {
        Arc::new(MemoryZones::default())
    }

    fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        mutex
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Serves `apex` (no records yet).
    pub fn add_zone(&self, apex: &str) -> Result<(), String> {
        Self::lock(&self.zones).push(fqdn(apex)?);
        Ok(())
    }

    /// Replaces the records of `kind` at `name` with `data` (TTL 0: nothing
    /// downstream keeps them).
    pub fn set(&self, name: &str, kind: RecordType, data: Vec<RData>) -> Result<(), String> {
        let name = fqdn(name)?;
        let records = data
            .into_iter()
            .map(|rdata| Record::from_rdata(name.clone(), 0, rdata))
            .collect::<Vec<_>>();
        let mut all = Self::lock(&self.records);
        if records.is_empty() {
            all.remove(&(name, kind));
        } else {
            all.insert((name, kind), records);
        }
        Ok(())
    }

    /// Removes the records of `kind` at `name`.
    pub fn clear(&self, name: &str, kind: RecordType) -> Result<(), String> {
        self.set(name, kind, Vec::new())
    }
}

#[async_trait]
impl ZoneSource for MemoryZones {
    async fn answer(&self, name: &Name, kind: RecordType) -> Answer {
        if !Self::lock(&self.zones)
            .iter()
            .any(|apex| apex.zone_of(name))
        {
            return Answer::Refused;
        }
        let all = Self::lock(&self.records);
        if let Some(records) = all.get(&(name.clone(), kind)) {
            return Answer::Records {
                records: records.clone(),
                soa: None,
            };
        }
        if all.keys().any(|(owner, _)| owner == name) {
            Answer::Records {
                records: Vec::new(),
                soa: None,
            }
        } else {
            Answer::NoName { soa: None }
        }
    }
}
