//! From the outbox to the phone: which outbox entries become pushes, how
//! bursts are coalesced, the generic texts, and the retry schedule.
//!
//! The outbox is the events table the webhooks read, with a flag of its own
//! (so both consumers see every entry), plus the push-only notices
//! (`notice.*`: sign-ins, payments, webhooks switched off). A round:
//!
//! 1. [`PushRepository::collect`]: new outbox entries go through
//!    [`queue_rule`] (the kind, the account's preferences and mutes, whether
//!    it holds a push token); each one kept adds one to the account's open
//!    batch of that kind, due one window after the batch's first entry.
//! 2. [`PushRepository::release_due`]: due batches become one push per
//!    token of the account, carrying the batch's count.
//! 3. [`PushSender::send_due`]: pushes due now are leased, sent through
//!    [`PushTransport`], and their outcomes written back ([`after_attempt`]).
//!
//! Texts are generic: a kind and a count, never a sender, subject or address.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::TimeDelta;
use sealpost_activity::{EventType, Notice, NoticeKind};
use sealpost_kernel::{AccountId, AddressId, Clock, StoreError, Timestamp, WebhookId};
use sealpost_webhooks::WebhookAlerts;
use serde_json::Value;

use crate::kind::{Preferences, PushKind};
use crate::token::{Platform, PushToken};

/// New mail is gathered for a minute: a hundred mails in it are one push.
pub const NEW_MAIL_WINDOW: TimeDelta = TimeDelta::seconds(60);
/// Other kinds come alone or in small bursts (the hourly offline sweep, a
/// payment and the plan change it causes): a shorter wait is enough.
pub const OTHER_WINDOW: TimeDelta = TimeDelta::seconds(15);
/// How long a sender holds a claimed push; after a crash another takes it.
pub const LEASE: TimeDelta = TimeDelta::seconds(60);
/// Waits before the second, third, ... attempt after a provider's 5xx, 429
/// or no answer: five attempts in all.
pub const RETRY_SCHEDULE: [TimeDelta; 4] = [
    TimeDelta::seconds(30),
    TimeDelta::minutes(2),
    TimeDelta::minutes(10),
    TimeDelta::minutes(30),
];
/// A push not delivered within this is dropped: it would only be noise.
pub const GIVE_UP_AFTER: TimeDelta = TimeDelta::hours(1);

/// How long a batch of `kind` gathers before it is sent.
pub fn window(kind: PushKind) -> TimeDelta {
    match kind {
        PushKind::NewMail => NEW_MAIL_WINDOW,
        _ => OTHER_WINDOW,
    }
}

/// One outbox row as the store reads it.
#[derive(Clone, Copy, Debug)]
pub struct OutboxEntry<'a> {
    pub account: &'a AccountId,
    /// The row's type: an event type or a `notice.*` kind.
    pub kind: &'a str,
    pub payload: &'a Value,
    pub at: Timestamp,
}

/// What decides whether an account is pushed anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccountSettings {
    pub preferences: Preferences,
    pub muted: Vec<AddressId>,
    /// Whether the account holds any push token: without one, nothing is queued.
    pub has_tokens: bool,
}

/// An entry kept for push: it joins the account's batch of `kind`, which
/// is due at `due_at` when this entry opens it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    pub kind: PushKind,
    pub due_at: Timestamp,
}

/// Decides, per outbox entry, what joins which batch.
pub type QueueRule = dyn Fn(&OutboxEntry<'_>, &AccountSettings) -> Option<Queued> + Send + Sync;

/// Which push kind an outbox entry is, with the address new mail came to.
/// Entries no push is about (addresses created, devices removed, ...) are `None`.
///
/// Support replies and resolutions are the `notice.support_*` entries a
/// ticket change writes ([`PushKind::Support`]).
pub fn push_kind(kind: &str, payload: &Value) -> Option<(PushKind, Option<AddressId>)> {
    if let Ok(event) = kind.parse::<EventType>() {
        return match event {
            EventType::MessageReceived => {
                let address = payload["inboxId"]
                    .as_str()
                    .map(|id| AddressId::from_trusted(id.to_owned()));
                Some((PushKind::NewMail, address))
            }
            EventType::DevicePaired => Some((PushKind::DevicePaired, None)),
            EventType::DeviceDisconnected => Some((PushKind::DeviceOffline, None)),
            EventType::SubscriptionUpdated => Some((PushKind::Billing, None)),
            _ => None,
        };
    }
    match kind.parse::<NoticeKind>().ok()? {
        NoticeKind::SignedIn => Some((PushKind::NewSignIn, None)),
        NoticeKind::PaymentPaid | NoticeKind::PaymentFailed | NoticeKind::RenewalDue => {
            Some((PushKind::Billing, None))
        }
        NoticeKind::WebhookDisabled => Some((PushKind::WebhookFailures, None)),
        NoticeKind::SupportReplied | NoticeKind::SupportResolved => Some((PushKind::Support, None)),
    }
}

/// The rule: a push kind the account has on, not new mail of a muted
/// address, and only for accounts with a push token.
pub fn queue_rule(entry: &OutboxEntry<'_>, settings: &AccountSettings) -> Option<Queued> {
    let (kind, address) = push_kind(entry.kind, entry.payload)?;
    if !settings.has_tokens || !settings.preferences.allows(kind) {
        return None;
    }
    if address.is_some_and(|address| settings.muted.contains(&address)) {
        return None;
    }
    Some(Queued {
        kind,
        due_at: entry.at + window(kind),
    })
}

/// What a phone shows: generic words and a count, nothing from the mail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushMessage {
    pub kind: PushKind,
    /// How many entries the push stands for (coalesced bursts).
    pub count: u32,
    pub title: &'static str,
    pub body: String,
}

