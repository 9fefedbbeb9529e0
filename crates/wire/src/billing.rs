//! Billing with a payment provider (docs/api.md "Billing"):
//! the provider list, checkout and payments.
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `GET /billing/providers` | | [`ProviderList`] |
//! | `POST /billing/checkout` | [`CheckoutRequest`] | [`Checkout`] |
//! | `POST /billing/portal` | | [`BillingPortal`] |
//! | `GET /billing/payments` | | [`PaymentPage`] |
//! | `GET /billing/payments/{id}` | | [`PaymentReply`] |
//! | `POST /billing/notices/{provider}` | the provider's own | [`NoticeReceived`] |

use sealpost_kernel::{PaymentId, PlanId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::encoding::wire_enum;

wire_enum!(
    /// A payment provider.
    ProviderId {
        /// Cards, through Stripe Checkout.
        Stripe = "stripe",
        /// Crypto, through a BTCPay Server.
        Btcpay = "btcpay",
        /// The service's own test page (not in production).
        Sandbox = "sandbox",
    }
);

wire_enum!(
    /// Where a payment stands: `pending` (checkout started), then `paid`
    /// (final) or `failed`.
    PaymentStatus {
        Pending = "pending",
        Paid = "paid",
        Failed = "failed",
    }
);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Provider {
    /// `stripe`, `btcpay` or `sandbox`.
    pub id: ProviderId,
    /// `card`, `crypto` or `sandbox`.
    pub kind: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProviderList {
    pub providers: Vec<Provider>,
}

/// A payment, plus where to pay and when it settled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Payment {
    pub id: PaymentId,
    /// `pending`, `paid` or `failed`.
    pub status: PaymentStatus,
    pub plan_id: PlanId,
    pub provider: ProviderId,
    /// Minor units.
    pub amount: i64,
    pub currency: String,
    pub created_at: Timestamp,
    /// When it became paid or failed.
    pub settled_at: Option<Timestamp>,
    /// The provider's checkout page; empty for a renewal the card provider
    /// charged by itself.
    pub url: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CheckoutRequest {
    /// `operator`, `scale` or `fleet`.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::SoldPlan))]
    pub plan_id: String,
    /// One of `GET /billing/providers`.
    #[cfg_attr(feature = "openapi", schema(value_type = ProviderId))]
    pub provider: String,
}

impl CheckoutRequest {
    /// One 30-day period of `plan` through `provider`.
    #[must_use]
    pub fn new(plan: PlanId, provider: &str) -> Self {
        Self {
            plan_id: plan.as_str().to_owned(),
            provider: provider.to_owned(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Checkout {
    /// Where the payer goes.
    pub url: String,
    pub payment: Payment,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PaymentReply {
    pub payment: Payment,
}

/// `GET /billing/payments`: the account's payments, newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PaymentPage {
    pub payments: Vec<Payment>,
    /// The cursor of the next page; null on the last.
    pub next_cursor: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NoticeReceived {
    pub received: bool,
}

/// A session of the card provider's customer portal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BillingPortal {
    /// Where to send the payer; valid for a few minutes.
    pub url: String,
}
