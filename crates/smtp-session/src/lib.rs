//! Inbound ESMTP for Sealpost: a server session over any async byte stream,
//! in the manner of Stalwart's, with commands parsed and DATA dot-unstuffed
//! by `smtp-proto`.
//!
//! The crate knows nothing of addresses, storage or sealing: the binary
//! answers [`Delivery::check_recipient`] for every `RCPT TO` and takes the
//! message in [`Delivery::deliver`]; the client is told 250 only after that
//! returned [`DeliveryOutcome::Accepted`].
//!
//! What the session does (RFC 5321, 1870, 2920, 3207, 6152, 6531, 2034):
//! - EHLO advertises PIPELINING, SIZE, 8BITMIME, SMTPUTF8,
//!   ENHANCEDSTATUSCODES, and STARTTLS when an acceptor is configured and the
//!   session is still plain text. Every 2xx/4xx/5xx reply after the greeting
//!   carries an enhanced status code.
//! - Limits: a command line of 512 octets (500 5.5.2, and the session goes
//!   on), a text line of 1000 octets in DATA (554 5.6.0 at the end of DATA),
//!   the message size (552 5.3.4 at `MAIL ... SIZE=` or at the end of DATA;
//!   the rest of an oversized message is read and dropped so the session
//!   stays in step), the accepted recipients per message (452 4.5.3), an idle
//!   timeout per read, a deadline from the connection to the first accepted
//!   MAIL ([`SmtpConfig::mail_deadline`]) and a total session time (421
//!   4.4.2, then close), and 50 failed commands per session (421 4.7.0,
//!   then close).
//! - Connections ([`serve`]): at most [`SmtpConfig::max_sessions`] sessions
//!   at once (over it: 421 4.3.2 and close), of which
//!   [`SmtpConfig::reserved_percent`] only for known senders: networks
//!   (IPv4 /24, IPv6 /48) a message was accepted from lately, remembered in
//!   a bounded set ([`SmtpConfig::known_senders`] networks for
//!   [`SmtpConfig::known_sender_for`]). Per client,
//!   [`SmtpConfig::max_sessions_per_ip`] sessions and
//!   [`SmtpConfig::connections_per_ip_per_minute`] new connections; per
//!   network, [`SmtpConfig::max_sessions_per_ipv4_24`] and
//!   [`SmtpConfig::max_sessions_per_ipv6_48`] sessions (421 4.7.0 and
//!   close); a client is its IPv4 address or its IPv6 /64. Each session is
//!   its own task with its own timeouts, so a slow client holds only its
//!   own connection.
//! - Memory: the DATA of all sessions sharing a [`DataMemory`] is bounded by
//!   it. A message reserves as it grows (what it holds, at most twice
//!   over); when what is left cannot cover the size given in `MAIL ...
//!   SIZE=` (or the first 64 KiB) DATA is answered 452 4.3.1, and a message
//!   that outgrows what is left is read to its end, dropped and answered 452
//!   4.3.1. The reservation is kept until the delivery returned.
//! - Spool ([`SmtpConfig::spool`]): past [`Spool::threshold`] a message goes
//!   on into a temporary file, sealed with ChaCha20-Poly1305 in 64 KiB
//!   chunks under a random key held only in memory (plaintext never reaches
//!   the disk), and a session holds 128 KiB while the rest arrives. At its
//!   end the message gives that back, waits (at most the idle timeout,
//!   polling) until the budget has room for its whole size with an eighth
//!   of the budget left free for other messages, is read back and
//!   delivered; no room: 452 4.3.1. The file
//!   is deleted once the delivery returned, or as soon as the message is
//!   refused. All spool files together stay within [`Spool::budget`]: a
//!   `MAIL ... SIZE=` (or DATA) it cannot cover now is answered 452 4.3.1,
//!   and a message that outgrows it is read to its end, its file deleted
//!   and answered 452 4.3.1; messages already spooled are untouched.
//!   [`check_spool_dir`] vets the directory at start-up.
//! - STARTTLS from PEM files: [`reloading_acceptor`] loads them again when
//!   they change, so a renewed certificate is used by new sessions without
//!   a restart while sessions already in TLS keep theirs.
//! - After STARTTLS the session starts over inside TLS with no state carried
//!   across (RFC 3207); bytes the client pipelined after STARTTLS in plain
//!   text are dropped.
//! - Logs carry counts and reply codes only: no addresses, no content.

