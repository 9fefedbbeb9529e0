//! The greeting phase: EHLO and HELO (each starts over without a
//! transaction) and STARTTLS, which ends the plain-text session.

use std::fmt::Write as _;

use tokio::io::{AsyncRead, AsyncWrite};

use super::{End, Session, Stats};

impl<S> Session<'_, S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    pub(super) fn ehlo(&mut self, host: String, stats: &mut Stats) {
        self.helo = Some(host);
        self.transaction = None;
        let reply = self.ehlo_reply();
        self.conn.queue(reply.as_bytes());
        stats.last_code = 250;
    }

    pub(super) fn helo(&mut self, host: String, stats: &mut Stats) {
        self.helo = Some(host);
        self.transaction = None;
        let reply = format!("250 {}\r\n", self.config.hostname);
        self.conn.queue(reply.as_bytes());
        stats.last_code = 250;
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

    pub(super) fn starttls(&mut self, stats: &mut Stats) -> Option<End> {
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
}
