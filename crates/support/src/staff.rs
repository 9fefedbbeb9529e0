//! The staff side beyond tickets: staff tokens, the audit log, abuse
//! reports, account suspension and the operator switches. Who may do what
//! (roles, lifetimes, the rotation proof) is in `staff_access`.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::TimeDelta;
use sealpost_kernel::{
    AccountId, Clock, Cursor, Page, PageRequest, StoreError, TicketId, Timestamp, string_enum,
};
use sealpost_seal::{random_token, sha256};

use crate::model::PublicKey;
use crate::repository::Switches;
use crate::staff_access::{DEFAULT_TOKEN_DAYS, Role, Roles, RotationChallenge, RotationProofs};

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

/// A staff member as a live token identifies them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaffMember {
    pub id: String,
    pub name: String,
    pub roles: Roles,
    pub expires_at: Timestamp,
}

impl StaffMember {
    /// Each staff endpoint's check: the token holds `role`.
    ///
    /// # Errors
    /// [`StaffError::RoleRequired`] when it does not.
    pub fn require(&self, role: Role) -> Result<(), StaffError> {
        if self.roles.contains(role) {
            Ok(())
        } else {
            Err(StaffError::RoleRequired(role))
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaffTokenInfo {
    pub id: String,
    pub name: String,
    pub roles: Roles,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
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
        token: &StaffTokenInfo,
        token_hash: [u8; 32],
        audit: &AuditEntry,
    ) -> Result<(), StoreError>;
    /// The token with this hash unless revoked (expired ones too: the
    /// service tells them apart).
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
    /// Newest first by `(at, id)`, after `page.after`, `page.fetch_limit()`
    /// rows with their ids; `read` (the read itself) is written in the same
    /// transaction.
    async fn audit_log(
        &self,
        page: &PageRequest,
        read: &AuditEntry,
    ) -> Result<Vec<(i64, AuditEntry)>, StoreError>;
    /// Stores a report, finding the target's account if there is one.
    async fn add_report(&self, report: &AbuseReport) -> Result<(), StoreError>;
    /// Newest first by `(createdAt, id)`, after `page.after`,
    /// `page.fetch_limit()` rows; `read` is written in the same transaction.
    async fn reports(
        &self,
        status: Option<AbuseStatus>,
        page: &PageRequest,
        read: &AuditEntry,
    ) -> Result<Vec<AbuseReport>, StoreError>;
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
    #[error("the staff token has expired; an operator makes a new one")]
    Expired,
    #[error("the staff token lacks the {0} role")]
    RoleRequired(Role),
    #[error(
        "the current support key's proof over this new key and a challenge of the last 5 minutes is required (POST /staff/support-key/challenge)"
    )]
    ProofRefused,
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
    token_lifetime: TimeDelta,
    proofs: Option<RotationProofs>,
}

impl Staff {
    /// Tokens live [`DEFAULT_TOKEN_DAYS`] unless told otherwise; support key
    /// rotations are refused until [`with_rotation_proofs`](Self::with_rotation_proofs).
    pub fn new(repo: Arc<dyn StaffRepository>, clock: Arc<dyn Clock>) -> Self {
        Self {
            repo,
            clock,
            token_lifetime: TimeDelta::days(i64::from(DEFAULT_TOKEN_DAYS)),
            proofs: None,
        }
    }

    /// The lifetime of tokens created without one (`SEALPOST_STAFF_TOKEN_DAYS`).
    #[must_use]
    pub fn with_token_lifetime(mut self, lifetime: TimeDelta) -> Self {
        self.token_lifetime = lifetime;
        self
    }

    /// Issues and checks the challenges a support key rotation is proved with.
    #[must_use]
    pub fn with_rotation_proofs(mut self, proofs: RotationProofs) -> Self {
        self.proofs = Some(proofs);
        self
    }