impl PushMessage {
    pub fn new(kind: PushKind, count: u32) -> PushMessage {
        let many = count > 1;
        let (title, body) = match kind {
            PushKind::NewMail if many => ("New mail", format!("You have {count} new messages.")),
            PushKind::NewMail => ("New mail", "You have a new message.".to_owned()),
            PushKind::DevicePaired if many => (
                "Devices paired",
                format!("{count} devices were paired with your account."),
            ),
            PushKind::DevicePaired => (
                "Device paired",
                "A device was paired with your account.".to_owned(),
            ),
            PushKind::DeviceOffline if many => (
                "Devices offline",
                format!("{count} devices have not been active for two hours."),
            ),
            PushKind::DeviceOffline => (
                "Device offline",
                "A device has not been active for two hours.".to_owned(),
            ),
            PushKind::NewSignIn if many => (
                "New sign-ins",
                format!("{count} new sign-ins to your account."),
            ),
            PushKind::NewSignIn => (
                "New sign-in",
                "Someone signed in to your account.".to_owned(),
            ),
            PushKind::Billing => (
                "Billing",
                "Your plan or a payment changed. Open the app for details.".to_owned(),
            ),
            PushKind::Support => ("Support", "Support has news about your request.".to_owned()),
            PushKind::WebhookFailures if many => (
                "Webhooks switched off",
                format!("{count} webhooks were switched off after three days of failures."),
            ),
            PushKind::WebhookFailures => (
                "Webhook switched off",
                "A webhook was switched off after three days of failures.".to_owned(),
            ),
        };
        PushMessage {
            kind,
            count,
            title,
            body,
        }
    }
}

/// A push leased for sending: one batch to one token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuePush {
    pub id: i64,
    pub token: PushToken,
    pub platform: Platform,
    pub kind: PushKind,
    pub count: u32,
    /// Attempts made before this one.
    pub attempts: u32,
    pub created_at: Timestamp,
}

/// How a provider answered one push.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PushOutcome {
    Delivered,
    /// Not sent and never will be: no provider configured for the platform,
    /// or the provider refused the request (4xx).
    Dropped {
        reason: String,
    },
    /// The provider says the token is dead (APNs 410 or a bad token, FCM
    /// `UNREGISTERED`): the token is removed.
    Unregistered,
    /// 5xx, 429 or no answer: try again, not before `after` when the
    /// provider said so.
    Retry {
        after: Option<TimeDelta>,
        reason: String,
    },
}

/// What happens to a push after an attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Delivered, dropped or given up: the push is deleted.
    Done,
    RetryAt(Timestamp),
    /// The token is deleted, and with it every push waiting for it.
    RemoveToken,
}

/// One attempt's result, to be written back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushResult {
    pub id: i64,
    pub token: PushToken,
    pub next: Next,
}

/// The retry rule: 5xx, 429 and silence are tried again on
/// [`RETRY_SCHEDULE`] (later when the provider asks for it), never past
/// five attempts or [`GIVE_UP_AFTER`]; 4xx never.
pub fn after_attempt(due: &DuePush, outcome: &PushOutcome, now: Timestamp) -> Next {
    match outcome {
        PushOutcome::Delivered | PushOutcome::Dropped { .. } => Next::Done,
        PushOutcome::Unregistered => Next::RemoveToken,
        PushOutcome::Retry { after, .. } => {
            let made = due.attempts as usize + 1;
            let Some(wait) = RETRY_SCHEDULE.get(made - 1) else {
                return Next::Done;
            };
            let at = now + (*wait).max(after.unwrap_or(TimeDelta::zero()));
            if at > due.created_at + GIVE_UP_AFTER {
                Next::Done
            } else {
                Next::RetryAt(at)
            }
        }
    }
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PushRepository: Send + Sync {
    /// Takes up to `limit` outbox rows not yet seen by push (oldest first,
    /// rows other senders hold are skipped), applies `rule` with each
    /// account's settings, adds one to the account's open batch of each
    /// queued kind (opening it with the rule's `due_at`), and marks the rows
    /// seen: one transaction. Returns how many rows.
    async fn collect(&self, limit: i64, rule: &QueueRule) -> Result<usize, StoreError>;
    /// Turns up to `limit` batches due at `now` into one push per token the
    /// account holds now (due at once), and deletes the batches: one
    /// transaction. Returns how many pushes.
    async fn release_due(&self, now: Timestamp, limit: i64) -> Result<usize, StoreError>;
    /// Leases up to `limit` pushes due at `now` until `lease_until`.
    async fn claim(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: i64,
    ) -> Result<Vec<DuePush>, StoreError>;
    /// Writes the results back (leases end), one transaction.
    async fn record(&self, results: &[PushResult]) -> Result<(), StoreError>;
    /// Adds a push notice to the outbox on its own (for changes whose
    /// transaction cannot carry it).
    async fn add_notice(&self, notice: Notice) -> Result<(), StoreError>;
}

/// Sends one push to APNs or FCM.
#[async_trait]
pub trait PushTransport: Send + Sync {
    async fn send(
        &self,
        platform: Platform,
        token: &PushToken,
        message: &PushMessage,
    ) -> PushOutcome;
}

/// What one round did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// Outbox rows read.
    pub collected: usize,
    /// Pushes made from due batches.
    pub released: usize,
    /// Pushes attempted.
    pub attempts: usize,
}

