//! Webhook endpoints (docs/api.md "Webhooks"): create, list, change,
//! rotate, test and redeliver, and the delivery log's retention.

use std::sync::Arc;

use chrono::TimeDelta;
use sealpost_kernel::{
    AccountId, Clock, Cursor, DeliveryId, Page, PageRequest, PlanId, StoreError, WebhookId,
};
use sealpost_plans::{OnPlan, decide_on_current_plan, plan};
use sealpost_seal::{SealedBox, ServerKeys};

use crate::delivery::{Delivery, DeliveryStatus, WebhookEvent};
use crate::endpoint::{
    EndpointError, EndpointHealth, EndpointStatus, HourlyAllowance, MANUAL_SENDS_PER_HOUR,
    MAX_ENDPOINTS_PER_ACCOUNT, StoredSecret, check_can_create, check_can_send, check_plan,
    generate_secret,
};
use crate::error::WebhookError;
use crate::events::EventFilter;
use crate::repository::{CreateOutcome, Endpoint, EndpointChange, WebhookRepository};
use crate::url::WebhookUrl;

/// The delivery log is kept 30 days (docs/api.md "Limits").
pub const DELIVERY_LOG_RETENTION: TimeDelta = TimeDelta::days(30);

/// What `PATCH /webhook-endpoints/:id` may change.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EndpointPatch {
    pub url: Option<WebhookUrl>,
    pub events: Option<EventFilter>,
    pub meta: Option<SealedBox>,
    pub active: Option<bool>,
}

/// An endpoint and its signing secret in the clear, as creation and
/// rotation answer it (the only times it is shown).
#[derive(Clone, Debug, PartialEq)]
pub struct WithSecret {
    pub endpoint: Endpoint,
    pub secret: String,
}

#[derive(Clone)]
pub struct Webhooks {
    repo: Arc<dyn WebhookRepository>,
    clock: Arc<dyn Clock>,
    keys: Arc<ServerKeys>,
}

impl Webhooks {
    /// `keys` seal the signing secrets the store keeps.
    pub fn new(repo: Arc<dyn WebhookRepository>, clock: Arc<dyn Clock>, keys: ServerKeys) -> Self {
        Self {
            repo,
            clock,
            keys: Arc::new(keys),
        }
    }

    /// Seals every secret still stored in the clear (rows from before
    /// secrets were sealed), in the old form bound to no endpoint, or under
    /// an older server key, under the current one, bound to its endpoint. Run at start-up; returns (sealed, unreadable): an unreadable one
    /// was sealed under a key no longer configured and needs rotating.
    pub async fn seal_secrets(&self) -> Result<(u64, u64), StoreError> {
        const PAGE: i64 = 500;
        let current = self.keys.current_id();
        let (mut sealed, mut unreadable) = (0, 0);
        let mut after = None;
        loop {
            let rows = self
                .repo
                .secrets_to_seal(&current, after.clone(), PAGE)
                .await?;
            let last = rows.len() < usize::try_from(PAGE).unwrap_or(usize::MAX);
            for (id, old) in rows {
                after = Some(id.clone());
                let Ok(secret) = old.open_for_reseal(&self.keys, &id) else {
                    unreadable += 1;
                    continue;
                };
                let new = StoredSecret::seal(&self.keys, &id, &secret);
                if self.repo.replace_secret(&id, old, new).await? {
                    sealed += 1;
                }
            }
            if last {
                return Ok((sealed, unreadable));
            }
        }
    }

    pub async fn list(&self, account: &AccountId) -> Result<Vec<Endpoint>, WebhookError> {
        Ok(self.repo.endpoints(account).await?)
    }

    pub async fn get(&self, account: &AccountId, id: &WebhookId) -> Result<Endpoint, WebhookError> {
        self.repo
            .endpoint(account, id)
            .await?
            .ok_or(WebhookError::NotFound)
    }

    /// Creates an endpoint; its secret is returned beside it (shown once).
    pub async fn create(
        &self,
        account: &AccountId,
        plan_id: PlanId,
        id: WebhookId,
        url: WebhookUrl,
        events: EventFilter,
        meta: Option<SealedBox>,
    ) -> Result<WithSecret, WebhookError> {
        let now = self.clock.now();
        let secret = generate_secret();
        let endpoint = Endpoint {
            secret: StoredSecret::seal(&self.keys, &id, &secret),
            id,
            account: account.clone(),
            url: url.as_str().to_owned(),
            events,
            meta,
            status: EndpointStatus::Active,
            active_since: now,
            health: EndpointHealth::default(),
            created_at: now,
        };
        decide_on_current_plan(plan_id, async |plan_id| {
            check_can_create(plan(plan_id), 0)?;
            match self
                .repo
                .create_endpoint(endpoint.clone(), plan_id, MAX_ENDPOINTS_PER_ACCOUNT)
                .await?
            {
                CreateOutcome::Created => Ok(OnPlan::Done(WithSecret {
                    endpoint: endpoint.clone(),
                    secret: secret.clone(),
                })),
                CreateOutcome::IdTaken => Err(WebhookError::IdTaken),
                CreateOutcome::LimitReached => Err(EndpointError::LimitReached {
                    limit: MAX_ENDPOINTS_PER_ACCOUNT,
                }
                .into()),
                // A downgrade to a plan without webhooks, say: decided again.
                CreateOutcome::PlanChanged(current) => Ok(OnPlan::Changed(current)),
            }
        })
        .await
    }

