//! Reading a message: DATA's bytes up to `CRLF.CRLF`, its size and line
//! limits, growing its reservation of the DATA budget, and spooling it
//! encrypted past the threshold.

use std::io;

use smtp_proto::request::receiver::{DataReceiver, DummyDataReceiver};
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use super::data::DATA_STEP;
use crate::MAX_TEXT_LINE;
use crate::io::Filled;
use crate::limits::Reservation;
use crate::spool::{SpoolWriter, Spooled};

/// What a message being spooled keeps reserved (and in memory) while it
/// arrives: the part of a chunk not written yet and the last read.
const SPOOLING_BUFFER: usize = 2 * crate::spool::CHUNK;

/// How a DATA section ended.
pub(super) enum Body {
    Complete(Vec<u8>),
    /// Complete, in an encrypted spool file (past [`crate::Spool::threshold`]).
    Spooled(Box<Spooled>),
    TooBig,
    LineTooLong,
    /// The DATA budget (or the spool's) could not cover the message as it
    /// grew.
    NoMemory,
    Closed,
    Timeout(Filled),
}

impl<S> Session<'_, S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    /// Reads the message up to `CRLF.CRLF`, dot-unstuffed by smtp-proto.
    /// Past the size limit, after an over-long line, or when `reservation`
    /// cannot grow with the message, the rest is read and dropped so the
    /// next command is read in step.
    pub(super) async fn read_body(&mut self, reservation: &mut Reservation) -> io::Result<Body> {
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
                        log_spool_failure(&error);
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
                        log_spool_failure(&error);
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
}

/// A spool budget used up is the limit working (debug); anything else is
/// the disk failing (warn).
fn log_spool_failure(error: &io::Error) {
    if error.kind() == io::ErrorKind::QuotaExceeded {
        tracing::debug!("the spool budget is used up: message refused");
    } else {
        tracing::warn!(kind = ?error.kind(), "writing a spool file failed");
    }
}

/// Tracks text line lengths over the raw DATA bytes; true once a line is
/// longer than [`MAX_TEXT_LINE`] (plus one for a stuffed dot).
fn long_line(bytes: &[u8], line_len: &mut usize) -> bool {
    // Octets before the LF, CR included: 999 for a full-length line.
    const LIMIT: usize = MAX_TEXT_LINE;
    // memchr: a message's every byte passes here.
    let mut line_start = 0;
    for line_end in memchr::memchr_iter(b'\n', bytes) {
        if line_len.saturating_add(line_end - line_start) > LIMIT {
            return true;
        }
        *line_len = 0;
        line_start = line_end + 1;
    }
    *line_len = line_len.saturating_add(bytes.len() - line_start);
    *line_len > LIMIT
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
        assert_eq!(len, 1);

        // A full-length line after a long one, in the same chunk and across.
        let mut len = 0;
        let mut chunk = vec![b'b'; 997];
        chunk.extend_from_slice(b"\r\n");
        chunk.extend_from_slice(&[b'c'; 999]);
        assert!(!long_line(&chunk, &mut len));
        assert!(!long_line(b"c", &mut len));
        assert!(long_line(b"c", &mut len));
        let mut len = 0;
        assert!(!long_line(&[b'd'; 1000], &mut len));
        let mut len = 0;
        assert!(long_line(&[b'd'; 1001], &mut len));
        assert!(!long_line(b"", &mut { 0 }));
    }
}
