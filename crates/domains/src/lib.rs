//! Own domains: an account on Scale or above brings a domain, proves it owns
//! it with a TXT record, delegates it to the service's nameservers and, once
//! its MX record shows, creates addresses on it and receives mail there.
//!
//! Until the TXT check passes a claim reserves nothing: several accounts may
//! claim a name; the first to prove it wins and the others' claims move to
//! `attention`. The DNS is reached through [`DnsLookup`] (an adapter on a
//! real resolver) and the records through [`DomainRepository`].

mod name;
mod steps;

use std::sync::Arc;

use async_trait::async_trait;
use sealpost_activity::{ActivityKind, Records};
use sealpost_kernel::{AccountId, Clock, PlanId, StoreError, Timestamp};
use sealpost_plans::{LimitError, PLANS, plan};
use sealpost_seal::ServerKeys;

pub use name::{DomainName, NameError, VERIFY_LABEL, VERIFY_PREFIX};
pub use steps::{
    Decision, LIVE_INTERVAL, Observed, SETUP_INTERVAL_MAX, Step, next_check, next_step,
};

/// The at-rest purpose a domain's DKIM private key is sealed under.
pub const DKIM_KEY_PURPOSE: &str = "dkim-key";

/// An own domain as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnDomain {
    pub account: AccountId,
    pub name: DomainName,
    /// The random token of `service-verify=<token>`.
    pub token: String,
    pub step: Step,
    /// When ownership was proved; `None` before (or for a lost claim).
    pub proved_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub checked_at: Option<Timestamp>,
    pub next_check_at: Timestamp,
    /// Checks made since the step last changed (the back-off counts them).
    pub checks_in_step: u32,
    /// When the account's plan was first seen without own domains; `None`
    /// while it has them.
    pub plan_lost_at: Option<Timestamp>,
}

impl OwnDomain {
    /// The value of the ownership TXT record.
    pub fn verification_value(&self) -> String {
        format!("{VERIFY_PREFIX}{}", self.token)
    }

    pub fn proved(&self) -> bool {
        self.proved_at.is_some()
    }
}

/// A new DKIM key pair for a domain.
pub struct DkimKeyPair {
    /// PKCS#8 DER of the private key (sealed before it is stored).
    pub private_pkcs8_der: Vec<u8>,
    /// SubjectPublicKeyInfo DER of the public key (the `p=` of the record).
    pub public_spki_der: Vec<u8>,
    /// `k=` of the record: `rsa`.
    pub algorithm: &'static str,
}

/// The DKIM key stored with a proved domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredDkim {
    pub selector: String,
    pub algorithm: String,
    pub public_spki_der: Vec<u8>,
    /// `ServerKeys::seal(DKIM_KEY_PURPOSE, pkcs8)`.
    pub sealed_private_key: Vec<u8>,
}

/// Makes DKIM key pairs (an adapter; key generation is slow and needs a
/// cryptography library the domain does not carry).
pub trait DkimKeyMaker: Send + Sync {
    fn generate(&self) -> Result<DkimKeyPair, String>;
}

/// A failed DNS lookup: timeout, server failure, refused. Not evidence that
/// a record is absent (an empty answer or NXDOMAIN is `Ok(vec![])`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("DNS lookup failed: {0}")]
pub struct LookupError(pub String);

