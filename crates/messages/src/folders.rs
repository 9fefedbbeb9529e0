//! Folders and stars: where a message sits in the mailbox, which moves are
//! allowed, and what deleting does.
//!
//! Mail that arrives lands in `inbox`; the copy of mail sent from the service
//! (`outgoing`) lands in `sent`. Received mail never enters `sent` and sent
//! copies never enter `inbox`, so each of the two folders means one thing.
//! Deleting moves a message to `trash`; deleting it from `trash` deletes it
//! for good.

use sealpost_kernel::AddressId;
pub use sealpost_kernel::Folder;

/// A move the folder rules refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MoveRefusal {
    #[error("only mail sent from this service goes to sent")]
    ReceivedToSent,
    #[error("sent mail goes to sent, archive or trash, not inbox")]
    SentToInbox,
}

/// Whether a message (a sent copy when `outgoing`) may move to `to`.
pub fn check_move(outgoing: bool, to: Folder) -> Result<(), MoveRefusal> {
    match (outgoing, to) {
        (false, Folder::Sent) => Err(MoveRefusal::ReceivedToSent),
        (true, Folder::Inbox) => Err(MoveRefusal::SentToInbox),
        _ => Ok(()),
    }
}

/// What `DELETE /messages/:id` does to a message in `folder`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deletion {
    /// Moved to the trash.
    ToTrash,
    /// Already in the trash: deleted, attachments included.
    ForGood,
}

pub fn deletion(folder: Folder) -> Deletion {
    if folder == Folder::Trash {
        Deletion::ForGood
    } else {
        Deletion::ToTrash
    }
}

/// The filters of `GET /messages`; `None` filters nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessageFilter {
    /// One folder; `None` lists every folder but the trash.
    pub folder: Option<Folder>,
    /// One of the reader's addresses.
    pub address: Option<AddressId>,
    pub starred: Option<bool>,
    pub unread: Option<bool>,
}

impl MessageFilter {
    /// The folders listed: the one asked for, else all but the trash.
    pub fn folders(&self) -> Vec<Folder> {
        match self.folder {
            Some(folder) => vec![folder],
            None => Folder::ALL
                .into_iter()
                .filter(|folder| *folder != Folder::Trash)
                .collect(),
        }
    }
}

/// How many messages a folder holds, and how many of them are unread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FolderCount {
    pub total: u64,
    pub unread: u64,
}

/// `GET /messages/folders`: every folder's count, and the starred mail across them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FolderCounts {
    pub inbox: FolderCount,
    pub sent: FolderCount,
    pub archive: FolderCount,
    pub trash: FolderCount,
    pub starred: FolderCount,
}

impl FolderCounts {
    pub fn folder_mut(&mut self, folder: Folder) -> &mut FolderCount {
        match folder {
            Folder::Inbox => &mut self.inbox,
            Folder::Sent => &mut self.sent,
            Folder::Archive => &mut self.archive,
            Folder::Trash => &mut self.trash,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_read_and_print_their_wire_names() {
        for folder in Folder::ALL {
            assert_eq!(folder.as_str().parse::<Folder>(), Ok(folder));
            assert_eq!(folder.to_string(), folder.as_str());
        }
        assert!("Inbox".parse::<Folder>().is_err());
        assert!("spam".parse::<Folder>().is_err());
    }

    #[test]
    fn received_mail_never_enters_sent_and_sent_copies_never_enter_address() {
        assert_eq!(
            check_move(false, Folder::Sent),
            Err(MoveRefusal::ReceivedToSent)
        );
        assert_eq!(
            check_move(true, Folder::Inbox),
            Err(MoveRefusal::SentToInbox)
        );
        for folder in [Folder::Inbox, Folder::Archive, Folder::Trash] {
            assert_eq!(check_move(false, folder), Ok(()));
        }
        for folder in [Folder::Sent, Folder::Archive, Folder::Trash] {
            assert_eq!(check_move(true, folder), Ok(()));
        }
    }

    #[test]
    fn deleting_trashes_first_and_deletes_from_the_trash() {
        assert_eq!(deletion(Folder::Inbox), Deletion::ToTrash);
        assert_eq!(deletion(Folder::Sent), Deletion::ToTrash);
        assert_eq!(deletion(Folder::Archive), Deletion::ToTrash);
        assert_eq!(deletion(Folder::Trash), Deletion::ForGood);
    }

    #[test]
    fn without_a_folder_every_folder_but_the_trash_is_listed() {
        assert_eq!(
            MessageFilter::default().folders(),
            vec![Folder::Inbox, Folder::Sent, Folder::Archive]
        );
        let trash = MessageFilter {
            folder: Some(Folder::Trash),
            ..MessageFilter::default()
        };
        assert_eq!(trash.folders(), vec![Folder::Trash]);
    }
}
