//! The address service: creation on shared and own domains, listing,
//! updates, deletion and assignment to devices.

use std::sync::Arc;

use sealpost_activity::Records;
use sealpost_kernel::{AccountId, AddressId, Clock, DeviceId, PlanId, StoreError};
use sealpost_plans::{
    LimitError, OnPlan, OwnDomainAccess, decide_on_current_plan, own_domain_access,
};
use sealpost_seal::SealedBox;

use crate::error::{AddressError, invalid};
use crate::model::{
    Address, Allocation, Name, NewAddress, clean_prefix, generated_local_part, local_part,
    retention,
};
use crate::repository::{AddressRepository, AssignOutcome, CreateOutcome, OwnDomainDirectory};
use crate::reserved::ReservedNames;

/// Attempts at a random name that nobody holds or held.
const NAME_ATTEMPTS: usize = 5;

#[derive(Clone)]
pub struct Addresses {
    repo: Arc<dyn AddressRepository>,
    clock: Arc<dyn Clock>,
    domains: Vec<String>,
    own_domains: Option<Arc<dyn OwnDomainDirectory>>,
    reserved: ReservedNames,
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
            reserved: ReservedNames::default(),
        }
    }

    /// The names nobody creates on a shared domain (the role names and the
    /// operator's list).
    pub fn with_reserved_names(mut self, reserved: ReservedNames) -> Self {
        self.reserved = reserved;
        self
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
        decide_on_current_plan(plan, async |plan| {
            self.create_on_plan(account, plan, &input).await
        })
        .await
    }

    /// [`Addresses::create`] on `plan`; [`OnPlan::Changed`] when the store
    /// found the account on another plan under its lock.
    async fn create_on_plan(
        &self,
        account: &AccountId,
        plan: PlanId,
        input: &NewAddress,
    ) -> Result<OnPlan<Address>, AddressError> {
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
                device: None,
                retention_days,
                paused_at: None,
                meta: input.meta.clone(),
                public_key: input.public_key,
                key_epoch: 0,
                created_at: now,
            };
            let mut records = Records::new();
            records.address_created(account, &id, now);
            let on_own_domain = !self.domains.contains(&address.domain);
            match self
                .repo
                .create(
                    address.clone(),
                    plan,
                    on_own_domain,
                    limits.addresses,
                    records,
                )
                .await?
            {
                CreateOutcome::Created => return Ok(OnPlan::Done(address)),
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
                CreateOutcome::PlanChanged(current) => return Ok(OnPlan::Changed(current)),
                CreateOutcome::DomainGone => {
                    return Err(invalid(
                        field,
                        "this own domain is not live; see GET /domains/custom",
                    ));
                }
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

    /// A shared domain (where the reserved names are refused), or a live
    /// own domain of the account whose plan still includes own domains
    /// (else 403 `plan_required`).
    async fn on_served_domain(
        &self,
        account: &AccountId,
        plan: PlanId,
        name: Name,
        field: &'static str,
    ) -> Result<Name, AddressError> {
        let (Name::Exact { domain, .. } | Name::Generated { domain, .. }) = &name;
        if self.domains.contains(domain) {
            if let Name::Exact { local_part, .. } = &name
                && self.reserved.contains(local_part)
            {
                let field = if field == "domain" {
                    "localPart"
                } else {
                    field
                };
                return Err(invalid(
                    field,
                    "this name is reserved for the service's operator on shared domains",
                ));
            }
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
        device: Option<DeviceId>,
    ) -> Result<Vec<Address>, AddressError> {
        Ok(self.repo.addresses(account, device).await?)
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
        device: &DeviceId,
    ) -> Result<(), AddressError> {
        let max_per_device = sealpost_plans::plan(plan).is_free().then_some(1);
        for _ in 0..3 {
            let address = self.get(account, id).await?;
            if address.device.as_ref() == Some(device) {
                return Ok(());
            }
            let now = self.clock.now();
            let mut records = Records::new();
            if let Some(previous) = &address.device {
                records.address_removed(account, id, previous, now);
            }
            records.address_assigned(account, id, device, now);
            match self
                .repo
                .assign(account, id, device, address.device, max_per_device, records)
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
        device: &DeviceId,
    ) -> Result<(), AddressError> {
        let mut records = Records::new();
        records.address_removed(account, id, device, self.clock.now());
        if self.repo.unassign(account, id, device, records).await? {
            Ok(())
        } else {
            Err(AddressError::NotFound)
        }
    }
}
