//! The session state machine: one connection from the greeting to its
//! close, the STARTTLS upgrade between two sessions, the command loop and
//! its dispatch. Each phase lives in a module of its own: `greeting`
//! (EHLO, HELO, STARTTLS), `envelope` (MAIL, RCPT), `data` (DATA, its
//! memory and the delivery), `body` (reading the message), `replies`
//! (reply lines, errors, timeouts).

mod body;
mod data;
mod envelope;
mod greeting;
mod replies;

use std::io;
use std::net::IpAddr;

use smtp_proto::Request;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::io::{Conn, Filled};
use crate::{Delivery, MAX_COMMAND_LINE, MAX_ERRORS, SmtpConfig};
use envelope::Transaction;

pub(crate) async fn run<S>(
    stream: S,
    client_ip: IpAddr,
    config: &SmtpConfig,
    delivery: &dyn Delivery,
    shutdown: Option<watch::Receiver<bool>>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let started = Instant::now();
    let deadline = started + config.session_timeout;
    let mail_by = started.checked_add(config.mail_deadline);
    let mut stats = Stats::default();

    let mut plain = Session::new(
        stream, client_ip, config, delivery, false, deadline, mail_by, shutdown,
    );
    plain
        .conn
        .queue(format!("220 {} ESMTP Sealpost\r\n", config.hostname).as_bytes());
    let end = plain.serve(&mut stats).await;
    let end = match (end, &config.tls) {
        (Ok(End::StartTls), Some(acceptor)) => {
            // The 220 goes out in plain text before the handshake.
            plain.conn.flush().await?;
            // A MAIL before STARTTLS met the deadline; else it still runs.
            let mail_by = plain.conn.mail_by();
            let shutdown = plain.conn.shutdown();
            let stream = plain.conn.into_stream();
            let handshake = acceptor.accept(stream);
            let until = mail_by.map_or(deadline, |by| by.min(deadline));
            let wait = config
                .idle_timeout
                .min(until.saturating_duration_since(Instant::now()));
            match tokio::time::timeout(wait, handshake).await {
                Ok(Ok(tls)) => {
                    stats.tls = true;
                    // RFC 3207: nothing from before the handshake is kept;
                    // the client starts over with EHLO.
                    let mut secure = Session::new(
                        tls, client_ip, config, delivery, true, deadline, mail_by, shutdown,
                    );
                    let end = secure.serve(&mut stats).await;
                    secure.conn.close().await;
                    end
                }
                Ok(Err(error)) => Err(error),
                Err(_) => Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "smtp tls handshake timed out",
                )),
            }
        }
        (end, _) => {
            plain.conn.close().await;
            end
        }
    };
    stats.log(&end);
    end.map(|_| ())
}

/// How a session's command loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// QUIT, disconnect, timeout or too many errors: the connection is done.
    Closed,
    /// 220 sent to STARTTLS: the handshake comes next.
    StartTls,
}

/// Counts for the closing log line; never addresses or content.
#[derive(Debug, Default)]
struct Stats {
    commands: u32,
    errors: u32,
    recipients_accepted: u32,
    recipients_refused: u32,
    messages_accepted: u32,
    messages_refused: u32,
    bytes_accepted: u64,
    tls: bool,
    last_code: u16,
}

impl Stats {
    fn log(&self, end: &io::Result<End>) {
        tracing::debug!(
            commands = self.commands,
            errors = self.errors,
            recipients_accepted = self.recipients_accepted,
            recipients_refused = self.recipients_refused,
            messages_accepted = self.messages_accepted,
            messages_refused = self.messages_refused,
            bytes_accepted = self.bytes_accepted,
            tls = self.tls,
            last_code = self.last_code,
            io_error = end.as_ref().err().map(|e| format!("{:?}", e.kind())),
            "smtp session closed"
        );
    }
}

/// A command line as read off the wire.
enum Line {
    Command(Vec<u8>),
    TooLong,
    Closed,
    Timeout(Filled),
    /// The server drains: no further command is taken.
    ShuttingDown,
}

struct Session<'a, S> {
    conn: Conn<S>,
    client_ip: IpAddr,
    config: &'a SmtpConfig,
    delivery: &'a dyn Delivery,
    tls: bool,
    helo: Option<String>,
    transaction: Option<Transaction>,
    /// Inside an over-long command line, dropping bytes up to its LF.
    skipping_line: bool,
}

