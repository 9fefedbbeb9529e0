use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use sealpost_accounts::Accounts;
use sealpost_activity::ActivityLog;
use sealpost_addresses::Addresses;
use sealpost_billing::Billing;
use sealpost_devices::Devices;
use sealpost_kernel::{Clock, StoreError};
use sealpost_messages::ingest::Ingest;
use sealpost_messages::mailbox::Mailbox;
use sealpost_messages::send::Outbox;
use sealpost_notifications::Notifications;
use sealpost_subscriptions::Subscriptions;
use sealpost_webhooks::Webhooks;

use crate::rate_limit::EdgeLimiter;

/// What `/readyz` asks: can the service reach its database right now?
pub trait HealthProbe: Send + Sync {
    fn ping(&self) -> Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + '_>>;
}

/// Everything handlers share, built once by the binary.
pub struct AppState {
    pub accounts: Accounts,
    pub devices: Devices,
    pub addresses: Addresses,
    pub activity: ActivityLog,
    /// `GET /events/stream`: the events it reads, the accounts with new
    /// ones (PostgreSQL NOTIFY, fanned out), and the streams open per
    /// account in this process.
    pub events: sealpost_activity::EventFeed,
    pub new_events: tokio::sync::broadcast::Sender<String>,
    pub event_streams: Arc<crate::routes::events::StreamSlots>,
    pub mailbox: Mailbox,
    /// `POST /messages`: the same sealing path SMTP takes.
    pub ingest: Ingest,
    /// `POST /messages/send`.
    pub outbox: Outbox,
    pub webhooks: Webhooks,
    /// Usage, overview, subscription and plan changes.
    pub subscriptions: Subscriptions,
    /// Providers, checkout, payments, notices.
    pub billing: Billing,
    /// Push preferences, address mutes and push tokens.
    pub notifications: Notifications,
    /// Team members, grants and memberships.
    pub teams: sealpost_teams::Teams,
    /// Own domains.
    pub domains: sealpost_domains::Domains,
    /// The service's own domains and the API's public host: webhook URLs
    /// may not point at them.
    pub service_domains: Vec<String>,
    /// Whose forwarding headers name the client (`SEALPOST_TRUSTED_PROXIES`).
    pub trusted_proxies: crate::client_ip::TrustedProxies,
    /// Address ids with newly committed mail (PostgreSQL NOTIFY, fanned out).
    pub new_mail: tokio::sync::broadcast::Sender<String>,
    pub health: Arc<dyn HealthProbe>,
    pub limiter: Arc<EdgeLimiter>,
    pub clock: Arc<dyn Clock>,
    /// The support team's public key, shown on `GET /accounts/me`.
    pub support_key: Option<String>,
    /// In-app support: tickets, the support key, the staff side.
    pub support: sealpost_support::Support,
    /// Staff tokens, the audit log, abuse reports, suspensions, switches.
    pub staff: sealpost_support::Staff,
    /// The tight per-IP limit of `POST /abuse/reports`.
    pub abuse_limiter: Arc<crate::rate_limit::AbuseLimiter>,
}
