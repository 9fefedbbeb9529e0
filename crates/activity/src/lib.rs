//! Activity entries and outbox events.
//!
//! Every state change a domain decides comes with the activity entries and
//! events it causes, collected in a [`Records`] value that the store writes
//! in the same transaction as the change. The webhook sender and push read
//! the event outbox later, so they neither miss nor invent an event.
//! Entries and events carry ids and timestamps only: never content, senders
//! or subjects.

use chrono::TimeDelta;
use sealpost_kernel::{
    AccountId, ActivityId, AddressId, DeviceId, EventId, MessageId, PaymentId, PlanId, SessionId,
    Timestamp, WebhookId, string_enum, string_enum_serde,
};
use serde_json::{Value, json};

mod repository;
mod service;
mod stream;

pub use repository::*;
pub use service::*;
pub use stream::*;

/// Activity retention (docs/api.md "Limits").
pub const ACTIVITY_RETENTION: TimeDelta = TimeDelta::days(90);

string_enum! {
    /// Activity entry kinds (docs/api.md "Activity").
    #[derive(PartialOrd, Ord)]
    pub enum ActivityKind: "activity kind" {
        DevicePaired => "worker.paired",
        DeviceRemoved => "worker.removed",
        AddressCreated => "inbox.created",
        AddressDeleted => "inbox.deleted",
        AddressAssigned => "inbox.assigned",
        AddressRemoved => "inbox.removed",
        SubscriptionUpdated => "subscription.updated",
        /// A paid period that cannot renew ends in 7 days, then in 1 day.
        RenewalDue => "subscription.renewal_due",
        MessageReceived => "message.received",
        MailReceived => "mail.received",
        MailSent => "mail.sent",
        // Own domains (docs/domains.md): a claim added, ownership proved,
        // live, needing attention, removed. Not in the event outbox.
        DomainAdded => "domain.added",
        DomainVerified => "domain.verified",
        DomainLive => "domain.live",
        DomainAttention => "domain.attention",
        DomainRemoved => "domain.removed",
    }
}
string_enum_serde!(ActivityKind);

string_enum! {
    /// Event types (docs/api.md "Events").
    #[derive(PartialOrd, Ord)]
    pub enum EventType: "event type" {
        DevicePaired => "worker.paired",
        DeviceConnected => "worker.connected",
        DeviceDisconnected => "worker.disconnected",
        DeviceRemoved => "worker.removed",
        AddressCreated => "inbox.created",
        AddressDeleted => "inbox.deleted",
        AddressAssigned => "inbox.assigned",
        AddressRemoved => "inbox.removed",
        MessageReceived => "message.received",
        MessageSent => "message.sent",
        SubscriptionUpdated => "subscription.updated",
        WebhookTest => "webhook.test",
    }
}
string_enum_serde!(EventType);

string_enum! {
    /// Outbox entries for push notifications only: changes the API's event list
    /// (docs/api.md "Events") does not name. They are written to the outbox
    /// already marked fanned out, so webhooks never see them.
    pub enum NoticeKind: "notice kind" {
        SignedIn => "notice.signed_in",
        PaymentPaid => "notice.payment_paid",
        PaymentFailed => "notice.payment_failed",
        WebhookDisabled => "notice.webhook_disabled",
        SupportReplied => "notice.support_replied",
        SupportResolved => "notice.support_resolved",
        RenewalDue => "notice.renewal_due",
    }
}

impl EventType {
    /// The one type sent only on request (`POST .../test`), never by fan-out.
    pub fn is_test(self) -> bool {
        self == EventType::WebhookTest
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActivityEntry {
    pub id: ActivityId,
    pub account: AccountId,
    pub kind: ActivityKind,
    pub address: Option<AddressId>,
    pub device: Option<DeviceId>,
    pub at: Timestamp,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub id: EventId,
    pub account: AccountId,
    pub kind: EventType,
    /// Ids only (docs/api.md "Events").
    pub payload: Value,
    pub at: Timestamp,
}

/// A push-only outbox entry ([`NoticeKind`]); ids only, like events.
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    pub id: EventId,
    pub account: AccountId,
    pub kind: NoticeKind,
    pub payload: Value,
    pub at: Timestamp,
}

impl Notice {
    fn new(account: &AccountId, kind: NoticeKind, payload: Value, at: Timestamp) -> Notice {
        Notice {
            id: EventId::generate(),
            account: account.clone(),
            kind,
            payload,
            at,
        }
    }

