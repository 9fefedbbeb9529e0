//! In-app support from both sides: the account's `/support` endpoints and
//! the staff API (`/staff/...`, a staff token as the bearer), with the
//! sealing conventions both follow.
//!
//! - Header: JSON `{"category", "priority", "subject"}` sealed with context
//!   `service/v1/support-header:<ticketId>`.
//! - Message: JSON `{"text"}` sealed with context
//!   `service/v1/support-message:<ticketId>:<messageId>`.
//! - Each is sealed twice: to the support key (`forStaff`) and to the
//!   account's vault key (`forAccount`, the ticket's `accountKey`).
//! - The binding: [`sealpost_seal::support_binding`] with the ticket id as
//!   the request id (`key` for `POST /support/key`).
//!
//! ```
//! use sealpost_client::support::{self, TicketHeader};
//! use sealpost_seal::{PublicKey, RecoveryPhrase, StaticSecret, random_bytes};
//!
//! let keys = RecoveryPhrase::generate().keys();
//! let support_secret = StaticSecret::from(random_bytes::<32>());
//! let staff_key = PublicKey::from(&support_secret).to_bytes();
//! let header = TicketHeader::new("billing", "normal", "Refund");
//! let sealed = support::seal_new_ticket(&keys, &staff_key, &header, "Please refund");
//! let ticket = &sealed.request;
//! let opened = support::open_header(&support_secret, &sealed.ticket_id, &serde_json::from_value(ticket.header.for_staff.clone()).unwrap()).unwrap();
//! assert_eq!(opened.subject, "Refund");
//! ```

use reqwest::Method;
use sealpost_kernel::{TicketId, TicketMessageId};
use sealpost_seal::{
    AccountKeys, SealError, SealedBox, StaticSecret, b64, context, support_binding,
};
use serde::{Deserialize, Serialize};

use crate::{Client, Result};

pub use sealpost_wire::{
    BoxPairRequest, CreateTicketRequest, FirstMessageRequest, MessageAdded, StaffBinding,
    StaffTicket, StaffTicketDetail, StaffTicketList, SupportKeyReply, SupportKeyRequest,
    SupportOverview, Ticket, TicketAuthor, TicketDetail, TicketMessage, TicketMessageRequest,
    TicketReply, TicketStatus,
};

/// A new ticket id: `tkt_` + 20 random lowercase letters and digits.
#[must_use]
pub fn new_ticket_id() -> TicketId {
    TicketId::from_trusted(format!(
        "{}{}",
        TicketId::PREFIX,
        crate::sealing::random_id_body(20)
    ))
}

/// A new ticket message id: `tkm_` + 16 random lowercase letters and digits.
#[must_use]
pub fn new_message_id() -> TicketMessageId {
    TicketMessageId::from_trusted(format!(
        "{}{}",
        TicketMessageId::PREFIX,
        crate::sealing::random_id_body(16)
    ))
}

/// What a ticket's header holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TicketHeader {
    pub category: String,
    /// low, normal, high or urgent.
    pub priority: String,
    pub subject: String,
}

