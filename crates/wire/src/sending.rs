//! `POST /messages/send`: [`SendMailRequest`] in, [`SentMail`] out.

use sealpost_kernel::MessageId;
use serde::{Deserialize, Serialize};

/// Mail to send from one of the account's addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SendMailRequest {
    /// One of the account's addresses (the email address).
    #[cfg_attr(feature = "openapi", schema(example = "shop.x7kq2m@mail.example"))]
    pub from: String,
    /// Display name for `From`; no control characters, up to 200 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_name: Option<String>,
    /// 1 to 50 recipients, each `address` or `Name <address>`; the same
    /// address twice is sent once.
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 50))]
    pub to: Vec<String>,
    /// Copies, each as in `to`; with `to` at most 50 recipients. An address
    /// already in `to`, or twice here, is copied once. Absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(max_items = 49))]
    pub cc: Vec<String>,
    /// Up to 998 characters, no control characters.
    pub subject: String,
    /// The plain-text body, up to 512 KiB.
    pub text: String,
    /// An HTML body, up to 512 KiB; the message is then multipart/alternative.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
}

/// The answer of `POST /messages/send`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SentMail {
    /// Always true: the relay accepted the message.
    pub sent: bool,
    /// The copy in `sent`; null when the address has no publicKey (nothing
    /// can be sealed to it) or the copy could not be stored.
    pub message_id: Option<MessageId>,
}