impl Round {
    pub fn is_idle(&self) -> bool {
        *self == Round::default()
    }
}

/// Outbox rows read per round.
const COLLECT_BATCH: i64 = 500;
/// Due batches released per round.
const RELEASE_BATCH: i64 = 500;

/// Reads the outbox and pushes. Safe in several processes at once: outbox
/// rows and batches are locked as they are taken, pushes leased.
pub struct PushSender {
    repo: Arc<dyn PushRepository>,
    transport: Arc<dyn PushTransport>,
    clock: Arc<dyn Clock>,
}

impl PushSender {
    pub fn new(
        repo: Arc<dyn PushRepository>,
        transport: Arc<dyn PushTransport>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            repo,
            transport,
            clock,
        }
    }

    /// Collects new outbox rows, releases due batches, then sends up to
    /// `limit` due pushes at once and records them.
    pub async fn run_round(&self, limit: i64) -> Result<Round, StoreError> {
        let collected = self.repo.collect(COLLECT_BATCH, &queue_rule).await?;
        let released = self
            .repo
            .release_due(self.clock.now(), RELEASE_BATCH)
            .await?;
        let attempts = self.send_due(limit).await?;
        Ok(Round {
            collected,
            released,
            attempts,
        })
    }

    /// Leases up to `limit` due pushes, sends them concurrently, and writes
    /// the outcomes in one transaction. Returns how many were attempted.
    pub async fn send_due(&self, limit: i64) -> Result<usize, StoreError> {
        let now = self.clock.now();
        let due = self.repo.claim(now, now + LEASE, limit).await?;
        if due.is_empty() {
            return Ok(0);
        }
        let results =
            futures_util::future::join_all(due.iter().map(|push| self.attempt(push))).await;
        self.repo.record(&results).await?;
        Ok(results.len())
    }

    async fn attempt(&self, due: &DuePush) -> PushResult {
        let message = PushMessage::new(due.kind, due.count);
        let outcome = self
            .transport
            .send(due.platform, &due.token, &message)
            .await;
        let next = after_attempt(due, &outcome, self.clock.now());
        let (platform, kind, count) = (due.platform.as_str(), due.kind.key(), due.count);
        match (&outcome, &next) {
            (PushOutcome::Delivered, _) => tracing::debug!(platform, kind, count, "push delivered"),
            (PushOutcome::Dropped { reason }, _) => {
                tracing::debug!(platform, kind, count, %reason, "push dropped");
            }
            (PushOutcome::Unregistered, _) => {
                tracing::info!(platform, "push token no longer registered; removed");
            }
            (PushOutcome::Retry { reason, .. }, Next::RetryAt(at)) => {
                tracing::info!(platform, kind, %reason, retry_at = %at, "push failed; will retry");
            }
            (PushOutcome::Retry { reason, .. }, _) => {
                tracing::warn!(platform, kind, %reason, "push failed; giving up");
            }
        }
        PushResult {
            id: due.id,
            token: due.token.clone(),
            next,
        }
    }
}

/// Webhook switch-offs reach the phones: a `notice.webhook_disabled` in
/// the outbox, pushed as `webhookFailures`.
pub struct PushAlerts {
    repo: Arc<dyn PushRepository>,
    clock: Arc<dyn Clock>,
}

impl PushAlerts {
    pub fn new(repo: Arc<dyn PushRepository>, clock: Arc<dyn Clock>) -> Self {
        Self { repo, clock }
    }
}

#[async_trait]
impl WebhookAlerts for PushAlerts {
    async fn webhook_disabled(&self, account: &AccountId, webhook: &WebhookId) {
        tracing::warn!(%account, %webhook, "webhook switched off after three days of failures");
        let notice = Notice::webhook_disabled(account, webhook, self.clock.now());
        if let Err(error) = self.repo.add_notice(notice).await {
            tracing::warn!(%account, %webhook, %error, "could not queue the switch-off push");
        }
    }
}

#[cfg(test)]
mod tests;
