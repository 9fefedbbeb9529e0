//! Mail out: `POST /messages/send`. The request is checked here (addresses,
//! header injection, sizes), the plan's hourly and daily send limits are
//! reserved, the mail goes to the relay behind [`MailRelay`], and only once
//! the relay accepted it is the copy sealed to the sending address's key and
//! committed to `sent` with its activity and event.
//!
//! Counting rule: one send per distinct recipient, in the clock hour and in
//! the UTC day, on the account's current plan. The recipients of a request
//! are reserved before the relay is asked (so parallel requests cannot
//! overshoot the limit) and given back when the relay refuses or fails.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{SecondsFormat, TimeDelta};
use email_address::{EmailAddress, Options};
use sealpost_activity::Records;
use sealpost_kernel::{
    AccountId, AddressId, Clock, DeviceId, MessageId, PlanId, StoreError, Timestamp,
};
use sealpost_plans::{DEFAULT_FIRST_DAY_SENDS, plan};
use sealpost_seal::{SealedBox, context, random_bytes};

use crate::content::{MessageContent, display_name};
use crate::folders::Folder;
use crate::store::{Message, Reader};

/// Recipients of one message (`to` and `cc` together).
pub const MAX_RECIPIENTS: usize = 50;
/// Characters of the subject (RFC 5322's line limit, before encoding).
pub const MAX_SUBJECT_CHARS: usize = 998;
/// Characters of a display name.
pub const MAX_NAME_CHARS: usize = 200;
/// Bytes of `text`, and of `html`, each.
pub const MAX_BODY_BYTES: usize = 512 * 1024;
/// `via` of `message.sent` for an operator session (the apps).
pub const VIA_APP: &str = "app";
/// `via` of `message.sent` when a team member sends from an address shared
/// with `send` access.
pub const VIA_MEMBER: &str = "member";
/// `via` of `message.sent` when an agent sends from an address assigned to it.
pub const VIA_AGENT: &str = "agent";

/// What the caller asked to send.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SendRequest {
    /// One of the account's addresses.
    pub from: String,
    pub from_name: Option<String>,
    /// Each an address or `Name <address>`.
    pub to: Vec<String>,
    /// Copies, as `to`; at most [`MAX_RECIPIENTS`] with `to`.
    pub cc: Vec<String>,
    pub subject: String,
    pub text: String,
    pub html: Option<String>,
}

/// A mailbox of the outgoing message: an address and maybe a display name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MailAddress {
    pub name: Option<String>,
    pub address: String,
}

impl MailAddress {
    /// `Name <address>` (the name quoted when it holds specials) or `address`,
    /// as received mail's content shows mailboxes.
    pub fn render(&self) -> String {
        match &self.name {
            Some(name) => format!("{} <{}>", display_name(name), self.address),
            None => self.address.clone(),
        }
    }

    /// The domain part, lower-cased.
    pub fn domain(&self) -> String {
        self.address
            .rsplit_once('@')
            .map(|(_, domain)| domain.to_ascii_lowercase())
            .unwrap_or_default()
    }
}

/// The message the relay is given: checked, with its `Message-ID` and
/// `Date` already chosen (the Sent copy records the same ones).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutgoingMail {
    pub from: MailAddress,
    pub to: Vec<MailAddress>,
    /// Never also in `to`.
    pub cc: Vec<MailAddress>,
    pub subject: String,
    pub text: String,
    pub html: Option<String>,
    /// `<random@from-domain>`.
    pub message_id_header: String,
    pub date: Timestamp,
}

/// The relay accepted the message for every recipient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Submitted {
    /// Size of the message as submitted (headers, DKIM signature included).
    pub size_bytes: u64,
}

/// The relay refused the message or could not be reached. The text is for
/// the operator's log only; it never reaches the caller.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RelayError(pub String);

/// Where outgoing mail goes: MIME, DKIM and SMTP live in the adapter.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait MailRelay: Send + Sync {
    /// Returns once the relay accepted the message for every recipient.
    async fn submit(&self, mail: &OutgoingMail) -> Result<Submitted, RelayError>;
}

/// What sending needs to know about the `from` address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SenderRecord {
    pub address: AddressId,
    pub account: AccountId,
    /// The account's current plan: its send limits apply.
    pub plan: PlanId,
    /// When the account (the owner's, for a team member) was created: a new
    /// Free account is held to the first-day allowance.
    pub account_created_at: Timestamp,
    /// The address as stored (lower case).
    pub email_address: String,
    /// `None`: the address has no key, so no Sent copy can be sealed.
    pub public_key: Option<[u8; 32]>,
    pub key_epoch: u32,
    /// Paused after a missed payment.
    pub paused: bool,
}

