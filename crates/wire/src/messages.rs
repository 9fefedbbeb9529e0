//! Messages (docs/api.md "Messages"), `POST /messages` and the long-poll wait.
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
//! A message's content is the JSON of docs/protocol.md "Message content" sealed
//! to the address's key of epoch `keyEpoch`.

use sealpost_kernel::{AddressId, MessageId, Timestamp};
use sealpost_seal::{SealedBox, b64};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: MessageId,
    #[serde(rename = "inboxId")]
    pub address_id: AddressId,
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

/// Mailbox folders: the kernel's closed set of names.
pub use sealpost_kernel::Folder;

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
    #[serde(rename = "inboxId")]
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::AddressId))]
    pub address_id: String,
    /// The whole RFC 5322 message, base64url without padding.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Base64Url))]
    pub raw: String,
}

impl DeliverRequest {
    /// `raw`, a whole RFC 5322 message, for address `inbox_id`.
    #[must_use]
    pub fn new(address_id: &AddressId, raw: &[u8]) -> Self {
        Self {
            address_id: address_id.to_string(),
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
