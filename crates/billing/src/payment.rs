//! Payments and their states (docs/api.md "Billing"): `pending` (checkout
//! started) -> `paid` | `failed`. `paid` is final, so a provider's notice that
//! arrives twice changes the plan once; a late `paid` after `failed` (a crypto
//! payment confirmed after its invoice expired) is honoured.

use sealpost_kernel::{AccountId, PaymentId, PlanId, Timestamp, string_enum};

use crate::{NoticeOutcome, ProviderId};

string_enum! {
    pub enum PaymentStatus: "payment status" {
        Pending => "pending",
        Paid => "paid",
        Failed => "failed",
    }
}

impl PaymentStatus {
    /// The state a notice moves a payment to, or `None` when it changes nothing.
    pub fn after(self, outcome: NoticeOutcome) -> Option<PaymentStatus> {
        match (self, outcome) {
            (_, NoticeOutcome::Ignored | NoticeOutcome::Renewing(_)) | (PaymentStatus::Paid, _) => {
                None
            }
            (
                PaymentStatus::Pending | PaymentStatus::Failed,
                NoticeOutcome::Paid | NoticeOutcome::Renewed { .. },
            ) => Some(PaymentStatus::Paid),
            (PaymentStatus::Pending, NoticeOutcome::Failed) => Some(PaymentStatus::Failed),
            (PaymentStatus::Failed, NoticeOutcome::Failed) => None,
        }
    }
}

/// One checkout and what became of it: one 30-day period of `plan`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Payment {
    pub id: PaymentId,
    pub account: AccountId,
    pub plan: PlanId,
    pub provider: ProviderId,
    /// Minor units (USD cents).
    pub amount: i64,
    pub currency: String,
    pub status: PaymentStatus,
    /// The provider's id for the checkout (its notices name it).
    pub reference: String,
    /// Where the payer pays.
    pub checkout_url: String,
    pub created_at: Timestamp,
    /// When it became paid or failed.
    pub settled_at: Option<Timestamp>,
}
