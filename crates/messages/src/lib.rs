//! Inbound mail, parsed once: the JSON that CONTRACT.md section 5 seals to the
//! address's key, and the attachment parts stored beside it.
//!
//! Pure: no I/O, no logging. The SMTP side hands the raw message in, and gets
//! back [`content::ParsedMail`]; nothing here fails, a malformed message still
//! yields whatever can be read from it.

pub mod content;

pub use content::{
    ATTACHMENT_STORE_LIMIT, AttachmentInfo, AttachmentPart, MessageContent, ParsedMail, parse_mail,
};