mod io;
mod limits;
mod session;
mod spool;
mod tls;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

pub use limits::{ByteBudget, DataMemory};
use sealpost_metrics::names;
pub use spool::{Spool, SpoolDir, SpoolDirError, check_spool_dir};
pub use tls::{CERT_CHECK_INTERVAL, ReloadingCert, reloading_acceptor};
pub use tokio_rustls::TlsAcceptor;

/// Longest command line, CRLF included (RFC 5321 4.5.3.1.4).
pub const MAX_COMMAND_LINE: usize = 512;
/// Longest line of message text, CRLF included (RFC 5321 4.5.3.1.6). One
/// more octet is let through for a line that arrived dot-stuffed.
pub const MAX_TEXT_LINE: usize = 1000;
/// Failed commands (syntax, sequence, refused recipients) after which the
/// session is closed with 421 4.7.0.
pub const MAX_ERRORS: u32 = 50;

/// The binary's side of the session.
#[async_trait]
pub trait Delivery: Send + Sync {
    /// Asked once per `RCPT TO`, with the address as the client gave it
    /// (without angle brackets).
    async fn check_recipient(&self, address: &str) -> RecipientDecision;
    /// Called once per message with the accepted recipients and the raw
    /// bytes (dot-unstuffed, final CRLF kept). The client gets 250 only
    /// after [`DeliveryOutcome::Accepted`].
    async fn deliver(&self, envelope: &Envelope, data: &[u8]) -> DeliveryOutcome;
}

/// The answer to one `RCPT TO`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecipientDecision {
    /// 250 2.1.5.
    Accept,
    /// 250 2.1.5, and the ticket comes back with the message
    /// ([`Envelope::tickets`]): what RCPT learned need not be asked again
    /// at DATA.
    AcceptWith(Ticket),
    /// 550 5.1.1: no such address.
    UnknownAddress,
    /// 550 5.7.1 with the text: the address exists but takes no mail (no
    /// public key, account suspended, quota used up for good...).
    Refused(String),
    /// 452 4.2.2 with the text: try again later (quota window, storage
    /// busy...).
    TryLater(String),
}

/// What a [`Delivery`] learned about a recipient it accepted, kept by the
/// session with the recipient until the message is handed over. Opaque to
/// the session.
#[derive(Clone)]
pub struct Ticket(Arc<dyn std::any::Any + Send + Sync>);

impl Ticket {
    pub fn new<T: std::any::Any + Send + Sync>(value: T) -> Self {
        Self(Arc::new(value))
    }

    /// The value, if it is a `T`.
    pub fn get<T: std::any::Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ticket(..)")
    }
}

/// The same ticket, not an equal value: a ticket is compared by identity.
impl PartialEq for Ticket {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Ticket {}

/// The envelope of one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// Reverse-path without angle brackets; empty for the null sender `<>`.
    pub mail_from: String,
    /// Accepted recipients, as the client gave them, duplicates removed.
    pub recipients: Vec<String>,
    /// One per recipient, in the same order: the ticket its RCPT was
    /// accepted with ([`RecipientDecision::AcceptWith`]), if any.
    pub tickets: Vec<Option<Ticket>>,
    pub client_ip: IpAddr,
    /// The name the client gave in EHLO or HELO.
    pub helo: String,
}

/// What became of a message handed to [`Delivery::deliver`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// 250 2.0.0.
    Accepted,
    /// 451 4.3.0 with the text.
    TryLater(String),
    /// 554 5.6.0 with the text.
    Rejected(String),
    /// 552 5.3.4 with the text: over a limit of the service (MIME parts,
    /// nesting, header fields), so sending it again will not help.
    ExceedsLimits(String),
    /// 550 5.1.1 with the text: no recipient's mailbox exists any more (each
    /// was deleted after its RCPT was accepted).
    MailboxGone(String),
    /// 550 5.7.1 with the text: no recipient takes mail any more (account
    /// suspended, key removed after RCPT).
    RecipientsRefused(String),
}

