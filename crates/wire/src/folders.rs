//! The mailbox across addresses: folder counts, stars, moves, deletion and
//! the trash. (`GET /messages` answers a [`MessagePage`](crate::MessagePage).)
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `GET /messages/folders` | | [`FoldersEnvelope`] |
//! | `POST /messages/{id}/star` | [`StarRequest`] (optional) | 204 |
//! | `POST /messages/{id}/move` | [`MoveRequest`] | [`MessageReply`](crate::MessageReply) |
//! | `DELETE /messages/{id}` | | [`DeletedBody`] |
//! | `POST /messages/trash/empty` | | [`EmptiedBody`] |

use serde::{Deserialize, Serialize};

use crate::Folder;

/// How many messages a folder holds, and how many of them are unread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FolderCount {
    pub total: u64,
    pub unread: u64,
}

/// The counts of `GET /messages/folders`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FolderCounts {
    pub inbox: FolderCount,
    pub sent: FolderCount,
    pub archive: FolderCount,
    pub trash: FolderCount,
    /// Starred mail in every folder but the trash.
    pub starred: FolderCount,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FoldersEnvelope {
    pub folders: FolderCounts,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StarRequest {
    /// Default true; false removes the star.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub starred: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MoveRequest {
    /// `inbox`, `sent`, `archive` or `trash`. Received mail never goes to
    /// `sent`, and sent mail never to `inbox`.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::Folder))]
    pub folder: String,
}

impl MoveRequest {
    #[must_use]
    pub fn new(folder: Folder) -> Self {
        Self {
            folder: folder.as_str().to_owned(),
        }
    }
}

/// What `DELETE /messages/{id}` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Deletion {
    /// Moved to the trash.
    Trashed,
    /// It was in the trash: deleted for good, attachments included.
    Deleted,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeletedBody {
    /// `trashed` (moved to the trash) or `deleted` (it was in the trash: gone for good).
    pub result: Deletion,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EmptiedBody {
    /// How many messages were deleted.
    pub deleted: u64,
}
