//! DATA: whether the transaction is ready for it, the first reservation of
//! the DATA budget, the message as it was received (a spooled one read
//! back once memory allows), and the delivery's outcome as the reply.

use std::io;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::body::Body;
use super::envelope::Transaction;
use super::replies::clean;
use super::{End, Session, Stats};
use crate::limits::Reservation;
use crate::spool::Spooled;
use crate::{DeliveryOutcome, Envelope};

/// What a message reserves of the DATA budget at first (or its declared
/// `SIZE`), and at least what it reserves more each time it outgrows it.
pub(super) const DATA_STEP: usize = 64 * 1024;
/// The share of the DATA budget a spooled message waiting to be delivered
/// leaves free (one eighth), so that small messages still find room at
/// DATA while large ones are delivered.
const HEADROOM_DIVISOR: usize = 8;
/// How often a spooled message waiting for memory to be delivered looks again.
const MEMORY_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// A message received whole, in memory, with the memory it holds.
struct Message {
    data: Vec<u8>,
    reservation: Reservation,
    /// Held until the delivery was answered, then deleted.
    spooled: Option<Box<Spooled>>,
}

/// What became of a DATA section.
enum Received {
    Message(Message),
    /// Refused and answered; the session goes on.
    Refused,
    /// The connection is done (closed, or timed out and answered).
    End,
}