impl<'a, S> Session<'a, S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    #[allow(clippy::too_many_arguments, reason = "one call per phase, each named")]
    fn new(
        stream: S,
        client_ip: IpAddr,
        config: &'a SmtpConfig,
        delivery: &'a dyn Delivery,
        tls: bool,
        deadline: Instant,
        mail_by: Option<Instant>,
        shutdown: Option<watch::Receiver<bool>>,
    ) -> Self {
        Self {
            conn: Conn::new(stream, config.idle_timeout, deadline, mail_by, shutdown),
            client_ip,
            config,
            delivery,
            tls,
            helo: None,
            transaction: None,
            skipping_line: false,
        }
    }

    async fn serve(&mut self, stats: &mut Stats) -> io::Result<End> {
        loop {
            let line = match self.read_line().await? {
                Line::Command(line) => line,
                Line::TooLong => {
                    self.error(stats, 500, "5.5.2", "Line too long");
                    if stats.errors >= MAX_ERRORS {
                        return self.too_many_errors(stats);
                    }
                    continue;
                }
                Line::Closed => return Ok(End::Closed),
                Line::ShuttingDown => {
                    // RFC 5321 3.8: 421 may be sent at any point and the
                    // connection closed; a message in DATA was finished first.
                    self.reply(
                        stats,
                        421,
                        "4.3.2",
                        "Service shutting down, closing connection",
                    );
                    return Ok(End::Closed);
                }
                Line::Timeout(kind) => {
                    self.timed_out(kind, stats);
                    return Ok(End::Closed);
                }
            };
            stats.commands = stats.commands.saturating_add(1);
            let request = Request::parse(&mut line.iter()).map(Request::into_owned);
            let end = match request {
                Ok(Request::Rcpt { to }) if to.address.is_empty() => {
                    self.rcpt_without_address(&line, to, stats).await;
                    None
                }
                Ok(request) => self.handle(request, stats).await?,
                Err(error) => {
                    self.parse_error(error, stats);
                    None
                }
            };
            if let Some(end) = end {
                return Ok(end);
            }
            if stats.errors >= MAX_ERRORS {
                return self.too_many_errors(stats);
            }
        }
    }

    /// Next command line, LF included, at most [`MAX_COMMAND_LINE`] octets.
    async fn read_line(&mut self) -> io::Result<Line> {
        if self.conn.shutting_down() {
            return Ok(Line::ShuttingDown);
        }
        loop {
            let unread = self.conn.unread();
            let newline = unread.iter().position(|&b| b == b'\n');
            if self.skipping_line {
                match newline {
                    Some(at) => {
                        self.conn.consume(at + 1);
                        self.skipping_line = false;
                        return Ok(Line::TooLong);
                    }
                    None => {
                        let all = unread.len();
                        self.conn.consume(all);
                    }
                }
            } else {
                match newline {
                    Some(at) if at < MAX_COMMAND_LINE => {
                        let line = unread[..=at].to_vec();
                        self.conn.consume(at + 1);
                        return Ok(Line::Command(line));
                    }
                    Some(at) => {
                        self.conn.consume(at + 1);
                        return Ok(Line::TooLong);
                    }
                    // A line already this long cannot end in time: drop it.
                    None if unread.len() >= MAX_COMMAND_LINE => {
                        let all = unread.len();
                        self.conn.consume(all);
                        self.skipping_line = true;
                    }
                    None => {}
                }
            }
            match self.conn.fill_command().await? {
                Filled::Data => {}
                Filled::Eof => return Ok(Line::Closed),
                Filled::ShuttingDown => return Ok(Line::ShuttingDown),
                kind => return Ok(Line::Timeout(kind)),
            }
        }
    }

    async fn handle(
        &mut self,
        request: Request<String>,
        stats: &mut Stats,
    ) -> io::Result<Option<End>> {
        match request {
            Request::Ehlo { host } => self.ehlo(host, stats),
            Request::Helo { host } => self.helo(host, stats),
            Request::Mail { from } => self.mail(from, stats),
            Request::Rcpt { to } => self.rcpt(to, stats).await,
            Request::Data => return self.data(stats).await,
            Request::Rset => {
                self.transaction = None;
                self.reply(stats, 250, "2.0.0", "Ok");
            }
            Request::Noop { .. } => self.reply(stats, 250, "2.0.0", "Ok"),
            Request::Vrfy { .. } => self.reply(
                stats,
                252,
                "2.5.0",
                "Cannot VRFY user, but will accept message and attempt delivery",
            ),
            Request::Quit => {
                self.reply(stats, 221, "2.0.0", "Bye");
                return Ok(Some(End::Closed));
            }
            Request::StartTls => return Ok(self.starttls(stats)),
            Request::Lhlo { .. }
            | Request::Bdat { .. }
            | Request::Auth { .. }
            | Request::Expn { .. }
            | Request::Help { .. }
            | Request::Etrn { .. }
            | Request::Atrn { .. }
            | Request::Burl { .. } => {
                self.error(stats, 502, "5.5.1", "Command not implemented");
            }
        }
        Ok(None)
    }
}
