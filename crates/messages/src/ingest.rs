//! Mail in: which recipients are accepted, and how one message becomes sealed
//! rows and blobs, committed before anyone is told it arrived.

use std::sync::Arc;

use sealpost_activity::Records;
use sealpost_kernel::{AccountId, AddressId, Clock, MessageId, StoreError, Timestamp};
use sealpost_plans::{LimitError, plan, received_window};
use sealpost_seal::{SealedBox, SealingKey, context, random_bytes, seal_binary_to};

use crate::content::{MimeLimit, ParsedMail, parse_mail_checked};
use crate::folders::Folder;
use crate::own_domains::OwnDomainGate;
use crate::recipients_seen::RecipientsSeen;
use crate::recovery::BlobRecovery;
use crate::sealing_keys::SealingKeys;
use crate::store::{
    BlobError, BlobStore, Commit, Message, MessageRepository, NewMessage, RecipientRecord,
    StoredAttachment,
};

/// The answer to RCPT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecipientCheck {
    Accept,
    /// No live address by that name on a served domain.
    Unknown,
    /// The address exists but has no public key: it refuses mail.
    NoKey,
    /// The account has used its received-mail allowance for this window.
    OverAllowance,
    /// The account holds its plan's stored-bytes quota: mail is refused
    /// until some is deleted (or expires) or the plan grows.
    StorageFull,
    /// An own domain whose plan lost own domains more than 21 days ago:
    /// mail is refused until the plan includes them again.
    DomainRefused,
    /// Staff suspended the address's account: mail is refused until the
    /// suspension is lifted.
    Suspended,
}

/// A recipient of a delivery: its address as given, or the record RCPT
/// accepted it on ([`Ingest::check_recipient`]), which DATA need not read
/// again (the commit re-checks what could have changed since:
/// [`Commit::RecipientGone`], [`Commit::RecipientChanged`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recipient {
    Address(String),
    Checked(Box<RecipientRecord>),
}

/// The answer to RCPT and, when accepted, the record it was decided on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    pub check: RecipientCheck,
    /// `Some` only for [`RecipientCheck::Accept`].
    pub record: Option<Box<RecipientRecord>>,
}

/// How the mail came in; decides the activity kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// SMTP: activity `mail.received`.
    Smtp,
    /// `POST /messages`: activity `message.received`.
    Api,
}

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("no such address")]
    Unknown,
    #[error("the address has no public key and refuses mail")]
    NoKey,
    /// The address is on an own domain whose plan lost own domains more
    /// than 21 days ago (docs/domains.md).
    #[error("this domain's plan no longer includes own domains; mail is refused")]
    DomainRefused,
    #[error("the address's account is suspended and refuses mail")]
    Suspended,
    /// The recipient changed (suspended, key changed) between the read
    /// its message was sealed on and the commit: nothing was stored.
    #[error("the address changed while the message was delivered; try again")]
    RecipientChanged,
    #[error(
        "the monthly received-mail allowance is used up; it renews in {retry_after_seconds} seconds"
    )]
    OverAllowance { retry_after_seconds: u64 },
    /// The account's stored bytes reached its plan's quota.
    #[error(transparent)]
    StorageFull(LimitError),
    /// Over a structure limit (MIME parts, nesting, header fields): refused
    /// for good, nothing stored.
    #[error(transparent)]
    Structure(#[from] MimeLimit),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Blob(#[from] BlobError),
}

#[derive(Clone)]
pub struct Ingest {
    repo: Arc<dyn MessageRepository>,
    blobs: Arc<dyn BlobStore>,
    clock: Arc<dyn Clock>,
    domains: Vec<String>,
    /// Proved own domains, when wired (docs/domains.md).
    own_domains: Option<Arc<dyn OwnDomainGate>>,
    /// Random per `Ingest`: owns the pending blobs of its deliveries. The
    /// process running it keeps it alive in the store for its lifetime.
    instance: String,
    /// RCPT's recent answers, shared by the clones.
    seen: Arc<RecipientsSeen>,
    /// The keys sealed to most, with their tables; shared by the clones.
    sealing_keys: Arc<SealingKeys>,
}

/// An address as the store looks it up.
fn normalized(address: &str) -> String {
    address.trim().to_ascii_lowercase()
}

pub fn blob_key(message: &MessageId, index: u32) -> String {
    format!("{message}/{index}")
}

impl Ingest {
    pub fn new(
        repo: Arc<dyn MessageRepository>,
        blobs: Arc<dyn BlobStore>,
        clock: Arc<dyn Clock>,
        domains: Vec<String>,
    ) -> Self {
        let instance = random_bytes::<16>()
            .iter()
            .fold(String::from("ing_"), |mut id, byte| {
                id.push_str(&format!("{byte:02x}"));
                id
            });
        Self {
            repo,
            blobs,
            clock,
            domains,
            own_domains: None,
            instance,
            seen: Arc::default(),
            sealing_keys: Arc::default(),
        }
    }

    /// Also takes mail for addresses on proved own domains.
    pub fn with_own_domains(mut self, gate: Arc<dyn OwnDomainGate>) -> Self {
        self.own_domains = Some(gate);
        self
    }

    /// This ingest's instance id: the owner of its pending blobs. The process
    /// must keep it alive in the store (an instance lock) while it delivers,
    /// or another process's recovery may take its deliveries over.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// RCPT: accepted only for a live address on a served domain, with a key,
    /// whose account is under its allowance. An accepted recipient's record
    /// comes back with the answer, for DATA ([`Recipient::Checked`]). A
    /// record this ingest accepted up to a second ago may answer instead of
    /// a new read, while its account is far from its limits
    /// ([`crate::recipients_seen`]).
    pub async fn check_recipient(&self, address: &str) -> Result<Checked, StoreError> {
        let address = normalized(address);
        // Before the read: a reading is as old as the moment it began.
        let now = self.clock.now();
        let (recipient, read_now) = match self.seen.recall(&address, now) {
            Some(record) => (record, false),
            None => match self.repo.recipient(&address).await? {
                Some(record) => (record, true),
                None => {
                    return Ok(Checked {
                        check: RecipientCheck::Unknown,
                        record: None,
                    });
                }
            },
        };
        let check = self.admit(&recipient).await?;
        if check == RecipientCheck::Accept && read_now {
            self.seen.remember(&address, &recipient, now);
        }
        Ok(Checked {
            check,
            record: (check == RecipientCheck::Accept).then(|| Box::new(recipient)),
        })
    }

