//! The staff side beyond tickets: staff tokens, the audit log, abuse
//! reports, account suspension and the operator switches.

use std::sync::Arc;

use async_trait::async_trait;
use sealpost_kernel::{AccountId, Clock, StoreError, TicketId, Timestamp, string_enum};
use sealpost_seal::{random_token, sha256};

use crate::model::PublicKey;
use crate::repository::Switches;

/// Staff tokens start with this, so they are told apart from sessions at a glance.
pub const TOKEN_PREFIX: &str = "stf_";
/// Longest abuse report details.
pub const DETAILS_MAX_CHARS: usize = 4000;
/// Longest reporter contact.
pub const CONTACT_MAX_CHARS: usize = 320;
/// Longest reported message id, in characters.
pub const MESSAGE_ID_MAX_CHARS: usize = 100;
/// Longest reported email address, in characters (RFC 5321's path limit).
pub const EMAIL_ADDRESS_MAX_CHARS: usize = 254;
/// Longest suspension reason or resolution note.
pub const NOTE_MAX_CHARS: usize = 1000;

string_enum! {
    /// Why something is reported.
    pub enum AbuseReason: "abuse reason" {
        Spam => "spam",
        Phishing => "phishing",
        Malware => "malware",
        Harassment => "harassment",
        IllegalContent => "illegal_content",
        Impersonation => "impersonation",
        Other => "other",
    }
}

string_enum! {
    pub enum AbuseStatus: "abuse report status" {
        Open => "open",
        Resolved => "resolved",
    }
}

/// A staff member as a token identifies them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaffMember {
    pub id: String,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaffTokenInfo {
    pub id: String,
    pub name: String,
    pub created_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
}

/// One staff action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEntry {
    /// Staff member id, or `operator` for commands run on the server.
    pub actor: String,
    /// What was done, for example `ticket.reply` or `account.suspend`.
    pub action: String,
    /// What it was done to (a ticket, account, report or token id), if anything.
    pub target: Option<String>,
    /// A short note (a suspension reason); never sealed content.
    pub note: Option<String>,
    pub at: Timestamp,
}

impl AuditEntry {
    /// `actor` doing `action` to a ticket at `at`.
    pub fn ticket(actor: &str, action: &str, ticket: &TicketId, at: Timestamp) -> Self {
        Self {
            actor: actor.to_owned(),
            action: action.to_owned(),
            target: Some(ticket.to_string()),
            note: None,
            at,
        }
    }
}

