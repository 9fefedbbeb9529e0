//! Payment providers (docs/api.md "Billing") behind one trait. The card
//! (`stripe`) and crypto (`btcpay`) adapters live in
//! `sealpost-billing-providers`; the `sandbox` provider is here because it does
//! no I/O: its checkout page is the service's own, and its form post is read
//! into the same [`Notice`] a real provider's signed notice becomes.

use async_trait::async_trait;
use sealpost_kernel::{AccountId, PaymentId, PlanId, Timestamp, string_enum};

string_enum! {
    #[derive(PartialOrd, Ord)]
    pub enum ProviderId: "payment provider" {
        Stripe => "stripe",
        Btcpay => "btcpay",
        Sandbox => "sandbox",
    }
}

impl ProviderId {
    /// What the API calls the provider's kind: `card`, `crypto`, or `sandbox`.
    pub fn kind(self) -> &'static str {
        match self {
            ProviderId::Stripe => "card",
            ProviderId::Btcpay => "crypto",
            ProviderId::Sandbox => "sandbox",
        }
    }

    /// Whether its checkout starts a subscription that renews by itself
    /// (the card provider's); a crypto or sandbox payment buys one period.
    pub fn renews(self) -> bool {
        self == ProviderId::Stripe
    }
}

/// What a provider is asked to charge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckoutRequest {
    /// Our payment id; providers carry it back (Stripe `client_reference_id`,
    /// BTCPay `metadata.orderId`) and use it as the idempotency key.
    pub payment: PaymentId,
    pub account: AccountId,
    pub plan: PlanId,
    /// Minor units (USD cents).
    pub amount: i64,
    /// ISO 4217, upper case (`USD`).
    pub currency: &'static str,
    /// A line a person sees on the provider's page, e.g. "Sealpost Scale, 30 days".
    pub description: String,
}

/// Where the payer goes, and the provider's own id for the checkout
/// (Stripe Checkout Session id, BTCPay invoice id), which its notices name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckoutSession {
    pub url: String,
    pub reference: String,
}

/// What a verified notice says happened to a checkout, or to the renewing
/// subscription a card checkout started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoticeOutcome {
    Paid,
    Failed,
    /// A notice about something we do not act on (another event type, a
    /// payment still processing): acknowledged, nothing changes.
    Ignored,
    /// The subscription billed and was paid for another period (Stripe
    /// `invoice.paid` of a renewal): `reference` is the invoice id, which
    /// makes a redelivered notice change nothing.
    Renewed {
        /// Minor units paid (USD cents).
        amount: i64,
    },
    /// Whether the subscription still renews: turned off or on at the
    /// provider (its customer portal), a renewal charge failed (`false`),
    /// or the subscription ended there (`false`).
    Renewing(bool),
}

/// A renewing subscription at the card provider, as its notices name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CardSubscription {
    /// Stripe `sub_...`.
    pub id: String,
    /// Stripe `cus_...`: whose billing portal it is.
    pub customer: String,
}

/// A provider's notice, its signature verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// The provider's id for the checkout (see [`CheckoutSession::reference`]),
    /// the renewal's invoice id for [`NoticeOutcome::Renewed`], the
    /// subscription id for [`NoticeOutcome::Renewing`]; empty for ignored
    /// notices that name none.
    pub reference: String,
    pub outcome: NoticeOutcome,
    /// The subscription a paid checkout started (it renews from then on),
    /// or the one a renewal notice is about.
    pub subscription: Option<CardSubscription>,
}