    /// A session was opened by the sign-in handshake.
    pub fn signed_in(account: &AccountId, session: &SessionId, at: Timestamp) -> Notice {
        Notice::new(
            account,
            NoticeKind::SignedIn,
            json!({ "sessionId": session }),
            at,
        )
    }

    /// A payment settled as paid or failed.
    pub fn payment_settled(
        account: &AccountId,
        payment: &PaymentId,
        paid: bool,
        at: Timestamp,
    ) -> Notice {
        let kind = if paid {
            NoticeKind::PaymentPaid
        } else {
            NoticeKind::PaymentFailed
        };
        Notice::new(account, kind, json!({ "paymentId": payment }), at)
    }

    /// A webhook was switched off after three days of failures.
    pub fn webhook_disabled(account: &AccountId, webhook: &WebhookId, at: Timestamp) -> Notice {
        Notice::new(
            account,
            NoticeKind::WebhookDisabled,
            json!({ "webhookId": webhook }),
            at,
        )
    }
}

impl Notice {
    /// Support answered a ticket (`replied`) or resolved it.
    pub fn support(
        account: &AccountId,
        ticket: &sealpost_kernel::TicketId,
        replied: bool,
        at: Timestamp,
    ) -> Notice {
        let kind = if replied {
            NoticeKind::SupportReplied
        } else {
            NoticeKind::SupportResolved
        };
        Notice::new(account, kind, json!({ "ticketId": ticket }), at)
    }
}

/// The activity entries, events and push notices one decision causes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Records {
    pub activity: Vec<ActivityEntry>,
    pub events: Vec<Event>,
    pub notices: Vec<Notice>,
}

impl Records {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn extend(&mut self, other: Records) {
        self.activity.extend(other.activity);
        self.events.extend(other.events);
        self.notices.extend(other.notices);
    }

    /// A paid period that cannot renew ends at `renews_at`, `days_left`
    /// days from `at`: an activity entry and a `billing` push notice.
    pub fn renewal_due(
        &mut self,
        account: &AccountId,
        renews_at: Timestamp,
        days_left: u32,
        at: Timestamp,
    ) {
        self.activity(account, ActivityKind::RenewalDue, None, None, at);
        self.notices.push(Notice::new(
            account,
            NoticeKind::RenewalDue,
            json!({ "renewsAt": renews_at, "daysLeft": days_left }),
            at,
        ));
    }

    /// Records holding one push notice.
    pub fn notice(notice: Notice) -> Records {
        Records {
            notices: vec![notice],
            ..Records::default()
        }
    }

    fn activity(
        &mut self,
        account: &AccountId,
        kind: ActivityKind,
        address: Option<&AddressId>,
        device: Option<&DeviceId>,
        at: Timestamp,
    ) {
        self.activity.push(ActivityEntry {
            id: ActivityId::generate(),
            account: account.clone(),
            kind,
            address: address.cloned(),
            device: device.cloned(),
            at,
        });
    }

    fn event(&mut self, account: &AccountId, kind: EventType, payload: Value, at: Timestamp) {
        self.events.push(Event {
            id: EventId::generate(),
            account: account.clone(),
            kind,
            payload,
            at,
        });
    }

    /// An own domain's activity entry (`domain.*`); no event: the event
    /// list of the API has no domain events.
    pub fn domain(&mut self, account: &AccountId, kind: ActivityKind, at: Timestamp) {
        self.activity(account, kind, None, None, at);
    }

    /// `worker.paired`; `kind` is `device` or `agent`.
    pub fn device_paired(
        &mut self,
        account: &AccountId,
        device: &DeviceId,
        kind: &str,
        at: Timestamp,
    ) {
        self.activity(account, ActivityKind::DevicePaired, None, Some(device), at);
        self.event(
            account,
            EventType::DevicePaired,
            json!({ "workerId": device, "kind": kind }),
            at,
        );
    }

    pub fn device_removed(&mut self, account: &AccountId, device: &DeviceId, at: Timestamp) {
        self.activity(account, ActivityKind::DeviceRemoved, None, Some(device), at);
        self.event(
            account,
            EventType::DeviceRemoved,
            json!({ "workerId": device }),
            at,
        );
    }

    /// Connection changes are events only; the activity log does not list them.
    pub fn device_connected(&mut self, account: &AccountId, device: &DeviceId, at: Timestamp) {
        self.event(
            account,
            EventType::DeviceConnected,
            json!({ "workerId": device }),
            at,
        );
    }

    pub fn device_disconnected(&mut self, account: &AccountId, device: &DeviceId, at: Timestamp) {
        self.event(
            account,
            EventType::DeviceDisconnected,
            json!({ "workerId": device }),
            at,
        );
    }