/// Server settings.
#[derive(Clone)]
pub struct SmtpConfig {
    /// Our name in the greeting and the EHLO reply.
    pub hostname: String,
    /// Largest message accepted, in octets after dot-unstuffing; advertised
    /// as `SIZE`.
    pub max_message_size: usize,
    /// Accepted recipients per message.
    pub max_recipients: usize,
    /// Longest wait for the client's next bytes (and for a write to go out).
    pub idle_timeout: Duration,
    /// Longest session, STARTTLS included.
    pub session_timeout: Duration,
    /// Offers STARTTLS when set.
    pub tls: Option<TlsAcceptor>,
    /// Sessions at once over all clients ([`serve`] only).
    pub max_sessions: usize,
    /// Sessions at once from one client ([`serve`] only).
    pub max_sessions_per_ip: usize,
    /// Sessions at once from one IPv4 /24, all its clients together
    /// ([`serve`] only).
    pub max_sessions_per_ipv4_24: usize,
    /// Sessions at once from one IPv6 /48, all its /64s together
    /// ([`serve`] only).
    pub max_sessions_per_ipv6_48: usize,
    /// Percent of [`SmtpConfig::max_sessions`] (rounded down) kept for the
    /// networks of known senders ([`serve`] only).
    pub reserved_percent: u8,
    /// Networks remembered as known senders at most ([`serve`] only); 0
    /// remembers none.
    pub known_senders: usize,
    /// How long a network stays a known sender after a message from it
    /// was accepted ([`serve`] only).
    pub known_sender_for: Duration,
    /// Longest time from the connection to the first accepted MAIL; then
    /// 421 4.4.2 and close.
    pub mail_deadline: Duration,
    /// New connections a minute from one client, 0 for no limit ([`serve`] only).
    pub connections_per_ip_per_minute: u32,
    /// DATA bytes held at once by every session sharing it.
    pub data_memory: DataMemory,
    /// Spools messages past a threshold to encrypted temporary files when
    /// set; else every message is held in memory.
    pub spool: Option<Spool>,
}

impl SmtpConfig {
    /// Defaults: 50 MiB messages (room for an attachment over the 20 MB
    /// storage limit, base64 included), 100 recipients, 5 minutes idle
    /// (RFC 5321 4.5.3.2.7), 30 minutes per session, 60 seconds to the
    /// first MAIL, no TLS, 1,000 sessions (50 per client, 100 per IPv4 /24
    /// and per IPv6 /48, 600 new a minute per client, 10 % kept for the
    /// networks of senders whose mail was accepted in the last 7 days, up
    /// to 10,000 of them), 512 MiB of DATA in memory, no spool.
    pub fn new(hostname: impl Into<String>) -> Self {
        Self {
            hostname: hostname.into(),
            max_message_size: 50 * 1024 * 1024,
            max_recipients: 100,
            idle_timeout: Duration::from_secs(5 * 60),
            session_timeout: Duration::from_secs(30 * 60),
            tls: None,
            max_sessions: 1000,
            max_sessions_per_ip: 50,
            max_sessions_per_ipv4_24: 100,
            max_sessions_per_ipv6_48: 100,
            reserved_percent: 10,
            known_senders: 10_000,
            known_sender_for: Duration::from_secs(7 * 24 * 3600),
            mail_deadline: Duration::from_secs(60),
            connections_per_ip_per_minute: 600,
            data_memory: DataMemory::new(512 * 1024 * 1024),
            spool: None,
        }
    }
}

impl std::fmt::Debug for SmtpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpConfig")
            .field("hostname", &self.hostname)
            .field("max_message_size", &self.max_message_size)
            .field("max_recipients", &self.max_recipients)
            .field("idle_timeout", &self.idle_timeout)
            .field("session_timeout", &self.session_timeout)
            .field("tls", &self.tls.is_some())
            .field("max_sessions", &self.max_sessions)
            .field("max_sessions_per_ip", &self.max_sessions_per_ip)
            .field("max_sessions_per_ipv4_24", &self.max_sessions_per_ipv4_24)
            .field("max_sessions_per_ipv6_48", &self.max_sessions_per_ipv6_48)
            .field("reserved_percent", &self.reserved_percent)
            .field("known_senders", &self.known_senders)
            .field("known_sender_for", &self.known_sender_for)
            .field("mail_deadline", &self.mail_deadline)
            .field(
                "connections_per_ip_per_minute",
                &self.connections_per_ip_per_minute,
            )
            .field("data_memory", &self.data_memory.limit())
            .field("spool", &self.spool)
            .finish()
    }
}

