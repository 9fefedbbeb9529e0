//! The session state machine.

use std::fmt::Write as _;
use std::io;
use std::net::IpAddr;

use smtp_proto::request::receiver::{DataReceiver, DummyDataReceiver};
use smtp_proto::{
    Error as ParseError, MAIL_BODY_BINARYMIME, MAIL_REQUIRETLS, MailFrom, RcptTo, Request,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use crate::io::{Conn, Filled};
use crate::limits::Reservation;
use crate::spool::{SpoolWriter, Spooled};
use crate::{
    Delivery, DeliveryOutcome, Envelope, MAX_COMMAND_LINE, MAX_ERRORS, MAX_TEXT_LINE,
    RecipientDecision, SmtpConfig,
};

/// Longest text taken from a hook into a reply.
const MAX_REPLY_TEXT: usize = 200;
/// What a message reserves of the DATA budget at first (or its declared
/// `SIZE`), and at least what it reserves more each time it outgrows it.
const DATA_STEP: usize = 64 * 1024;
/// What a message being spooled keeps reserved (and in memory) while it
/// arrives: the part of a chunk not written yet and the last read.
const SPOOLING_BUFFER: usize = 2 * crate::spool::CHUNK;
/// The share of the DATA budget a spooled message waiting to be delivered
/// leaves free (one eighth), so that small messages still find room at
/// DATA while large ones are delivered.
const HEADROOM_DIVISOR: usize = 8;
/// How often a spooled message waiting for memory to be delivered looks again.
const MEMORY_POLL: std::time::Duration = std::time::Duration::from_millis(20);

pub(crate) async fn run<S>(
    stream: S,
    client_ip: IpAddr,
    config: &SmtpConfig,
    delivery: &dyn Delivery,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let deadline = Instant::now() + config.session_timeout;
    let mut stats = Stats::default();

    let mut plain = Session::new(stream, client_ip, config, delivery, false, deadline);
    plain
        .conn
        .queue(format!("220 {} ESMTP Sealpost\r\n", config.hostname).as_bytes());
    let end = plain.serve(&mut stats).await;
    let end = match (end, &config.tls) {
        (Ok(End::StartTls), Some(acceptor)) => {
            // The 220 goes out in plain text before the handshake.
            plain.conn.flush().await?;
            let stream = plain.conn.into_stream();
            let handshake = acceptor.accept(stream);
            let wait = config
                .idle_timeout
                .min(deadline.saturating_duration_since(Instant::now()));
            match tokio::time::timeout(wait, handshake).await {
                Ok(Ok(tls)) => {
                    stats.tls = true;
                    // RFC 3207: nothing from before the handshake is kept;
                    // the client starts over with EHLO.
                    let mut secure = Session::new(tls, client_ip, config, delivery, true, deadline);
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

/// One mail transaction, from MAIL to the end of DATA (or RSET).
struct Transaction {
    mail_from: String,
    recipients: Vec<String>,
    /// Whether any RCPT was tried, to tell "no RCPT yet" (503) from "no
    /// valid recipient" (554) at DATA.
    rcpt_tried: bool,
    /// `SIZE=` of MAIL, 0 when not given.
    declared_size: usize,
}

/// A command line as read off the wire.
enum Line {
    Command(Vec<u8>),
    TooLong,
    Closed,
    Timeout(Filled),
}

/// How a DATA section ended.
enum Body {
    Complete(Vec<u8>),
    /// Complete, in an encrypted spool file (past [`crate::Spool::threshold`]).
    Spooled(Box<Spooled>),
    TooBig,
    LineTooLong,
    /// The DATA budget could not cover the message as it grew.
    NoMemory,
    Closed,
    Timeout(Filled),
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
    fn new(
        stream: S,
        client_ip: IpAddr,
        config: &'a SmtpConfig,
        delivery: &'a dyn Delivery,
        tls: bool,
        deadline: Instant,
    ) -> Self {
        Self {
            conn: Conn::new(stream, config.idle_timeout, deadline),
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
                Line::Timeout(kind) => {
                    self.timed_out(kind, stats);
                    return Ok(End::Closed);
                }
            };
            stats.commands = stats.commands.saturating_add(1);
            let request = Request::parse(&mut line.iter()).map(Request::into_owned);
            let end = match request {
                // smtp-proto reads both `<>` and `<postmaster>` as the empty
                // address: only the second is a recipient (RFC 5321 4.5.1).
                Ok(Request::Rcpt { to }) if to.address.is_empty() => {
                    if contains_ignore_case(&line, b"<postmaster>") {
                        let to = RcptTo {
                            address: "postmaster".to_owned(),
                            ..to
                        };
                        self.rcpt(to, stats).await;
                    } else {
                        self.error(stats, 501, "5.1.3", "Bad recipient address syntax");
                    }
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
            match self.conn.fill().await? {
                Filled::Data => {}
                Filled::Eof => return Ok(Line::Closed),
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
            Request::Ehlo { host } => {
                self.helo = Some(host);
                self.transaction = None;
                let reply = self.ehlo_reply();
                self.conn.queue(reply.as_bytes());
                stats.last_code = 250;
            }
            Request::Helo { host } => {
                self.helo = Some(host);
                self.transaction = None;
                let reply = format!("250 {}\r\n", self.config.hostname);
                self.conn.queue(reply.as_bytes());
                stats.last_code = 250;
            }
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

    fn ehlo_reply(&self) -> String {
        let mut lines = vec![
            self.config.hostname.clone(),
            "PIPELINING".to_owned(),
            format!("SIZE {}", self.config.max_message_size),
            "8BITMIME".to_owned(),
            "SMTPUTF8".to_owned(),
            "ENHANCEDSTATUSCODES".to_owned(),
        ];
        if self.config.tls.is_some() && !self.tls {
            lines.push("STARTTLS".to_owned());
        }
        let mut reply = String::new();
        let last = lines.len().saturating_sub(1);
        for (i, line) in lines.iter().enumerate() {
            let sep = if i == last { ' ' } else { '-' };
            let _ = write!(reply, "250{sep}{line}\r\n");
        }
        reply
    }

    fn mail(&mut self, from: MailFrom<String>, stats: &mut Stats) {
        if self.helo.is_none() {
            return self.error(stats, 503, "5.5.1", "Send EHLO or HELO first");
        }
        if self.transaction.is_some() {
            return self.error(stats, 503, "5.5.1", "Nested MAIL command");
        }
        if from.flags & MAIL_BODY_BINARYMIME != 0 {
            return self.error(stats, 555, "5.5.4", "BODY=BINARYMIME not supported");
        }
        if from.flags & MAIL_REQUIRETLS != 0 || from.hold_for != 0 || from.hold_until != 0 {
            return self.error(stats, 555, "5.5.4", "Unsupported MAIL parameter");
        }
        if from.size > self.config.max_message_size {
            return self.error(stats, 552, "5.3.4", "Message size exceeds fixed maximum");
        }
        self.transaction = Some(Transaction {
            mail_from: from.address,
            recipients: Vec::new(),
            rcpt_tried: false,
            declared_size: from.size,
        });
        self.reply(stats, 250, "2.1.0", "Sender OK");
    }

    async fn rcpt(&mut self, to: RcptTo<String>, stats: &mut Stats) {
        let Some(transaction) = self.transaction.as_mut() else {
            return self.error(stats, 503, "5.5.1", "Send MAIL first");
        };
        transaction.rcpt_tried = true;
        let address = to.address;
        if transaction
            .recipients
            .iter()
            .any(|known| same_address(known, &address))
        {
            return self.reply(stats, 250, "2.1.5", "Recipient OK");
        }
        if transaction.recipients.len() >= self.config.max_recipients {
            return self.reply(stats, 452, "4.5.3", "Too many recipients");
        }
        match self.delivery.check_recipient(&address).await {
            RecipientDecision::Accept => {
                if let Some(transaction) = self.transaction.as_mut() {
                    transaction.recipients.push(address);
                }
                stats.recipients_accepted = stats.recipients_accepted.saturating_add(1);
                self.reply(stats, 250, "2.1.5", "Recipient OK");
            }
            RecipientDecision::UnknownAddress => {
                stats.recipients_refused = stats.recipients_refused.saturating_add(1);
                self.error(stats, 550, "5.1.1", "No such mailbox");
            }
            RecipientDecision::Refused(text) => {
                stats.recipients_refused = stats.recipients_refused.saturating_add(1);
                self.error(stats, 550, "5.7.1", &clean(&text, "Recipient refused"));
            }
            RecipientDecision::TryLater(text) => {
                stats.recipients_refused = stats.recipients_refused.saturating_add(1);
                self.reply(stats, 452, "4.2.2", &clean(&text, "Try again later"));
            }
        }
    }

    async fn data(&mut self, stats: &mut Stats) -> io::Result<Option<End>> {
        let Some(transaction) = self.transaction.as_ref() else {
            self.error(stats, 503, "5.5.1", "Send MAIL first");
            return Ok(None);
        };
        if transaction.recipients.is_empty() {
            if transaction.rcpt_tried {
                self.error(stats, 554, "5.5.1", "No valid recipients");
            } else {
                self.error(stats, 503, "5.5.1", "Send RCPT first");
            }
            return Ok(None);
        }
        // A first step of memory for the message; more is reserved as it
        // grows (see `read_body`). A declared size the budget cannot cover
        // now is refused at once, but not reserved: a client trickling its
        // data holds only what it sent.
        // A message that will be spooled needs memory now only for what it
        // keeps in memory, and its whole size later, when it is delivered.
        let mut reservation = self.config.data_memory.reservation();
        let first = DATA_STEP.min(self.config.max_message_size.saturating_add(1));
        // Larger than the budget (less the headroom a spooled message
        // leaves, see `wait_for_memory`) could ever hold: refused now.
        let memory = &self.config.data_memory;
        let (needed_now, most) = match &self.config.spool {
            Some(spool) => (
                transaction.declared_size.min(spool.threshold),
                memory.limit() - memory.limit() / HEADROOM_DIVISOR,
            ),
            None => (transaction.declared_size, memory.limit()),
        };
        if memory.available() < needed_now
            || most < transaction.declared_size
            || !reservation.grow_to(first)
        {
            stats.messages_refused = stats.messages_refused.saturating_add(1);
            self.reply(
                stats,
                452,
                "4.3.1",
                "Insufficient system storage, try again later",
            );
            return Ok(None);
        }
        self.conn
            .queue(b"354 Start mail input; end with <CRLF>.<CRLF>\r\n");
        stats.last_code = 354;

        let body = self.read_body(&mut reservation).await?;
        let transaction = self.transaction.take();
        // Held until the delivery was answered, then deleted.
        let mut spooled = None;
        let data = match body {
            Body::Complete(data) => data,
            Body::Spooled(mut file) => {
                // Its memory now is its whole size: what it held while it
                // arrived goes back first, so no session waits holding any.
                reservation = self.config.data_memory.reservation();
                if !self.wait_for_memory(&mut reservation, file.len()).await {
                    stats.messages_refused = stats.messages_refused.saturating_add(1);
                    self.reply(
                        stats,
                        452,
                        "4.3.1",
                        "Insufficient system storage, try again later",
                    );
                    return Ok(None);
                }
                match file.read().await {
                    Ok(data) => {
                        spooled = Some(file);
                        data
                    }
                    Err(error) => {
                        tracing::warn!(kind = ?error.kind(), "reading a spooled message back failed");
                        stats.messages_refused = stats.messages_refused.saturating_add(1);
                        self.reply(stats, 451, "4.3.0", "Temporary failure, try again later");
                        return Ok(None);
                    }
                }
            }
            Body::TooBig => {
                stats.messages_refused = stats.messages_refused.saturating_add(1);
                self.reply(stats, 552, "5.3.4", "Message size exceeds fixed maximum");
                return Ok(None);
            }
            Body::LineTooLong => {
                stats.messages_refused = stats.messages_refused.saturating_add(1);
                self.reply(
                    stats,
                    554,
                    "5.6.0",
                    "Message has a line longer than 1000 octets",
                );
                return Ok(None);
            }
            Body::NoMemory => {
                stats.messages_refused = stats.messages_refused.saturating_add(1);
                self.reply(
                    stats,
                    452,
                    "4.3.1",
                    "Insufficient system storage, try again later",
                );
                return Ok(None);
            }
            Body::Closed => return Ok(Some(End::Closed)),
            Body::Timeout(kind) => {
                self.timed_out(kind, stats);
                return Ok(Some(End::Closed));
            }
        };
        let Some(transaction) = transaction else {
            return Ok(None);
        };
        let envelope = Envelope {
            mail_from: transaction.mail_from,
            recipients: transaction.recipients,
            client_ip: self.client_ip,
            helo: self.helo.clone().unwrap_or_default(),
        };
        match self.delivery.deliver(&envelope, &data).await {
            DeliveryOutcome::Accepted => {
                stats.messages_accepted = stats.messages_accepted.saturating_add(1);
                stats.bytes_accepted = stats
                    .bytes_accepted
                    .saturating_add(u64::try_from(data.len()).unwrap_or(u64::MAX));
                self.reply(stats, 250, "2.0.0", "Message accepted");
            }
            DeliveryOutcome::TryLater(text) => {
                stats.messages_refused = stats.messages_refused.saturating_add(1);
                self.reply(stats, 451, "4.3.0", &clean(&text, "Try again later"));
            }
            DeliveryOutcome::Rejected(text) => {
                stats.messages_refused = stats.messages_refused.saturating_add(1);
                self.reply(stats, 554, "5.6.0", &clean(&text, "Message rejected"));
            }
            DeliveryOutcome::ExceedsLimits(text) => {
                stats.messages_refused = stats.messages_refused.saturating_add(1);
                self.reply(
                    stats,
                    552,
                    "5.3.4",
                    &clean(&text, "Message exceeds a limit of this service"),
                );
            }
            DeliveryOutcome::MailboxGone(text) => {
                stats.messages_refused = stats.messages_refused.saturating_add(1);
                self.reply(stats, 550, "5.1.1", &clean(&text, "No such mailbox"));
            }
            DeliveryOutcome::RecipientsRefused(text) => {
                stats.messages_refused = stats.messages_refused.saturating_add(1);
                self.reply(stats, 550, "5.7.1", &clean(&text, "Recipient refused"));
            }
        }
        // The message's memory is given back only now: delivery used it.
        drop(data);
        drop(reservation);
        drop(spooled);
        Ok(None)
    }

    /// Grows `reservation` to `bytes` once that leaves an eighth of the
    /// budget free, waiting for other sessions to give memory back, at most
    /// the idle timeout (and never past the session's end). Polls rather
    /// than queueing, and leaves that headroom, so large messages waiting
    /// for their turn never hold small ones back. False when the budget
    /// could never hold it or the wait ran out.
    async fn wait_for_memory(&mut self, reservation: &mut Reservation, bytes: usize) -> bool {
        let memory = &self.config.data_memory;
        let headroom = memory.limit() / HEADROOM_DIVISOR;
        if bytes.saturating_add(headroom) > memory.limit() {
            return false;
        }
        let until = Instant::now() + self.config.idle_timeout.min(self.conn.time_left());
        loop {
            if memory.available() >= bytes.saturating_add(headroom) && reservation.grow_to(bytes) {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(MEMORY_POLL).await;
        }
    }

    /// Reads the message up to `CRLF.CRLF`, dot-unstuffed by smtp-proto.
    /// Past the size limit, after an over-long line, or when `reservation`
    /// cannot grow with the message, the rest is read and dropped so the
    /// next command is read in step.
    async fn read_body(&mut self, reservation: &mut Reservation) -> io::Result<Body> {
        let limit = self.config.max_message_size;
        let mut receiver = DataReceiver::new();
        // The receiver only sees a dot as a line start after a CRLF: feed it
        // one so a message starting with "." (or empty) is read right.
        let mut primer = Vec::with_capacity(2);
        receiver.ingest(&mut b"\r\n".iter(), &mut primer);

        let mut message = Vec::with_capacity(reservation.bytes().min(limit.saturating_add(1)));
        // Past the spool threshold, full chunks leave `message` for the file.
        let mut spool: Option<SpoolWriter> = None;
        let mut skipper: Option<DummyDataReceiver> = None;
        let mut too_big = false;
        let mut no_memory = false;
        let mut line_too_long = false;
        let mut line_len = 0usize;

        loop {
            let unread = self.conn.unread();
            let mut bytes = unread.iter();
            let done = match skipper.as_mut() {
                Some(skipper) => skipper.ingest(&mut bytes),
                None => receiver.ingest(&mut bytes, &mut message),
            };
            let consumed = unread.len() - bytes.as_slice().len();
            if !line_too_long {
                line_too_long = long_line(&unread[..consumed], &mut line_len);
            }
            self.conn.consume(consumed);

            if skipper.is_none()
                && !line_too_long
                && let Some(config) = &self.config.spool
                && (spool.is_some() || message.len() > config.threshold)
            {
                if spool.is_none() {
                    match SpoolWriter::create(config).await {
                        Ok(writer) => spool = Some(writer),
                        Err(error) => {
                            tracing::warn!(kind = ?error.kind(), "creating a spool file failed");
                            no_memory = true;
                        }
                    }
                }
                if let Some(writer) = spool.as_mut() {
                    if let Err(error) = writer.write_full_chunks(&mut message).await {
                        tracing::warn!(kind = ?error.kind(), "writing a spool file failed");
                        no_memory = true;
                    }
                    // What is left in memory is less than a chunk plus
                    // what one read brought: give the rest back.
                    message.shrink_to(SPOOLING_BUFFER);
                    reservation.shrink_to(SPOOLING_BUFFER);
                }
            }
            let total = spool
                .as_ref()
                .map_or(0, SpoolWriter::len)
                .saturating_add(message.len());
            if skipper.is_none() && total <= limit && message.len() > reservation.bytes() {
                // Grown past its reservation: ask for as much again (at
                // least a step), else for just what it holds.
                let wanted = message
                    .len()
                    .saturating_add(reservation.bytes().max(DATA_STEP))
                    .min(limit.saturating_add(1));
                if reservation.grow_to(wanted) {
                    message.reserve_exact(wanted.saturating_sub(message.len()));
                } else if !reservation.grow_to(message.len()) {
                    no_memory = true;
                }
            }
            if skipper.is_none() && (line_too_long || no_memory || total > limit) {
                too_big = total > limit;
                skipper = Some(DummyDataReceiver::new_data(&receiver));
                message = Vec::new();
                // Refused: its spool file goes at once.
                spool = None;
            }
            if done {
                if too_big {
                    return Ok(Body::TooBig);
                } else if no_memory {
                    return Ok(Body::NoMemory);
                } else if line_too_long {
                    return Ok(Body::LineTooLong);
                }
                let Some(writer) = spool else {
                    return Ok(Body::Complete(message));
                };
                return Ok(match writer.finish(&message).await {
                    Ok(spooled) => Body::Spooled(Box::new(spooled)),
                    Err(error) => {
                        tracing::warn!(kind = ?error.kind(), "writing a spool file failed");
                        Body::NoMemory
                    }
                });
            }
            match self.conn.fill().await? {
                Filled::Data => {}
                Filled::Eof => return Ok(Body::Closed),
                kind => return Ok(Body::Timeout(kind)),
            }
        }
    }

    fn starttls(&mut self, stats: &mut Stats) -> Option<End> {
        if self.tls {
            self.error(stats, 503, "5.5.1", "TLS already active");
            return None;
        }
        if self.config.tls.is_none() {
            self.error(stats, 502, "5.5.1", "Command not implemented");
            return None;
        }
        // Anything pipelined after STARTTLS came in plain text and must not
        // be read as if it came over TLS (CVE-2011-0411).
        self.conn.discard_unread();
        self.reply(stats, 220, "2.0.0", "Ready to start TLS");
        Some(End::StartTls)
    }

    fn parse_error(&mut self, error: ParseError, stats: &mut Stats) {
        match error {
            ParseError::UnknownCommand => {
                self.error(stats, 500, "5.5.1", "Command unrecognized");
            }
            ParseError::InvalidSenderAddress => {
                self.error(stats, 501, "5.1.7", "Bad sender address syntax");
            }
            ParseError::InvalidRecipientAddress => {
                self.error(stats, 501, "5.1.3", "Bad recipient address syntax");
            }
            ParseError::SyntaxError { syntax } => {
                self.error(stats, 501, "5.5.2", &format!("Syntax: {syntax}"));
            }
            ParseError::InvalidParameter { param } => {
                self.error(stats, 501, "5.5.4", &format!("Invalid {param} parameter"));
            }
            ParseError::UnsupportedParameter { .. } => {
                self.error(stats, 555, "5.5.4", "Unsupported parameter");
            }
            ParseError::ResponseTooLong => self.error(stats, 500, "5.5.2", "Line too long"),
            ParseError::NeedsMoreData { .. } | ParseError::InvalidResponse { .. } => {
                self.error(stats, 500, "5.5.2", "Syntax error");
            }
        }
    }

    fn timed_out(&mut self, kind: Filled, stats: &mut Stats) {
        let text = if kind == Filled::SessionTimeout {
            "Session time limit exceeded, closing connection"
        } else {
            "Idle timeout, closing connection"
        };
        self.reply(stats, 421, "4.4.2", text);
    }

    fn too_many_errors(&mut self, stats: &mut Stats) -> io::Result<End> {
        self.reply(stats, 421, "4.7.0", "Too many errors, closing connection");
        Ok(End::Closed)
    }

    fn reply(&mut self, stats: &mut Stats, code: u16, status: &str, text: &str) {
        let line = format!("{code} {status} {text}\r\n");
        self.conn.queue(line.as_bytes());
        stats.last_code = code;
        tracing::trace!(code, "smtp reply");
    }

    /// A reply that counts toward [`MAX_ERRORS`].
    fn error(&mut self, stats: &mut Stats, code: u16, status: &str, text: &str) {
        stats.errors = stats.errors.saturating_add(1);
        self.reply(stats, code, status, text);
    }
}

/// Tracks text line lengths over the raw DATA bytes; true once a line is
/// longer than [`MAX_TEXT_LINE`] (plus one for a stuffed dot).
fn long_line(bytes: &[u8], line_len: &mut usize) -> bool {
    // Octets before the LF, CR included: 999 for a full-length line.
    const LIMIT: usize = MAX_TEXT_LINE;
    let mut segments = bytes.split(|&b| b == b'\n');
    if let Some(first) = segments.next() {
        *line_len = line_len.saturating_add(first.len());
        if *line_len > LIMIT {
            return true;
        }
    }
    for segment in segments {
        *line_len = segment.len();
        if *line_len > LIMIT {
            return true;
        }
    }
    false
}

fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle))
}

/// Same mailbox: local part as given, domain without regard to case.
fn same_address(a: &str, b: &str) -> bool {
    match (a.rsplit_once('@'), b.rsplit_once('@')) {
        (Some((a_local, a_domain)), Some((b_local, b_domain))) => {
            a_local == b_local && a_domain.eq_ignore_ascii_case(b_domain)
        }
        _ => a.eq_ignore_ascii_case(b),
    }
}

/// Hook text made safe for a reply line: one line, printable, bounded.
fn clean(text: &str, fallback: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_REPLY_TEXT)
        .collect();
    out = out.trim().to_owned();
    if out.is_empty() {
        fallback.to_owned()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_length_tracking_spans_chunks() {
        let mut len = 0;
        assert!(!long_line(&[b'a'; 600], &mut len));
        assert!(!long_line(&[b'a'; 400], &mut len));
        assert!(long_line(b"a\r\n", &mut len));

        let mut len = 0;
        assert!(!long_line(&[b'a'; 998], &mut len));
        assert!(!long_line(b"\r\n", &mut len));
        assert!(!long_line(b"short\r\n.", &mut len));
    }

    #[test]
    fn addresses_match_domain_case_insensitively() {
        assert!(same_address("Bob@Example.COM", "Bob@example.com"));
        assert!(!same_address("bob@example.com", "Bob@example.com"));
        assert!(same_address("postmaster", "PostMaster"));
    }

    #[test]
    fn hook_text_is_one_bounded_line() {
        assert_eq!(clean("quota\r\n250 fake", "x"), "quota  250 fake");
        assert_eq!(clean("  ", "fallback"), "fallback");
        assert_eq!(clean(&"y".repeat(500), "x").len(), MAX_REPLY_TEXT);
    }
}
