//! Replies: the reply line, errors that count toward the session's limit,
//! the refusals several phases share, the parser's errors, timeouts, and
//! hook text made safe for a reply.

use smtp_proto::Error as ParseError;
use tokio::io::{AsyncRead, AsyncWrite};

use super::{End, Session, Stats};
use crate::io::Filled;
use std::io;

use sealpost_metrics::names;

/// Longest text taken from a hook into a reply.
const MAX_REPLY_TEXT: usize = 200;

impl<S> Session<'_, S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    /// The message is refused for want of memory (the DATA budget, or a
    /// spool file that could not be written): 452, the client tries later.
    pub(super) fn refuse_insufficient_storage(&mut self, stats: &mut Stats) {
        stats.messages_refused = stats.messages_refused.saturating_add(1);
        self.reply(
            stats,
            452,
            "4.3.1",
            "Insufficient system storage, try again later",
        );
    }

    pub(super) fn parse_error(&mut self, error: ParseError, stats: &mut Stats) {
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

    pub(super) fn timed_out(&mut self, kind: Filled, stats: &mut Stats) {
        let text = match kind {
            Filled::SessionTimeout => "Session time limit exceeded, closing connection",
            Filled::MailTimeout => "No mail transaction started in time, closing connection",
            _ => "Idle timeout, closing connection",
        };
        self.reply(stats, 421, "4.4.2", text);
    }

    pub(super) fn too_many_errors(&mut self, stats: &mut Stats) -> io::Result<End> {
        self.reply(stats, 421, "4.7.0", "Too many errors, closing connection");
        Ok(End::Closed)
    }

    pub(super) fn reply(&mut self, stats: &mut Stats, code: u16, status: &str, text: &str) {
        if let Some(reason) = refusal_reason(code, status) {
            metrics::counter!(names::SMTP_REFUSALS, "reason" => reason).increment(1);
        }
        let line = format!("{code} {status} {text}\r\n");
        self.conn.queue(line.as_bytes());
        stats.last_code = code;
        tracing::trace!(code, "smtp reply");
    }

    /// A reply that counts toward [`MAX_ERRORS`].
    pub(super) fn error(&mut self, stats: &mut Stats, code: u16, status: &str, text: &str) {
        stats.errors = stats.errors.saturating_add(1);
        self.reply(stats, code, status, text);
    }
}

/// The `reason` label of a refusal, from its reply code and enhanced status
/// alone (never its text); `None` for a reply that refuses nothing.
fn refusal_reason(code: u16, status: &str) -> Option<&'static str> {
    use sealpost_metrics::smtp_reason::*;
    if code < 400 {
        return None;
    }
    Some(match (code, status) {
        (552, _) => TOO_LARGE,
        (452, "4.3.1") => STORAGE,
        (452, "4.2.2") => RECIPIENT_LATER,
        (452, "4.5.3") => TOO_MANY_RECIPIENTS,
        (550, "5.1.1") => UNKNOWN_ADDRESS,
        (550, "5.7.1") => RECIPIENT_REFUSED,
        (421, "4.4.2") => TIMEOUT,
        (421, "4.7.0") => ERRORS,
        (421, "4.3.2") => SHUTTING_DOWN,
        (451 | 554, _) => DELIVERY,
        _ => PROTOCOL,
    })
}

/// Hook text made safe for a reply line: one line, printable, bounded.
pub(super) fn clean(text: &str, fallback: &str) -> String {
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
    fn refusals_are_named_by_their_code_alone() {
        assert_eq!(refusal_reason(250, "2.0.0"), None);
        assert_eq!(refusal_reason(354, ""), None);
        assert_eq!(refusal_reason(550, "5.1.1"), Some("unknown_address"));
        assert_eq!(refusal_reason(421, "4.3.2"), Some("shutting_down"));
        assert_eq!(refusal_reason(500, "5.5.1"), Some("protocol"));
    }

    #[test]
    fn hook_text_is_one_bounded_line() {
        assert_eq!(clean("quota\r\n250 fake", "x"), "quota  250 fake");
        assert_eq!(clean("  ", "fallback"), "fallback");
        assert_eq!(clean(&"y".repeat(500), "x").len(), MAX_REPLY_TEXT);
    }
}