impl TicketHeader {
    #[must_use]
    pub fn new(category: &str, priority: &str, subject: &str) -> Self {
        Self {
            category: category.to_owned(),
            priority: priority.to_owned(),
            subject: subject.to_owned(),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct MessageText {
    text: String,
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    // Strings only: serialising cannot fail.
    serde_json::to_vec(value).unwrap_or_default()
}

fn pair(
    staff_key: &[u8; 32],
    account_key: &[u8; 32],
    context: &str,
    plain: &[u8],
) -> BoxPairRequest {
    BoxPairRequest::new(
        &SealedBox::seal(staff_key, context, plain),
        &SealedBox::seal(account_key, context, plain),
    )
}

/// A ticket ready for `POST /support/tickets`, and its ids.
pub struct SealedTicket {
    pub ticket_id: TicketId,
    pub message_id: TicketMessageId,
    pub request: CreateTicketRequest,
}

/// Seals a new ticket (header and first message) for the account of `keys`
/// and the support key `staff_key`, with the binding.
#[must_use]
pub fn seal_new_ticket(
    keys: &AccountKeys,
    staff_key: &[u8; 32],
    header: &TicketHeader,
    text: &str,
) -> SealedTicket {
    let ticket_id = new_ticket_id();
    let message_id = new_message_id();
    let account_key = keys.vault_public_key();
    let header_pair = pair(
        staff_key,
        &account_key,
        &context::support_header(ticket_id.as_str()),
        &to_json(header),
    );
    let message = pair(
        staff_key,
        &account_key,
        &context::support_message(ticket_id.as_str(), message_id.as_str()),
        &to_json(&MessageText {
            text: text.to_owned(),
        }),
    );
    let binding = support_binding(
        &keys.vault_secret(),
        staff_key,
        &keys.account_id(),
        ticket_id.as_str(),
        staff_key,
    );
    SealedTicket {
        request: CreateTicketRequest {
            id: ticket_id.to_string(),
            account_key: b64::encode(&account_key),
            staff_key: b64::encode(staff_key),
            binding: Some(b64::encode(&binding)),
            header: header_pair,
            message: FirstMessageRequest {
                id: message_id.to_string(),
                for_staff: message.for_staff,
                for_account: message.for_account,
            },
        },
        ticket_id,
        message_id,
    }
}

/// Seals a message of either side: to `staff_key` and to the ticket's
/// `account_key`.
#[must_use]
pub fn seal_message(
    staff_key: &[u8; 32],
    account_key: &[u8; 32],
    ticket_id: &TicketId,
    text: &str,
) -> TicketMessageRequest {
    let id = new_message_id();
    let boxes = pair(
        staff_key,
        account_key,
        &context::support_message(ticket_id.as_str(), id.as_str()),
        &to_json(&MessageText {
            text: text.to_owned(),
        }),
    );
    TicketMessageRequest {
        id: id.to_string(),
        staff_key: b64::encode(staff_key),
        for_staff: boxes.for_staff,
        for_account: boxes.for_account,
    }
}

/// The account's `POST /support/key` body for `staff_key`.
#[must_use]
pub fn key_binding(keys: &AccountKeys, staff_key: &[u8; 32]) -> SupportKeyRequest {
    let mac = support_binding(
        &keys.vault_secret(),
        staff_key,
        &keys.account_id(),
        sealpost_seal::KEY_REQUEST,
        staff_key,
    );
    SupportKeyRequest {
        account_key: b64::encode(&keys.vault_public_key()),
        binding: b64::encode(&mac),
        staff_key: b64::encode(staff_key),
    }
}

/// Opens a header copy with the reader's secret (the account's vault key
/// or the support key).
pub fn open_header(
    secret: &StaticSecret,
    ticket_id: &TicketId,
    sealed: &SealedBox,
) -> std::result::Result<TicketHeader, SealError> {
    let plain = sealed.open(secret, &context::support_header(ticket_id.as_str()))?;
    serde_json::from_slice(&plain).map_err(|_| SealError::InvalidBox("not a ticket header".into()))
}

/// Opens a message copy with the reader's secret.
pub fn open_message(
    secret: &StaticSecret,
    ticket_id: &TicketId,
    message_id: &TicketMessageId,
    sealed: &SealedBox,
) -> std::result::Result<String, SealError> {
    let plain = sealed.open(
        secret,
        &context::support_message(ticket_id.as_str(), message_id.as_str()),
    )?;
    let message: MessageText = serde_json::from_slice(&plain)
        .map_err(|_| SealError::InvalidBox("not a ticket message".into()))?;
    Ok(message.text)
}

impl Client {
    /// `GET /support`: tickets newest first, availability and the support key.
    pub async fn support(&self) -> Result<SupportOverview> {
        self.json(self.authed(Method::GET, "/support")).await
    }

    /// `POST /support/tickets`.
    pub async fn create_ticket(&self, request: &CreateTicketRequest) -> Result<Ticket> {
        let reply: TicketReply = self
            .json(self.authed(Method::POST, "/support/tickets").json(request))
            .await?;
        Ok(reply.ticket)
    }

    /// `GET /support/tickets/{id}`: marks staff replies read.
    pub async fn get_ticket(&self, id: &TicketId) -> Result<TicketDetail> {
        self.json(self.authed(Method::GET, &format!("/support/tickets/{id}")))
            .await
    }

    /// `POST /support/tickets/{id}/messages`.
    pub async fn add_ticket_message(
        &self,
        id: &TicketId,
        request: &TicketMessageRequest,
    ) -> Result<MessageAdded> {
        self.json(
            self.authed(Method::POST, &format!("/support/tickets/{id}/messages"))
                .json(request),
        )
        .await
    }

    /// `POST /support/tickets/{id}/close`.
    pub async fn close_ticket(&self, id: &TicketId) -> Result<Ticket> {
        let reply: TicketReply = self
            .json(self.authed(Method::POST, &format!("/support/tickets/{id}/close")))
            .await?;
        Ok(reply.ticket)
    }

    /// `POST /support/tickets/{id}/reopen`.
    pub async fn reopen_ticket(&self, id: &TicketId) -> Result<Ticket> {
        let reply: TicketReply = self
            .json(self.authed(Method::POST, &format!("/support/tickets/{id}/reopen")))
            .await?;
        Ok(reply.ticket)
    }

    /// `POST /support/key`: whether anything changed.
    pub async fn bind_support_key(&self, request: &SupportKeyRequest) -> Result<bool> {
        let reply: SupportKeyReply = self
            .json(self.authed(Method::POST, "/support/key").json(request))
            .await?;
        Ok(reply.changed)
    }
}

pub use sealpost_wire::{
    AbuseReceived, AbuseReportBody, AbuseReportList, AbuseReportRequest, AuditEntryBody, AuditLog,
    ResolveReportRequest, RotateKeyRequest, RotationChallengeBody, StaffTicketReply,
    SuspendRequest, SuspensionBody, SwitchesBody, SwitchesRequest,
};

/// `path` with `status` and `cursor` as its query, each when given.
fn staff_list_path(path: &str, status: Option<&str>, cursor: Option<&str>) -> String {
    let query: Vec<String> = [("status", status), ("cursor", cursor)]
        .into_iter()
        .filter_map(|(name, value)| value.map(|value| format!("{name}={value}")))
        .collect();
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", query.join("&"))
    }
}

/// Staff side: verifies a ticket's binding with the support secret (the
/// ticket id is the request id). `false` flags a mismatch to look into.
#[must_use]
pub fn verify_ticket_binding(support_secret: &StaticSecret, ticket: &StaffTicket) -> bool {
    verify_binding(
        support_secret,
        &ticket.account_key,
        ticket.account_id.as_str(),
        ticket.ticket.id.as_str(),
        ticket.binding.as_deref(),
    )
}

/// Staff side: verifies the account's last `POST /support/key` binding with
/// the support secret its `staffKey` names (the request id is
/// [`sealpost_seal::KEY_REQUEST`]). `false` flags a mismatch.
#[must_use]
pub fn verify_key_binding(
    support_secret: &StaticSecret,
    account_id: &sealpost_kernel::AccountId,
    binding: &StaffBinding,
) -> bool {
    verify_binding(
        support_secret,
        &binding.account_key,
        account_id.as_str(),
        sealpost_seal::KEY_REQUEST,
        Some(&binding.binding),
    )
}

/// A binding as the service hands it over (base64 texts); an absent or
/// undecodable one never verifies.
fn verify_binding(
    support_secret: &StaticSecret,
    account_key: &str,
    account_id: &str,
    request: &str,
    binding: Option<&str>,
) -> bool {
    let (Some(mac), Ok(account_key)) = (
        binding.and_then(|text| b64::decode(text).ok()),
        b64::decode_32(account_key),
    ) else {
        return false;
    };
    sealpost_seal::verify_support_binding(support_secret, &account_key, account_id, request, &mac)
}

impl Client {
    /// `POST /abuse/reports` (no token needed).
    pub async fn report_abuse(&self, request: &AbuseReportRequest) -> Result<AbuseReceived> {
        self.json(self.public(Method::POST, "/abuse/reports").json(request))
            .await
    }

    // ---- Staff API: the client's token is a staff token ----

    /// `GET /staff/tickets`: one page, after `cursor` (a `nextCursor`).
    pub async fn staff_tickets(
        &self,
        status: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<StaffTicketList> {
        let path = staff_list_path("/staff/tickets", status, cursor);
        self.json(self.authed(Method::GET, &path)).await
    }

    /// `GET /staff/tickets/{id}`.
    pub async fn staff_ticket(&self, id: &TicketId) -> Result<StaffTicketDetail> {
        self.json(self.authed(Method::GET, &format!("/staff/tickets/{id}")))
            .await
    }

    /// `POST /staff/tickets/{id}/messages`.
    pub async fn staff_reply(
        &self,
        id: &TicketId,
        request: &TicketMessageRequest,
    ) -> Result<MessageAdded> {
        self.json(
            self.authed(Method::POST, &format!("/staff/tickets/{id}/messages"))
                .json(request),
        )
        .await
    }

    /// `POST /staff/tickets/{id}/resolve`.
    pub async fn staff_resolve(&self, id: &TicketId) -> Result<StaffTicket> {
        let reply: StaffTicketReply = self
            .json(self.authed(Method::POST, &format!("/staff/tickets/{id}/resolve")))
            .await?;
        Ok(reply.ticket)
    }

    /// `POST /staff/support-key/challenge`: what a rotation must be proved
    /// over, and the support key in force whose secret proves it.
    pub async fn support_key_challenge(&self) -> Result<RotationChallengeBody> {
        self.json(self.authed(Method::POST, "/staff/support-key/challenge"))
            .await
    }

    /// `POST /staff/support-key`: the new public key, proved by
    /// `current_secret` (the secret of the key in force) over `challenge`.
    /// Both secrets stay here.
    pub async fn rotate_support_key(
        &self,
        staff_key: &[u8; 32],
        challenge: &RotationChallengeBody,
        current_secret: &StaticSecret,
    ) -> Result<SwitchesBody> {
        let challenge_key = b64::decode_32(&challenge.challenge_key).map_err(|_| {
            crate::ClientError::Decode(serde::de::Error::custom(
                "challengeKey is not a base64url X25519 key",
            ))
        })?;
        let staff_key = b64::encode(staff_key);
        let proof = sealpost_seal::support_key_proof(
            current_secret,
            &challenge_key,
            &challenge.nonce,
            &staff_key,
        );
        self.json(
            self.authed(Method::POST, "/staff/support-key")
                .json(&RotateKeyRequest {
                    staff_key,
                    nonce: challenge.nonce.clone(),
                    proof: b64::encode(&proof),
                }),
        )
        .await
    }

    /// `GET /staff/switches`.
    pub async fn switches(&self) -> Result<SwitchesBody> {
        self.json(self.authed(Method::GET, "/staff/switches")).await
    }

    /// `PATCH /staff/switches`.
    pub async fn update_switches(&self, request: &SwitchesRequest) -> Result<SwitchesBody> {
        self.json(self.authed(Method::PATCH, "/staff/switches").json(request))
            .await
    }

    /// `POST /staff/accounts/{id}/suspend` (`suspend`) or `.../unsuspend`.
    pub async fn set_suspended(
        &self,
        account: &str,
        suspend: bool,
        reason: &str,
    ) -> Result<SuspensionBody> {
        let verb = if suspend { "suspend" } else { "unsuspend" };
        self.json(
            self.authed(Method::POST, &format!("/staff/accounts/{account}/{verb}"))
                .json(&SuspendRequest {
                    reason: reason.to_owned(),
                }),
        )
        .await
    }

    /// `GET /staff/abuse-reports`: one page, after `cursor` (a `nextCursor`).
    pub async fn abuse_reports(
        &self,
        status: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<AbuseReportList> {
        let path = staff_list_path("/staff/abuse-reports", status, cursor);
        self.json(self.authed(Method::GET, &path)).await
    }

    /// `POST /staff/abuse-reports/{id}/resolve`.
    pub async fn resolve_abuse_report(&self, id: &str, resolution: &str) -> Result<()> {
        self.empty(
            self.authed(Method::POST, &format!("/staff/abuse-reports/{id}/resolve"))
                .json(&ResolveReportRequest {
                    resolution: resolution.to_owned(),
                }),
        )
        .await
    }

    /// `GET /staff/audit`.
    pub async fn audit_log(&self, limit: u32) -> Result<AuditLog> {
        self.json(self.authed(Method::GET, &format!("/staff/audit?limit={limit}")))
            .await
    }
}

#[cfg(test)]
mod tests {
    //! The sealing above, as a fixture the TypeScript SDK reproduces
    //! (`web/packages/sdk/test/support.test.ts`): `tests/data/support.json`.
    //! `SEALPOST_WRITE_FIXTURES=1` writes it anew; otherwise it must match.

    use std::path::PathBuf;

    use sealpost_seal::{PublicKey, RecoveryPhrase};
    use serde_json::{Value, json};

    use super::*;

    fn fixture_path() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/support.json")
    }

    /// The protocol vectors' phrase: its keys are checked there.
    fn phrase() -> String {
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../seal/tests/data/vectors.json");
        let vectors: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        vectors["phrase"].as_str().unwrap().to_owned()
    }

    /// A box sealed with a fixed ephemeral secret and nonce, with them.
    fn fixed_box(byte: u8, recipient: &[u8; 32], context: &str, plain: &[u8]) -> Value {
        let ephemeral = [byte; 32];
        let nonce = [byte.wrapping_add(100); 12];
        let sealed = SealedBox::seal_with(ephemeral, nonce, recipient, context, plain);
        json!({
            "ephemeralSecret": b64::encode(&ephemeral),
            "nonce": b64::encode(&nonce),
            "box": serde_json::to_value(&sealed).unwrap(),
        })
    }

    fn fixture() -> Value {
        let phrase = phrase();
        let keys = RecoveryPhrase::parse(&phrase).unwrap().keys();
        let support_secret = StaticSecret::from([0x5a; 32]);
        let staff_key = PublicKey::from(&support_secret).to_bytes();
        let account_key = keys.vault_public_key();
        let ticket_id = TicketId::from_trusted("tkt_fixture0support00001".to_owned());
        let message_id = TicketMessageId::from_trusted("tkm_fixture0message01".to_owned());
        let reply_id = TicketMessageId::from_trusted("tkm_fixture0message02".to_owned());
        // Quotes, a backslash, control characters, non-ASCII and an emoji:
        // both JSON writers must agree on every byte.
        let header = TicketHeader::new(
            "billing",
            "high",
            "Refund \"twice\" \\ for März ✓ 🧾 \u{1}\t",
        );
        let text = "Hello,\nI was charged twice</p>\u{7f}\u{2028} ünïcödé — 🙏\r\n";
        let reply = "Refunded. Anything else?";
        let header_plain = to_json(&header);
        let text_plain = to_json(&MessageText {
            text: text.to_owned(),
        });
        let reply_plain = to_json(&MessageText {
            text: reply.to_owned(),
        });
        let header_context = context::support_header(ticket_id.as_str());
        let text_context = context::support_message(ticket_id.as_str(), message_id.as_str());
        let reply_context = context::support_message(ticket_id.as_str(), reply_id.as_str());
        let binding = support_binding(
            &keys.vault_secret(),
            &staff_key,
            &keys.account_id(),
            ticket_id.as_str(),
            &staff_key,
        );
        json!({
            "about": "Support sealing by the Rust SDK (crates/client/src/support.rs), reproduced by \
                      web/packages/sdk/test/support.test.ts. Written by the Rust test with \
                      SEALPOST_WRITE_FIXTURES=1; fixed ephemeral secrets and nonces, for tests only.",
            "phrase": phrase,
            "accountId": keys.account_id(),
            "vaultPublicKey": b64::encode(&account_key),
            "supportSecret": b64::encode(&support_secret.to_bytes()),
            "staffKey": b64::encode(&staff_key),
            "ticketId": ticket_id.as_str(),
            "messageId": message_id.as_str(),
            "replyId": reply_id.as_str(),
            "header": serde_json::to_value(&header).unwrap(),
            "text": text,
            "reply": reply,
            "headerPlaintext": String::from_utf8(header_plain.clone()).unwrap(),
            "textPlaintext": String::from_utf8(text_plain.clone()).unwrap(),
            "headerContext": header_context,
            "textContext": text_context,
            "boxes": {
                "headerForStaff": fixed_box(1, &staff_key, &header_context, &header_plain),
                "headerForAccount": fixed_box(2, &account_key, &header_context, &header_plain),
                "textForStaff": fixed_box(3, &staff_key, &text_context, &text_plain),
                "textForAccount": fixed_box(4, &account_key, &text_context, &text_plain),
                "replyForStaff": fixed_box(5, &staff_key, &reply_context, &reply_plain),
                "replyForAccount": fixed_box(6, &account_key, &reply_context, &reply_plain),
            },
            "ticketBinding": b64::encode(&binding),
            "keyRequest": serde_json::to_value(key_binding(&keys, &staff_key)).unwrap(),
        })
    }

    #[test]
    fn the_shared_support_fixture_matches() {
        let expected = fixture();
        if std::env::var("SEALPOST_WRITE_FIXTURES").is_ok_and(|value| value == "1") {
            let text = serde_json::to_string_pretty(&expected).unwrap() + "\n";
            std::fs::create_dir_all(fixture_path().parent().unwrap()).unwrap();
            std::fs::write(fixture_path(), text).unwrap();
        }
        let stored: Value =
            serde_json::from_str(&std::fs::read_to_string(fixture_path()).unwrap()).unwrap();
        assert_eq!(
            stored, expected,
            "tests/data/support.json is stale: SEALPOST_WRITE_FIXTURES=1 writes it anew"
        );
    }

    #[test]
    fn a_sealed_ticket_opens_for_both_sides_and_its_binding_verifies() {
        let keys = RecoveryPhrase::parse(&phrase()).unwrap().keys();
        let support_secret = StaticSecret::from([0x5a; 32]);
        let staff_key = PublicKey::from(&support_secret).to_bytes();
        let header = TicketHeader::new("technical", "urgent", "It broke");
        let sealed = seal_new_ticket(&keys, &staff_key, &header, "Since Tuesday");
        let request = &sealed.request;
        let boxed = |value: &Value| -> SealedBox { serde_json::from_value(value.clone()).unwrap() };
        for (secret, copy) in [
            (&support_secret, &request.header.for_staff),
            (&keys.vault_secret(), &request.header.for_account),
        ] {
            assert_eq!(
                open_header(secret, &sealed.ticket_id, &boxed(copy)).unwrap(),
                header
            );
        }
        for (secret, copy) in [
            (&support_secret, &request.message.for_staff),
            (&keys.vault_secret(), &request.message.for_account),
        ] {
            let text =
                open_message(secret, &sealed.ticket_id, &sealed.message_id, &boxed(copy)).unwrap();
            assert_eq!(text, "Since Tuesday");
        }
        let binding = b64::decode(request.binding.as_deref().unwrap()).unwrap();
        assert!(sealpost_seal::verify_support_binding(
            &support_secret,
            &keys.vault_public_key(),
            &keys.account_id(),
            sealed.ticket_id.as_str(),
            &binding
        ));
    }
}
