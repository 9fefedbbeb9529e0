//! SPEC.md "Messages", `POST /messages` and the long-poll wait.
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `GET /inboxes/{id}/messages` | | [`MessagePage`] (newest first) |
//! | `GET /inboxes/{id}/messages/wait` | | [`WaitBody`] (oldest first), or 204 |
//! | `GET /messages/{id}` | | [`MessageReply`] |
//! | `POST /messages/{id}/read` | [`ReadRequest`] (optional) | 204 |
//! | `GET /workers/messages` (a device) | | [`MessageList`] |
//! | `POST /messages` | [`DeliverRequest`] | [`Delivered`] |
//!
//! A message's content is CONTRACT.md section 5 JSON sealed to the
//! address's key of epoch `keyEpoch`.

use sealpost_kernel::{AddressId, MessageId, Timestamp};
use sealpost_seal::{SealedBox, b64};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: MessageId,
    pub inbox_id: AddressId,
    pub received_at: Timestamp,
    pub read: bool,
    pub size_bytes: u64,
    /// The address key epoch the content is sealed under.
    pub key_epoch: u32,
    /// The sealed message content (`docs/protocol.md`); context `service/v1/message:<inboxId>:<id>`.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub content: SealedBox,
    pub folder: Folder,
    pub starred: bool,
    /// True for the copy of mail sent from the address (`POST /messages/send`).
    pub outgoing: bool,
}

/// Where a message sits. Received mail lands in `Inbox`, the copy of sent
/// mail in `Sent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Folder {
    Inbox,
    Sent,
    Archive,
    Trash,
}

impl Folder {
    pub const ALL: [Folder; 4] = [Folder::Inbox, Folder::Sent, Folder::Archive, Folder::Trash];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Folder::Inbox => "inbox",
            Folder::Sent => "sent",
            Folder::Archive => "archive",
            Folder::Trash => "trash",
        }
    }
}

impl std::fmt::Display for Folder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A folder name that is not one of the four.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownFolder(pub String);

impl std::fmt::Display for UnknownFolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown folder {:?}; expected inbox, sent, archive or trash",
            self.0
        )
    }
}

impl std::error::Error for UnknownFolder {}

impl std::str::FromStr for Folder {
    type Err = UnknownFolder;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Folder::ALL
            .into_iter()
            .find(|folder| folder.as_str() == text)
            .ok_or_else(|| UnknownFolder(text.to_owned()))
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MessageReply {
    pub message: Message,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MessagePage {
    pub messages: Vec<Message>,
    pub next_cursor: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WaitBody {
    /// Oldest first.
    pub messages: Vec<Message>,
    /// Pass as `after` to wait for the next mail.
    pub cursor: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MessageList {
    pub messages: Vec<Message>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReadRequest {
    /// Default true; false marks unread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeliverRequest {
    /// One of the caller's addresses; it must have a publicKey.
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::AddressId))]
    pub inbox_id: String,
    /// The whole RFC 5322 message, base64url without padding.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Base64Url))]
    pub raw: String,
}

impl DeliverRequest {
    /// `raw`, a whole RFC 5322 message, for address `inbox_id`.
    #[must_use]
    pub fn new(inbox_id: &AddressId, raw: &[u8]) -> Self {
        Self {
            inbox_id: inbox_id.to_string(),
            raw: b64::encode(raw),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Delivered {
    pub message_id: MessageId,
}