impl Notice {
    /// A notice about a checkout (no subscription).
    pub fn checkout(reference: impl Into<String>, outcome: NoticeOutcome) -> Notice {
        Notice {
            reference: reference.into(),
            outcome,
            subscription: None,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProviderError {
    /// The provider could not be reached or answered 5xx: try again later.
    #[error("the payment provider is unreachable: {0}")]
    Unreachable(String),
    /// The provider refused the request (4xx) or answered something we cannot read.
    #[error("the payment provider refused the checkout: {0}")]
    Refused(String),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NoticeError {
    /// No signature header, or one that is not of the provider's form.
    #[error("the notice signature is missing or malformed: {0}")]
    MalformedSignature(String),
    /// The signature does not match the body under the configured secret.
    #[error("the notice signature does not match")]
    BadSignature,
    /// Genuine but signed too long ago (replay protection, where the scheme has a timestamp).
    #[error("the notice signature is too old")]
    Expired,
    /// Signed correctly but not JSON of the provider's shape.
    #[error("the notice body cannot be read: {0}")]
    MalformedBody(String),
}

/// A payment provider: starts checkouts and reads its own signed notices.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PaymentProvider: Send + Sync {
    fn id(&self) -> ProviderId;

    /// Creates the provider's checkout for `request`.
    async fn start_checkout(
        &self,
        request: &CheckoutRequest,
    ) -> Result<CheckoutSession, ProviderError>;

    /// The request header that carries the notice signature
    /// (`Stripe-Signature`, `BTCPay-Sig`).
    fn signature_header(&self) -> &'static str;

    /// Verifies `signature` over the raw `body` and reads the notice. `now`
    /// bounds the age of schemes that sign a timestamp.
    fn read_notice(
        &self,
        signature: &str,
        body: &[u8],
        now: Timestamp,
    ) -> Result<Notice, NoticeError>;

    /// A session of the provider's customer portal for `customer` (where
    /// its renewal is turned off or on, and its card and invoices kept):
    /// the url to send the payer to. Providers without one refuse.
    async fn portal(&self, _customer: &str) -> Result<String, ProviderError> {
        Err(ProviderError::Refused(
            "this provider has no customer portal".into(),
        ))
    }

    /// Turns the renewal of `subscription` off (`false`: it ends at the end
    /// of the period paid for) or back on. The provider's own notice of
    /// the change follows; providers without subscriptions refuse.
    async fn set_renewal(&self, _subscription: &str, _renewing: bool) -> Result<(), ProviderError> {
        Err(ProviderError::Refused(
            "this provider has no renewing subscriptions".into(),
        ))
    }

    /// Charges `subscription` `amount` (minor units of `currency`) each
    /// period from its next period on, nothing prorated: the plan a move
    /// down scheduled while it renews is renewed at. Providers without
    /// subscriptions refuse.
    async fn set_price(
        &self,
        _subscription: &str,
        _amount: i64,
        _currency: &str,
    ) -> Result<(), ProviderError> {
        Err(ProviderError::Refused(
            "this provider has no renewing subscriptions".into(),
        ))
    }
}

/// The development provider (docs/api.md "Billing"). Its checkout url is a page
/// of the service (`<public url>/billing/sandbox/<payment id>`); the form there
/// posts `outcome=paid|failed`, which the HTTP layer turns into a [`Notice`]
/// with [`SandboxProvider::notice`] and settles like any other.
pub struct SandboxProvider {
    public_url: String,
}

impl SandboxProvider {
    pub fn new(public_url: &str) -> Self {
        Self {
            public_url: public_url.trim_end_matches('/').to_owned(),
        }
    }

    /// The sandbox's reference for a checkout is our payment id.
    pub fn notice(payment: &PaymentId, outcome: NoticeOutcome) -> Notice {
        Notice::checkout(payment.as_str(), outcome)
    }
}

#[async_trait]
impl PaymentProvider for SandboxProvider {
    fn id(&self) -> ProviderId {
        ProviderId::Sandbox
    }

    async fn start_checkout(
        &self,
        request: &CheckoutRequest,
    ) -> Result<CheckoutSession, ProviderError> {
        Ok(CheckoutSession {
            url: format!("{}/billing/sandbox/{}", self.public_url, request.payment),
            reference: request.payment.as_str().to_owned(),
        })
    }

    fn signature_header(&self) -> &'static str {
        // The sandbox form is not signed; its page is served only when the
        // sandbox is switched on by configuration.
        ""
    }

    fn read_notice(
        &self,
        _signature: &str,
        _body: &[u8],
        _now: Timestamp,
    ) -> Result<Notice, NoticeError> {
        Err(NoticeError::MalformedSignature(
            "the sandbox settles through its own form, not signed notices".into(),
        ))
    }
}