    /// Operator command: a new token for `name` with `roles`, living
    /// `lifetime` (the configured one when `None`), shown once; only its
    /// SHA-256 is stored.
    pub async fn create_token(
        &self,
        name: &str,
        roles: Roles,
        lifetime: Option<TimeDelta>,
    ) -> Result<(StaffTokenInfo, String), StaffError> {
        let name = name.trim();
        if name.is_empty() || name.len() > 64 {
            return Err(StaffError::Invalid("a name of 1 to 64 characters"));
        }
        if roles.as_slice().is_empty() {
            return Err(StaffError::Invalid(
                "roles: at least one of read, reply, moderate, rotate",
            ));
        }
        let id = short("stm_");
        let token = format!("{TOKEN_PREFIX}{}", random_token());
        let at = self.clock.now();
        let info = StaffTokenInfo {
            id: id.clone(),
            name: name.to_owned(),
            created_at: at,
            expires_at: at + lifetime.unwrap_or(self.token_lifetime),
            revoked_at: None,
            roles,
        };
        let note = format!("{name} roles={}", info.roles.to_text());
        let audit = self.entry("operator", "token.create", Some(&id), Some(&note));
        self.repo
            .create_token(&info, token_hash(&token), &audit)
            .await?;
        Ok((info, token))
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
    /// staff token (a session, a device credential, a revoked token) is
    /// [`StaffError::Unauthenticated`]; one past its expiry,
    /// [`StaffError::Expired`].
    pub async fn authenticate(&self, token: &str) -> Result<StaffMember, StaffError> {
        if !token.starts_with(TOKEN_PREFIX) {
            return Err(StaffError::Unauthenticated);
        }
        let member = self
            .repo
            .staff_by_token(token_hash(token))
            .await?
            .ok_or(StaffError::Unauthenticated)?;
        if self.clock.now() >= member.expires_at {
            return Err(StaffError::Expired);
        }
        Ok(member)
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

    /// The audit log, newest first; the read is itself an entry
    /// (`audit.read`), written with it.
    pub async fn audit_log(
        &self,
        by: &StaffMember,
        page: &PageRequest,
    ) -> Result<Page<AuditEntry>, StaffError> {
        let read = self.list_read(by, "audit.read", None, page);
        let rows = self.repo.audit_log(page, &read).await?;
        Ok(Page::from_rows(rows, page, |(id, entry)| Cursor {
            at: entry.at,
            id: id.to_string(),
        })
        .map(|(_, entry)| entry))
    }

    /// The audit row of a list read by `by`: what was listed, with the
    /// filter and the page's position as the note.
    #[must_use]
    pub fn list_read(
        &self,
        by: &StaffMember,
        action: &str,
        filter: Option<&str>,
        page: &PageRequest,
    ) -> AuditEntry {
        let mut note = format!("limit={}", page.limit);
        if let Some(filter) = filter {
            note = format!("status={filter} {note}");
        }
        if let Some(after) = &page.after {
            note.push_str(" after=");
            note.push_str(&after.encode());
        }
        self.entry(&by.id, action, None, Some(&note))
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

    /// Abuse reports, newest first; the read is an entry (`abuse.list`),
    /// written with it.
    pub async fn reports(
        &self,
        by: &StaffMember,
        status: Option<AbuseStatus>,
        page: &PageRequest,
    ) -> Result<Page<AbuseReport>, StaffError> {
        let read = self.list_read(by, "abuse.list", status.map(|s| s.as_str()), page);
        let rows = self.repo.reports(status, page, &read).await?;
        Ok(Page::from_rows(rows, page, |report| Cursor {
            at: report.created_at,
            id: report.id.clone(),
        }))
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

    /// A challenge to prove the current support key with before rotating.
    ///
    /// # Errors
    /// [`StaffError::ProofRefused`] when this service checks no proofs (no
    /// server key), so no rotation could pass.
    pub fn rotation_challenge(&self) -> Result<RotationChallenge, StaffError> {
        let proofs = self.proofs.as_ref().ok_or(StaffError::ProofRefused)?;
        Ok(proofs.challenge(self.clock.now()))
    }

    /// Rotates the support key from `current` (the key in force) to `key`:
    /// new tickets must be sealed to it (`staff_key_changed` otherwise); old
    /// ones keep their keys. Only with `proof`, by the secret of `current`,
    /// over `key` and a challenge of the last five minutes (`nonce`).
    ///
    /// # Errors
    /// [`StaffError::ProofRefused`] without a current key or a proof that
    /// verifies; nothing is changed then.
    pub async fn rotate_key(
        &self,
        by: &StaffMember,
        current: Option<PublicKey>,
        key: PublicKey,
        nonce: &str,
        proof: &[u8],
    ) -> Result<Switches, StaffError> {
        let proofs = self.proofs.as_ref().ok_or(StaffError::ProofRefused)?;
        let current = current.ok_or(StaffError::ProofRefused)?;
        proofs.check(self.clock.now(), &current, &key, nonce, proof)?;
        let audit = self.entry(
            &by.id,
            "support.rotate_key",
            Some(&key.to_text()),
            Some(&format!("from {}", current.to_text())),
        );
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
            roles: Roles::all(),
            expires_at: now() + TimeDelta::days(1),
        }
    }

    #[tokio::test]
    async fn a_token_is_stored_hashed_with_its_roles_and_expiry_and_audited() {
        let mut repo = MockStaffRepository::new();
        repo.expect_create_token()
            .withf(|info, _, audit| {
                info.id.starts_with("stm_")
                    && info.name == "ada"
                    && info.created_at == now()
                    && info.expires_at == now() + TimeDelta::days(30)
                    && info.roles == Roles::of(&[Role::Read, Role::Reply])
                    && audit.action == "token.create"
                    && audit.actor == "operator"
                    && audit.target.as_deref() == Some(info.id.as_str())
                    && audit.note.as_deref() == Some("ada roles=read,reply")
            })
            .times(1)
            .returning(|_, _, _| Ok(()));
        let (info, token) = staff(repo)
            .with_token_lifetime(TimeDelta::days(30))
            .create_token(" ada ", Roles::parse("reply, read").unwrap(), None)
            .await
            .unwrap();
        assert!(token.starts_with(TOKEN_PREFIX));
        assert_eq!(info.name, "ada");
    }

    #[tokio::test]
    async fn a_token_needs_a_role_and_known_ones() {
        assert!(matches!(
            staff(MockStaffRepository::new())
                .create_token("ada", Roles::default(), None)
                .await,
            Err(StaffError::Invalid(_))
        ));
        assert!(Roles::parse("read,admin").is_err());
        assert!(Roles::parse(" , ").is_err());
        assert_eq!(
            Roles::parse("rotate,read,rotate").unwrap().to_text(),
            "read,rotate"
        );
        assert!(crate::staff_access::token_lifetime(0).is_err());
        assert!(crate::staff_access::token_lifetime(367).is_err());
    }

    #[tokio::test]
    async fn only_live_staff_tokens_authenticate() {
        let mut repo = MockStaffRepository::new();
        repo.expect_staff_by_token()
            .with(eq(sha256(b"stf_known")))
            .returning(|_| Ok(Some(member())));
        repo.expect_staff_by_token()
            .with(eq(sha256(b"stf_expired")))
            .returning(|_| {
                Ok(Some(StaffMember {
                    expires_at: now(),
                    ..member()
                }))
            });
        repo.expect_staff_by_token().returning(|_| Ok(None));
        let staff = staff(repo);
        assert_eq!(staff.authenticate("stf_known").await.unwrap(), member());
        assert!(matches!(
            staff.authenticate("stf_expired").await,
            Err(StaffError::Expired)
        ));
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

    #[test]
    fn each_role_is_checked_alone() {
        let reader = StaffMember {
            roles: Roles::of(&[Role::Read]),
            ..member()
        };
        assert!(reader.require(Role::Read).is_ok());
        for role in [Role::Reply, Role::Moderate, Role::Rotate] {
            assert!(matches!(
                reader.require(role),
                Err(StaffError::RoleRequired(missing)) if missing == role
            ));
        }
    }

    fn support_pair() -> (sealpost_seal::StaticSecret, PublicKey) {
        let secret = sealpost_seal::StaticSecret::from(sealpost_seal::random_bytes::<32>());
        let public = PublicKey(sealpost_seal::PublicKey::from(&secret).to_bytes());
        (secret, public)
    }

    fn proving_staff(repo: MockStaffRepository, clock: Arc<TestClock>) -> Staff {
        Staff::new(Arc::new(repo), clock).with_rotation_proofs(RotationProofs::new(
            sealpost_seal::ServerKeys::new([6; 32], []),
        ))
    }

    #[tokio::test]
    async fn a_rotation_without_the_current_key_s_proof_changes_nothing() {
        let clock = Arc::new(TestClock::at(now()));
        // No expectation: any write would fail the test.
        let staff = proving_staff(MockStaffRepository::new(), clock.clone());
        let (current_secret, current) = support_pair();
        let (stranger, _) = support_pair();
        let (_, new) = support_pair();
        let challenge = staff.rotation_challenge().unwrap();
        let prove = |secret: &sealpost_seal::StaticSecret, key: &PublicKey| {
            sealpost_seal::support_key_proof(
                secret,
                &challenge.challenge_key,
                &challenge.nonce,
                &key.to_text(),
            )
        };
        let (_, other_new) = support_pair();
        for (current_key, nonce, proof) in [
            // No proof at all.
            (Some(current), challenge.nonce.clone(), Vec::new()),
            // By a key that is not the current one.
            (
                Some(current),
                challenge.nonce.clone(),
                prove(&stranger, &new).to_vec(),
            ),
            // For another new key.
            (
                Some(current),
                challenge.nonce.clone(),
                prove(&current_secret, &other_new).to_vec(),
            ),
            // A nonce this service never issued.
            (
                Some(current),
                "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".to_owned(),
                prove(&current_secret, &new).to_vec(),
            ),
            // No key in force: nothing to prove with.
            (
                None,
                challenge.nonce.clone(),
                prove(&current_secret, &new).to_vec(),
            ),
        ] {
            assert!(matches!(
                staff
                    .rotate_key(&member(), current_key, new, &nonce, &proof)
                    .await,
                Err(StaffError::ProofRefused)
            ));
        }
        // The right proof, once the challenge is older than five minutes.
        clock.advance(TimeDelta::minutes(5) + TimeDelta::seconds(1));
        assert!(matches!(
            staff
                .rotate_key(
                    &member(),
                    Some(current),
                    new,
                    &challenge.nonce,
                    &prove(&current_secret, &new)
                )
                .await,
            Err(StaffError::ProofRefused)
        ));
        // A service without a server key checks no proofs and rotates nothing.
        let unproving = Staff::new(Arc::new(MockStaffRepository::new()), clock);
        assert!(unproving.rotation_challenge().is_err());
    }

    #[tokio::test]
    async fn a_rotation_proved_by_the_current_key_is_stored_and_audited() {
        let (current_secret, current) = support_pair();
        let (_, new) = support_pair();
        let mut repo = MockStaffRepository::new();
        repo.expect_update_switches()
            .withf(move |key, off, paused, at, audit| {
                *key == Some(new)
                    && off.is_none()
                    && paused.is_none()
                    && *at == now()
                    && audit.action == "support.rotate_key"
                    && audit.actor == "stm_a"
                    && audit.target == Some(new.to_text())
            })
            .times(1)
            .returning(move |_, _, _, _, _| {
                Ok(Switches {
                    support_key: Some(new),
                    ..Switches::default()
                })
            });
        let staff = proving_staff(repo, Arc::new(TestClock::at(now())));
        let challenge = staff.rotation_challenge().unwrap();
        let proof = sealpost_seal::support_key_proof(
            &current_secret,
            &challenge.challenge_key,
            &challenge.nonce,
            &new.to_text(),
        );
        let switches = staff
            .rotate_key(&member(), Some(current), new, &challenge.nonce, &proof)
            .await
            .unwrap();
        assert_eq!(switches.support_key, Some(new));
    }

    fn report(n: u32) -> AbuseReport {
        AbuseReport {
            id: format!("abr_{n:04}"),
            target: AbuseTarget::MessageId("msg_1".to_owned()),
            reason: AbuseReason::Spam,
            details: None,
            contact: None,
            status: AbuseStatus::Open,
            account: None,
            created_at: now(),
            resolved_at: None,
            resolution: None,
        }
    }

    #[tokio::test]
    async fn a_list_read_is_audited_with_it_and_pages() {
        let mut repo = MockStaffRepository::new();
        repo.expect_reports()
            .withf(|status, page, read| {
                *status == Some(AbuseStatus::Open)
                    && page.limit == 2
                    && read.action == "abuse.list"
                    && read.actor == "stm_a"
                    && read.at == now()
                    && read.note.as_deref() == Some("status=open limit=2")
            })
            .times(1)
            .returning(|_, page, _| {
                Ok((0..u32::try_from(page.fetch_limit()).unwrap())
                    .map(report)
                    .collect())
            });
        let page = PageRequest {
            limit: 2,
            after: None,
        };
        let listed = staff(repo)
            .reports(&member(), Some(AbuseStatus::Open), &page)
            .await
            .unwrap();
        assert_eq!(listed.items.len(), 2);
        let next = Cursor::decode(listed.next_cursor.as_deref().unwrap()).unwrap();
        assert_eq!(next.id, "abr_0001", "the cursor names the page's last item");
    }

    #[tokio::test]
    async fn reading_the_audit_log_is_an_entry_of_its_own() {
        let mut repo = MockStaffRepository::new();
        repo.expect_audit_log()
            .withf(|page, read| page.limit == 100 && read.action == "audit.read")
            .times(1)
            .returning(|_, read| Ok(vec![(7, read.clone())]));
        let page = PageRequest {
            limit: 100,
            after: None,
        };
        let log = staff(repo).audit_log(&member(), &page).await.unwrap();
        assert_eq!(log.items.len(), 1);
        assert_eq!(log.next_cursor, None);
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