    pub async fn update(
        &self,
        account: &AccountId,
        id: &WebhookId,
        patch: EndpointPatch,
    ) -> Result<Endpoint, WebhookError> {
        let endpoint = self.get(account, id).await?;
        let status = patch.active.map(|active| {
            let was_active = endpoint.status.is_active();
            let (status, health) = EndpointStatus::patch(active, endpoint.health);
            let since = (active && !was_active).then(|| self.clock.now());
            (status, health, since)
        });
        let change = EndpointChange {
            url: patch.url.map(|url| url.as_str().to_owned()),
            events: patch.events,
            meta: patch.meta,
            status,
        };
        self.repo
            .update_endpoint(account, id, change)
            .await?
            .ok_or(WebhookError::NotFound)
    }

    pub async fn delete(&self, account: &AccountId, id: &WebhookId) -> Result<(), WebhookError> {
        if self
            .repo
            .delete_endpoint(account, id, self.clock.now())
            .await?
        {
            Ok(())
        } else {
            Err(WebhookError::NotFound)
        }
    }

    /// A new secret; the old one stops at once.
    pub async fn rotate_secret(
        &self,
        account: &AccountId,
        id: &WebhookId,
    ) -> Result<WithSecret, WebhookError> {
        let mut endpoint = self.get(account, id).await?;
        let secret = generate_secret();
        endpoint.secret = StoredSecret::seal(&self.keys, id, &secret);
        // Only the secret is written: a concurrent change to anything else
        // (the sender switching the endpoint off) stands.
        if !self
            .repo
            .set_secret(account, id, endpoint.secret.clone())
            .await?
        {
            return Err(WebhookError::NotFound);
        }
        Ok(WithSecret { endpoint, secret })
    }

    fn check_manual_send(plan_id: PlanId, endpoint: &Endpoint) -> Result<(), WebhookError> {
        check_plan(plan(plan_id))?;
        check_can_send(&endpoint.status)?;
        Ok(())
    }

    /// Inserts a test or redelivery if the hour's allowance has room
    /// (counted and inserted atomically by the store).
    async fn insert_manual(
        &self,
        account: &AccountId,
        delivery: &Delivery,
    ) -> Result<(), WebhookError> {
        let allowance = HourlyAllowance::at(self.clock.now());
        let used = self
            .repo
            .insert_manual_delivery(
                account,
                delivery.clone(),
                allowance.window_start(),
                MANUAL_SENDS_PER_HOUR,
            )
            .await?;
        allowance.check_manual_send(used)?;
        Ok(())
    }

    /// `POST .../test`: a `webhook.test` event, delivered like any other.
    pub async fn send_test(
        &self,
        account: &AccountId,
        plan_id: PlanId,
        id: &WebhookId,
    ) -> Result<Delivery, WebhookError> {
        let endpoint = self.get(account, id).await?;
        Self::check_manual_send(plan_id, &endpoint)?;
        let now = self.clock.now();
        let delivery = Delivery::new(
            endpoint.id.clone(),
            &WebhookEvent::test(&endpoint.id, now),
            now,
        );
        self.insert_manual(account, &delivery).await?;
        Ok(delivery)
    }

    /// `POST .../deliveries/:id/redeliver`: new delivery id, same event.
    pub async fn redeliver(
        &self,
        account: &AccountId,
        plan_id: PlanId,
        id: &WebhookId,
        delivery_id: &DeliveryId,
    ) -> Result<Delivery, WebhookError> {
        let endpoint = self.get(account, id).await?;
        let original = self
            .repo
            .delivery(account, id, delivery_id)
            .await?
            .ok_or(WebhookError::NotFound)?;
        Self::check_manual_send(plan_id, &endpoint)?;
        let delivery = original.redeliver(self.clock.now());
        self.insert_manual(account, &delivery).await?;
        Ok(delivery)
    }

    pub async fn deliveries(
        &self,
        account: &AccountId,
        id: &WebhookId,
        status: Option<DeliveryStatus>,
        request: &PageRequest,
    ) -> Result<Page<Delivery>, WebhookError> {
        self.get(account, id).await?;
        let rows = self.repo.deliveries(account, id, status, request).await?;
        Ok(Page::from_rows(rows, request, |delivery| Cursor {
            at: delivery.created_at,
            id: delivery.id.to_string(),
        }))
    }

    /// The delivery log's retention sweep: drops records older than 30 days.
    pub async fn sweep(&self) -> Result<u64, StoreError> {
        self.repo
            .delete_deliveries_before(self.clock.now() - DELIVERY_LOG_RETENTION)
            .await
    }
}