    /// The rules every delivery passes, by SMTP and by `POST /messages`: the
    /// address's domain still receives, its account is not suspended, it has
    /// a key, and the account is under its allowance.
    async fn admit(&self, recipient: &RecipientRecord) -> Result<RecipientCheck, StoreError> {
        if !self.domains.contains(&recipient.domain) {
            let Some(gate) = &self.own_domains else {
                return Ok(RecipientCheck::Unknown);
            };
            let Some(hold) = gate.own_domain(&recipient.domain).await? else {
                return Ok(RecipientCheck::Unknown);
            };
            if !hold.receives(self.clock.now()) {
                return Ok(RecipientCheck::DomainRefused);
            }
        }
        if recipient.suspended {
            return Ok(RecipientCheck::Suspended);
        }
        if recipient.public_key.is_none() {
            return Ok(RecipientCheck::NoKey);
        }
        let (window_start, _) = received_window(recipient.account_created_at, self.clock.now());
        if recipient.received_in(window_start) >= plan(recipient.plan).received_per_30_days {
            return Ok(RecipientCheck::OverAllowance);
        }
        if plan(recipient.plan)
            .check_stored_bytes(recipient.stored_bytes)
            .is_err()
        {
            return Ok(RecipientCheck::StorageFull);
        }
        Ok(RecipientCheck::Accept)
    }

    /// [`Ingest::admit`], its refusals as errors.
    async fn admitted(&self, recipient: &RecipientRecord) -> Result<(), IngestError> {
        match self.admit(recipient).await? {
            RecipientCheck::Accept => Ok(()),
            RecipientCheck::Unknown => Err(IngestError::Unknown),
            RecipientCheck::DomainRefused => Err(IngestError::DomainRefused),
            RecipientCheck::NoKey => Err(IngestError::NoKey),
            RecipientCheck::Suspended => Err(IngestError::Suspended),
            RecipientCheck::StorageFull => Err(IngestError::StorageFull(LimitError::StorageFull {
                limit: plan(recipient.plan).stored_bytes,
            })),
            RecipientCheck::OverAllowance => {
                let now = self.clock.now();
                let (_, window_end) = received_window(recipient.account_created_at, now);
                let wait = (window_end - now).num_seconds().max(1) as u64;
                Err(IngestError::OverAllowance {
                    retry_after_seconds: wait,
                })
            }
        }
    }

    /// DATA: parses once, then seals and commits one copy per distinct address.
    /// Returns only when every copy is durably committed. Recipients that
    /// stopped qualifying since RCPT are skipped: deleted (before DATA, or
    /// up to the commit: [`Commit::RecipientGone`]), suspended, or left
    /// without a key. SMTP has one answer to DATA for all recipients, so
    /// while any copy was stored the message is delivered (the others are
    /// dropped, as mail to a deleted address is); when none was, the error
    /// is the last skipped recipient's: [`IngestError::Unknown`] (deleted),
    /// [`IngestError::Suspended`], [`IngestError::NoKey`], or a refusal of
    /// the rules read again after the commit found the recipient changed
    /// ([`IngestError::DomainRefused`], [`IngestError::OverAllowance`],
    /// [`IngestError::StorageFull`]).
    pub async fn deliver(
        &self,
        recipients: &[String],
        raw: &[u8],
    ) -> Result<Vec<MessageId>, IngestError> {
        let parsed = parse_mail_checked(raw)?;
        let recipients: Vec<Recipient> = recipients
            .iter()
            .map(|address| Recipient::Address(address.clone()))
            .collect();
        self.deliver_parsed(&recipients, &parsed, raw.len()).await
    }

    /// [`Ingest::deliver`] of a message its caller parsed already (with
    /// [`parse_mail_checked`]), off its async workers; `size` is the raw
    /// message's length.
    pub async fn deliver_parsed(
        &self,
        recipients: &[Recipient],
        parsed: &ParsedMail,
        size: usize,
    ) -> Result<Vec<MessageId>, IngestError> {
        let mut copied: Vec<AddressId> = Vec::new();
        let mut delivered = Vec::new();
        let mut skipped = None;
        for recipient in recipients {
            let record = match recipient {
                Recipient::Checked(record) => (**record).clone(),
                Recipient::Address(address) => match self.look_up(address).await? {
                    Some(record) => record,
                    None => {
                        skipped = Some(IngestError::Unknown);
                        continue;
                    }
                },
            };
            if copied.contains(&record.address) {
                continue;
            }
            copied.push(record.address.clone());
            match self.deliver_copy(record, parsed, size, Via::Smtp).await {
                Ok(id) => delivered.push(id),
                Err(
                    refusal @ (IngestError::Unknown
                    | IngestError::Suspended
                    | IngestError::NoKey
                    | IngestError::DomainRefused
                    | IngestError::OverAllowance { .. }
                    | IngestError::StorageFull(_)),
                ) => skipped = Some(refusal),
                Err(error) => return Err(error),
            }
        }
        match skipped {
            Some(refusal) if delivered.is_empty() => Err(refusal),
            _ => Ok(delivered),
        }
    }

