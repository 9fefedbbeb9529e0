//! The session's byte stream: an input buffer, batched replies, and a
//! timeout on every read and write.

use std::io;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;
use tokio::time::{Instant, timeout};

const READ_CHUNK: usize = 16 * 1024;

/// What a read brought.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Filled {
    Data,
    Eof,
    IdleTimeout,
    SessionTimeout,
    /// No transaction started by the deadline for the first MAIL.
    MailTimeout,
    /// The server is draining: no new command is taken
    /// ([`Conn::fill_command`] only).
    ShuttingDown,
}

pub(crate) struct Conn<S> {
    pub(crate) stream: S,
    /// Unread input is `input[pos..]`.
    input: Vec<u8>,
    pos: usize,
    /// Replies not yet written: flushed before every read (RFC 2920: the
    /// server may batch replies but must send them before it waits).
    output: Vec<u8>,
    idle: Duration,
    deadline: Instant,
    /// The first MAIL is due by then; `None` once one was accepted.
    mail_by: Option<Instant>,
    /// Turns true when the server drains; `None`: it never does.
    shutdown: Option<watch::Receiver<bool>>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    pub(crate) fn new(
        stream: S,
        idle: Duration,
        deadline: Instant,
        mail_by: Option<Instant>,
        shutdown: Option<watch::Receiver<bool>>,
    ) -> Self {
        Self {
            stream,
            input: Vec::with_capacity(READ_CHUNK),
            pos: 0,
            output: Vec::with_capacity(512),
            idle,
            deadline,
            mail_by,
            shutdown,
        }
    }

    /// Whether the server is draining.
    pub(crate) fn shutting_down(&self) -> bool {
        self.shutdown.as_ref().is_some_and(|down| *down.borrow())
    }

    /// The receiver of the drain signal, for a session started over TLS.
    pub(crate) fn shutdown(&self) -> Option<watch::Receiver<bool>> {
        self.shutdown.clone()
    }

    /// [`Conn::fill`] while waiting for a command: a drain that starts
    /// meanwhile ends the wait with [`Filled::ShuttingDown`]. Replies are
    /// flushed first, so the wait that may be given up only reads.
    pub(crate) async fn fill_command(&mut self) -> io::Result<Filled> {
        let Some(mut shutdown) = self.shutdown.clone() else {
            return self.fill().await;
        };
        if *shutdown.borrow() {
            return Ok(Filled::ShuttingDown);
        }
        self.flush().await?;
        let drain = async move {
            // The sender gone means no drain will come.
            if shutdown.wait_for(|down| *down).await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        // `read_buf` is cancel-safe: bytes read stay in the buffer.
        tokio::select! {
            filled = self.fill() => filled,
            () = drain => Ok(Filled::ShuttingDown),
        }
    }

    /// A MAIL was accepted: the deadline for the first one is met.
    pub(crate) fn transaction_started(&mut self) {
        self.mail_by = None;
    }

    /// When the first MAIL is due, unless one was accepted.
    pub(crate) fn mail_by(&self) -> Option<Instant> {
        self.mail_by
    }

    /// Bytes received and not yet consumed.
    pub(crate) fn unread(&self) -> &[u8] {
        self.input.get(self.pos..).unwrap_or_default()
    }

    /// Marks `n` unread bytes as consumed.
    pub(crate) fn consume(&mut self, n: usize) {
        self.pos = self.pos.saturating_add(n).min(self.input.len());
    }

    /// Drops everything received and not consumed.
    pub(crate) fn discard_unread(&mut self) {
        self.input.clear();
        self.pos = 0;
    }

    pub(crate) fn queue(&mut self, reply: &[u8]) {
        self.output.extend_from_slice(reply);
    }

    /// Writes the queued replies.
    pub(crate) async fn flush(&mut self) -> io::Result<()> {
        if self.output.is_empty() {
            return Ok(());
        }
        let wait = self.idle.min(self.time_left()).max(Duration::from_secs(1));
        let write = async {
            self.stream.write_all(&self.output).await?;
            self.stream.flush().await
        };
        match timeout(wait, write).await {
            Ok(result) => {
                self.output.clear();
                result
            }
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "smtp write timed out",
            )),
        }
    }

    /// Flushes the replies, then waits for more input.
    pub(crate) async fn fill(&mut self) -> io::Result<Filled> {
        self.flush().await?;
        if self.pos > 0 {
            self.input.drain(..self.pos);
            self.pos = 0;
        }
        let left = self.time_left();
        if left.is_zero() {
            return Ok(Filled::SessionTimeout);
        }
        let mail_left = self.mail_left();
        if mail_left.is_some_and(|left| left.is_zero()) {
            return Ok(Filled::MailTimeout);
        }
        self.input.reserve(READ_CHUNK);
        let read = self.stream.read_buf(&mut self.input);
        let wait = self.idle.min(left).min(mail_left.unwrap_or(Duration::MAX));
        match timeout(wait, read).await {
            Ok(Ok(0)) => Ok(Filled::Eof),
            Ok(Ok(_)) => Ok(Filled::Data),
            Ok(Err(error)) => Err(error),
            Err(_) if self.time_left().is_zero() => Ok(Filled::SessionTimeout),
            Err(_) if self.mail_left().is_some_and(|left| left.is_zero()) => {
                Ok(Filled::MailTimeout)
            }
            Err(_) => Ok(Filled::IdleTimeout),
        }
    }

    /// Writes what is queued and closes our side, ignoring errors: the
    /// client may be gone already.
    pub(crate) async fn close(&mut self) {
        let _ = self.flush().await;
        let _ = timeout(Duration::from_secs(1), self.stream.shutdown()).await;
    }

    pub(crate) fn time_left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Time left for the first MAIL, unless one was accepted.
    fn mail_left(&self) -> Option<Duration> {
        self.mail_by
            .map(|by| by.saturating_duration_since(Instant::now()))
    }

    pub(crate) fn into_stream(self) -> S {
        self.stream
    }
}