/// What a report is about: an address or a message, as the reporter wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbuseTarget {
    EmailAddress(String),
    MessageId(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbuseReport {
    pub id: String,
    pub target: AbuseTarget,
    pub reason: AbuseReason,
    pub details: Option<String>,
    pub contact: Option<String>,
    pub status: AbuseStatus,
    /// The account the target belongs to, found by the store; shown to staff only.
    pub account: Option<AccountId>,
    pub created_at: Timestamp,
    pub resolved_at: Option<Timestamp>,
    pub resolution: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suspension {
    pub reason: String,
    pub since: Timestamp,
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait StaffRepository: Send + Sync {
    // Every staff action takes its audit entry and stores it in the same
    // transaction, only when the action changed something: no action
    // without its audit row, no audit row without its action.
    async fn create_token(
        &self,
        id: &str,
        name: &str,
        token_hash: [u8; 32],
        at: Timestamp,
        audit: &AuditEntry,
    ) -> Result<(), StoreError>;
    /// The live (not revoked) token with this hash.
    async fn staff_by_token(&self, token_hash: [u8; 32])
    -> Result<Option<StaffMember>, StoreError>;
    /// Revokes a token by id or name; `false`: none live.
    async fn revoke_token(
        &self,
        id_or_name: &str,
        at: Timestamp,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError>;
    async fn tokens(&self) -> Result<Vec<StaffTokenInfo>, StoreError>;
    async fn write_audit(&self, entry: &AuditEntry) -> Result<(), StoreError>;
    /// Newest first.
    async fn audit_log(&self, limit: u32) -> Result<Vec<AuditEntry>, StoreError>;
    /// Stores a report, finding the target's account if there is one.
    async fn add_report(&self, report: &AbuseReport) -> Result<(), StoreError>;
    /// Newest first.
    async fn reports(&self, status: Option<AbuseStatus>) -> Result<Vec<AbuseReport>, StoreError>;
    /// `false`: no such open report.
    async fn resolve_report(
        &self,
        id: &str,
        resolution: &str,
        at: Timestamp,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError>;
    /// Sets (`Some`) or lifts (`None`) a suspension; `false`: no such account.
    async fn set_suspension(
        &self,
        account: &AccountId,
        suspension: Option<Suspension>,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError>;
    async fn suspension(&self, account: &AccountId) -> Result<Option<Suspension>, StoreError>;
    async fn update_switches(
        &self,
        support_key: Option<PublicKey>,
        support_off: Option<bool>,
        webhooks_paused: Option<bool>,
        at: Timestamp,
        audit: &AuditEntry,
    ) -> Result<Switches, StoreError>;
}

#[derive(Debug, thiserror::Error)]
pub enum StaffError {
    #[error("missing, unknown or revoked staff token")]
    Unauthenticated,
    #[error("no such record")]
    NotFound,
    #[error("{0}")]
    Invalid(&'static str),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn short(id_prefix: &str) -> String {
    let token = random_token();
    let body: String = token
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(16)
        .collect::<String>()
        .to_ascii_lowercase();
    format!("{id_prefix}{body}")
}

fn token_hash(token: &str) -> [u8; 32] {
    sha256(token.as_bytes())
}

fn note(text: &str) -> Result<String, StaffError> {
    let text = text.trim();
    if text.is_empty() || text.chars().count() > NOTE_MAX_CHARS {
        return Err(StaffError::Invalid("a note of 1 to 1000 characters"));
    }
    Ok(text.to_owned())
}

#[derive(Clone)]
pub struct Staff {
    repo: Arc<dyn StaffRepository>,
    clock: Arc<dyn Clock>,
}

impl Staff {
    pub fn new(repo: Arc<dyn StaffRepository>, clock: Arc<dyn Clock>) -> Self {
        Self { repo, clock }
    }

    /// Operator command: a new token for `name`, shown once; only its
    /// SHA-256 is stored.
    pub async fn create_token(&self, name: &str) -> Result<(StaffTokenInfo, String), StaffError> {
        let name = name.trim();
        if name.is_empty() || name.len() > 64 {
            return Err(StaffError::Invalid("a name of 1 to 64 characters"));
        }
        let id = short("stm_");
        let token = format!("{TOKEN_PREFIX}{}", random_token());
        let at = self.clock.now();
        let audit = self.entry("operator", "token.create", Some(&id), Some(name));
        self.repo
            .create_token(&id, name, token_hash(&token), at, &audit)
            .await?;
        Ok((
            StaffTokenInfo {
                id,
                name: name.to_owned(),
                created_at: at,
                revoked_at: None,
            },
            token,
        ))
    }

    pub async fn revoke_token(&self, id_or_name: &str) -> Result<(), StaffError> {
        let audit = self.entry("operator", "token.revoke", Some(id_or_name), None);
        if !self
            .repo
            .revoke_token(id_or_name, self.clock.now(), &audit)
            .await?
        {
            return Err(StaffError::NotFound);
        }
        Ok(())
    }

    pub async fn tokens(&self) -> Result<Vec<StaffTokenInfo>, StaffError> {
        Ok(self.repo.tokens().await?)
    }

    /// The staff member a bearer token belongs to. Anything that is not a
    /// live staff token (a session, a device credential, a revoked token)
    /// is [`StaffError::Unauthenticated`].
    pub async fn authenticate(&self, token: &str) -> Result<StaffMember, StaffError> {
        if !token.starts_with(TOKEN_PREFIX) {
            return Err(StaffError::Unauthenticated);
        }
        self.repo
            .staff_by_token(token_hash(token))
            .await?
            .ok_or(StaffError::Unauthenticated)
    }

    /// The audit entry of `actor` doing `action` now.
    fn entry(
        &self,
        actor: &str,
        action: &str,
        target: Option<&str>,
        note: Option<&str>,
    ) -> AuditEntry {
        AuditEntry {
            actor: actor.to_owned(),
            action: action.to_owned(),
            target: target.map(str::to_owned),
            note: note.map(str::to_owned),
            at: self.clock.now(),
        }
    }

    /// Records one staff action that changes nothing here (a read).
    pub async fn audit(
        &self,
        actor: &str,
        action: &str,
        target: Option<&str>,
        note: Option<&str>,
    ) -> Result<(), StaffError> {
        Ok(self
            .repo
            .write_audit(&self.entry(actor, action, target, note))
            .await?)
    }

    pub async fn audit_log(&self, limit: u32) -> Result<Vec<AuditEntry>, StaffError> {
        Ok(self.repo.audit_log(limit.clamp(1, 500)).await?)
    }

    /// `POST /abuse/reports`: stored whatever the target; the answer never
    /// says whether it exists.
    pub async fn report(
        &self,
        target: AbuseTarget,
        reason: AbuseReason,
        details: Option<String>,
        contact: Option<String>,
    ) -> Result<String, StaffError> {
        let target = match target {
            AbuseTarget::EmailAddress(text) => {
                let text = text.trim().to_ascii_lowercase();
                if text.chars().count() > EMAIL_ADDRESS_MAX_CHARS || !text.contains('@') {
                    return Err(StaffError::Invalid("emailAddress: an email address"));
                }
                AbuseTarget::EmailAddress(text)
            }
            AbuseTarget::MessageId(text) => {
                if text.is_empty() || text.chars().count() > MESSAGE_ID_MAX_CHARS {
                    return Err(StaffError::Invalid("messageId: a message id"));
                }
                AbuseTarget::MessageId(text)
            }
        };
        if details
            .as_ref()
            .is_some_and(|d| d.chars().count() > DETAILS_MAX_CHARS)
        {
            return Err(StaffError::Invalid("details: at most 4000 characters"));
        }
        if contact
            .as_ref()
            .is_some_and(|c| c.chars().count() > CONTACT_MAX_CHARS)
        {
            return Err(StaffError::Invalid("contact: at most 320 characters"));
        }
        let id = short("abr_");
        self.repo
            .add_report(&AbuseReport {
                id: id.clone(),
                target,
                reason,
                details,
                contact,
                status: AbuseStatus::Open,
                account: None,
                created_at: self.clock.now(),
                resolved_at: None,
                resolution: None,
            })
            .await?;
        Ok(id)
    }

    pub async fn reports(
        &self,
        status: Option<AbuseStatus>,
    ) -> Result<Vec<AbuseReport>, StaffError> {
        Ok(self.repo.reports(status).await?)
    }

    pub async fn resolve_report(
        &self,
        by: &StaffMember,
        id: &str,
        resolution: &str,
    ) -> Result<(), StaffError> {
        let resolution = note(resolution)?;
        let audit = self.entry(&by.id, "abuse.resolve", Some(id), Some(&resolution));
        if !self
            .repo
            .resolve_report(id, &resolution, self.clock.now(), &audit)
            .await?
        {
            return Err(StaffError::NotFound);
        }
        Ok(())
    }

    /// Suspends an account: nothing of it is deleted.
    pub async fn suspend(
        &self,
        by: &StaffMember,
        account: &AccountId,
        reason: &str,
    ) -> Result<(), StaffError> {
        let reason = note(reason)?;
        let suspension = Suspension {
            reason: reason.clone(),
            since: self.clock.now(),
        };
        let audit = self.entry(
            &by.id,
            "account.suspend",
            Some(account.as_str()),
            Some(&reason),
        );
        if !self
            .repo
            .set_suspension(account, Some(suspension), &audit)
            .await?
        {
            return Err(StaffError::NotFound);
        }
        Ok(())
    }

    pub async fn unsuspend(
        &self,
        by: &StaffMember,
        account: &AccountId,
        reason: &str,
    ) -> Result<(), StaffError> {
        let reason = note(reason)?;
        let audit = self.entry(
            &by.id,
            "account.unsuspend",
            Some(account.as_str()),
            Some(&reason),
        );
        if !self.repo.set_suspension(account, None, &audit).await? {
            return Err(StaffError::NotFound);
        }
        Ok(())
    }

    pub async fn suspension(&self, account: &AccountId) -> Result<Option<Suspension>, StaffError> {
        Ok(self.repo.suspension(account).await?)
    }

    /// Rotates the support key: new tickets must be sealed to it
    /// (`staff_key_changed` otherwise); old ones keep their keys.
    pub async fn rotate_key(
        &self,
        by: &StaffMember,
        key: PublicKey,
    ) -> Result<Switches, StaffError> {
        let audit = self.entry(&by.id, "support.rotate_key", Some(&key.to_text()), None);
        Ok(self
            .repo
            .update_switches(Some(key), None, None, self.clock.now(), &audit)
            .await?)
    }

    /// Operator switches; `None` leaves one as it is.
    pub async fn switch(
        &self,
        by: &StaffMember,
        support_off: Option<bool>,
        webhooks_paused: Option<bool>,
    ) -> Result<Switches, StaffError> {
        // What was asked for: the audit row is written with the change.
        let note = [
            ("supportOff", support_off),
            ("webhooksPaused", webhooks_paused),
        ]
        .iter()
        .filter_map(|(name, value)| value.map(|value| format!("{name}={value}")))
        .collect::<Vec<_>>()
        .join(" ");
        let audit = self.entry(
            &by.id,
            "switches.update",
            None,
            (!note.is_empty()).then_some(note.as_str()),
        );
        Ok(self
            .repo
            .update_switches(None, support_off, webhooks_paused, self.clock.now(), &audit)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use mockall::predicate::eq;
    use sealpost_kernel::TestClock;

    use super::*;

    fn now() -> Timestamp {
        Timestamp::parse("2026-11-25T09:00:00Z").unwrap()
    }

    fn staff(repo: MockStaffRepository) -> Staff {
        Staff::new(Arc::new(repo), Arc::new(TestClock::at(now())))
    }

    fn member() -> StaffMember {
        StaffMember {
            id: "stm_a".to_owned(),
            name: "ada".to_owned(),
        }
    }

    #[tokio::test]
    async fn a_token_is_stored_hashed_and_audited() {
        let mut repo = MockStaffRepository::new();
        repo.expect_create_token()
            .withf(|id, name, _, at, audit| {
                id.starts_with("stm_")
                    && name == "ada"
                    && *at == now()
                    && audit.action == "token.create"
                    && audit.actor == "operator"
                    && audit.target.as_deref() == Some(id)
            })
            .times(1)
            .returning(|_, _, _, _, _| Ok(()));
        let (info, token) = staff(repo).create_token(" ada ").await.unwrap();
        assert!(token.starts_with(TOKEN_PREFIX));
        assert_eq!(info.name, "ada");
    }

    #[tokio::test]
    async fn only_live_staff_tokens_authenticate() {
        let mut repo = MockStaffRepository::new();
        repo.expect_staff_by_token()
            .with(eq(sha256(b"stf_known")))
            .returning(|_| Ok(Some(member())));
        repo.expect_staff_by_token().returning(|_| Ok(None));
        let staff = staff(repo);
        assert_eq!(staff.authenticate("stf_known").await.unwrap(), member());
        assert!(matches!(
            staff.authenticate("stf_revoked").await,
            Err(StaffError::Unauthenticated)
        ));
        // A session token is never looked up.
        assert!(matches!(
            staff.authenticate("c2Vzc2lvbg").await,
            Err(StaffError::Unauthenticated)
        ));
    }

    #[tokio::test]
    async fn suspending_needs_a_reason_and_is_audited() {
        let account = AccountId::from_trusted("acct_x".to_owned());
        let mut repo = MockStaffRepository::new();
        repo.expect_set_suspension()
            .withf(|_, suspension, audit| {
                suspension
                    .as_ref()
                    .is_some_and(|s| s.reason == "spam" && s.since == now())
                    && audit.action == "account.suspend"
                    && audit.note.as_deref() == Some("spam")
                    && audit.at == now()
            })
            .times(1)
            .returning(|_, _, _| Ok(true));
        let staff = staff(repo);
        assert!(matches!(
            staff.suspend(&member(), &account, "  ").await,
            Err(StaffError::Invalid(_))
        ));
        staff.suspend(&member(), &account, "spam").await.unwrap();
    }

    #[tokio::test]
    async fn a_report_of_any_address_is_stored_the_same_way() {
        let mut repo = MockStaffRepository::new();
        repo.expect_add_report()
            .withf(|report| {
                report.target == AbuseTarget::EmailAddress("who@example.com".to_owned())
                    && report.status == AbuseStatus::Open
            })
            .times(1)
            .returning(|_| Ok(()));
        let id = staff(repo)
            .report(
                AbuseTarget::EmailAddress(" Who@Example.com ".to_owned()),
                AbuseReason::Spam,
                None,
                None,
            )
            .await
            .unwrap();
        assert!(id.starts_with("abr_"));
    }

    #[tokio::test]
    async fn overlong_details_are_refused() {
        let staff = staff(MockStaffRepository::new());
        assert!(matches!(
            staff
                .report(
                    AbuseTarget::MessageId("msg_1".to_owned()),
                    AbuseReason::Other,
                    Some("x".repeat(DETAILS_MAX_CHARS + 1)),
                    None,
                )
                .await,
            Err(StaffError::Invalid(_))
        ));
    }
}