    /// One copy, sealed on `record`: refused if the account was suspended
    /// or the address lost its key since RCPT; read again once, and
    /// admitted again, when the commit finds it changed
    /// ([`Commit::RecipientChanged`]).
    async fn deliver_copy(
        &self,
        mut record: RecipientRecord,
        parsed: &ParsedMail,
        size: usize,
        via: Via,
    ) -> Result<MessageId, IngestError> {
        let mut read_again = false;
        loop {
            if record.suspended {
                return Err(IngestError::Suspended);
            }
            // A key gone since RCPT: `seal_and_commit` refuses it (`NoKey`).
            let outcome = self.seal_and_commit(&record, parsed, size, via).await;
            match &outcome {
                Ok(_) => self.seen.delivered(&record.address, size as u64),
                // What RCPT remembered of the address is out of date.
                Err(IngestError::RecipientChanged | IngestError::Unknown | IngestError::NoKey) => {
                    self.seen.forget(&record.address);
                }
                Err(_) => {}
            }
            match outcome {
                Err(IngestError::RecipientChanged) if !read_again => {
                    read_again = true;
                    record = self
                        .repo
                        .recipient_by_id(&record.account, &record.address)
                        .await?
                        .ok_or(IngestError::Unknown)?;
                    // What changed may be the account's plan too (a
                    // downgrade pauses addresses): every rule, afresh.
                    self.admitted(&record).await?;
                }
                // Deleted after the lookup, before the commit: `Unknown`.
                outcome => return outcome,
            }
        }
    }

    /// The recipient record of an address as a client wrote it.
    async fn look_up(&self, address: &str) -> Result<Option<RecipientRecord>, StoreError> {
        self.repo.recipient(&normalized(address)).await
    }

    /// `POST /messages`: one raw message into one of the account's addresses.
    pub async fn deliver_to_address(
        &self,
        account: &AccountId,
        address: &AddressId,
        raw: &[u8],
    ) -> Result<MessageId, IngestError> {
        let recipient = self
            .repo
            .recipient_by_id(account, address)
            .await?
            .ok_or(IngestError::Unknown)?;
        self.admitted(&recipient).await?;
        let parsed = parse_mail_checked(raw)?;
        self.deliver_copy(recipient, &parsed, raw.len(), Via::Api)
            .await
    }

    async fn seal_and_commit(
        &self,
        recipient: &RecipientRecord,
        parsed: &ParsedMail,
        size: usize,
        via: Via,
    ) -> Result<MessageId, IngestError> {
        // Sealed per recipient: each address has its own key.
        let public_key = recipient.public_key.ok_or(IngestError::NoKey)?;
        let sealing_key = self.sealing_keys.get(&public_key);
        let content = parsed.content.to_json();
        let attachments = &parsed.attachments;
        let now = self.clock.now();
        let id = MessageId::generate();
        // A low-order key (the API refuses them; one stored before it did
        // would give a box anyone can open) is no key.
        let sealed = SealedBox::try_seal_to(
            &sealing_key,
            &context::message(recipient.address.as_str(), id.as_str()),
            &content,
        )
        .map_err(|_| IngestError::NoKey)?;

        let keys: Vec<String> = attachments
            .iter()
            .filter(|part| part.bytes.is_some())
            .map(|part| blob_key(&id, part.index))
            .collect();
        if !keys.is_empty() {
            self.repo
                .register_pending_blobs(keys.clone(), &self.instance, now)
                .await?;
        }
        let committed = self
            .write_and_commit(recipient, parsed, &id, &sealing_key, sealed, size, via, now)
            .await;
        match committed {
            Ok(Commit::Done) => Ok(id),
            Ok(Commit::TakenOver) => {
                // Recovery deleted what it found; what was written after is
                // ours to delete. A failure leaves an unreferenced blob only.
                for key in &keys {
                    let _ = self.blobs.delete(key).await;
                }
                Err(IngestError::Store(StoreError::Unavailable(
                    "recovery took this delivery over; try again".into(),
                )))
            }
            Ok(outcome @ (Commit::RecipientGone | Commit::RecipientChanged)) => {
                // Nothing written; the blobs are still ours and pending.
                if !keys.is_empty() {
                    self.abandon(keys).await;
                }
                Err(if outcome == Commit::RecipientGone {
                    IngestError::Unknown
                } else {
                    IngestError::RecipientChanged
                })
            }
            Err(error) => {
                if !keys.is_empty() {
                    self.abandon(keys).await;
                }
                Err(error)
            }
        }
    }