    pub fn address_created(&mut self, account: &AccountId, address: &AddressId, at: Timestamp) {
        self.activity(
            account,
            ActivityKind::AddressCreated,
            Some(address),
            None,
            at,
        );
        self.event(
            account,
            EventType::AddressCreated,
            json!({ "inboxId": address }),
            at,
        );
    }

    pub fn address_deleted(&mut self, account: &AccountId, address: &AddressId, at: Timestamp) {
        self.activity(
            account,
            ActivityKind::AddressDeleted,
            Some(address),
            None,
            at,
        );
        self.event(
            account,
            EventType::AddressDeleted,
            json!({ "inboxId": address }),
            at,
        );
    }

    pub fn address_assigned(
        &mut self,
        account: &AccountId,
        address: &AddressId,
        device: &DeviceId,
        at: Timestamp,
    ) {
        self.activity(
            account,
            ActivityKind::AddressAssigned,
            Some(address),
            Some(device),
            at,
        );
        self.event(
            account,
            EventType::AddressAssigned,
            json!({ "workerId": device, "inboxId": address }),
            at,
        );
    }

    pub fn address_removed(
        &mut self,
        account: &AccountId,
        address: &AddressId,
        device: &DeviceId,
        at: Timestamp,
    ) {
        self.activity(
            account,
            ActivityKind::AddressRemoved,
            Some(address),
            Some(device),
            at,
        );
        self.event(
            account,
            EventType::AddressRemoved,
            json!({ "workerId": device, "inboxId": address }),
            at,
        );
    }

    /// Mail that arrived by SMTP: activity `mail.received`, event `message.received`.
    pub fn mail_received(
        &mut self,
        account: &AccountId,
        address: &AddressId,
        message: &MessageId,
        at: Timestamp,
    ) {
        self.activity(account, ActivityKind::MailReceived, Some(address), None, at);
        self.event(
            account,
            EventType::MessageReceived,
            json!({ "messageId": message, "inboxId": address }),
            at,
        );
    }

    /// Mail delivered through `POST /messages`: activity and event `message.received`.
    pub fn message_received(
        &mut self,
        account: &AccountId,
        address: &AddressId,
        message: &MessageId,
        at: Timestamp,
    ) {
        self.activity(
            account,
            ActivityKind::MessageReceived,
            Some(address),
            None,
            at,
        );
        self.event(
            account,
            EventType::MessageReceived,
            json!({ "messageId": message, "inboxId": address }),
            at,
        );
    }

    /// Mail held while its address was paused, released after a payment: event
    /// `message.received` at release time (docs/api.md "Events"). No activity
    /// entry: which kind (`mail.received` or `message.received`) depends on how
    /// the mail arrived, which a held message does not record.
    pub fn held_mail_released(
        &mut self,
        account: &AccountId,
        address: &AddressId,
        message: &MessageId,
        at: Timestamp,
    ) {
        self.event(
            account,
            EventType::MessageReceived,
            json!({ "messageId": message, "inboxId": address }),
            at,
        );
    }

    /// Mail sent from `inbox`: activity `mail.sent`, event `message.sent`
    /// (`messageId` is the copy in Sent, null when none was kept; `via` says
    /// which kind of caller sent it).
    pub fn mail_sent(
        &mut self,
        account: &AccountId,
        address: &AddressId,
        copy: Option<&MessageId>,
        via: &str,
        at: Timestamp,
    ) {
        self.activity(account, ActivityKind::MailSent, Some(address), None, at);
        self.event(
            account,
            EventType::MessageSent,
            json!({ "messageId": copy, "inboxId": address, "via": via }),
            at,
        );
    }

    /// The account moved to `plan`: activity and event `subscription.updated`.
    pub fn subscription_updated(&mut self, account: &AccountId, plan: PlanId, at: Timestamp) {
        self.activity(account, ActivityKind::SubscriptionUpdated, None, None, at);
        self.event(
            account,
            EventType::SubscriptionUpdated,
            json!({ "planId": plan }),
            at,
        );
    }

    /// Renewal of the paid period turned off or on at the card provider (a
    /// failed renewal charge and a subscription ended there turn it off);
    /// `plan` is the account's plan, which this does not change.
    pub fn subscription_renewing(
        &mut self,
        account: &AccountId,
        plan: PlanId,
        renewing: bool,
        at: Timestamp,
    ) {
        self.activity(account, ActivityKind::SubscriptionUpdated, None, None, at);
        self.event(
            account,
            EventType::SubscriptionUpdated,
            json!({ "planId": plan, "renewing": renewing }),
            at,
        );
    }