impl<S> Session<'_, S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    pub(super) async fn data(&mut self, stats: &mut Stats) -> io::Result<Option<End>> {
        let Some(declared_size) = self.ready_for_data(stats) else {
            return Ok(None);
        };
        let Some(mut reservation) = self.reserve_for_data(declared_size) else {
            self.refuse_insufficient_storage(stats);
            return Ok(None);
        };
        self.conn
            .queue(b"354 Start mail input; end with <CRLF>.<CRLF>\r\n");
        stats.last_code = 354;

        let body = self.read_body(&mut reservation).await?;
        let transaction = self.transaction.take();
        let Message {
            data,
            reservation,
            spooled,
        } = match self.received(body, reservation, stats).await {
            Received::Message(message) => message,
            Received::Refused => return Ok(None),
            Received::End => return Ok(Some(End::Closed)),
        };
        if let Some(transaction) = transaction {
            self.deliver(transaction, &data, stats).await;
        }
        // The message's memory is given back only now: delivery used it.
        drop(data);
        drop(reservation);
        drop(spooled);
        Ok(None)
    }

    /// The declared size of a transaction with recipients; otherwise the
    /// error is answered and `None`.
    fn ready_for_data(&mut self, stats: &mut Stats) -> Option<usize> {
        let Some(transaction) = self.transaction.as_ref() else {
            self.error(stats, 503, "5.5.1", "Send MAIL first");
            return None;
        };
        if transaction.recipients.is_empty() {
            if transaction.rcpt_tried {
                self.error(stats, 554, "5.5.1", "No valid recipients");
            } else {
                self.error(stats, 503, "5.5.1", "Send RCPT first");
            }
            return None;
        }
        Some(transaction.declared_size)
    }

    /// A first step of memory for the message; more is reserved as it
    /// grows (see `read_body`). A declared size the budget (or the spool's)
    /// cannot cover now is refused at once, but not reserved: a client
    /// trickling its data holds only what it sent. A message that will be spooled needs
    /// memory now only for what it keeps in memory, and its whole size
    /// later, when it is delivered. `None`: refused.
    fn reserve_for_data(&self, declared_size: usize) -> Option<Reservation> {
        let memory = &self.config.data_memory;
        let mut reservation = memory.reservation();
        let first = DATA_STEP.min(self.config.max_message_size.saturating_add(1));
        // Larger than the budget (less the headroom a spooled message
        // leaves, see `wait_for_memory`) could ever hold: refused now.
        let (needed_now, most, spool_room) = match &self.config.spool {
            Some(spool) => (
                declared_size.min(spool.threshold),
                memory.limit() - memory.limit() / HEADROOM_DIVISOR,
                spool.has_room_for(declared_size),
            ),
            None => (declared_size, memory.limit(), true),
        };
        let fits = memory.available() >= needed_now
            && most >= declared_size
            && spool_room
            && reservation.grow_to(first);
        fits.then_some(reservation)
    }

    /// The message in memory, or the refusal or end answered.
    async fn received(
        &mut self,
        body: Body,
        reservation: Reservation,
        stats: &mut Stats,
    ) -> Received {
        match body {
            Body::Complete(data) => Received::Message(Message {
                data,
                reservation,
                spooled: None,
            }),
            Body::Spooled(file) => self.read_back(file, reservation, stats).await,
            Body::TooBig => {
                stats.messages_refused = stats.messages_refused.saturating_add(1);
                self.reply(stats, 552, "5.3.4", "Message size exceeds fixed maximum");
                Received::Refused
            }
            Body::LineTooLong => {
                stats.messages_refused = stats.messages_refused.saturating_add(1);
                self.reply(
                    stats,
                    554,
                    "5.6.0",
                    "Message has a line longer than 1000 octets",
                );
                Received::Refused
            }
            Body::NoMemory => {
                self.refuse_insufficient_storage(stats);
                Received::Refused
            }
            Body::Closed => Received::End,
            Body::Timeout(kind) => {
                self.timed_out(kind, stats);
                Received::End
            }
        }
    }

    /// A spooled message read back into memory once the budget holds its
    /// whole size.
    async fn read_back(
        &mut self,
        mut file: Box<Spooled>,
        arriving: Reservation,
        stats: &mut Stats,
    ) -> Received {
        // Its memory now is its whole size: what it held while it arrived
        // goes back first, so no session waits holding any.
        drop(arriving);
        let mut reservation = self.config.data_memory.reservation();
        if !self.wait_for_memory(&mut reservation, file.len()).await {
            self.refuse_insufficient_storage(stats);
            return Received::Refused;
        }
        match file.read().await {
            Ok(data) => Received::Message(Message {
                data,
                reservation,
                spooled: Some(file),
            }),
            Err(error) => {
                tracing::warn!(kind = ?error.kind(), "reading a spooled message back failed");
                stats.messages_refused = stats.messages_refused.saturating_add(1);
                self.reply(stats, 451, "4.3.0", "Temporary failure, try again later");
                Received::Refused
            }
        }
    }

    /// Hands the message to the delivery and answers its outcome.
    async fn deliver(&mut self, transaction: Transaction, data: &[u8], stats: &mut Stats) {
        let envelope = Envelope {
            mail_from: transaction.mail_from,
            recipients: transaction.recipients,
            tickets: transaction.tickets,
            client_ip: self.client_ip,
            helo: self.helo.clone().unwrap_or_default(),
        };
        let (code, status, text) = match self.delivery.deliver(&envelope, data).await {
            DeliveryOutcome::Accepted => {
                metrics::counter!(sealpost_metrics::names::SMTP_MESSAGES_ACCEPTED).increment(1);
                metrics::counter!(sealpost_metrics::names::SMTP_ACCEPTED_BYTES)
                    .increment(u64::try_from(data.len()).unwrap_or(u64::MAX));
                stats.messages_accepted = stats.messages_accepted.saturating_add(1);
                stats.bytes_accepted = stats
                    .bytes_accepted
                    .saturating_add(u64::try_from(data.len()).unwrap_or(u64::MAX));
                return self.reply(stats, 250, "2.0.0", "Message accepted");
            }
            DeliveryOutcome::TryLater(text) => (451, "4.3.0", clean(&text, "Try again later")),
            DeliveryOutcome::Rejected(text) => (554, "5.6.0", clean(&text, "Message rejected")),
            DeliveryOutcome::ExceedsLimits(text) => (
                552,
                "5.3.4",
                clean(&text, "Message exceeds a limit of this service"),
            ),
            DeliveryOutcome::MailboxGone(text) => (550, "5.1.1", clean(&text, "No such mailbox")),
            DeliveryOutcome::RecipientsRefused(text) => {
                (550, "5.7.1", clean(&text, "Recipient refused"))
            }
        };
        stats.messages_refused = stats.messages_refused.saturating_add(1);
        self.reply(stats, code, status, &text);
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
}