    /// Seals and writes the attachment blobs, then commits the rows.
    #[allow(
        clippy::too_many_arguments,
        reason = "one delivery's parts, passed once"
    )]
    async fn write_and_commit(
        &self,
        recipient: &RecipientRecord,
        parsed: &ParsedMail,
        id: &MessageId,
        sealing_key: &SealingKey,
        sealed: SealedBox,
        size: usize,
        via: Via,
        now: Timestamp,
    ) -> Result<Commit, IngestError> {
        let attachments = &parsed.attachments;
        let mut stored = Vec::with_capacity(attachments.len());
        for part in attachments {
            let Some(bytes) = &part.bytes else {
                let listed = parsed
                    .content
                    .attachments
                    .iter()
                    .find(|info| info.index == part.index);
                stored.push(StoredAttachment {
                    index: part.index,
                    blob_key: None,
                    size_bytes: listed.map_or(0, |info| info.size_bytes),
                });
                continue;
            };
            let key = blob_key(id, part.index);
            let ciphertext = seal_binary_to(
                sealing_key,
                &context::attachment(id.as_str(), part.index),
                bytes,
            );
            self.blobs.put(&key, ciphertext).await?;
            stored.push(StoredAttachment {
                index: part.index,
                blob_key: Some(key),
                size_bytes: bytes.len() as u64,
            });
        }

        let mut records = Records::new();
        if !recipient.paused {
            match via {
                Via::Smtp => records.mail_received(&recipient.account, &recipient.address, id, now),
                Via::Api => {
                    records.message_received(&recipient.account, &recipient.address, id, now)
                }
            }
        }
        let (window_start, _) = received_window(recipient.account_created_at, now);
        Ok(self
            .repo
            .commit(NewMessage {
                message: Message {
                    id: id.clone(),
                    account: recipient.account.clone(),
                    address: recipient.address.clone(),
                    received_at: now,
                    read: false,
                    size_bytes: size as u64,
                    key_epoch: recipient.key_epoch,
                    content: sealed,
                    folder: Folder::Inbox,
                    starred: false,
                    outgoing: false,
                },
                attachments: stored,
                held: recipient.paused,
                window_start,
                records,
                owner: self.instance.clone(),
            })
            .await?)
    }

    /// A failed delivery's pending blobs, deleted at once rather than at the
    /// next recovery. They are taken from this instance first: a commit that
    /// landed after all (its reply lost) left no pending row, so its blobs
    /// are not returned and stay. Whatever fails here is left to recovery
    /// (ownerless rows, after [`crate::recovery::PENDING_BLOB_GRACE`]).
    async fn abandon(&self, keys: Vec<String>) {
        let Ok(still_pending) = self.repo.disown_pending_blobs(keys).await else {
            return;
        };
        for key in &still_pending {
            if self.blobs.delete(key).await.is_err() {
                return;
            }
        }
        let _ = self.repo.forget_pending_blobs(still_pending).await;
    }

    /// Recovery of pending blobs that spares this ingest's own deliveries.
    pub fn recovery(&self) -> BlobRecovery {
        BlobRecovery::new(self.repo.clone(), self.blobs.clone(), self.clock.clone())
            .sparing(&self.instance)
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use sealpost_activity::{ActivityKind, EventType};
    use sealpost_kernel::{PlanId, TestClock};
    use sealpost_seal::{AccountKeys, RecoveryPhrase, open_binary};

    use super::*;
    use crate::store::{MockBlobStore, MockMessageRepository};

    const RAW: &[u8] = b"From: a@example.com\r\nTo: shop@mail.localhost\r\nSubject: Your code\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\ncode 123456\r\n--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=a.bin\r\n\r\nATTACHED\r\n--b--\r\n";

    fn keys() -> AccountKeys {
        RecoveryPhrase::parse("abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about")
            .unwrap()
            .keys()
    }

    fn recipient(paused: bool, with_key: bool) -> RecipientRecord {
        RecipientRecord {
            address: AddressId::parse("ibx_shop01").unwrap(),
            account: AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap(),
            plan: PlanId::Free,
            account_created_at: Timestamp::parse("2026-11-01T00:00:00Z").unwrap(),
            domain: "mail.localhost".into(),
            public_key: with_key.then(|| keys().address_public_key("ibx_shop01", 0)),
            key_epoch: 0,
            paused,
            suspended: false,
            stored_bytes: 0,
            latest_received: None,
        }
    }

    fn ingest(repo: MockMessageRepository, blobs: MockBlobStore) -> Ingest {
        ingest_and_clock(repo, blobs).0
    }

    fn ingest_and_clock(
        repo: MockMessageRepository,
        blobs: MockBlobStore,
    ) -> (Ingest, Arc<TestClock>) {
        let clock = Arc::new(TestClock::at(
            Timestamp::parse("2026-11-22T12:00:00Z").unwrap(),
        ));
        let ingest = Ingest::new(
            Arc::new(repo),
            Arc::new(blobs),
            clock.clone(),
            vec!["mail.localhost".into()],
        );
        (ingest, clock)
    }

    #[tokio::test]
    async fn recipients_are_checked_in_order() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient().returning(|address| {
            // 3,000 received in the current window (from 2026-11-01).
            let window = Timestamp::parse("2026-11-01T00:00:00Z").unwrap();
            let recipient = |paused, with_key| RecipientRecord {
                latest_received: Some((window, 3_000)),
                ..recipient(paused, with_key)
            };
            Ok(match address {
                "nokey@mail.localhost" => Some(recipient(false, false)),
                "full@mail.localhost" => Some(recipient(false, true)),
                // The same 3,000 received is under a paid plan's allowance.
                "ok@mail.localhost" => Some(RecipientRecord {
                    plan: PlanId::Operator,
                    ..recipient(false, true)
                }),
                "held@mail.localhost" => Some(RecipientRecord {
                    suspended: true,
                    ..recipient(false, true)
                }),
                // Under its received allowance, at its stored-bytes quota.
                "stuffed@mail.localhost" => Some(RecipientRecord {
                    plan: PlanId::Operator,
                    stored_bytes: sealpost_plans::plan(PlanId::Operator).stored_bytes,
                    ..recipient(false, true)
                }),
                "roomy@mail.localhost" => Some(RecipientRecord {
                    plan: PlanId::Operator,
                    stored_bytes: sealpost_plans::plan(PlanId::Operator).stored_bytes - 1,
                    ..recipient(false, true)
                }),
                _ => None,
            })
        });
        let ingest = ingest(repo, MockBlobStore::new());
        assert_eq!(
            ingest.check_recipient("x@gmail.com").await.unwrap().check,
            RecipientCheck::Unknown
        );
        assert_eq!(
            ingest
                .check_recipient("gone@mail.localhost")
                .await
                .unwrap()
                .check,
            RecipientCheck::Unknown
        );
        assert_eq!(
            ingest
                .check_recipient("NoKey@Mail.Localhost")
                .await
                .unwrap()
                .check,
            RecipientCheck::NoKey
        );
        assert_eq!(
            ingest
                .check_recipient("full@mail.localhost")
                .await
                .unwrap()
                .check,
            RecipientCheck::OverAllowance
        );
        // Refused before the allowance is even looked at.
        assert_eq!(
            ingest
                .check_recipient("held@mail.localhost")
                .await
                .unwrap()
                .check,
            RecipientCheck::Suspended
        );
        assert_eq!(
            ingest
                .check_recipient("OK@mail.localhost")
                .await
                .unwrap()
                .check,
            RecipientCheck::Accept
        );
        assert_eq!(
            ingest
                .check_recipient("stuffed@mail.localhost")
                .await
                .unwrap()
                .check,
            RecipientCheck::StorageFull
        );
        assert_eq!(
            ingest
                .check_recipient("roomy@mail.localhost")
                .await
                .unwrap()
                .check,
            RecipientCheck::Accept
        );
    }

    /// The counter read with the address belongs to an earlier window when
    /// its start is not the current window's: nothing received in this one.
    #[tokio::test]
    async fn a_counter_of_an_earlier_window_counts_nothing_now() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient().returning(|address| {
            let window = match address {
                "last@mail.localhost" => "2026-10-02T00:00:00Z",
                _ => "2026-11-01T00:00:00Z",
            };
            Ok(Some(RecipientRecord {
                latest_received: Some((Timestamp::parse(window).unwrap(), 3_000)),
                ..recipient(false, true)
            }))
        });
        let ingest = ingest(repo, MockBlobStore::new());
        assert_eq!(
            ingest
                .check_recipient("last@mail.localhost")
                .await
                .unwrap()
                .check,
            RecipientCheck::Accept
        );
        assert_eq!(
            ingest
                .check_recipient("now@mail.localhost")
                .await
                .unwrap()
                .check,
            RecipientCheck::OverAllowance
        );
    }

    #[tokio::test]
    async fn an_own_domain_past_its_plan_loss_grace_is_refused_by_smtp_and_api_alike() {
        use crate::own_domains::{MockOwnDomainGate, OwnDomainHold};

        let on_own_domain = |domain: &str| RecipientRecord {
            domain: domain.into(),
            ..recipient(false, true)
        };
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient().returning(move |address| {
            Ok(address
                .rsplit_once('@')
                .map(|(_, domain)| on_own_domain(domain)))
        });
        repo.expect_recipient_by_id()
            .returning(move |_, _| Ok(Some(on_own_domain("lapsed.example"))));
        let mut gate = MockOwnDomainGate::new();
        gate.expect_own_domain().returning(|name| {
            let lost_days_ago = match name {
                "lapsed.example" => 22,
                "grace.example" => 20,
                _ => return Ok(None),
            };
            Ok(Some(OwnDomainHold {
                plan: PlanId::Operator,
                plan_lost_at: Some(
                    Timestamp::parse("2026-11-22T12:00:00Z").unwrap()
                        - chrono::TimeDelta::days(lost_days_ago),
                ),
            }))
        });
        let ingest = ingest(repo, MockBlobStore::new()).with_own_domains(Arc::new(gate));
        assert_eq!(
            ingest
                .check_recipient("a@lapsed.example")
                .await
                .unwrap()
                .check,
            RecipientCheck::DomainRefused
        );
        assert_eq!(
            ingest
                .check_recipient("a@grace.example")
                .await
                .unwrap()
                .check,
            RecipientCheck::Accept
        );
        assert_eq!(
            ingest
                .check_recipient("a@removed.example")
                .await
                .unwrap()
                .check,
            RecipientCheck::Unknown
        );
        let account = AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap();
        let address = AddressId::parse("ibx_shop01").unwrap();
        assert!(matches!(
            ingest.deliver_to_address(&account, &address, RAW).await,
            Err(IngestError::DomainRefused)
        ));
    }

    #[tokio::test]
    async fn a_message_is_sealed_to_the_address_key_and_committed_with_its_records() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient()
            .returning(|_| Ok(Some(recipient(false, true))));
        let registered_by = Arc::new(Mutex::new(String::new()));
        let owner_slot = registered_by.clone();
        repo.expect_register_pending_blobs()
            .withf(|keys, owner, _| {
                keys.len() == 1 && keys[0].ends_with("/0") && owner.starts_with("ing_")
            })
            .times(1)
            .returning(move |_, owner, _| {
                *owner_slot.lock().unwrap() = owner.to_owned();
                Ok(())
            });
        let committed = Arc::new(Mutex::new(None));
        let slot = committed.clone();
        repo.expect_commit().times(1).returning(move |message| {
            *slot.lock().unwrap() = Some(message);
            Ok(Commit::Done)
        });
        let written = Arc::new(Mutex::new(Vec::new()));
        let blobs_seen = written.clone();
        let mut blobs = MockBlobStore::new();
        blobs.expect_put().returning(move |key, bytes| {
            blobs_seen.lock().unwrap().push((key.to_owned(), bytes));
            Ok(())
        });
        let ids = ingest(repo, blobs)
            // The same address twice is delivered once.
            .deliver(
                &["shop@mail.localhost".into(), "SHOP@mail.localhost".into()],
                RAW,
            )
            .await
            .unwrap();
        assert_eq!(ids.len(), 1);

        let message = committed.lock().unwrap().take().unwrap();
        assert!(!message.held);
        assert_eq!(
            message.owner,
            *registered_by.lock().unwrap(),
            "committed by the instance that registered its blobs"
        );
        assert_eq!(message.records.activity[0].kind, ActivityKind::MailReceived);
        assert_eq!(message.records.events[0].kind, EventType::MessageReceived);
        let secret = keys().address_secret("ibx_shop01", 0);
        let plaintext = message
            .message
            .content
            .open(
                &secret,
                &context::message("ibx_shop01", message.message.id.as_str()),
            )
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&plaintext).unwrap();
        assert_eq!(json["subject"], "Your code");
        assert_eq!(json["attachments"][0]["filename"], "a.bin");

        let (key, ciphertext) = written.lock().unwrap().remove(0);
        assert_eq!(key, blob_key(&message.message.id, 0));
        assert!(
            !ciphertext.windows(8).any(|w| w == b"ATTACHED"),
            "only ciphertext is written"
        );
        let opened = open_binary(
            &secret,
            &context::attachment(message.message.id.as_str(), 0),
            &ciphertext,
        )
        .unwrap();
        assert_eq!(opened, b"ATTACHED");
    }

    /// An address sealed to often is sealed to through its key's table
    /// (`SealingKeys`), content and attachments alike, and its boxes open
    /// with the address's secret as before.
    #[tokio::test]
    async fn mail_for_a_busy_address_is_sealed_through_its_key_s_table() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient()
            .returning(|_| Ok(Some(recipient(false, true))));
        repo.expect_register_pending_blobs()
            .returning(|_, _, _| Ok(()));
        let committed = Arc::new(Mutex::new(None));
        let slot = committed.clone();
        repo.expect_commit().returning(move |message| {
            *slot.lock().unwrap() = Some(message);
            Ok(Commit::Done)
        });
        let written = Arc::new(Mutex::new(None));
        let blob_slot = written.clone();
        let mut blobs = MockBlobStore::new();
        blobs.expect_put().returning(move |_, bytes| {
            *blob_slot.lock().unwrap() = Some(bytes);
            Ok(())
        });
        let ingest = ingest(repo, blobs);
        for delivery in 1..=crate::sealing_keys::PRECOMPUTE_AFTER {
            assert_eq!(
                ingest.sealing_keys.tables(),
                0,
                "a table before seal {delivery}"
            );
            ingest
                .deliver(&["shop@mail.localhost".into()], RAW)
                .await
                .unwrap();
        }
        assert_eq!(ingest.sealing_keys.tables(), 1);
        // This one through the table.
        ingest
            .deliver(&["shop@mail.localhost".into()], RAW)
            .await
            .unwrap();

        let message = committed.lock().unwrap().take().unwrap();
        let secret = keys().address_secret("ibx_shop01", 0);
        let id = message.message.id.as_str();
        let plaintext = message
            .message
            .content
            .open(&secret, &context::message("ibx_shop01", id))
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&plaintext).unwrap();
        assert_eq!(json["subject"], "Your code");
        let ciphertext = written.lock().unwrap().take().unwrap();
        let opened = open_binary(&secret, &context::attachment(id, 0), &ciphertext).unwrap();
        assert_eq!(opened, b"ATTACHED");
    }

    const PLAIN: &[u8] =
        b"From: a@example.com\r\nTo: shop@mail.localhost\r\nSubject: Hi\r\n\r\ncode 123456\r\n";

    /// Issue 29: an address is read once per recipient per session. RCPT
    /// reads it; DATA commits on that record without reading it again.
    #[tokio::test]
    async fn a_recipient_accepted_at_rcpt_is_not_read_again_at_data() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient()
            .times(1)
            .returning(|_| Ok(Some(recipient(false, true))));
        repo.expect_recipient_by_id().never();
        repo.expect_commit()
            .times(1)
            .returning(|_| Ok(Commit::Done));
        let ingest = ingest(repo, MockBlobStore::new());
        let checked = ingest.check_recipient("shop@mail.localhost").await.unwrap();
        assert_eq!(checked.check, RecipientCheck::Accept);
        let record = checked.record.expect("an accepted recipient's record");
        let parsed = parse_mail_checked(PLAIN).unwrap();
        let ids = ingest
            .deliver_parsed(&[Recipient::Checked(record)], &parsed, PLAIN.len())
            .await
            .unwrap();
        assert_eq!(ids.len(), 1);
    }

    /// A refused recipient brings no record to DATA.
    #[tokio::test]
    async fn a_refused_recipient_has_no_record() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient()
            .returning(|_| Ok(Some(recipient(false, false))));
        let checked = ingest(repo, MockBlobStore::new())
            .check_recipient("nokey@mail.localhost")
            .await
            .unwrap();
        assert_eq!(checked.check, RecipientCheck::NoKey);
        assert_eq!(checked.record, None);
    }

    /// Issue 29: under load one address gets many RCPTs a second; a reading
    /// answers the next ones for a second (`recipients_seen`), then the
    /// address is read again.
    #[tokio::test]
    async fn rcpts_within_a_second_read_the_address_once() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient()
            .times(2)
            .returning(|_| Ok(Some(recipient(false, true))));
        let (ingest, clock) = ingest_and_clock(repo, MockBlobStore::new());
        for address in [
            "shop@mail.localhost",
            " SHOP@mail.localhost",
            "shop@mail.localhost",
        ] {
            let checked = ingest.check_recipient(address).await.unwrap();
            assert_eq!(checked.check, RecipientCheck::Accept);
            assert_eq!(checked.record, Some(Box::new(recipient(false, true))));
        }
        clock.advance(crate::recipients_seen::REUSE_FOR);
        let checked = ingest.check_recipient("shop@mail.localhost").await.unwrap();
        assert_eq!(checked.check, RecipientCheck::Accept);
    }

    /// An unknown address is never remembered: one created a moment after
    /// a 550 takes mail at the next RCPT.
    #[tokio::test]
    async fn an_unknown_address_is_read_at_every_rcpt() {
        let mut repo = MockMessageRepository::new();
        let mut sequence = mockall::Sequence::new();
        repo.expect_recipient()
            .times(1)
            .in_sequence(&mut sequence)
            .returning(|_| Ok(None));
        repo.expect_recipient()
            .times(1)
            .in_sequence(&mut sequence)
            .returning(|_| Ok(Some(recipient(false, true))));
        let ingest = ingest(repo, MockBlobStore::new());
        let first = ingest.check_recipient("shop@mail.localhost").await.unwrap();
        assert_eq!(first.check, RecipientCheck::Unknown);
        let second = ingest.check_recipient("shop@mail.localhost").await.unwrap();
        assert_eq!(second.check, RecipientCheck::Accept);
    }

    /// A commit that finds the address changed (or gone) makes the next
    /// RCPT read it again, not answer from the reading the message was
    /// sealed on.
    #[tokio::test]
    async fn a_recipient_the_commit_found_changed_is_read_again_at_the_next_rcpt() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient()
            .times(2)
            .returning(|_| Ok(Some(recipient(false, true))));
        repo.expect_recipient_by_id()
            .times(1)
            .returning(|_, _| Ok(Some(recipient(true, true))));
        let mut sequence = mockall::Sequence::new();
        repo.expect_commit()
            .times(1)
            .in_sequence(&mut sequence)
            .returning(|_| Ok(Commit::RecipientChanged));
        repo.expect_commit()
            .times(1)
            .in_sequence(&mut sequence)
            .returning(|new| {
                assert!(new.held, "sealed again on the paused address's record");
                Ok(Commit::Done)
            });
        let ingest = ingest(repo, MockBlobStore::new());
        let checked = ingest.check_recipient("shop@mail.localhost").await.unwrap();
        let parsed = parse_mail_checked(PLAIN).unwrap();
        let record = checked.record.expect("accepted");
        ingest
            .deliver_parsed(&[Recipient::Checked(record)], &parsed, PLAIN.len())
            .await
            .unwrap();
        let again = ingest.check_recipient("shop@mail.localhost").await.unwrap();
        assert_eq!(again.check, RecipientCheck::Accept);
    }

    /// The key changed between RCPT's read and the commit: the commit
    /// stores nothing (`RecipientChanged`), the address is read again once
    /// and the message sealed to the key it has now.
    #[tokio::test]
    async fn a_recipient_changed_before_the_commit_is_read_again_and_sealed_anew() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient_by_id().times(1).returning(|_, _| {
            Ok(Some(RecipientRecord {
                key_epoch: 1,
                public_key: Some(keys().address_public_key("ibx_shop01", 1)),
                ..recipient(false, true)
            }))
        });
        let epochs = Arc::new(Mutex::new(Vec::new()));
        let seen = epochs.clone();
        repo.expect_commit().times(2).returning(move |new| {
            let mut seen = seen.lock().unwrap();
            seen.push(new.message.key_epoch);
            Ok(if seen.len() == 1 {
                Commit::RecipientChanged
            } else {
                Commit::Done
            })
        });
        let parsed = parse_mail_checked(PLAIN).unwrap();
        let stale = Box::new(recipient(false, true));
        let ids = ingest(repo, MockBlobStore::new())
            .deliver_parsed(&[Recipient::Checked(stale)], &parsed, PLAIN.len())
            .await
            .unwrap();
        assert_eq!(ids.len(), 1);
        assert_eq!(
            *epochs.lock().unwrap(),
            vec![0, 1],
            "sealed again to epoch 1"
        );
    }

    /// The commit found the recipient changed, and what changed took the
    /// account over its plan (a downgrade pauses addresses): the record
    /// read again goes through every rule, and nothing more is committed.
    #[tokio::test]
    async fn a_recipient_read_again_after_a_change_is_admitted_again() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient_by_id().times(1).returning(|_, _| {
            let window = Timestamp::parse("2026-11-01T00:00:00Z").unwrap();
            Ok(Some(RecipientRecord {
                latest_received: Some((window, 3_000)),
                ..recipient(true, true)
            }))
        });
        repo.expect_commit()
            .times(1)
            .returning(|_| Ok(Commit::RecipientChanged));
        let parsed = parse_mail_checked(PLAIN).unwrap();
        let stale = Box::new(recipient(false, true));
        let refused = ingest(repo, MockBlobStore::new())
            .deliver_parsed(&[Recipient::Checked(stale)], &parsed, PLAIN.len())
            .await;
        assert!(
            matches!(refused, Err(IngestError::OverAllowance { .. })),
            "{refused:?}"
        );
    }

    /// Changed again after the second read: the client is told to try
    /// again (451), nothing stored.
    #[tokio::test]
    async fn a_recipient_that_keeps_changing_is_a_retry() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient_by_id()
            .times(1)
            .returning(|_, _| Ok(Some(recipient(false, true))));
        repo.expect_commit()
            .times(2)
            .returning(|_| Ok(Commit::RecipientChanged));
        let parsed = parse_mail_checked(PLAIN).unwrap();
        let result = ingest(repo, MockBlobStore::new())
            .deliver_parsed(
                &[Recipient::Checked(Box::new(recipient(false, true)))],
                &parsed,
                PLAIN.len(),
            )
            .await;
        assert!(matches!(result, Err(IngestError::RecipientChanged)));
    }

    #[tokio::test]
    async fn mail_for_a_paused_address_is_held_without_events() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient()
            .returning(|_| Ok(Some(recipient(true, true))));
        repo.expect_register_pending_blobs()
            .returning(|_, _, _| Ok(()));
        repo.expect_commit()
            .withf(|message| {
                message.held
                    && message.records.events.is_empty()
                    && message.records.activity.is_empty()
            })
            .times(1)
            .returning(|_| Ok(Commit::Done));
        let mut blobs = MockBlobStore::new();
        blobs.expect_put().returning(|_, _| Ok(()));
        ingest(repo, blobs)
            .deliver(&["shop@mail.localhost".into()], RAW)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_delivery_taken_over_by_recovery_deletes_what_it_wrote_and_fails() {
        let mut seq = mockall::Sequence::new();
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient()
            .returning(|_| Ok(Some(recipient(false, true))));
        repo.expect_register_pending_blobs()
            .returning(|_, _, _| Ok(()));
        let mut blobs = MockBlobStore::new();
        blobs
            .expect_put()
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_, _| Ok(()));
        repo.expect_commit()
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| Ok(Commit::TakenOver));
        blobs
            .expect_delete()
            .withf(|key| key.ends_with("/0"))
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| Ok(()));
        let result = ingest(repo, blobs)
            .deliver(&["shop@mail.localhost".into()], RAW)
            .await;
        assert!(
            matches!(result, Err(IngestError::Store(StoreError::Unavailable(_)))),
            "the client is told to try again"
        );
    }

    /// Issue 15: an address deleted after the lookup, before the commit. Its
    /// copy is skipped and its blobs deleted at once; another recipient's
    /// copy still makes the message delivered, and with no other recipient
    /// the delivery answers `Unknown` (550 5.1.1), not a retry.
    #[tokio::test]
    async fn a_copy_whose_address_went_before_its_commit_is_skipped_and_its_blobs_deleted() {
        let other = || RecipientRecord {
            address: AddressId::parse("ibx_other1").unwrap(),
            ..recipient(false, true)
        };
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient().returning(move |address| {
            Ok(Some(if address.starts_with("other") {
                other()
            } else {
                recipient(false, true)
            }))
        });
        repo.expect_register_pending_blobs()
            .returning(|_, _, _| Ok(()));
        repo.expect_commit().returning(|new| {
            Ok(if new.message.address.as_str() == "ibx_shop01" {
                Commit::RecipientGone
            } else {
                Commit::Done
            })
        });
        repo.expect_disown_pending_blobs().times(2).returning(Ok);
        repo.expect_forget_pending_blobs()
            .times(2)
            .returning(|_| Ok(()));
        let mut blobs = MockBlobStore::new();
        blobs.expect_put().returning(|_, _| Ok(()));
        let deleted = Arc::new(Mutex::new(Vec::new()));
        let seen = deleted.clone();
        blobs.expect_delete().returning(move |key| {
            seen.lock().unwrap().push(key.to_owned());
            Ok(())
        });
        let ingest = ingest(repo, blobs);

        let ids = ingest
            .deliver(
                &["shop@mail.localhost".into(), "other@mail.localhost".into()],
                RAW,
            )
            .await
            .unwrap();
        assert_eq!(ids.len(), 1, "the other address's copy is delivered");
        assert_eq!(deleted.lock().unwrap().len(), 1, "the gone copy's blob");

        let alone = ingest.deliver(&["shop@mail.localhost".into()], RAW).await;
        assert!(matches!(alone, Err(IngestError::Unknown)), "{alone:?}");
        assert_eq!(deleted.lock().unwrap().len(), 2);
    }

    /// Two attachments, so a failure can come after one blob was written.
    const TWO: &[u8] = b"From: a@example.com\r\nTo: shop@mail.localhost\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=a.bin\r\n\r\nONE\r\n--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=b.bin\r\n\r\nTWO\r\n--b--\r\n";

    #[tokio::test]
    async fn a_blob_write_failing_midway_deletes_the_delivery_s_blobs_at_once() {
        let mut seq = mockall::Sequence::new();
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient()
            .returning(|_| Ok(Some(recipient(false, true))));
        repo.expect_register_pending_blobs()
            .withf(|keys, _, _| keys.len() == 2)
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_, _, _| Ok(()));
        let mut blobs = MockBlobStore::new();
        blobs
            .expect_put()
            .withf(|key, _| key.ends_with("/0"))
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_, _| Ok(()));
        blobs
            .expect_put()
            .withf(|key, _| key.ends_with("/1"))
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_, _| Err(BlobError("disk full".into())));
        repo.expect_commit().never();
        repo.expect_disown_pending_blobs()
            .withf(|keys| keys.len() == 2)
            .times(1)
            .in_sequence(&mut seq)
            .returning(Ok);
        blobs
            .expect_delete()
            .times(2)
            .in_sequence(&mut seq)
            .returning(|_| Ok(()));
        repo.expect_forget_pending_blobs()
            .withf(|keys| keys.len() == 2)
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| Ok(()));
        let result = ingest(repo, blobs)
            .deliver(&["shop@mail.localhost".into()], TWO)
            .await;
        assert!(matches!(result, Err(IngestError::Blob(_))), "{result:?}");
    }

    #[tokio::test]
    async fn a_failed_commit_deletes_only_the_blobs_still_pending() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient()
            .returning(|_| Ok(Some(recipient(false, true))));
        repo.expect_register_pending_blobs()
            .returning(|_, _, _| Ok(()));
        let mut blobs = MockBlobStore::new();
        blobs.expect_put().times(2).returning(|_, _| Ok(()));
        repo.expect_commit()
            .times(1)
            .returning(|_| Err(StoreError::Failed("connection lost".into())));
        // Had the commit landed, no row would be pending: the store says
        // which still are, and only those go.
        repo.expect_disown_pending_blobs()
            .times(1)
            .returning(|keys| Ok(keys.into_iter().filter(|key| key.ends_with("/1")).collect()));
        blobs
            .expect_delete()
            .withf(|key| key.ends_with("/1"))
            .times(1)
            .returning(|_| Ok(()));
        repo.expect_forget_pending_blobs()
            .withf(|keys| keys.len() == 1 && keys[0].ends_with("/1"))
            .times(1)
            .returning(|_| Ok(()));
        let result = ingest(repo, blobs)
            .deliver(&["shop@mail.localhost".into()], TWO)
            .await;
        assert!(matches!(result, Err(IngestError::Store(_))), "{result:?}");
    }

    #[tokio::test]
    async fn a_message_over_the_structure_limits_is_refused_before_anything_is_written() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient().never();
        repo.expect_register_pending_blobs().never();
        let mut raw = String::from("From: a@example.com\r\n");
        for i in 0..=crate::content::MAX_HEADER_FIELDS {
            raw.push_str(&format!("X-{i}: x\r\n"));
        }
        raw.push_str("\r\nbody\r\n");
        let result = ingest(repo, MockBlobStore::new())
            .deliver(&["shop@mail.localhost".into()], raw.as_bytes())
            .await;
        assert!(
            matches!(result, Err(IngestError::Structure(MimeLimit::HeaderFields))),
            "{result:?}"
        );
    }

    /// An address stored with a low-order key (before the API refused
    /// them) would get boxes anyone can open: its mail is refused as mail
    /// for an address without a key, and nothing is written.
    #[tokio::test]
    async fn mail_for_an_address_with_a_low_order_key_is_refused_unwritten() {
        let mut repo = MockMessageRepository::new();
        repo.expect_recipient().returning(|_| {
            Ok(Some(RecipientRecord {
                public_key: Some([0; 32]),
                ..recipient(false, true)
            }))
        });
        repo.expect_register_pending_blobs().never();
        repo.expect_commit().never();
        let result = ingest(repo, MockBlobStore::new())
            .deliver(&["shop@mail.localhost".into()], RAW)
            .await;
        assert!(matches!(result, Err(IngestError::NoKey)), "{result:?}");
    }

    #[test]
    fn each_ingest_is_its_own_instance() {
        let a = ingest(MockMessageRepository::new(), MockBlobStore::new());
        let b = ingest(MockMessageRepository::new(), MockBlobStore::new());
        assert_ne!(a.instance(), b.instance());
        assert_eq!(a.instance().len(), "ing_".len() + 32);
    }
}
