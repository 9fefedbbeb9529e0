//! Inbound mail, parsed once: the JSON that docs/protocol.md "Message content"
//! seals to the address's key, and the attachment parts stored beside it.
//!
//! Pure: no I/O, no logging. Storage and blobs sit behind the traits in
//! [`store`]; [`ingest`] turns a raw message into sealed rows and blobs, and
//! [`mailbox`] serves them back to the account's clients; [`recovery`]
//! deletes the blobs of deliveries that died before committing.

pub mod content;
pub mod folders;
pub mod ingest;
pub mod mailbox;
pub mod own_domains;
pub mod recipients_seen;
pub mod recovery;
pub mod sealing_keys;
pub mod send;
pub mod store;

pub use content::{
    ATTACHMENT_STORE_LIMIT, AttachmentInfo, AttachmentPart, MessageContent, ParsedMail, parse_mail,
};
