//! Plans, usage, the subscription and billing (SPEC.md "Billing" and
//! "Usage"; CONTRACT.md sections 7 to 9), as the SDK sees them.

use reqwest::Method;
use sealpost_kernel::{PaymentId, PlanId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::{Client, Result};

/// A plan's limits (`GET /plans`); `None` means unlimited.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanLimits {
    pub addresses: u32,
    pub devices: Option<u32>,
    pub received_per_30_days: u64,
    pub sends_per_hour: u32,
    pub sends_per_day: u32,
    pub object_reads_per_hour: u32,
    pub own_domains: u32,
    pub webhooks: u32,
    pub team_members: u32,
    pub api_keys: bool,
    pub agents: bool,
}

/// One plan of `GET /plans`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanOffer {
    pub id: PlanId,
    pub name: String,
    /// USD cents per 30 days; `None` for Enterprise (by contract).
    pub price_cents: Option<u32>,
    pub currency: String,
    /// Whether checkout sells it.
    pub purchasable: bool,
    pub limits: PlanLimits,
}

#[derive(Deserialize)]
struct PlanList {
    plans: Vec<PlanOffer>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Money {
    pub amount: i64,
    pub currency: String,
}

/// What a missed payment paused.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pause {
    /// The plan to pay for; `None` once paid with something still paused.
    pub plan_id: Option<PlanId>,
    pub since: Timestamp,
    pub deletes_at: Timestamp,
    pub addresses: u64,
    pub devices: u64,
    pub api_keys: u64,
    pub domains: u64,
}

/// `GET /subscription`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subscription {
    pub plan_id: PlanId,
    pub plan_name: String,
    pub balance: Money,
    pub pause: Option<Pause>,
    /// When the paid period ends.
    pub renews_at: Option<Timestamp>,
}

#[derive(Deserialize)]
struct SubscriptionEnvelope {
    subscription: Subscription,
}

/// A counter in a fixed window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowUsage {
    pub used: u64,
    pub limit: u64,
    pub window_ends_at: Timestamp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddressUsage {
    pub used: u64,
    pub limit: u64,
    pub remaining: u64,
    pub assigned: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub struct SentUsage {
    pub hour: WindowUsage,
    pub day: WindowUsage,
}

/// A count against a limit; `limit: None` is unlimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub struct CountUsage {
    pub used: u64,
    pub limit: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub struct AllowedUsage {
    pub used: u64,
    pub allowed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub struct GatedUsage {
    pub used: u64,
    pub limit: Option<u64>,
    pub allowed: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct UsagePlan {
    pub id: PlanId,
    pub name: String,
}

/// `GET /usage`, field for field (SPEC.md "Usage").
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub plan: UsagePlan,
    pub addresses: AddressUsage,
    pub messages_received: WindowUsage,
    pub messages_sent: SentUsage,
    pub object_reads: WindowUsage,
    pub devices: CountUsage,
    pub paired: CountUsage,
    pub agents: AllowedUsage,
    pub api_keys: GatedUsage,
    pub webhooks: GatedUsage,
    pub domains: CountUsage,
    pub messages_stored: u64,
}

/// A payment provider of `GET /billing/providers`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Provider {
    /// `stripe`, `btcpay` or `sandbox`.
    pub id: String,
    /// `card`, `crypto` or `sandbox`.
    pub kind: String,
}

#[derive(Deserialize)]
struct ProviderList {
    providers: Vec<Provider>,
}

/// A payment (CONTRACT.md section 9), with where to pay.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Payment {
    pub id: PaymentId,
    /// `pending`, `paid` or `failed`.
    pub status: String,
    pub plan_id: PlanId,
    pub provider: String,
    pub amount: i64,
    pub currency: String,
    pub created_at: Timestamp,
    pub settled_at: Option<Timestamp>,
    pub url: String,
}

/// `POST /billing/checkout`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Checkout {
    /// Where the payer goes.
    pub url: String,
    pub payment: Payment,
}

#[derive(Deserialize)]
struct PaymentEnvelope {
    payment: Payment,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PlanRequest<'a> {
    plan_id: PlanId,
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<&'a str>,
}

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
        let envelope: SubscriptionEnvelope =
            self.json(self.authed(Method::GET, "/subscription")).await?;
        Ok(envelope.subscription)
    }

    /// `POST /subscription/plan`: moves to a plan priced the same or lower
    /// (409 `downgrade_blocked` when the account holds more than it allows;
    /// 402 `payment_required` for a dearer plan: use [`Client::checkout`]).
    pub async fn change_plan(&self, plan: PlanId) -> Result<Subscription> {
        let body = PlanRequest {
            plan_id: plan,
            provider: None,
        };
        let envelope: SubscriptionEnvelope = self
            .json(self.authed(Method::POST, "/subscription/plan").json(&body))
            .await?;
        Ok(envelope.subscription)
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
        let body = PlanRequest {
            plan_id: plan,
            provider: Some(provider),
        };
        self.json(self.authed(Method::POST, "/billing/checkout").json(&body))
            .await
    }

    /// `GET /billing/payments/{id}`.
    pub async fn payment(&self, id: &PaymentId) -> Result<Payment> {
        let path = format!("/billing/payments/{id}");
        let envelope: PaymentEnvelope = self.json(self.authed(Method::GET, &path)).await?;
        Ok(envelope.payment)
    }
}