/// The public DNS, as the checks see it.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait DnsLookup: Send + Sync {
    /// The TXT strings at `name` (each record's strings joined).
    async fn txt(&self, name: &str) -> Result<Vec<String>, LookupError>;
    /// The NS host names delegated for `name` (lower case, no trailing dot).
    async fn ns(&self, name: &str) -> Result<Vec<String>, LookupError>;
    /// The MX exchange host names of `name` (lower case, no trailing dot).
    async fn mx(&self, name: &str) -> Result<Vec<String>, LookupError>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddOutcome {
    Added,
    /// The account holds `max` domains already.
    LimitReached,
    /// Another account has proved this name.
    TakenByOther,
    /// The account already claimed it.
    AlreadyYours,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProveOutcome {
    Proved,
    /// Another account proved it first.
    TakenByOther,
    /// The claim changed or went since it was read.
    Stale,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoveOutcome {
    Removed,
    NotFound,
    /// Addresses exist on it.
    InUse,
}

/// A step change guarded by the step it was decided from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepChange {
    pub account: AccountId,
    pub name: DomainName,
    pub from: Step,
    pub to: Step,
    pub checked_at: Timestamp,
    pub next_check_at: Timestamp,
    pub checks_in_step: u32,
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait DomainRepository: Send + Sync {
    /// Adds a claim unless the account holds `max` domains, already claimed
    /// it, or another account proved it.
    async fn add(
        &self,
        domain: &OwnDomain,
        max: u32,
        records: Records,
    ) -> Result<AddOutcome, StoreError>;
    async fn domains(&self, account: &AccountId) -> Result<Vec<OwnDomain>, StoreError>;
    async fn domain(
        &self,
        account: &AccountId,
        name: &DomainName,
    ) -> Result<Option<OwnDomain>, StoreError>;
    /// Records the proof, the DKIM key and the step, unless another account
    /// proved the name first; every other account's claim on the name moves
    /// to `attention` (with a `domain.attention` entry each).
    async fn prove(
        &self,
        change: &StepChange,
        dkim: Option<StoredDkim>,
        records: Records,
    ) -> Result<ProveOutcome, StoreError>;
    /// Applies `change` if the domain is still at `change.from`.
    async fn update(&self, change: &StepChange, records: Records) -> Result<bool, StoreError>;
    /// Removes the claim unless addresses exist on the name for the account.
    async fn remove(
        &self,
        account: &AccountId,
        name: &DomainName,
        records: Records,
    ) -> Result<RemoveOutcome, StoreError>;
    /// Up to `limit` domains whose next check is due at `now`, oldest first.
    async fn due(&self, now: Timestamp, limit: i64) -> Result<Vec<OwnDomain>, StoreError>;
    /// Marks the domains of accounts on `without` (plans lacking own
    /// domains) as having lost them at `now` where not yet marked, and
    /// clears the mark of the others. Returns how many rows changed.
    async fn track_plan_loss(&self, without: &[PlanId], now: Timestamp) -> Result<u64, StoreError>;
    /// Removes the domains (and their DKIM keys) of accounts whose missed
    /// payment's pause reached its `deletesAt` by `now` unpaid and that
    /// hold no address on them any more.
    async fn remove_unpaid(&self, now: Timestamp) -> Result<u64, StoreError>;
}

#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    #[error("domain: {0}")]
    InvalidName(String),
    /// 409 `already_used`: another account proved this domain.
    #[error("another account has proved ownership of this domain")]
    TakenByOther,
    #[error(transparent)]
    Limit(#[from] LimitError),
    #[error("no such domain")]
    NotFound,
    /// 409 `domain_in_use`.
    #[error("addresses exist on this domain; delete them first")]
    InUse,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<NameError> for DomainError {
    fn from(error: NameError) -> Self {
        DomainError::InvalidName(error.to_string())
    }
}

/// Names the service publishes for every own domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainSettings {
    /// Names the service itself uses (shared domains, nameservers, MX
    /// host, the API's host): none can be brought.
    pub service_domains: Vec<String>,
    /// The service's two nameservers, as listed to the owner.
    pub nameservers: Vec<String>,
    /// The host own domains' MX records must name.
    pub mx_host: String,
    /// The DKIM selector new keys are published under.
    pub dkim_selector: String,
}

/// The result of `POST /domains/custom`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Added {
    pub domain: OwnDomain,
    /// False when the account had claimed it before (same record answered).
    pub created: bool,
}

#[derive(Clone)]
pub struct Domains {
    repo: Arc<dyn DomainRepository>,
    dns: Arc<dyn DnsLookup>,
    clock: Arc<dyn Clock>,
    settings: DomainSettings,
    dkim: Option<(Arc<dyn DkimKeyMaker>, ServerKeys)>,
}

impl Domains {
    pub fn new(
        repo: Arc<dyn DomainRepository>,
        dns: Arc<dyn DnsLookup>,
        clock: Arc<dyn Clock>,
        settings: DomainSettings,
    ) -> Self {
        Self {
            repo,
            dns,
            clock,
            settings,
            dkim: None,
        }
    }

    /// Generates a DKIM key pair at each ownership proof, sealed under `keys`.
    pub fn with_dkim(mut self, maker: Arc<dyn DkimKeyMaker>, keys: ServerKeys) -> Self {
        self.dkim = Some((maker, keys));
        self
    }

    pub fn settings(&self) -> &DomainSettings {
        &self.settings
    }

    /// Checks a name as `POST /domains/custom` would, without storing.
    pub fn parse_name(&self, input: &str) -> Result<DomainName, DomainError> {
        Ok(DomainName::parse(input, &self.settings.service_domains)?)
    }

    /// `POST /domains/custom`.
    pub async fn add(
        &self,
        account: &AccountId,
        plan_id: PlanId,
        input: &str,
    ) -> Result<Added, DomainError> {
        let name = self.parse_name(input)?;
        let limits = plan(plan_id);
        // The count itself is checked by the store, under the account's lock.
        limits.check_new_own_domain(0)?;
        let now = self.clock.now();
        let domain = OwnDomain {
            account: account.clone(),
            name: name.clone(),
            token: new_token(),
            step: Step::VerifyOwnership,
            proved_at: None,
            created_at: now,
            checked_at: None,
            next_check_at: next_check(Step::VerifyOwnership, false, 0, now),
            checks_in_step: 0,
            plan_lost_at: None,
        };
        let mut records = Records::new();
        records.domain(account, ActivityKind::DomainAdded, now);
        match self.repo.add(&domain, limits.own_domains, records).await? {
            AddOutcome::Added => Ok(Added {
                domain,
                created: true,
            }),
            AddOutcome::AlreadyYours => Ok(Added {
                domain: self.get(account, &name).await?,
                created: false,
            }),
            AddOutcome::LimitReached => Err(LimitError::OwnDomainLimit {
                limit: limits.own_domains,
            }
            .into()),
            AddOutcome::TakenByOther => Err(DomainError::TakenByOther),
        }
    }

    pub async fn list(&self, account: &AccountId) -> Result<Vec<OwnDomain>, DomainError> {
        Ok(self.repo.domains(account).await?)
    }

    pub async fn get(
        &self,
        account: &AccountId,
        name: &DomainName,
    ) -> Result<OwnDomain, DomainError> {
        self.repo
            .domain(account, name)
            .await?
            .ok_or(DomainError::NotFound)
    }

    /// A path segment as a stored name; anything unparsable is simply not found.
    pub fn path_name(&self, text: &str) -> Result<DomainName, DomainError> {
        DomainName::parse(text, &[]).map_err(|_| DomainError::NotFound)
    }

    /// `DELETE /domains/custom/:domain`.
    pub async fn remove(&self, account: &AccountId, name: &DomainName) -> Result<(), DomainError> {
        let mut records = Records::new();
        records.domain(account, ActivityKind::DomainRemoved, self.clock.now());
        match self.repo.remove(account, name, records).await? {
            RemoveOutcome::Removed => Ok(()),
            RemoveOutcome::NotFound => Err(DomainError::NotFound),
            RemoveOutcome::InUse => Err(DomainError::InUse),
        }
    }

    /// `POST /domains/custom/:domain/check`: looks now and moves the step.
    pub async fn check(
        &self,
        account: &AccountId,
        name: &DomainName,
    ) -> Result<OwnDomain, DomainError> {
        let domain = self.get(account, name).await?;
        self.run_check(&domain).await?;
        self.get(account, name).await
    }

    /// The background round: checks every domain whose time has come.
    /// Returns how many were checked. A failure of one is logged by the
    /// caller through the returned error only when the store fails.
    pub async fn check_due(&self, limit: i64) -> Result<usize, DomainError> {
        let due = self.repo.due(self.clock.now(), limit).await?;
        for domain in &due {
            self.run_check(domain).await?;
        }
        Ok(due.len())
    }

    /// The plan-loss mark and the removal after a missed payment (hourly).
    pub async fn sweep(&self) -> Result<(u64, u64), DomainError> {
        let now = self.clock.now();
        let without: Vec<PlanId> = PLANS
            .iter()
            .filter(|plan| plan.own_domains == 0)
            .map(|plan| plan.id)
            .collect();
        let marked = self.repo.track_plan_loss(&without, now).await?;
        let removed = self.repo.remove_unpaid(now).await?;
        Ok((marked, removed))
    }

    async fn observe(&self, domain: &OwnDomain) -> Observed {
        let mut seen = Observed::default();
        if !domain.proved() {
            let wanted = domain.verification_value();
            seen.txt = Some(match self.dns.txt(&domain.name.verification_name()).await {
                Ok(values) => values.iter().any(|value| value.trim() == wanted),
                Err(_) => return seen,
            });
            if seen.txt != Some(true) {
                return seen;
            }
        }
        seen.delegated = self
            .dns
            .ns(domain.name.as_str())
            .await
            .ok()
            .map(|names| self.delegated(&names));
        if seen.delegated == Some(true) {
            seen.mx = self.dns.mx(domain.name.as_str()).await.ok().map(|hosts| {
                hosts
                    .iter()
                    .any(|host| same_host(host, &self.settings.mx_host))
            });
        }
        seen
    }

    /// The delegation names exactly the configured nameservers.
    fn delegated(&self, names: &[String]) -> bool {
        let mut found: Vec<String> = names.iter().map(|n| normalise_host(n)).collect();
        let mut wanted: Vec<String> = self
            .settings
            .nameservers
            .iter()
            .map(|n| normalise_host(n))
            .collect();
        found.sort();
        found.dedup();
        wanted.sort();
        wanted.dedup();
        !wanted.is_empty() && found == wanted
    }

    async fn run_check(&self, domain: &OwnDomain) -> Result<(), DomainError> {
        let seen = self.observe(domain).await;
        let decision = next_step(domain.step, domain.proved(), seen);
        let now = self.clock.now();
        let proved = domain.proved() || decision.proves;
        let checks_in_step = if decision.step == domain.step {
            domain.checks_in_step.saturating_add(1)
        } else {
            0
        };
        let change = StepChange {
            account: domain.account.clone(),
            name: domain.name.clone(),
            from: domain.step,
            to: decision.step,
            checked_at: now,
            next_check_at: next_check(decision.step, proved, checks_in_step, now),
            checks_in_step,
        };
        let mut records = Records::new();
        if decision.proves {
            records.domain(&domain.account, ActivityKind::DomainVerified, now);
        }
        if decision.step != domain.step {
            match decision.step {
                Step::Live => records.domain(&domain.account, ActivityKind::DomainLive, now),
                Step::Attention => {
                    records.domain(&domain.account, ActivityKind::DomainAttention, now)
                }
                _ => {}
            }
        }
        if !decision.proves {
            self.repo.update(&change, records).await?;
            return Ok(());
        }
        let dkim = self.new_dkim_key()?;
        match self.repo.prove(&change, dkim, records).await? {
            ProveOutcome::Proved | ProveOutcome::Stale => Ok(()),
            ProveOutcome::TakenByOther => {
                let lost = StepChange {
                    to: Step::Attention,
                    next_check_at: next_check(Step::Attention, false, 0, now),
                    checks_in_step: 0,
                    ..change
                };
                let mut records = Records::new();
                if domain.step != Step::Attention {
                    records.domain(&domain.account, ActivityKind::DomainAttention, now);
                }
                self.repo.update(&lost, records).await?;
                Ok(())
            }
        }
    }

    fn new_dkim_key(&self) -> Result<Option<StoredDkim>, DomainError> {
        let Some((maker, keys)) = &self.dkim else {
            return Ok(None);
        };
        let pair = maker.generate().map_err(|reason| {
            StoreError::Failed(format!("generating a DKIM key: {reason}").into())
        })?;
        Ok(Some(StoredDkim {
            selector: self.settings.dkim_selector.clone(),
            algorithm: pair.algorithm.to_owned(),
            public_spki_der: pair.public_spki_der,
            sealed_private_key: keys.seal(DKIM_KEY_PURPOSE, &pair.private_pkcs8_der),
        }))
    }
}

fn normalise_host(host: &str) -> String {
    host.trim().trim_end_matches('.').to_ascii_lowercase()
}

fn same_host(a: &str, b: &str) -> bool {
    normalise_host(a) == normalise_host(b)
}

/// 26 characters from an unambiguous lower-case alphabet (130 bits).
fn new_token() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";
    sealpost_seal::random_bytes::<26>()
        .iter()
        .map(|byte| ALPHABET[usize::from(*byte) % ALPHABET.len()] as char)
        .collect()
}

#[cfg(test)]
mod tests;
