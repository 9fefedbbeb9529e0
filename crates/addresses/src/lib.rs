//! Addresses (inboxes): which names can be created on which domain, the plan
//! limits on creating and assigning them, retention, and retirement: a
//! deleted address is never issued again to anyone.

use std::sync::Arc;

use async_trait::async_trait;
use sealpost_activity::Records;
use sealpost_kernel::{AccountId, AddressId, Clock, DeviceId, PlanId, StoreError, Timestamp};
use sealpost_plans::{LimitError, OwnDomainAccess, own_domain_access};
use sealpost_seal::SealedBox;

pub const DEFAULT_RETENTION_DAYS: u8 = 7;
pub const MAX_RETENTION_DAYS: u8 = 90;
const RANDOM_ENDING_LEN: usize = 6;
const RANDOM_NAME_LEN: usize = 10;
const MAX_PREFIX_LEN: usize = 40;
/// Attempts at a random name that nobody holds or held.
const NAME_ATTEMPTS: usize = 5;
/// Attempts at a creation whose plan changed under it.
const PLAN_ATTEMPTS: usize = 3;

#[derive(Clone, Debug, PartialEq)]
pub struct Address {
    pub id: AddressId,
    pub account: AccountId,
    pub email_address: String,
    pub domain: String,
    pub worker: Option<DeviceId>,
    pub retention_days: u8,
    pub paused_at: Option<Timestamp>,
    pub meta: Option<SealedBox>,
    pub public_key: Option<[u8; 32]>,
    pub key_epoch: u32,
    pub created_at: Timestamp,
}

impl Address {
    /// SPEC.md: `active` when assigned to a device, else `unassigned`.
    pub fn status(&self) -> &'static str {
        if self.worker.is_some() {
            "active"
        } else {
            "unassigned"
        }
    }
}

/// `POST /inboxes` input after field decoding at the edge.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewAddress {
    pub id: Option<AddressId>,
    pub domain: Option<String>,
    pub prefix: Option<String>,
    pub local_part: Option<String>,
    pub email_address: Option<String>,
    pub retention_days: Option<i64>,
    pub meta: Option<SealedBox>,
    pub public_key: Option<[u8; 32]>,
}