/// The send windows at one instant: the clock hour and the UTC day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWindows {
    pub hour_start: Timestamp,
    pub hour_end: Timestamp,
    pub day_start: Timestamp,
    pub day_end: Timestamp,
}

impl SendWindows {
    pub fn at(now: Timestamp) -> Self {
        let hour_start = now.start_of_hour();
        let day_start = now.start_of_day();
        Self {
            hour_start,
            hour_end: hour_start + TimeDelta::hours(1),
            day_start,
            day_end: day_start + TimeDelta::days(1),
        }
    }
}

/// The answer to a reservation of sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reservation {
    Reserved,
    /// The clock hour's limit would be passed.
    HourFull,
    /// The UTC day's limit would be passed.
    DayFull,
}

/// What a successful send commits in one transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct SentCopy {
    /// The copy for `sent`; `None` when the address has no key.
    pub message: Option<Message>,
    /// `mail.sent` and `message.sent`.
    pub records: Records,
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SendRepository: Send + Sync {
    /// The account's live address with this name (lower case), or one shared
    /// with it by an active team with `send` access (`account` of the record
    /// is then the owner), if any. For a device (`by.device`): only the
    /// account's address assigned to that device.
    async fn sender(
        &self,
        by: &Reader,
        email_address: &str,
    ) -> Result<Option<SenderRecord>, StoreError>;
    /// Adds `count` to the hour's and the day's send counters, both or
    /// neither, unless that would pass a limit.
    async fn reserve_sends(
        &self,
        account: &AccountId,
        windows: SendWindows,
        count: u64,
        hour_limit: u64,
        day_limit: u64,
    ) -> Result<Reservation, StoreError>;
    /// Gives back what [`SendRepository::reserve_sends`] took.
    async fn release_sends(
        &self,
        account: &AccountId,
        windows: SendWindows,
        count: u64,
    ) -> Result<(), StoreError>;
    /// Commits the Sent copy (if any) and the records in one transaction.
    async fn commit_sent(&self, sent: SentCopy) -> Result<(), StoreError>;
}

#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("sending is not configured on this service")]
    FeatureDisabled,
    #[error("{field}: {reason}")]
    InvalidField { field: String, reason: String },
    #[error("from is not an address of this account")]
    NotYourAddress,
    #[error("the address is paused after a missed payment; pay to send from it again")]
    AddressPaused,
    #[error("the plan's send limit is used up; retry in {retry_after_seconds} seconds")]
    RateLimited { retry_after_seconds: u64 },
    #[error("the relay did not accept the message")]
    RelayFailed(#[source] RelayError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> SendError {
    SendError::InvalidField {
        field: field.into(),
        reason: reason.into(),
    }
}

/// What came of a send the relay accepted.
#[derive(Debug)]
pub struct Sent {
    /// The copy in `sent`; `None` when the address has no key or the copy
    /// could not be stored.
    pub message_id: Option<MessageId>,
    /// The mail went out but its copy and records could not be committed.
    pub unrecorded: Option<StoreError>,
}

/// Display names and the subject go into headers: no control characters
/// (CR and LF would start a header of the caller's making).
fn check_header_text(field: &str, text: &str, max_chars: usize) -> Result<(), SendError> {
    if text.chars().any(char::is_control) {
        return Err(invalid(
            field,
            "must not hold control characters (CR, LF, ...)",
        ));
    }
    if text.chars().count() > max_chars {
        return Err(invalid(field, format!("at most {max_chars} characters")));
    }
    Ok(())
}

fn address_options() -> Options {
    Options::default()
        .with_required_tld()
        .without_domain_literal()
}

/// An address alone (`from`).
fn parse_bare_address(field: &str, text: &str) -> Result<String, SendError> {
    let text = text.trim();
    EmailAddress::parse_with_options(text, address_options().without_display_text())
        .map(|address| address.email())
        .map_err(|error| invalid(field, format!("not an email address ({error})")))
}

/// A recipient: `address` or `Name <address>`.
fn parse_recipient(field: &str, text: &str) -> Result<MailAddress, SendError> {
    // Checked before parsing: a CR or LF must never reach a header, whatever
    // the parser would make of it.
    if text.chars().any(char::is_control) {
        return Err(invalid(
            field,
            "must not hold control characters (CR, LF, ...)",
        ));
    }
    let parsed = EmailAddress::parse_with_options(text.trim(), address_options())
        .map_err(|error| invalid(field, format!("not an email address ({error})")))?;
    let name = parsed.display_part().trim();
    let name = name
        .strip_prefix('"')
        .and_then(|inner| inner.strip_suffix('"'))
        .unwrap_or(name)
        .trim();
    check_header_text(field, name, MAX_NAME_CHARS)?;
    Ok(MailAddress {
        name: (!name.is_empty()).then(|| name.to_owned()),
        address: parsed.email(),
    })
}