/// Runs one SMTP session on `stream` until the client quits, the connection
/// drops or a timeout closes it. Errors are I/O errors of the stream (or of
/// the TLS handshake); protocol errors are answered on the wire instead.
pub async fn serve_session<S>(
    stream: S,
    client_ip: IpAddr,
    config: &SmtpConfig,
    delivery: &dyn Delivery,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    session::run(stream, client_ip, config, delivery, None).await
}

/// Accepts connections for ever, one task per connection. A failing client
/// or a failed `accept` is logged and never stops the loop; each session is
/// also cut off a little after `session_timeout` should it hang anywhere.
/// Connections over the session caps or the per-client rate are answered
/// 421 and closed (see the crate's documentation).
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: Arc<SmtpConfig>,
    delivery: Arc<dyn Delivery>,
) {
    serve_until(
        listener,
        config,
        delivery,
        std::future::pending(),
        Duration::MAX,
    )
    .await;
}

/// How a drain ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drained {
    /// Sessions still running at the drain deadline, cut off.
    pub cut: usize,
}

/// [`serve`] until `shutdown` completes, then drains: the listener is
/// closed at once (new connections are refused by the system), a session
/// waiting for a command is answered 421 4.3.2 and closed, and a message in
/// DATA is read to its end, delivered and answered before its session gets
/// the same 421 for its next command. Sessions still running after `drain`
/// are cut off. Returns when no session is left.
pub async fn serve_until(
    listener: tokio::net::TcpListener,
    config: Arc<SmtpConfig>,
    delivery: Arc<dyn Delivery>,
    shutdown: impl std::future::Future<Output = ()>,
    drain: Duration,
) -> Drained {
    let gate = limits::Gate::new(limits::GateLimits::of(&config));
    let delivery: Arc<dyn Delivery> = Arc::new(limits::KnownSenderDelivery {
        delivery,
        gate: Arc::clone(&gate),
    });
    let (draining, draining_seen) = tokio::sync::watch::channel(false);
    let mut sessions = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            // Reaps ended sessions so the set holds only live ones.
            Some(_) = sessions.join_next(), if !sessions.is_empty() => continue,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: back off, go on.
                tracing::warn!(kind = ?error.kind(), "smtp accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let client_ip = peer.ip().to_canonical();
        let admitted = match gate.admit(client_ip) {
            Ok(admitted) => admitted,
            Err(refusal) => {
                tracing::debug!(?refusal, "smtp connection refused");
                metrics::counter!(names::SMTP_REFUSALS, "reason" => refusal.reason()).increment(1);
                let reply = refusal.reply(&config.hostname);
                // Its own task, bounded in time: a client that does not read
                // cannot hold up the accept loop.
                sessions.spawn(async move {
                    let mut stream = stream;
                    let write = async {
                        stream.write_all(reply.as_bytes()).await?;
                        stream.shutdown().await
                    };
                    let _ = tokio::time::timeout(limits::REFUSAL_WRITE, write).await;
                });
                continue;
            }
        };
        let config = Arc::clone(&config);
        let delivery = Arc::clone(&delivery);
        let draining = draining_seen.clone();
        metrics::counter!(names::SMTP_SESSIONS).increment(1);
        let active = metrics::gauge!(names::SMTP_SESSIONS_ACTIVE);
        active.increment(1.0);
        sessions.spawn(async move {
            let _admitted = admitted;
            let _active = limits::Decrements(active);
            // Nagle would hold back the pipelined replies.
            let _ = stream.set_nodelay(true);
            let hard_limit = config
                .session_timeout
                .saturating_add(config.idle_timeout)
                .saturating_add(Duration::from_secs(30));
            let session = session::run(
                stream,
                client_ip,
                &config,
                delivery.as_ref(),
                Some(draining),
            );
            match tokio::time::timeout(hard_limit, session).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::debug!(kind = ?error.kind(), "smtp session i/o error"),
                Err(_) => tracing::debug!("smtp session cut off at the hard time limit"),
            }
        });
    }
    // New connections are refused from here on.
    drop(listener);
    let _ = draining.send(true);
    tracing::info!(sessions = sessions.len(), "smtp draining");
    let finished = tokio::time::timeout(drain, async {
        while sessions.join_next().await.is_some() {}
    })
    .await;
    let cut = match finished {
        Ok(()) => 0,
        Err(_) => {
            let cut = sessions.len();
            tracing::warn!(cut, "smtp drain deadline passed; cutting the sessions left");
            sessions.shutdown().await;
            cut
        }
    };
    Drained { cut }
}
