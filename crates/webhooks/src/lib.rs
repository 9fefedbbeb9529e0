//! Webhooks (docs/webhooks.md; docs/api.md "Webhooks", "Events" and
//! "Limits"): the rules, as pure functions and types.
//!
//! - [`url`]: which URLs may be registered (400 `invalid_url`).
//! - [`events`]: the event types and the endpoint's event filter.
//! - [`endpoint`]: per-plan and per-account limits, endpoint status and
//!   failure record, secrets, the hourly allowance of tests and redeliveries.
//! - [`delivery`]: the delivery state machine (retry schedule, auto-disable,
//!   the plan rule, redelivery) and the body and headers a delivery sends.
//! - [`Webhooks`] (endpoints: create, change, rotate, test, redeliver) and
//!   [`Sender`] (fan-out and attempts), given the traits of the repository
//!   module: [`WebhookRepository`], [`WebhookTransport`], [`WebhookAlerts`].
//! - [`signature`]: the `Service-Signature` scheme (`sealpost-signature`,
//!   re-exported), signing and verifying.
//!
//! No I/O: no sockets, no database, no system time. Every rule that needs the
//! time takes `now` or a clock; the store, the HTTPS transport and the HTTP
//! handlers that apply these decisions live in adapter crates.

pub mod delivery;
pub mod endpoint;
mod error;
pub mod events;
mod repository;
mod sender;
mod service;
pub mod url;

pub use sealpost_signature as signature;

pub use delivery::{
    AttemptDecision, AttemptOutcome, Delivery, DeliveryState, DeliveryStatus, PlanEffect,
    RETRY_SCHEDULE, WebhookEvent, after_attempt, on_plan_change,
};
pub use endpoint::{
    DisabledReason, EndpointError, EndpointHealth, EndpointStatus, HourlyAllowance,
    MAX_ENDPOINTS_PER_ACCOUNT, SECRET_PURPOSE, StoredSecret, check_can_create, generate_secret,
};
pub use error::WebhookError;
pub use events::{EventFilter, EventFilterError, EventType};
#[cfg(any(test, feature = "mock"))]
pub use repository::MockWebhookRepository;
pub use repository::{
    AttemptRecord, CreateOutcome, DueDelivery, Endpoint, EndpointChange, FanOutRule, WebhookAlerts,
    WebhookRepository, WebhookTransport,
};
pub use sealpost_signature::{SignatureError, sign, verify};
pub use sender::{LEASE, SECRET_UNREADABLE_ERROR, Sender, fan_out_rule};
pub use service::{DELIVERY_LOG_RETENTION, EndpointPatch, Webhooks, WithSecret};
pub use url::{UrlError, WebhookUrl, validate_url};

#[cfg(test)]
mod tests;