#[derive(Debug, thiserror::Error)]
pub enum AddressError {
    #[error("{field}: {reason}")]
    InvalidField { field: &'static str, reason: String },
    #[error("this address is taken")]
    AddressTaken,
    #[error("this address id was used before")]
    IdTaken,
    #[error(transparent)]
    Limit(#[from] LimitError),
    #[error("no such record")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn invalid(field: &'static str, reason: impl Into<String>) -> AddressError {
    AddressError::InvalidField {
        field,
        reason: reason.into(),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateOutcome {
    Created,
    IdTaken,
    /// The name is live or retired.
    AddressTaken,
    LimitReached,
    /// The account's plan is no longer the one the request was decided on:
    /// decide again on this one.
    PlanChanged(PlanId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssignOutcome {
    Assigned,
    NotFound,
    /// The device already holds `max_per_device` addresses.
    DeviceFull,
    /// The address moved since it was read; decide again.
    Stale,
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AddressRepository: Send + Sync {
    /// Inserts unless the account's plan (read under the account's lock) is
    /// not `plan`, the id was ever used, the name is live or retired, or the
    /// account already holds `max_addresses`.
    async fn create(
        &self,
        address: Address,
        plan: PlanId,
        max_addresses: u32,
        records: Records,
    ) -> Result<CreateOutcome, StoreError>;
    async fn addresses(
        &self,
        account: &AccountId,
        worker: Option<DeviceId>,
    ) -> Result<Vec<Address>, StoreError>;
    async fn address(
        &self,
        account: &AccountId,
        id: &AddressId,
    ) -> Result<Option<Address>, StoreError>;
    /// Counts every address of the account, and those assigned.
    async fn count(&self, account: &AccountId) -> Result<(u64, u64), StoreError>;
    /// Changes label and retention; a shorter retention deletes mail already past it at `now`.
    async fn update(
        &self,
        account: &AccountId,
        id: &AddressId,
        meta: Option<SealedBox>,
        retention_days: Option<u8>,
        now: Timestamp,
    ) -> Result<bool, StoreError>;
    /// Deletes the address, its mail and blobs; retires its id and name.
    async fn delete(
        &self,
        account: &AccountId,
        id: &AddressId,
        records: Records,
    ) -> Result<bool, StoreError>;
    /// Assigns if the address is still on `expected_worker` and the device holds fewer than `max_per_device`.
    async fn assign(
        &self,
        account: &AccountId,
        id: &AddressId,
        worker: &DeviceId,
        expected_worker: Option<DeviceId>,
        max_per_device: Option<u32>,
        records: Records,
    ) -> Result<AssignOutcome, StoreError>;
    async fn unassign(
        &self,
        account: &AccountId,
        id: &AddressId,
        worker: &DeviceId,
        records: Records,
    ) -> Result<bool, StoreError>;
}

/// An own domain of the account, proved, as address creation sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnDomainState {
    /// At step `live`: addresses can be created on it.
    pub live: bool,
    /// When the plan was first seen without own domains.
    pub plan_lost_at: Option<Timestamp>,
}

/// The account's own domains (docs/domains.md).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait OwnDomainDirectory: Send + Sync {
    /// The account's proved own domain `name` (lower case ASCII), if any.
    async fn own_domain(
        &self,
        account: &AccountId,
        name: &str,
    ) -> Result<Option<OwnDomainState>, StoreError>;
}

#[derive(Clone)]
pub struct Addresses {
    repo: Arc<dyn AddressRepository>,
    clock: Arc<dyn Clock>,
    domains: Vec<String>,
    own_domains: Option<Arc<dyn OwnDomainDirectory>>,
}

impl Addresses {
    pub fn new(
        repo: Arc<dyn AddressRepository>,
        clock: Arc<dyn Clock>,
        domains: Vec<String>,
    ) -> Self {
        Self {
            repo,
            clock,
            domains,
            own_domains: None,
        }
    }

    /// Addresses may also be created on the account's live own domains.
    pub fn with_own_domains(mut self, directory: Arc<dyn OwnDomainDirectory>) -> Self {
        self.own_domains = Some(directory);
        self
    }

    /// The domains addresses can be created on.
    pub fn domains(&self) -> &[String] {
        &self.domains
    }

    pub async fn create(
        &self,
        account: &AccountId,
        plan: PlanId,
        input: NewAddress,
    ) -> Result<Address, AddressError> {
        let mut plan = plan;
        for _ in 0..PLAN_ATTEMPTS {
            match self.create_on_plan(account, plan, &input).await? {
                Ok(address) => return Ok(address),
                // Decided again on the plan the account holds now.
                Err(current) => plan = current,
            }
        }
        Err(AddressError::Store(StoreError::Unavailable(
            "the plan kept changing; retry".into(),
        )))
    }

    /// [`Addresses::create`] on `plan`; `Err(current)` when the store found
    /// the account on another plan under its lock.
    async fn create_on_plan(
        &self,
        account: &AccountId,
        plan: PlanId,
        input: &NewAddress,
    ) -> Result<Result<Address, PlanId>, AddressError> {
        let limits = sealpost_plans::plan(plan);
        let id = input.id.clone().ok_or_else(|| invalid("id", "required"))?;
        let retention_days = retention(input.retention_days)?;
        let name = self.requested_name(input)?;
        let field = if input.email_address.is_some() {
            "emailAddress"
        } else {
            "domain"
        };
        let name = self.on_served_domain(account, plan, name, field).await?;
        if matches!(name, Name::Exact { .. }) {
            limits.check_custom_address()?;
        }
        let now = self.clock.now();
        for _ in 0..NAME_ATTEMPTS {
            let (local_part, domain) = match &name {
                Name::Exact { local_part, domain } => (local_part.clone(), domain.clone()),
                Name::Generated { prefix, domain } => {
                    (generated_local_part(prefix.as_deref()), domain.clone())
                }
            };
            let address = Address {
                id: id.clone(),
                account: account.clone(),
                email_address: format!("{local_part}@{domain}"),
                domain,
                worker: None,
                retention_days,
                paused_at: None,
                meta: input.meta.clone(),
                public_key: input.public_key,
                key_epoch: 0,
                created_at: now,
            };
            let mut records = Records::new();
            records.address_created(account, &id, now);
            match self
                .repo
                .create(address.clone(), plan, limits.addresses, records)
                .await?
            {
                CreateOutcome::Created => return Ok(Ok(address)),
                CreateOutcome::IdTaken => return Err(AddressError::IdTaken),
                CreateOutcome::LimitReached => {
                    return Err(LimitError::AllocationExhausted {
                        limit: limits.addresses,
                    }
                    .into());
                }
                CreateOutcome::AddressTaken if matches!(name, Name::Exact { .. }) => {
                    return Err(AddressError::AddressTaken);
                }
                CreateOutcome::AddressTaken => continue,
                CreateOutcome::PlanChanged(current) => return Ok(Err(current)),
            }
        }
        Err(AddressError::AddressTaken)
    }

    fn requested_name(&self, input: &NewAddress) -> Result<Name, AddressError> {
        if let Some(email) = &input.email_address {
            if input.local_part.is_some() || input.prefix.is_some() {
                return Err(invalid(
                    "emailAddress",
                    "give emailAddress alone, or domain with localPart or prefix",
                ));
            }
            let (local, domain) = email
                .rsplit_once('@')
                .ok_or_else(|| invalid("emailAddress", "expected local-part@domain"))?;
            if let Some(given) = &input.domain
                && !given.eq_ignore_ascii_case(domain)
            {
                return Err(invalid("domain", "does not match emailAddress"));
            }
            return Ok(Name::Exact {
                local_part: local_part(local, "emailAddress")?,
                domain: self.served_domain(domain, "emailAddress")?,
            });
        }
        let domain = input
            .domain
            .as_deref()
            .ok_or_else(|| invalid("domain", "required unless emailAddress is given"))?;
        let domain = self.served_domain(domain, "domain")?;
        match (&input.local_part, &input.prefix) {
            (Some(_), Some(_)) => Err(invalid("localPart", "use localPart or prefix, not both")),
            (Some(local), None) => Ok(Name::Exact {
                local_part: local_part(local, "localPart")?,
                domain,
            }),
            (None, prefix) => Ok(Name::Generated {
                prefix: prefix.as_deref().map(clean_prefix).transpose()?,
                domain,
            }),
        }
    }

    /// The domain in its stored form; whether it is served is decided by
    /// [`Self::on_served_domain`].
    fn served_domain(&self, domain: &str, field: &'static str) -> Result<String, AddressError> {
        let domain = domain.trim().trim_end_matches('.').to_ascii_lowercase();
        if domain.is_empty() {
            return Err(invalid(field, "required"));
        }
        Ok(domain)
    }

    /// A shared domain, or a live own domain of the account whose plan
    /// still includes own domains (else 403 `plan_required`).
    async fn on_served_domain(
        &self,
        account: &AccountId,
        plan: PlanId,
        name: Name,
        field: &'static str,
    ) -> Result<Name, AddressError> {
        let (Name::Exact { domain, .. } | Name::Generated { domain, .. }) = &name;
        if self.domains.contains(domain) {
            return Ok(name);
        }
        let unknown = || invalid(field, "not a domain this service serves; see GET /domains");
        let Some(directory) = &self.own_domains else {
            return Err(unknown());
        };
        let Some(state) = directory.own_domain(account, domain).await? else {
            return Err(unknown());
        };
        if !state.live {
            return Err(invalid(
                field,
                "this own domain is not live yet; see GET /domains/custom",
            ));
        }
        let access = own_domain_access(
            sealpost_plans::plan(plan),
            state.plan_lost_at,
            self.clock.now(),
        );
        if access != OwnDomainAccess::Full {
            return Err(LimitError::OwnDomainReceiveOnly.into());
        }
        Ok(name)
    }

    pub async fn list(
        &self,
        account: &AccountId,
        worker: Option<DeviceId>,
    ) -> Result<Vec<Address>, AddressError> {
        Ok(self.repo.addresses(account, worker).await?)
    }

    pub async fn get(&self, account: &AccountId, id: &AddressId) -> Result<Address, AddressError> {
        self.repo
            .address(account, id)
            .await?
            .ok_or(AddressError::NotFound)
    }

    pub async fn allocation(
        &self,
        account: &AccountId,
        plan: PlanId,
    ) -> Result<Allocation, AddressError> {
        let (used, assigned) = self.repo.count(account).await?;
        let limit = u64::from(sealpost_plans::plan(plan).addresses);
        Ok(Allocation {
            limit,
            used,
            assigned,
            remaining: limit.saturating_sub(used),
        })
    }

    pub async fn update(
        &self,
        account: &AccountId,
        id: &AddressId,
        meta: Option<SealedBox>,
        retention_days: Option<i64>,
    ) -> Result<Address, AddressError> {
        let retention_days = retention_days
            .map(|days| retention(Some(days)))
            .transpose()?;
        if !self
            .repo
            .update(account, id, meta, retention_days, self.clock.now())
            .await?
        {
            return Err(AddressError::NotFound);
        }
        self.get(account, id).await
    }

    pub async fn delete(&self, account: &AccountId, id: &AddressId) -> Result<(), AddressError> {
        let mut records = Records::new();
        records.address_deleted(account, id, self.clock.now());
        if self.repo.delete(account, id, records).await? {
            Ok(())
        } else {
            Err(AddressError::NotFound)
        }
    }

    /// `POST /workers/:id/inboxes`. The caller has checked the device is the account's.
    pub async fn assign(
        &self,
        account: &AccountId,
        plan: PlanId,
        id: &AddressId,
        worker: &DeviceId,
    ) -> Result<(), AddressError> {
        let max_per_device = sealpost_plans::plan(plan).is_free().then_some(1);
        for _ in 0..3 {
            let address = self.get(account, id).await?;
            if address.worker.as_ref() == Some(worker) {
                return Ok(());
            }
            let now = self.clock.now();
            let mut records = Records::new();
            if let Some(previous) = &address.worker {
                records.address_removed(account, id, previous, now);
            }
            records.address_assigned(account, id, worker, now);
            match self
                .repo
                .assign(account, id, worker, address.worker, max_per_device, records)
                .await?
            {
                AssignOutcome::Assigned => return Ok(()),
                AssignOutcome::NotFound => return Err(AddressError::NotFound),
                AssignOutcome::DeviceFull => return Err(LimitError::OneAddressPerDevice.into()),
                AssignOutcome::Stale => continue,
            }
        }
        Err(AddressError::Store(StoreError::Unavailable(
            "address kept changing; retry".into(),
        )))
    }

    pub async fn unassign(
        &self,
        account: &AccountId,
        id: &AddressId,
        worker: &DeviceId,
    ) -> Result<(), AddressError> {
        let mut records = Records::new();
        records.address_removed(account, id, worker, self.clock.now());
        if self.repo.unassign(account, id, worker, records).await? {
            Ok(())
        } else {
            Err(AddressError::NotFound)
        }
    }
}

/// `GET /inboxes/allocation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub limit: u64,
    pub used: u64,
    pub assigned: u64,
    pub remaining: u64,
}

enum Name {
    Exact {
        local_part: String,
        domain: String,
    },
    Generated {
        prefix: Option<String>,
        domain: String,
    },
}

fn retention(days: Option<i64>) -> Result<u8, AddressError> {
    match days {
        None => Ok(DEFAULT_RETENTION_DAYS),
        Some(days) if (1..=i64::from(MAX_RETENTION_DAYS)).contains(&days) => Ok(days as u8),
        Some(_) => Err(invalid("retentionDays", "a whole number from 1 to 90")),
    }
}

fn allowed_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-' | '_' | '+')
}

/// A chosen local part: lowercase letters, digits and `.-_+`, 1 to 64, no leading,
/// trailing or doubled dot.
pub fn local_part(text: &str, field: &'static str) -> Result<String, AddressError> {
    let local = text.trim().to_ascii_lowercase();
    let valid = (1..=64).contains(&local.len())
        && local.chars().all(allowed_char)
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..");
    if valid {
        Ok(local)
    } else {
        Err(invalid(
            field,
            "letters, digits and . - _ + only, 1 to 64 characters, no leading, trailing or doubled dot",
        ))
    }
}

fn clean_prefix(prefix: &str) -> Result<String, AddressError> {
    let prefix = prefix.trim().to_ascii_lowercase();
    let valid = (1..=MAX_PREFIX_LEN).contains(&prefix.len())
        && prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && !prefix.starts_with('.')
        && !prefix.contains("..");
    if valid {
        Ok(prefix)
    } else {
        Err(invalid(
            "prefix",
            "letters, digits, - and . only, up to 40 characters",
        ))
    }
}

fn random_chars(len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyz23456789";
    sealpost_seal::random_bytes::<16>()
        .iter()
        .take(len)
        .map(|byte| ALPHABET[usize::from(*byte) % ALPHABET.len()] as char)
        .collect()
}

/// `prefix` + `.` + a random ending, or a random name when there is no prefix.
pub fn generated_local_part(prefix: Option<&str>) -> String {
    match prefix {
        Some(prefix) => format!(
            "{}.{}",
            prefix.trim_end_matches(['.', '-']),
            random_chars(RANDOM_ENDING_LEN)
        ),
        None => random_chars(RANDOM_NAME_LEN),
    }
}

/// The form a retired address is remembered in: SHA-256 of the lowercased address.
pub fn address_hash(email_address: &str) -> [u8; 32] {
    sealpost_seal::sha256(email_address.to_ascii_lowercase().as_bytes())
}

#[cfg(test)]
mod tests;
