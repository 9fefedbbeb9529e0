//! The mailbox across addresses: `GET /messages` with filters, folder
//! counts, stars, moves, deletion and the trash.

use reqwest::Method;
use sealpost_kernel::{AddressId, MessageId};

use crate::types::{Message, MessagePage, MessageReply, PageParams, percent_encode};
use crate::{Client, Result};

pub use sealpost_wire::{
    DeletedBody, Deletion, EmptiedBody, Folder, FolderCount, FolderCounts, FoldersEnvelope,
    MoveRequest, StarRequest,
};

/// The filters of `GET /messages`; `None` filters nothing. Without a
/// folder, every folder but the trash is listed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MailFilter {
    pub folder: Option<Folder>,
    pub address_id: Option<AddressId>,
    pub starred: Option<bool>,
    pub unread: Option<bool>,
}

impl MailFilter {
    fn query(&self, page: &PageParams) -> String {
        let mut pairs = Vec::new();
        if let Some(folder) = self.folder {
            pairs.push(format!("folder={folder}"));
        }
        if let Some(address) = &self.address_id {
            pairs.push(format!("inboxId={}", percent_encode(address.as_str())));
        }
        if let Some(starred) = self.starred {
            pairs.push(format!("starred={starred}"));
        }
        if let Some(unread) = self.unread {
            pairs.push(format!("unread={unread}"));
        }
        if let Some(limit) = page.limit {
            pairs.push(format!("limit={limit}"));
        }
        if let Some(cursor) = &page.cursor {
            pairs.push(format!("cursor={}", percent_encode(cursor)));
        }
        if pairs.is_empty() {
            String::new()
        } else {
            format!("?{}", pairs.join("&"))
        }
    }
}

impl Client {
    /// `GET /messages`: one page of the caller's mail across its addresses
    /// (a device: the addresses assigned to it), newest first, filtered.
    pub async fn list_mail(&self, filter: &MailFilter, page: &PageParams) -> Result<MessagePage> {
        let path = format!("/messages{}", filter.query(page));
        self.json(self.authed(Method::GET, &path)).await
    }

    /// `GET /messages/folders`: counts per folder, across the caller's
    /// addresses or in one of them.
    pub async fn folder_counts(&self, address_id: Option<&AddressId>) -> Result<FolderCounts> {
        let path = match address_id {
            Some(address) => format!(
                "/messages/folders?inboxId={}",
                percent_encode(address.as_str())
            ),
            None => "/messages/folders".to_owned(),
        };
        let envelope: FoldersEnvelope = self.json(self.authed(Method::GET, &path)).await?;
        Ok(envelope.folders)
    }

    /// `POST /messages/{id}/star`: stars the message, or removes the star.
    pub async fn star(&self, id: &MessageId, starred: bool) -> Result<()> {
        let path = format!("/messages/{id}/star");
        self.empty(self.authed(Method::POST, &path).json(&StarRequest {
            starred: Some(starred),
        }))
        .await
    }

    /// `POST /messages/{id}/move`: the message as it is afterwards. Received
    /// mail never goes to `Sent`, sent mail never to `Inbox` (`invalid_field`).
    pub async fn move_message(&self, id: &MessageId, folder: Folder) -> Result<Message> {
        let path = format!("/messages/{id}/move");
        let reply: MessageReply = self
            .json(
                self.authed(Method::POST, &path)
                    .json(&MoveRequest::new(folder)),
            )
            .await?;
        Ok(reply.message)
    }

    /// `DELETE /messages/{id}`: to the trash, or from the trash for good.
    pub async fn delete_message(&self, id: &MessageId) -> Result<Deletion> {
        let path = format!("/messages/{id}");
        let body: DeletedBody = self.json(self.authed(Method::DELETE, &path)).await?;
        Ok(body.result)
    }

    /// `POST /messages/trash/empty` (session): deletes everything in the
    /// trash; answers how many messages went.
    pub async fn empty_trash(&self) -> Result<u64> {
        let body: EmptiedBody = self
            .json(self.authed(Method::POST, "/messages/trash/empty"))
            .await?;
        Ok(body.deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_become_the_query_string() {
        let page = PageParams::first(20);
        assert_eq!(MailFilter::default().query(&PageParams::default()), "");
        let filter = MailFilter {
            folder: Some(Folder::Archive),
            address_id: Some(AddressId::parse("ibx_shop01").unwrap()),
            starred: Some(true),
            unread: Some(false),
        };
        assert_eq!(
            filter.query(&page),
            "?folder=archive&inboxId=ibx_shop01&starred=true&unread=false&limit=20"
        );
        assert_eq!("trash".parse::<Folder>(), Ok(Folder::Trash));
        assert!("Trash".parse::<Folder>().is_err());
    }
}