/// A request that passed every check.
struct Checked {
    from: String,
    from_name: Option<String>,
    to: Vec<MailAddress>,
    cc: Vec<MailAddress>,
}

impl Checked {
    /// Recipients the relay is given: each counts as one send.
    fn recipients(&self) -> u64 {
        (self.to.len() + self.cc.len()) as u64
    }
}

/// Parses `texts` (the request's `field`) into `into`, skipping an address
/// already there: the same address twice, in `to` or `cc`, is sent (and
/// counted) once, where it first stands.
fn add_recipients(
    field: &str,
    texts: &[String],
    seen: &[MailAddress],
    into: &mut Vec<MailAddress>,
) -> Result<(), SendError> {
    for (index, text) in texts.iter().enumerate() {
        let recipient = parse_recipient(&format!("{field}[{index}]"), text)?;
        let known = |list: &[MailAddress]| {
            list.iter()
                .any(|other| other.address.eq_ignore_ascii_case(&recipient.address))
        };
        if !known(seen) && !known(into) {
            into.push(recipient);
        }
    }
    Ok(())
}

fn check(request: &SendRequest) -> Result<Checked, SendError> {
    let from = parse_bare_address("from", &request.from)?;
    let from_name = match request.from_name.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(name) => {
            check_header_text("fromName", name, MAX_NAME_CHARS)?;
            Some(name.to_owned())
        }
    };
    if request.to.is_empty() {
        return Err(invalid("to", "at least one recipient"));
    }
    if request.to.len() > MAX_RECIPIENTS {
        return Err(invalid(
            "to",
            format!("at most {MAX_RECIPIENTS} recipients"),
        ));
    }
    if request.to.len() + request.cc.len() > MAX_RECIPIENTS {
        return Err(invalid(
            "cc",
            format!("at most {MAX_RECIPIENTS} recipients in to and cc together"),
        ));
    }
    let mut to: Vec<MailAddress> = Vec::with_capacity(request.to.len());
    add_recipients("to", &request.to, &[], &mut to)?;
    let mut cc: Vec<MailAddress> = Vec::with_capacity(request.cc.len());
    add_recipients("cc", &request.cc, &to, &mut cc)?;
    check_header_text("subject", &request.subject, MAX_SUBJECT_CHARS)?;
    if request.text.len() > MAX_BODY_BYTES {
        return Err(invalid("text", format!("at most {MAX_BODY_BYTES} bytes")));
    }
    if request
        .html
        .as_ref()
        .is_some_and(|html| html.len() > MAX_BODY_BYTES)
    {
        return Err(invalid("html", format!("at most {MAX_BODY_BYTES} bytes")));
    }
    Ok(Checked {
        from,
        from_name,
        to,
        cc,
    })
}

fn seconds_until(end: Timestamp, now: Timestamp) -> u64 {
    let millis = (end - now).num_milliseconds().max(0) as u64;
    millis.div_ceil(1000).max(1)
}

/// `POST /messages/send`.
#[derive(Clone)]
pub struct Outbox {
    repo: Arc<dyn SendRepository>,
    /// `None` when no relay is configured: sending is off.
    relay: Option<Arc<dyn MailRelay>>,
    clock: Arc<dyn Clock>,
    /// Sends a day of a Free account in its first day
    /// (`SEALPOST_NEW_ACCOUNT_SENDS`).
    first_day_sends: u32,
}

