//! The envelope: MAIL opens a transaction, RCPT asks the delivery about
//! each recipient (a repeated one is answered again without asking).

use smtp_proto::{MAIL_BODY_BINARYMIME, MAIL_REQUIRETLS, MailFrom, RcptTo};
use tokio::io::{AsyncRead, AsyncWrite};

use super::replies::clean;
use super::{Session, Stats};
use crate::{RecipientDecision, Ticket};

/// One mail transaction, from MAIL to the end of DATA (or RSET).
pub(super) struct Transaction {
    pub(super) mail_from: String,
    pub(super) recipients: Vec<String>,
    /// One per recipient: the ticket it was accepted with, if any.
    pub(super) tickets: Vec<Option<Ticket>>,
    /// Whether any RCPT was tried, to tell "no RCPT yet" (503) from "no
    /// valid recipient" (554) at DATA.
    pub(super) rcpt_tried: bool,
    /// `SIZE=` of MAIL, 0 when not given.
    pub(super) declared_size: usize,
}

impl<S> Session<'_, S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    pub(super) fn mail(&mut self, from: MailFrom<String>, stats: &mut Stats) {
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
        // RFC 1870 6.1: a size that does not fit now is a temporary 452.
        // Checked, not reserved: a client that declares much and sends
        // nothing holds nothing.
        if let Some(spool) = &self.config.spool
            && !spool.has_room_for(from.size)
        {
            return self.refuse_insufficient_storage(stats);
        }
        self.transaction = Some(Transaction {
            mail_from: from.address,
            recipients: Vec::new(),
            tickets: Vec::new(),
            rcpt_tried: false,
            declared_size: from.size,
        });
        self.conn.transaction_started();
        self.reply(stats, 250, "2.1.0", "Sender OK");
    }

    pub(super) async fn rcpt(&mut self, to: RcptTo<String>, stats: &mut Stats) {
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
        let ticket = match self.delivery.check_recipient(&address).await {
            RecipientDecision::Accept => None,
            RecipientDecision::AcceptWith(ticket) => Some(ticket),
            RecipientDecision::UnknownAddress => {
                stats.recipients_refused = stats.recipients_refused.saturating_add(1);
                return self.error(stats, 550, "5.1.1", "No such mailbox");
            }
            RecipientDecision::Refused(text) => {
                stats.recipients_refused = stats.recipients_refused.saturating_add(1);
                return self.error(stats, 550, "5.7.1", &clean(&text, "Recipient refused"));
            }
            RecipientDecision::TryLater(text) => {
                stats.recipients_refused = stats.recipients_refused.saturating_add(1);
                return self.reply(stats, 452, "4.2.2", &clean(&text, "Try again later"));
            }
        };
        if let Some(transaction) = self.transaction.as_mut() {
            transaction.recipients.push(address);
            transaction.tickets.push(ticket);
        }
        stats.recipients_accepted = stats.recipients_accepted.saturating_add(1);
        self.reply(stats, 250, "2.1.5", "Recipient OK");
    }

    /// smtp-proto reads both `<>` and `<postmaster>` as the empty address:
    /// only the second is a recipient (RFC 5321 4.5.1).
    pub(super) async fn rcpt_without_address(
        &mut self,
        line: &[u8],
        to: RcptTo<String>,
        stats: &mut Stats,
    ) {
        if contains_ignore_case(line, b"<postmaster>") {
            let to = RcptTo {
                address: "postmaster".to_owned(),
                ..to
            };
            self.rcpt(to, stats).await;
        } else {
            self.error(stats, 501, "5.1.3", "Bad recipient address syntax");
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_match_domain_case_insensitively() {
        assert!(same_address("Bob@Example.COM", "Bob@example.com"));
        assert!(!same_address("bob@example.com", "Bob@example.com"));
        assert!(same_address("postmaster", "PostMaster"));
    }
}
