//! The sealed message content (docs/protocol.md "Message content") and the
//! attachment parts, read from a raw RFC 5322 message by `mail-parser`.
//!
//! Choices docs/protocol.md leaves open, made here:
//! - Addresses render as `Name <addr>` or `addr`; a display name holding
//!   RFC 5322 specials (`,` `;` `<` `>` `"` `@` `:` `\`) is quoted so the
//!   string can be parsed back. Groups are flattened to their members.
//!   `from` and `replyTo` join several mailboxes with `, `.
//! - `date` is the `Date:` header in UTC, RFC 3339 with `Z` and milliseconds,
//!   like every timestamp of the API; an unreadable date is null.
//! - `messageIdHeader` is the `Message-ID:` value in angle brackets, as in
//!   the header (`<id@host>`), ready for `In-Reply-To`.
//! - `text` is the message's text/plain body parts joined by a newline and
//!   `html` its text/html parts joined likewise; neither is synthesised from
//!   the other, so an HTML-only message has `text: null`.
//! - Attachments are every part `mail-parser` does not take as a body:
//!   files, inline images of multipart/related, nested messages. `sizeBytes`
//!   is the decoded size; text attachments are decoded to UTF-8 from their
//!   declared charset, binary ones are the transfer-decoded bytes.
//!
//! Hostile structure ([`parse_mail_checked`], used by the ingest): a message
//! with more than [`MAX_MIME_PARTS`] parts (nested messages' parts
//! included), parts nested more than [`MAX_MIME_DEPTH`] deep, or a header
//! of more than [`MAX_HEADER_FIELDS`] fields is refused whole ([`MimeLimit`];
//! SMTP answers 552 5.3.4 with its text), not stored cut short: the sender
//! learns at once, and nothing half-kept reaches the recipient. Before
//! parsing, the raw bytes are scanned for `Content-Type:` lines (only a
//! part with one can hold others) and for lines starting with `--` (every
//! multipart delimiter is one): more than [`MAX_MIME_PARTS`] of the first or
//! ten times as many of the second is refused without parsing, so neither
//! nesting nor a flood of empty parts is built before it is counted.

use std::borrow::Cow;

use chrono::{DateTime, SecondsFormat};
use mail_parser::{Addr, Address, Message, MessageParser, MessagePart, MimeHeaders, PartType};
use serde::Serialize;

/// Attachments larger than this are listed with `stored: false` and no bytes.
pub const ATTACHMENT_STORE_LIMIT: u64 = 20 * 1024 * 1024;

/// Most MIME parts in one message, those of nested messages included.
pub const MAX_MIME_PARTS: usize = 500;
/// Deepest nesting of parts (a multipart in a multipart, or a message in
/// one, is one level each; the message itself is level 0).
pub const MAX_MIME_DEPTH: usize = 20;
/// Most header fields of the message or of any one part.
pub const MAX_HEADER_FIELDS: usize = 1000;

/// A limit of the service the message's structure is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MimeLimit {
    #[error("message has more than {MAX_MIME_PARTS} MIME parts")]
    Parts,
    #[error("message nests MIME parts more than {MAX_MIME_DEPTH} levels deep")]
    Depth,
    #[error("message has a header of more than {MAX_HEADER_FIELDS} fields")]
    HeaderFields,
}

/// One parsed message: the JSON to seal, and the attachment bytes to seal
/// and store one by one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedMail {
    pub content: MessageContent,
    pub attachments: Vec<AttachmentPart>,
}

/// The sealed plaintext of a message (docs/protocol.md "Message content").
/// Absent values serialise as `null`, lists as `[]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageContent {
    pub from: Option<String>,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub reply_to: Option<String>,
    pub subject: Option<String>,
    /// RFC 3339 UTC with `Z` and milliseconds.
    pub date: Option<String>,
    pub message_id_header: Option<String>,
    pub text: Option<String>,
    pub html: Option<String>,
    pub attachments: Vec<AttachmentInfo>,
}

/// An attachment as listed inside the sealed message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentInfo {
    /// Zero-based, in the order the parts appear in the message.
    pub index: u32,
    pub filename: Option<String>,
    /// `type/subtype` in lower case, without parameters.
    pub content_type: String,
    /// Decoded size in bytes.
    pub size_bytes: u64,
    /// False when the attachment is over [`ATTACHMENT_STORE_LIMIT`].
    pub stored: bool,
}

/// The bytes of one attachment, matched to [`AttachmentInfo::index`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachmentPart {
    pub index: u32,
    /// `None` when the attachment is not stored (over the limit).
    pub bytes: Option<Vec<u8>>,
}