impl Outbox {
    pub fn new(
        repo: Arc<dyn SendRepository>,
        relay: Option<Arc<dyn MailRelay>>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            repo,
            relay,
            clock,
            first_day_sends: DEFAULT_FIRST_DAY_SENDS,
        }
    }

    /// Holds new Free accounts to `sends` a day instead of the default.
    #[must_use]
    pub fn with_first_day_sends(mut self, sends: u32) -> Self {
        self.first_day_sends = sends;
        self
    }

    /// Checks, reserves, submits, then keeps the copy. `via` names the
    /// caller kind in `message.sent`.
    pub async fn send(
        &self,
        account: &AccountId,
        via: &str,
        request: &SendRequest,
    ) -> Result<Sent, SendError> {
        let by = Reader {
            account: account.clone(),
            device: None,
        };
        self.send_by(&by, via, request).await
    }

    /// [`Outbox::send`] for an agent (the caller checked the kind): only
    /// from an address assigned to it, `via: agent`.
    pub async fn send_from_agent(
        &self,
        account: &AccountId,
        agent: &DeviceId,
        request: &SendRequest,
    ) -> Result<Sent, SendError> {
        let by = Reader {
            account: account.clone(),
            device: Some(agent.clone()),
        };
        self.send_by(&by, VIA_AGENT, request).await
    }

    async fn send_by(
        &self,
        by: &Reader,
        via: &str,
        request: &SendRequest,
    ) -> Result<Sent, SendError> {
        let account = &by.account;
        let relay = self.relay.as_ref().ok_or(SendError::FeatureDisabled)?;
        let checked = check(request)?;
        let sender = self
            .repo
            .sender(by, &checked.from.to_ascii_lowercase())
            .await?
            .ok_or(SendError::NotYourAddress)?;
        if sender.paused {
            return Err(SendError::AddressPaused);
        }
        // A team member sending from a shared address: the address's owner
        // counts the sends and receives the records.
        let via = if sender.account == *account {
            via
        } else {
            VIA_MEMBER
        };
        let account = &sender.account;

        let now = self.clock.now();
        let windows = SendWindows::at(now);
        let limits = plan(sender.plan);
        let day = limits.day_send_limit(sender.account_created_at, now, self.first_day_sends);
        let count = checked.recipients();
        match self
            .repo
            .reserve_sends(
                account,
                windows,
                count,
                u64::from(limits.sends_per_hour),
                u64::from(day.limit),
            )
            .await?
        {
            Reservation::Reserved => {}
            Reservation::HourFull => {
                return Err(SendError::RateLimited {
                    retry_after_seconds: seconds_until(windows.hour_end, now),
                });
            }
            Reservation::DayFull => {
                // A new account's allowance also ends when it is a day old.
                let end = day
                    .first_day_until
                    .map_or(windows.day_end, |grown| grown.min(windows.day_end));
                return Err(SendError::RateLimited {
                    retry_after_seconds: seconds_until(end, now),
                });
            }
        }

        let from = MailAddress {
            name: checked.from_name,
            address: sender.email_address.clone(),
        };
        let token: String = random_bytes::<16>()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        let mail = OutgoingMail {
            message_id_header: format!("<{token}@{}>", from.domain()),
            from,
            to: checked.to,
            cc: checked.cc,
            subject: request.subject.clone(),
            text: request.text.clone(),
            html: request.html.clone(),
            date: now,
        };
        let submitted = match relay.submit(&mail).await {
            Ok(submitted) => submitted,
            Err(error) => {
                // Nothing went out: nothing counts. Should giving back fail,
                // the reservation stays counted (the safe side of a limit).
                let _ = self.repo.release_sends(account, windows, count).await;
                return Err(SendError::RelayFailed(error));
            }
        };

        let copy = sender
            .public_key
            .and_then(|key| sent_copy(&sender, &key, &mail, submitted, self.clock.now()));
        let copy_id = copy.as_ref().map(|message| message.id.clone());
        let mut records = Records::new();
        records.mail_sent(
            account,
            &sender.address,
            copy_id.as_ref(),
            via,
            self.clock.now(),
        );
        // The mail is out: a failure to record it is reported, not an error
        // the caller would retry (and so send twice).
        match self
            .repo
            .commit_sent(SentCopy {
                message: copy,
                records,
            })
            .await
        {
            Ok(()) => Ok(Sent {
                message_id: copy_id,
                unrecorded: None,
            }),
            Err(error) => Ok(Sent {
                message_id: None,
                unrecorded: Some(error),
            }),
        }
    }
}

/// The Sent copy: message content JSON (docs/protocol.md) sealed to the
/// address's key like received mail, already read, in `sent`. None for a
/// low-order key (stored before the API refused them): a box anyone could
/// open is no copy, as for an address without a key.
fn sent_copy(
    sender: &SenderRecord,
    public_key: &[u8; 32],
    mail: &OutgoingMail,
    submitted: Submitted,
    at: Timestamp,
) -> Option<Message> {
    let id = MessageId::generate();
    let content = MessageContent {
        from: Some(mail.from.render()),
        to: mail.to.iter().map(MailAddress::render).collect(),
        cc: mail.cc.iter().map(MailAddress::render).collect(),
        reply_to: None,
        subject: Some(mail.subject.clone()),
        date: Some(
            mail.date
                .as_datetime()
                .to_rfc3339_opts(SecondsFormat::Millis, true),
        ),
        message_id_header: Some(mail.message_id_header.clone()),
        text: Some(mail.text.clone()),
        html: mail.html.clone(),
        attachments: Vec::new(),
    };
    let sealed = SealedBox::try_seal(
        public_key,
        &context::message(sender.address.as_str(), id.as_str()),
        &content.to_json(),
    )
    .ok()?;
    Some(Message {
        id,
        account: sender.account.clone(),
        address: sender.address.clone(),
        received_at: at,
        read: true,
        size_bytes: submitted.size_bytes,
        key_epoch: sender.key_epoch,
        content: sealed,
        folder: Folder::Sent,
        starred: false,
        outgoing: true,
    })
}

#[cfg(test)]
mod tests;
