//! Tickets, their messages and the keys they are sealed to.

use sealpost_kernel::{AccountId, TicketId, TicketMessageId, Timestamp, string_enum};
use sealpost_seal::{SealedBox, b64};

string_enum! {
    /// Where a ticket stands. A ticket closed by the inactivity sweep is
    /// `resolved` like one closed by hand; `closedAt` says when.
    pub enum TicketStatus: "ticket status" {
        Open => "open",
        Resolved => "resolved",
    }
}

string_enum! {
    /// Who wrote a message (or a ticket's last message).
    pub enum Author: "ticket author" {
        Account => "account",
        Staff => "staff",
    }
}

/// An X25519 public key: the support team's (`staffKey`) or the one the
/// account seals its own copies to (`accountKey`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PublicKey(pub [u8; 32]);

impl PublicKey {
    /// 32 bytes in base64url without padding that are not a low-order
    /// X25519 point; anything else is `None`.
    pub fn parse(text: &str) -> Option<PublicKey> {
        sealpost_seal::parse_public_key(text).ok().map(PublicKey)
    }

    pub fn to_text(&self) -> String {
        b64::encode(&self.0)
    }
}

/// The two copies of one sealed record: one for the support team, one for
/// the account. The service holds both and can open neither.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoxPair {
    pub for_staff: SealedBox,
    pub for_account: SealedBox,
}

/// The bytes a box counts against the account's support storage: its binary
/// form (version, key, nonce, tag and ciphertext).
pub fn box_bytes(sealed: &SealedBox) -> u64 {
    (1 + sealed.epk.len() + sealed.n.len() + sealed.t.len() + sealed.c.len()) as u64
}

impl BoxPair {
    /// Both copies, as counted against the storage limit.
    pub fn stored_bytes(&self) -> u64 {
        box_bytes(&self.for_staff) + box_bytes(&self.for_account)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ticket {
    pub id: TicketId,
    pub account: AccountId,
    pub status: TicketStatus,
    pub last_author: Author,
    pub created_at: Timestamp,
    /// The last message, close or reopen.
    pub updated_at: Timestamp,
    pub closed_at: Option<Timestamp>,
    /// A staff message the account has not read yet.
    pub unread: bool,
    pub header: BoxPair,
    /// The key the account's copies are sealed to.
    pub account_key: PublicKey,
    /// The support key the header's staff copy is sealed to.
    pub staff_key: PublicKey,
    /// The binding the account sent with the ticket (base64url MAC), if any.
    pub binding: Option<[u8; 32]>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TicketMessage {
    pub id: TicketMessageId,
    pub ticket: TicketId,
    pub author: Author,
    pub at: Timestamp,
    /// The support key the staff copy is sealed to.
    pub staff_key: PublicKey,
    pub boxes: BoxPair,
}

/// A ticket as the account sends it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewTicket {
    pub id: TicketId,
    pub account_key: PublicKey,
    pub staff_key: PublicKey,
    pub binding: Option<[u8; 32]>,
    pub header: BoxPair,
    pub message_id: TicketMessageId,
    pub message: BoxPair,
}

/// A message as either side sends it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewMessage {
    pub id: TicketMessageId,
    pub staff_key: PublicKey,
    pub boxes: BoxPair,
}

/// `POST /support/key`: the account vouches for a support key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub account: AccountId,
    pub account_key: PublicKey,
    pub staff_key: PublicKey,
    pub mac: [u8; 32],
    pub at: Timestamp,
}
