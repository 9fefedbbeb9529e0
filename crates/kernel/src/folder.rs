//! Mailbox folders. The move rules live in the messages crate; the names
//! are shared by it, the store and the wire.

string_enum! {
    /// Where a message sits. Received mail lands in `inbox`, the copy of mail
    /// sent from the service in `sent`.
    pub enum Folder: "folder" {
        Inbox => "inbox",
        Sent => "sent",
        Archive => "archive",
        Trash => "trash",
    }
}
string_enum_serde!(Folder);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_refused() {
        for folder in Folder::ALL {
            assert_eq!(folder.as_str().parse::<Folder>(), Ok(folder));
        }
        assert_eq!("trash".parse::<Folder>(), Ok(Folder::Trash));
        assert!("Trash".parse::<Folder>().is_err());
        assert_eq!(serde_json::to_string(&Folder::Sent).unwrap(), r#""sent""#);
        assert!(serde_json::from_str::<Folder>(r#""spam""#).is_err());
    }
}