    /// A plan change scheduled for the end of the paid period (`pending`),
    /// or taken back (`None`): the plan itself stays `plan` until then.
    pub fn subscription_pending(
        &mut self,
        account: &AccountId,
        plan: PlanId,
        pending: Option<PlanId>,
        at: Timestamp,
    ) {
        self.activity(account, ActivityKind::SubscriptionUpdated, None, None, at);
        self.event(
            account,
            EventType::SubscriptionUpdated,
            json!({ "planId": plan, "pendingPlanId": pending }),
            at,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use sealpost_kernel::{Clock, PageLimits, PageRequest, TestClock};

    fn account() -> AccountId {
        AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap()
    }

    #[test]
    fn kinds_round_trip_and_match_the_spec_names() {
        for kind in ActivityKind::ALL {
            assert_eq!(kind.as_str().parse::<ActivityKind>().unwrap(), kind);
        }
        assert_eq!(
            ActivityKind::ALL.len(),
            16,
            "the eleven of the API and five domain kinds"
        );
        assert_eq!(EventType::ALL.len(), 12);
        assert!("worker.exploded".parse::<EventType>().is_err());
    }

    #[test]
    fn smtp_mail_is_mail_received_in_activity_and_message_received_as_event() {
        let mut records = Records::new();
        let address = AddressId::parse("ibx_abcd").unwrap();
        let message = MessageId::generate();
        let at = Timestamp::parse("2026-11-22T00:00:00Z").unwrap();
        records.mail_received(&account(), &address, &message, at);
        assert_eq!(records.activity[0].kind, ActivityKind::MailReceived);
        assert_eq!(records.events[0].kind, EventType::MessageReceived);
        assert_eq!(
            records.events[0].payload,
            json!({ "messageId": message.as_str(), "inboxId": "ibx_abcd" })
        );
    }

    #[test]
    fn connection_changes_are_events_only() {
        let mut records = Records::new();
        let device = DeviceId::parse("wkr_abcd").unwrap();
        let at = Timestamp::parse("2026-11-22T00:00:00Z").unwrap();
        records.device_disconnected(&account(), &device, at);
        records.device_connected(&account(), &device, at);
        assert!(records.activity.is_empty());
        assert_eq!(records.events.len(), 2);
    }

    #[test]
    fn a_plan_change_is_subscription_updated_with_the_plan_id() {
        let mut records = Records::new();
        let at = Timestamp::parse("2026-11-22T00:00:00Z").unwrap();
        records.subscription_updated(&account(), PlanId::Operator, at);
        assert_eq!(records.activity.len(), 1);
        assert_eq!(records.activity[0].kind, ActivityKind::SubscriptionUpdated);
        assert_eq!(records.activity[0].address, None);
        assert_eq!(records.activity[0].device, None);
        assert_eq!(records.events[0].kind, EventType::SubscriptionUpdated);
        assert_eq!(records.events[0].payload, json!({ "planId": "operator" }));
    }

    #[tokio::test]
    async fn sweep_removes_entries_older_than_90_days() {
        let clock = Arc::new(TestClock::at(
            Timestamp::parse("2026-11-22T00:00:00Z").unwrap(),
        ));
        let cutoff = clock.now() - TimeDelta::days(90);
        let mut repo = MockActivityRepository::new();
        repo.expect_delete_activity_before()
            .withf(move |before| *before == cutoff)
            .times(1)
            .returning(|_| Ok(4));
        let log = ActivityLog::new(Arc::new(repo), clock);
        assert_eq!(log.sweep().await.unwrap(), 4);
    }

    #[tokio::test]
    async fn pages_carry_a_cursor_when_more_rows_exist() {
        let clock = Arc::new(TestClock::starting_now());
        let request = PageRequest::parse(Some("1"), None, PageLimits::ACTIVITY).unwrap();
        let mut repo = MockActivityRepository::new();
        let at = clock.now();
        repo.expect_activity_page()
            .returning(move |account, _, page| {
                assert_eq!(page.fetch_limit(), 2);
                let mut records = Records::new();
                let address = AddressId::parse("ibx_abcd").unwrap();
                records.address_created(account, &address, at);
                records.address_deleted(account, &address, at);
                Ok(records.activity)
            });
        let log = ActivityLog::new(Arc::new(repo), clock);
        let page = log.page(&account(), None, &request).await.unwrap();
        assert_eq!(page.items.len(), 1);
        assert!(page.next_cursor.is_some());
    }
}
