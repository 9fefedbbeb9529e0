//! Plans, usage, the subscription and billing (docs/api.md "Plans and usage"
//! and "Billing"), as the SDK sees them.

use reqwest::Method;
use sealpost_kernel::{PaymentId, PlanId};
pub use sealpost_wire::{
    AddressUsage, AllowedUsage, Checkout, CountUsage, GatedUsage, Money, Pause, Payment,
    PaymentPage, PaymentStatus, PlanLimits, PlanOffer, PlanRef, Provider, ProviderId, SentUsage,
    Subscription, Usage, WindowUsage,
};
use sealpost_wire::{
    BillingPortal, ChangePlanRequest, CheckoutRequest, PaymentReply, PlanList, ProviderList,
    SubscriptionReply,
};

use crate::types::PageParams;
use crate::{Client, Result};

impl Client {
    /// `GET /plans`: every plan with its price and limits.
    pub async fn plans(&self) -> Result<Vec<PlanOffer>> {
        let list: PlanList = self.json(self.public(Method::GET, "/plans")).await?;
        Ok(list.plans)
    }

    /// `GET /usage`. Reading it spends nothing.
    pub async fn usage(&self) -> Result<Usage> {
        self.json(self.authed(Method::GET, "/usage")).await
    }

    /// `GET /subscription`.
    pub async fn subscription(&self) -> Result<Subscription> {
        let reply: SubscriptionReply = self.json(self.authed(Method::GET, "/subscription")).await?;
        Ok(reply.subscription)
    }

    /// `POST /subscription/plan`: moves to a plan priced the same or lower
    /// (409 `downgrade_blocked` when the account holds more than it allows;
    /// 402 `payment_required` for a dearer plan: use [`Client::checkout`]).
    pub async fn change_plan(&self, plan: PlanId) -> Result<Subscription> {
        let body = ChangePlanRequest::new(plan);
        let reply: SubscriptionReply = self
            .json(self.authed(Method::POST, "/subscription/plan").json(&body))
            .await?;
        Ok(reply.subscription)
    }

    /// `GET /billing/providers`: the payment providers this deployment takes.
    pub async fn billing_providers(&self) -> Result<Vec<Provider>> {
        let list: ProviderList = self
            .json(self.public(Method::GET, "/billing/providers"))
            .await?;
        Ok(list.providers)
    }

    /// `POST /billing/checkout`: one 30-day period of `plan` through `provider`.
    pub async fn checkout(&self, plan: PlanId, provider: &str) -> Result<Checkout> {
        let body = CheckoutRequest::new(plan, provider);
        self.json(self.authed(Method::POST, "/billing/checkout").json(&body))
            .await
    }

    /// `POST /billing/portal`: a session of the card provider's customer
    /// portal (turn renewal off or on, the card, invoices); the url to open,
    /// valid for a few minutes. 404 `not_found` for an account that never
    /// paid by card.
    pub async fn billing_portal(&self) -> Result<String> {
        let portal: BillingPortal = self
            .json(self.authed(Method::POST, "/billing/portal"))
            .await?;
        Ok(portal.url)
    }

    /// `GET /billing/payments`: one page of the account's payments, newest
    /// first (checkouts in any state and card renewals).
    pub async fn payments(&self, page: &PageParams) -> Result<PaymentPage> {
        let path = format!("/billing/payments{}", page.query());
        self.json(self.authed(Method::GET, &path)).await
    }

    /// `GET /billing/payments/{id}`.
    pub async fn payment(&self, id: &PaymentId) -> Result<Payment> {
        let path = format!("/billing/payments/{id}");
        let reply: PaymentReply = self.json(self.authed(Method::GET, &path)).await?;
        Ok(reply.payment)
    }
}
