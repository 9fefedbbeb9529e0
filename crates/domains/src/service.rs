//! The domain service: claims, the ownership proof, the step checks and
//! their back-off, removal and the sweeps.

use std::sync::Arc;

use sealpost_activity::{ActivityKind, Records};
use sealpost_kernel::{AccountId, Clock, PlanId, StoreError};
use sealpost_plans::{LimitError, OnPlan, PLANS, decide_on_current_plan, plan};
use sealpost_seal::ServerKeys;

use crate::error::DomainError;
use crate::model::{Added, DKIM_KEY_PURPOSE, DomainSettings, OwnDomain, StoredDkim, dkim_key_row};
use crate::name::DomainName;
use crate::repository::{
    AddOutcome, DkimKeyMaker, DnsLookup, DomainRepository, ProveOutcome, RemoveOutcome, StepChange,
};
use crate::steps::{Observed, Step, next_check, next_step};

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
        decide_on_current_plan(plan_id, async |plan_id| {
            let limits = plan(plan_id);
            // The count itself is checked by the store, under the account's
            // lock, against the plan it finds there.
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
            match self
                .repo
                .add(&domain, plan_id, limits.own_domains, records)
                .await?
            {
                AddOutcome::Added => Ok(OnPlan::Done(Added {
                    domain,
                    created: true,
                })),
                AddOutcome::AlreadyYours => Ok(OnPlan::Done(Added {
                    domain: self.get(account, &name).await?,
                    created: false,
                })),
                AddOutcome::LimitReached => Err(LimitError::OwnDomainLimit {
                    limit: limits.own_domains,
                }
                .into()),
                AddOutcome::TakenByOther => Err(DomainError::TakenByOther),
                AddOutcome::PlanChanged(current) => Ok(OnPlan::Changed(current)),
            }
        })
        .await
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
        let dkim = self.new_dkim_key(&domain.account, &domain.name)?;
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

    fn new_dkim_key(
        &self,
        account: &AccountId,
        name: &DomainName,
    ) -> Result<Option<StoredDkim>, DomainError> {
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
            sealed_private_key: keys.seal(
                DKIM_KEY_PURPOSE,
                &dkim_key_row(account, name.as_str()),
                &pair.private_pkcs8_der,
            ),
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