impl MessageContent {
    /// The JSON that gets sealed: every field of the message content
    /// (docs/protocol.md), absent values as `null`.
    pub fn to_json(&self) -> Vec<u8> {
        // Only strings, numbers, booleans and lists of them: serialising into
        // a Vec cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// Parses a raw message. Never fails: what cannot be read as MIME is kept as
/// text, so the recipient still sees the message.
pub fn parse_mail(raw: &[u8]) -> ParsedMail {
    match parse_mime(raw) {
        Some(message) => from_message(&message, raw),
        None => unstructured(raw),
    }
}

/// [`parse_mail`] for mail from outside: a message over the structure
/// limits (see the module's documentation) is refused instead.
pub fn parse_mail_checked(raw: &[u8]) -> Result<ParsedMail, MimeLimit> {
    if let Some(limit) = refused_before_parsing(raw) {
        return Err(limit);
    }
    match parse_mime(raw) {
        Some(message) => {
            check_shape(&message)?;
            Ok(from_message(&message, raw))
        }
        None => Ok(unstructured(raw)),
    }
}

/// The MIME parse, or `None` when the parser gives up, or panics: a message
/// the parser cannot walk is kept as text rather than lost, and never takes
/// the session or worker that carried it down with it. (Fuzzing found an
/// input that trips an assertion inside mail-parser: see the
/// `a_message_that_trips_the_parser_is_kept_as_text` test.)
fn parse_mime(raw: &[u8]) -> Option<Message<'_>> {
    std::panic::catch_unwind(|| MessageParser::default().parse(raw))
        .ok()
        .flatten()
}

/// What the raw bytes alone already refuse, before the parser builds
/// anything (a flood of parts would cost memory before it could be counted).
fn refused_before_parsing(raw: &[u8]) -> Option<MimeLimit> {
    (content_type_lines(raw) > MAX_MIME_PARTS || lines_starting(raw, b"--") > MAX_DELIMITER_LINES)
        .then_some(MimeLimit::Parts)
}

/// Lines starting with `--` a message may have: every delimiter of every
/// multipart is such a line (so 500 parts need at most about 1,000), and
/// text lines rarely are (a signature's `-- `), hence ten times the parts.
/// More would let the parser build parts by the million before they could
/// be counted (about 120 bytes each).
const MAX_DELIMITER_LINES: usize = 10 * MAX_MIME_PARTS;

/// Lines starting with `Content-Type:` (any case): an upper bound on the
/// parts that can hold other parts.
fn content_type_lines(raw: &[u8]) -> usize {
    lines_starting(raw, b"content-type:")
}

/// Lines of `raw` starting with `start` (ASCII, any case).
fn lines_starting(raw: &[u8], start: &[u8]) -> usize {
    raw.split(|&b| b == b'\n')
        .filter(|line| {
            line.get(..start.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(start))
        })
        .count()
}

/// Walks the part tree (without recursion) against the limits.
fn check_shape(root: &Message<'_>) -> Result<(), MimeLimit> {
    let mut parts = 0usize;
    let mut pending: Vec<(&Message<'_>, usize, usize)> = vec![(root, 0, 0)];
    while let Some((message, id, depth)) = pending.pop() {
        if depth > MAX_MIME_DEPTH {
            return Err(MimeLimit::Depth);
        }
        let Some(part) = message.parts.get(id) else {
            continue;
        };
        parts += 1;
        if parts > MAX_MIME_PARTS {
            return Err(MimeLimit::Parts);
        }
        if part.headers.len() > MAX_HEADER_FIELDS {
            return Err(MimeLimit::HeaderFields);
        }
        match &part.body {
            PartType::Multipart(children) => pending.extend(
                children
                    .iter()
                    .map(|child| (message, *child as usize, depth + 1)),
            ),
            PartType::Message(inner) => pending.push((inner, 0, depth + 1)),
            _ => {}
        }
    }
    Ok(())
}

fn from_message(message: &Message<'_>, raw: &[u8]) -> ParsedMail {
    let mut content = MessageContent {
        from: message.from().and_then(join_mailboxes),
        to: message.all_to().flat_map(render_list).collect(),
        cc: message.all_cc().flat_map(render_list).collect(),
        reply_to: message.reply_to().and_then(join_mailboxes),
        subject: message.subject().map(str::to_owned),
        date: message.date().and_then(utc_rfc3339),
        message_id_header: message
            .message_id()
            .filter(|id| !id.is_empty())
            .map(|id| format!("<{id}>")),
        text: join_bodies(message.text_bodies(), false),
        html: join_bodies(message.html_bodies(), true),
        attachments: Vec::new(),
    };

    if let Some(text) = broken_multipart_text(message) {
        content.text = Some(text.to_owned());
        return ParsedMail {
            content,
            attachments: Vec::new(),
        };
    }

    let mut attachments = Vec::new();
    for (index, part) in (0u32..).zip(message.attachments()) {
        let bytes = part.contents();
        let size_bytes = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        let stored = size_bytes <= ATTACHMENT_STORE_LIMIT;
        content.attachments.push(AttachmentInfo {
            index,
            filename: attachment_filename(part),
            content_type: content_type(part),
            size_bytes,
            stored,
        });
        attachments.push(AttachmentPart {
            index,
            bytes: stored.then(|| bytes.to_vec()),
        });
    }

    let blank = |body: &Option<String>| body.as_deref().is_none_or(str::is_empty);
    if blank(&content.text)
        && blank(&content.html)
        && attachments.is_empty()
        && let Some(text) = body_as_text(message, raw)
    {
        content.text = Some(text);
    }

    ParsedMail {
        content,
        attachments,
    }
}

/// A message that says it is multipart but whose boundary never shows up:
/// `mail-parser` keeps the body as one text part filed as an attachment of
/// type multipart/*; it is the message's text.
fn broken_multipart_text<'a>(message: &'a Message<'a>) -> Option<&'a str> {
    let [root] = message.parts.as_slice() else {
        return None;
    };
    let declared_multipart = root
        .content_type()
        .is_some_and(|ct| ct.ctype().eq_ignore_ascii_case("multipart"));
    match &root.body {
        PartType::Text(text) if declared_multipart => Some(text.as_ref()),
        _ => None,
    }
}

/// Input with no header block at all: all of it is the text.
fn unstructured(raw: &[u8]) -> ParsedMail {
    ParsedMail {
        content: MessageContent {
            text: (!raw.is_empty()).then(|| String::from_utf8_lossy(raw).into_owned()),
            ..MessageContent::default()
        },
        attachments: Vec::new(),
    }
}

/// Nothing came out as a body or attachment: the raw body after the header
/// block; or, when the parser took the whole input as headers none of which
/// is a known field (so it was never a header block), the whole input.
fn body_as_text(message: &Message<'_>, raw: &[u8]) -> Option<String> {
    let offset = usize::try_from(message.root_part().raw_body_offset()).unwrap_or(usize::MAX);
    let body = raw.get(offset..).filter(|body| !body.is_empty());
    let text = match body {
        Some(body) => body,
        None if message.headers().iter().all(|h| h.name.is_other()) => raw,
        None => return None,
    };
    (!text.is_empty()).then(|| String::from_utf8_lossy(text).into_owned())
}

fn join_bodies<'a>(parts: impl Iterator<Item = &'a MessagePart<'a>>, html: bool) -> Option<String> {
    let bodies: Vec<&str> = parts
        .filter_map(|part| match (&part.body, html) {
            (PartType::Text(text), false) | (PartType::Html(text), true) => Some(text.as_ref()),
            _ => None,
        })
        .collect();
    (!bodies.is_empty()).then(|| bodies.join("\n"))
}

fn render_list<'a>(address: &'a Address<'a>) -> impl Iterator<Item = String> + 'a {
    address.iter().filter_map(render_mailbox)
}

fn join_mailboxes(address: &Address<'_>) -> Option<String> {
    let all: Vec<String> = render_list(address).collect();
    (!all.is_empty()).then(|| all.join(", "))
}

fn render_mailbox(addr: &Addr<'_>) -> Option<String> {
    let name = addr.name().map(str::trim).filter(|name| !name.is_empty());
    let address = addr.address().map(str::trim).filter(|a| !a.is_empty());
    match (name, address) {
        (Some(name), Some(address)) => Some(format!("{} <{address}>", display_name(name))),
        (None, Some(address)) => Some(address.to_owned()),
        (Some(name), None) => Some(name.to_owned()),
        (None, None) => None,
    }
}

/// Quotes a display name when it holds characters that would change how the
/// rendered `Name <addr>` parses back.
pub(crate) fn display_name(name: &str) -> Cow<'_, str> {
    const SPECIALS: &[char] = &[',', ';', '<', '>', '"', '@', ':', '\\', '(', ')', '[', ']'];
    if name.contains(SPECIALS) {
        let escaped = name.replace('\\', "\\\\").replace('"', "\\\"");
        Cow::Owned(format!("\"{escaped}\""))
    } else {
        Cow::Borrowed(name)
    }
}

fn utc_rfc3339(date: &mail_parser::DateTime) -> Option<String> {
    if !date.is_valid() {
        return None;
    }
    DateTime::from_timestamp(date.to_timestamp(), 0)
        .map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true))
}

fn attachment_filename(part: &MessagePart<'_>) -> Option<String> {
    part.attachment_name()
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}

fn content_type(part: &MessagePart<'_>) -> String {
    match part.content_type() {
        Some(ct) => {
            let main = ct.ctype().trim().to_ascii_lowercase();
            match ct.subtype().map(|s| s.trim().to_ascii_lowercase()) {
                Some(sub) if !sub.is_empty() && !main.is_empty() => format!("{main}/{sub}"),
                _ => default_content_type(part).to_owned(),
            }
        }
        None => default_content_type(part).to_owned(),
    }
}

fn default_content_type(part: &MessagePart<'_>) -> &'static str {
    match part.body {
        PartType::Text(_) => "text/plain",
        PartType::Html(_) => "text/html",
        PartType::Message(_) => "message/rfc822",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests;
