use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use sealpost_activity::Records;
use sealpost_kernel::{
    AccountId, AddressId, Clock, Cursor, DeviceId, Page, PageRequest, PaymentId, PlanId, StoreError,
};
use sealpost_plans::plan;
use sealpost_subscriptions::{Subscriber, SubscriptionRepository};

use crate::*;

/// Attempts at a decision whose input moved under it.
const STALE_RETRIES: usize = 3;
/// Accounts looked at per lapse sweep round.
const LAPSE_BATCH: i64 = 100;

/// What a lapse sweep did.
#[derive(Debug, Default)]
pub struct LapseSweep {
    pub paused: usize,
    /// Accounts whose lapse failed this time (tried again at the next sweep).
    pub failed: Vec<(AccountId, BillingError)>,
}

/// What a pass over the card subscriptions queued to be stopped did.
#[derive(Debug, Default)]
pub struct StopQueueSweep {
    /// Stopped at the provider now: forgotten.
    pub stopped: usize,
    /// Still renewing at the provider (tried again at the next sweep).
    pub failed: Vec<(String, BillingError)>,
}

/// What deleting expired pauses did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PauseDeletions {
    pub addresses: usize,
    /// Devices and agents.
    pub devices: usize,
}

/// What a notice did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settled {
    /// The payment moved to this state (and, when paid, the plan changed).
    Changed(Payment),
    /// Already in that state (a repeated notice), or a notice we do not act on.
    Unchanged,
    /// A checkout this service did not start: acknowledged so the provider stops retrying.
    UnknownReference,
    /// The card subscription's renewal was turned off (`false`) or on.
    Renewing(bool),
}

/// `GET /billing/providers`, `POST /billing/checkout`, `GET /billing/payments/:id`,
/// provider notices, the lapse sweep and what happens at a pause's `deletesAt`.
#[derive(Clone)]
pub struct Billing {
    repo: Arc<dyn BillingRepository>,
    accounts: Arc<dyn SubscriptionRepository>,
    /// Every configured provider: notices are read from all of them.
    providers: BTreeMap<ProviderId, Arc<dyn PaymentProvider>>,
    /// Configured but switched off by an operator: no new checkouts, while
    /// notices about checkouts already started still settle them.
    switched_off: BTreeSet<ProviderId>,
    clock: Arc<dyn Clock>,
}

impl Billing {
    /// `providers` are the configured ones; all take checkouts until
    /// [`Billing::switch_off`].
    pub fn new(
        repo: Arc<dyn BillingRepository>,
        accounts: Arc<dyn SubscriptionRepository>,
        providers: Vec<Arc<dyn PaymentProvider>>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            repo,
            accounts,
            providers: providers
                .into_iter()
                .map(|provider| (provider.id(), provider))
                .collect(),
            switched_off: BTreeSet::new(),
            clock,
        }
    }

    /// An operator switched these off (`SEALPOST_BILLING_DISABLED`).
    #[must_use]
    pub fn switch_off(mut self, providers: impl IntoIterator<Item = ProviderId>) -> Self {
        self.switched_off.extend(providers);
        self
    }

    /// The providers that take checkouts, card first.
    pub fn providers(&self) -> Vec<ProviderId> {
        self.providers
            .keys()
            .filter(|id| !self.switched_off.contains(id))
            .copied()
            .collect()
    }

    /// A provider that takes checkouts.
    fn provider(&self, id: ProviderId) -> Result<&Arc<dyn PaymentProvider>, BillingError> {
        match self.configured(id)? {
            _ if self.switched_off.contains(&id) => Err(BillingError::ProviderUnavailable {
                provider: id,
                reason: "an operator switched it off",
            }),
            provider => Ok(provider),
        }
    }

    /// A configured provider, switched off or not: its notices still count.
    fn configured(&self, id: ProviderId) -> Result<&Arc<dyn PaymentProvider>, BillingError> {
        self.providers
            .get(&id)
            .ok_or_else(|| BillingError::ProviderUnavailable {
                provider: id,
                reason: "this deployment has no keys for it",
            })
    }

    async fn subscriber(&self, account: &AccountId) -> Result<Subscriber, BillingError> {
        self.accounts
            .subscriber(account)
            .await?
            .ok_or(BillingError::NotFound)
    }

    /// Starts a checkout for one 30-day period of `target` and records the
    /// pending payment. Nothing is stored when the provider refuses.
    pub async fn checkout(
        &self,
        account: &AccountId,
        target: PlanId,
        provider: ProviderId,
    ) -> Result<Payment, BillingError> {
        let provider = self.provider(provider)?;
        let subscriber = self.subscriber(account).await?;
        check_provider(&subscriber, provider.id())?;
        let holdings = self.accounts.holdings(account).await?;
        check_checkout(&subscriber, &holdings, target)?;
        let request = CheckoutRequest {
            payment: PaymentId::generate(),
            account: account.clone(),
            plan: target,
            amount: plan(target).price_cents.map_or(0, i64::from),
            currency: "USD",
            description: format!("Sealpost {}, 30 days", target.display_name()),
        };
        // The provider's own words stay in the log (the adapter logs them).
        let session = provider.start_checkout(&request).await.map_err(|error| {
            BillingError::ProviderUnavailable {
                provider: provider.id(),
                reason: match error {
                    ProviderError::Unreachable(_) => "it cannot be reached; try again later",
                    ProviderError::Refused(_) => "it refused the checkout; try again later",
                },
            }
        })?;
        let payment = Payment {
            id: request.payment,
            account: account.clone(),
            plan: target,
            provider: provider.id(),
            amount: request.amount,
            currency: request.currency.to_owned(),
            status: PaymentStatus::Pending,
            reference: session.reference,
            checkout_url: session.url,
            created_at: self.clock.now(),
            settled_at: None,
        };
        self.repo.create_payment(&payment).await?;
        Ok(payment)
    }

    pub async fn payment(
        &self,
        account: &AccountId,
        id: &PaymentId,
    ) -> Result<Payment, BillingError> {
        self.repo
            .payment(account, id)
            .await?
            .ok_or(BillingError::NotFound)
    }

    /// The account's payments, newest first, one page (`GET
    /// /billing/payments`): checkouts started here and renewals the card
    /// provider charged, whatever their state.
    pub async fn payments(
        &self,
        account: &AccountId,
        request: &PageRequest,
    ) -> Result<Page<Payment>, BillingError> {
        let rows = self.repo.payments_page(account, request).await?;
        Ok(Page::from_rows(rows, request, |payment| Cursor {
            at: payment.created_at,
            id: payment.id.to_string(),
        }))
    }

    /// A sandbox payment by id, for the sandbox checkout page; not found
    /// unless the sandbox is enabled.
    pub async fn sandbox_payment(&self, id: &PaymentId) -> Result<Payment, BillingError> {
        if self.provider(ProviderId::Sandbox).is_err() {
            return Err(BillingError::NotFound);
        }
        self.repo
            .payment_by_reference(ProviderId::Sandbox, id.as_str())
            .await?
            .ok_or(BillingError::NotFound)
    }

    /// The header a provider signs its notices in.
    pub fn signature_header(&self, provider: ProviderId) -> Result<&'static str, BillingError> {
        Ok(self.configured(provider)?.signature_header())
    }

    /// A provider's signed notice: verified, then settled.
    pub async fn notice(
        &self,
        provider: ProviderId,
        signature: &str,
        body: &[u8],
    ) -> Result<Settled, BillingError> {
        let notice = self
            .configured(provider)?
            .read_notice(signature, body, self.clock.now())?;
        self.settle(provider, &notice).await
    }

    /// Applies a verified notice: the one path every provider's outcome takes,
    /// the sandbox form's included. The payment's new state and the plan it
    /// buys are written in one transaction, once.
    pub async fn settle(
        &self,
        provider: ProviderId,
        notice: &Notice,
    ) -> Result<Settled, BillingError> {
        self.configured(provider)?;
        match notice.outcome {
            NoticeOutcome::Ignored => Ok(Settled::Unchanged),
            NoticeOutcome::Paid | NoticeOutcome::Failed => {
                self.settle_payment(provider, notice, false).await
            }
            NoticeOutcome::Renewed { amount } => self.renewed(provider, notice, amount).await,
            NoticeOutcome::Renewing(renewing) => self.renewing(notice, renewing).await,
        }
    }

    /// A renewal the provider charged for: recorded as a payment of the
    /// subscription's plan (its reference the invoice, so a repeated notice
    /// finds it paid and changes nothing), then settled as paid, adding 30
    /// days to the period it renews ([`renewal_paid_until`]).
    async fn renewed(
        &self,
        provider: ProviderId,
        notice: &Notice,
        amount: i64,
    ) -> Result<Settled, BillingError> {
        let Some(card) = self.card_of_notice(notice).await? else {
            return Ok(Settled::UnknownReference);
        };
        if self
            .repo
            .payment_by_reference(provider, &notice.reference)
            .await?
            .is_none()
        {
            let payment = Payment {
                id: PaymentId::generate(),
                account: card.account.clone(),
                plan: card.plan,
                provider,
                amount,
                currency: "USD".to_owned(),
                status: PaymentStatus::Pending,
                reference: notice.reference.clone(),
                // Nobody is sent anywhere to pay a renewal.
                checkout_url: String::new(),
                created_at: self.clock.now(),
                settled_at: None,
            };
            // False: the same notice, at the same time; settled once below.
            self.repo.create_renewal(&payment).await?;
        }
        self.settle_payment(provider, notice, true).await
    }

    /// The stored subscription a notice names; `None` for one this service
    /// does not know (or no longer keeps: a later checkout replaced it).
    async fn card_of_notice(&self, notice: &Notice) -> Result<Option<CardAccount>, BillingError> {
        let Some(subscription) = &notice.subscription else {
            return Ok(None);
        };
        Ok(self.repo.card_by_subscription(&subscription.id).await?)
    }

    /// Renewal turned off or on at the provider (or a failed renewal charge,
    /// or the subscription ended there: off): `subscription.updated {planId,
    /// renewing}` when it changes. Off, the period lapses at its end.
    async fn renewing(&self, notice: &Notice, renewing: bool) -> Result<Settled, BillingError> {
        for _ in 0..STALE_RETRIES {
            let Some(card) = self.card_of_notice(notice).await? else {
                // A subscription a later checkout replaced: the provider
                // says it no longer renews, so the sweep need not stop it.
                if let (false, Some(subscription)) = (renewing, &notice.subscription) {
                    self.repo
                        .queued_subscription_stopped(&subscription.id)
                        .await?;
                }
                return Ok(Settled::UnknownReference);
            };
            if card.renewing == renewing {
                return Ok(Settled::Unchanged);
            }
            let subscriber = self.subscriber(&card.account).await?;
            let now = self.clock.now();
            let mut records = Records::new();
            records.subscription_renewing(&card.account, subscriber.plan, renewing, now);
            let change = RenewingChange {
                account: card.account.clone(),
                subscription: card.subscription.clone(),
                plan: subscriber.plan,
                renewing,
                records,
            };
            if self.repo.set_renewing(change).await? == Applied::Done {
                return Ok(Settled::Renewing(renewing));
            }
        }
        Err(StoreError::Unavailable("the account kept changing; retry".into()).into())
    }

    /// A session of the card provider's customer portal for the account's
    /// customer (where its renewal is turned off or on): the url. An account
    /// that never subscribed by card has none.
    pub async fn portal(&self, account: &AccountId) -> Result<String, BillingError> {
        let card = self
            .repo
            .card_of(account)
            .await?
            .ok_or(BillingError::NoCardSubscription)?;
        let provider = self.configured(ProviderId::Stripe)?;
        provider
            .portal(&card.customer)
            .await
            .map_err(|error| BillingError::ProviderUnavailable {
                provider: ProviderId::Stripe,
                reason: match error {
                    ProviderError::Unreachable(_) => "it cannot be reached; try again later",
                    ProviderError::Refused(_) => "it refused the portal session; try again later",
                },
            })
    }

    /// After a plan change, while a card subscription renews the period:
    /// the provider is made to charge, from the next period on, for the plan
    /// the account will be on then (`pendingPlanId`, else its plan). A move
    /// scheduled to Free turns the renewal off instead (the provider would
    /// otherwise charge the current plan again; its notice then sets
    /// `renewing`); a move to a cheaper paid plan switches the
    /// subscription's price to that plan's, and the stored plan it renews,
    /// so its next renewal pays a period of the new plan; taking the move
    /// back switches the price back. Taking back a move to Free does not
    /// turn renewal on again: that is the payer's, in the portal.
    pub async fn follow_plan_change(&self, account: &AccountId) -> Result<(), BillingError> {
        let subscriber = self.subscriber(account).await?;
        if !subscriber.renewing {
            return Ok(());
        }
        let Some(card) = self.repo.card_of(account).await? else {
            return Ok(());
        };
        let next = subscriber.pending_plan.unwrap_or(subscriber.plan);
        let renews_next = plan(next).sold_through_checkout();
        if renews_next && card.plan == next {
            return Ok(());
        }
        let provider = self.configured(ProviderId::Stripe)?;
        if !renews_next {
            return provider
                .set_renewal(&card.subscription, false)
                .await
                .map_err(|error| BillingError::ProviderUnavailable {
                    provider: ProviderId::Stripe,
                    reason: match error {
                        ProviderError::Unreachable(_) => {
                            "it cannot be reached to stop the renewal; choose the plan again later"
                        }
                        ProviderError::Refused(_) => {
                            "it refused to stop the renewal; choose the plan again later"
                        }
                    },
                });
        }
        let amount = plan(next).price_cents.map_or(0, i64::from);
        provider
            .set_price(&card.subscription, amount, "USD")
            .await
            .map_err(|error| BillingError::ProviderUnavailable {
                provider: ProviderId::Stripe,
                reason: match error {
                    ProviderError::Unreachable(_) => {
                        "it cannot be reached to change the renewal's plan; choose the plan again later"
                    }
                    ProviderError::Refused(_) => {
                        "it refused to change the renewal's plan; choose the plan again later"
                    }
                },
            })?;
        self.repo
            .set_card_plan(CardPlanChange {
                account: account.clone(),
                subscription: card.subscription,
                plan: next,
            })
            .await?;
        Ok(())
    }

    /// Stops a card subscription queued to be stopped (a later card
    /// checkout replaced it, or its account was erased): renewal off at the
    /// provider (it ends with the period it was paid for), then forgotten.
    pub async fn stop_queued_subscription(&self, subscription: &str) -> Result<(), BillingError> {
        let provider = self.configured(ProviderId::Stripe)?;
        provider
            .set_renewal(subscription, false)
            .await
            .map_err(|error| BillingError::ProviderUnavailable {
                provider: ProviderId::Stripe,
                reason: match error {
                    ProviderError::Unreachable(_) => {
                        "it cannot be reached to stop a subscription renewing"
                    }
                    ProviderError::Refused(_) => "it refused to stop a subscription renewing",
                },
            })?;
        self.repo.queued_subscription_stopped(subscription).await?;
        Ok(())
    }

    /// Tries again to stop the card subscriptions queued to be stopped
    /// (replaced by a later card checkout while they renewed, or their
    /// account erased) where the provider could not be told at the time.
    /// One that fails stays for the next sweep.
    pub async fn stop_queued_subscriptions(&self) -> Result<StopQueueSweep, BillingError> {
        let mut report = StopQueueSweep::default();
        for subscription in self.repo.subscriptions_to_stop(LAPSE_BATCH).await? {
            match self.stop_queued_subscription(&subscription).await {
                Ok(()) => report.stopped += 1,
                Err(error) => report.failed.push((subscription, error)),
            }
        }
        Ok(report)
    }

    /// Settles the payment a notice names (`renewal`: a renewal the
    /// provider charged for, see [`Billing::renewed`]).
    async fn settle_payment(
        &self,
        provider: ProviderId,
        notice: &Notice,
        renewal: bool,
    ) -> Result<Settled, BillingError> {
        for _ in 0..STALE_RETRIES {
            let Some(payment) = self
                .repo
                .payment_by_reference(provider, &notice.reference)
                .await?
            else {
                return Ok(Settled::UnknownReference);
            };
            let Some(to) = payment.status.after(notice.outcome) else {
                return Ok(Settled::Unchanged);
            };
            let now = self.clock.now();
            // A paid card checkout in subscription mode: it renews from now on.
            let subscription = match (&notice.subscription, to) {
                (Some(started), PaymentStatus::Paid) if !renewal => {
                    // An earlier subscription still renewing would go on
                    // charging: it is stopped once this one is the account's.
                    let supersedes = self
                        .repo
                        .card_of(&payment.account)
                        .await?
                        .filter(|card| card.renewing && card.subscription != started.id)
                        .map(|card| card.subscription);
                    Some(SubscriptionStart {
                        id: started.id.clone(),
                        customer: started.customer.clone(),
                        plan: payment.plan,
                        supersedes,
                    })
                }
                _ => None,
            };
            let supersedes = subscription
                .as_ref()
                .and_then(|started| started.supersedes.clone());
            let (purchase, credit) = match to {
                PaymentStatus::Paid => {
                    self.purchase(&payment, renewal, subscription.is_some())
                        .await?
                }
                _ => (None, None),
            };
            let settlement = Settlement {
                payment: payment.id.clone(),
                account: payment.account.clone(),
                from: payment.status,
                to,
                at: now,
                purchase,
                credit,
                subscription,
                records: Records::notice(sealpost_activity::Notice::payment_settled(
                    &payment.account,
                    &payment.id,
                    to == PaymentStatus::Paid,
                    now,
                )),
            };
            if self.repo.settle(settlement).await? == Applied::Done {
                if let Some(superseded) = supersedes {
                    // Recorded with the settlement: when the provider cannot
                    // be told now, the sweep tells it later.
                    let _ = self.stop_queued_subscription(&superseded).await;
                }
                return Ok(Settled::Changed(Payment {
                    status: to,
                    settled_at: Some(now),
                    ..payment
                }));
            }
        }
        Err(StoreError::Unavailable("the payment kept changing; retry".into()).into())
    }

    /// What paying `payment` buys, on the account as it is now: a plan, or
    /// nothing but a credit when a dearer plan's paid period runs. A
    /// `renewal` adds its 30 days to the period it renews; `starts_renewing`
    /// (a card checkout's subscription) makes the period renew.
    async fn purchase(
        &self,
        payment: &Payment,
        renewal: bool,
        starts_renewing: bool,
    ) -> Result<(Option<PlanPurchase>, Option<Credit>), BillingError> {
        let subscriber = self.subscriber(&payment.account).await?;
        let now = self.clock.now();
        // A renewal into the move scheduled for its period end buys that
        // plan's next period, cheaper as it is.
        let into_pending = renewal && renews_into_pending(&subscriber, payment.plan);
        if ((!into_pending && settles_as_credit(&subscriber, payment.plan, now))
            || (!renewal && settles_beside_renewal(&subscriber, payment.provider)))
            && let Some(paid_until) = subscriber.paid_until
        {
            let credit = Credit {
                plan: subscriber.plan,
                paid_until,
            };
            return Ok((None, Some(credit)));
        }
        let limits = plan(payment.plan);
        let mut records = Records::new();
        if starts_renewing && !subscriber.renewing {
            records.subscription_renewing(&payment.account, payment.plan, true, now);
        } else if subscriber.plan != payment.plan {
            records.subscription_updated(&payment.account, payment.plan, now);
        }
        let until = if renewal {
            renewal_paid_until(&subscriber, payment.plan, now)
        } else {
            paid_until(&subscriber, payment.plan, now)
        };
        let purchase = PlanPurchase {
            from_plan: subscriber.plan,
            from_paid_until: subscriber.paid_until,
            was_paused: subscriber.pause.is_some(),
            plan: payment.plan,
            paid_until: until,
            limits: HoldingLimits {
                addresses: limits.addresses,
                devices: limits.devices,
                api_keys: limits.api_keys,
            },
            deletes_at: now + PAUSE_DELETES_AFTER,
            records,
        };
        Ok((Some(purchase), None))
    }

    /// Pauses every account whose paid period ended unpaid. One account's
    /// failure does not stop the others: it is reported and tried again at
    /// the next sweep.
    pub async fn sweep(&self) -> Result<LapseSweep, BillingError> {
        let mut report = LapseSweep::default();
        loop {
            let now = self.clock.now();
            let due = self.repo.lapsed_accounts(now, LAPSE_BATCH).await?;
            let mut progressed = 0;
            for account in &due {
                match self.lapse(account).await {
                    Ok(true) => {
                        report.paused += 1;
                        progressed += 1;
                    }
                    Ok(false) => {}
                    Err(error) => report.failed.push((account.clone(), error)),
                }
            }
            if due.len() < LAPSE_BATCH as usize || progressed == 0 {
                return Ok(report);
            }
        }
    }

    /// Reminds accounts whose paid period cannot renew by itself (every
    /// payment buys one period) that it ends: 7 days and 1 day before, each
    /// once per period ([`renewal_reminder_due`]). Returns how many were sent.
    pub async fn remind_renewals(&self) -> Result<usize, BillingError> {
        let earliest = RENEWAL_REMINDERS.into_iter().max().unwrap_or(0);
        let last = RENEWAL_REMINDERS.into_iter().min().unwrap_or(0);
        let mut sent = 0;
        loop {
            let now = self.clock.now();
            let due = self
                .repo
                .renewal_candidates(
                    now,
                    now + chrono::TimeDelta::days(i64::from(earliest)),
                    last,
                    LAPSE_BATCH,
                )
                .await?;
            let mut progressed = 0;
            for candidate in &due {
                let Some(days_left) =
                    renewal_reminder_due(candidate.paid_until, now, candidate.reminded)
                else {
                    continue;
                };
                let mut records = Records::new();
                records.renewal_due(&candidate.account, candidate.paid_until, days_left, now);
                let reminder = RenewalReminder {
                    account: candidate.account.clone(),
                    paid_until: candidate.paid_until,
                    days_left,
                    records,
                };
                if self.repo.remind_renewal(reminder).await? == Applied::Done {
                    sent += 1;
                    progressed += 1;
                }
            }
            if due.len() < LAPSE_BATCH as usize || progressed == 0 {
                return Ok(sent);
            }
        }
    }

    /// Releases mail that was stored held after a payment had already
    /// released its address (its RCPT saw the address paused, its commit came
    /// after the release): listed, with its event, at the next sweep.
    pub async fn release_stragglers(&self) -> Result<usize, BillingError> {
        Ok(self.repo.release_stragglers(self.clock.now()).await?)
    }

    /// At a pause's `deletesAt`, deletes the addresses and devices it still
    /// holds, each as its owner's delete or removal would (its events,
    /// retired ids; the mail's blobs go with the mail sweep that follows),
    /// then ends the pause. Also ends pauses with nothing left in them. The
    /// store re-checks, in the transaction that deletes, that the row is
    /// still paused and the pause still due: a payment that released it
    /// meanwhile wins.
    pub async fn delete_expired_pauses(&self) -> Result<PauseDeletions, BillingError> {
        let mut done = PauseDeletions::default();
        for account in self
            .repo
            .expired_pauses(self.clock.now(), LAPSE_BATCH)
            .await?
        {
            let held = self.repo.paused_holdings(&account).await?;
            for address in held.addresses {
                if self.delete_paused_address(&account, address).await? {
                    done.addresses += 1;
                }
            }
            for device in held.devices {
                if self.remove_paused_device(&account, device).await? {
                    done.devices += 1;
                }
            }
            // `Stale` while something is still paused (a pause started again).
            self.repo.end_pause(&account).await?;
        }
        Ok(done)
    }

    async fn delete_paused_address(
        &self,
        account: &AccountId,
        address: AddressId,
    ) -> Result<bool, BillingError> {
        let now = self.clock.now();
        let mut records = Records::new();
        records.address_deleted(account, &address, now);
        let deletion = PausedDeletion {
            account: account.clone(),
            id: address,
            due: now,
            assigned: Vec::new(),
            records,
        };
        Ok(self.repo.delete_paused_address(deletion).await? == Deleted::Deleted)
    }

    async fn remove_paused_device(
        &self,
        account: &AccountId,
        device: DeviceId,
    ) -> Result<bool, BillingError> {
        for _ in 0..STALE_RETRIES {
            let now = self.clock.now();
            let assigned = self.repo.device_addresses(account, &device).await?;
            let mut records = Records::new();
            for address in &assigned {
                records.address_removed(account, address, &device, now);
            }
            records.device_removed(account, &device, now);
            let deletion = PausedDeletion {
                account: account.clone(),
                id: device.clone(),
                due: now,
                assigned,
                records,
            };
            match self.repo.remove_paused_device(deletion).await? {
                Deleted::Deleted => return Ok(true),
                Deleted::Spared => return Ok(false),
                Deleted::Stale => continue,
            }
        }
        Err(StoreError::Unavailable("the device kept changing; retry".into()).into())
    }

    /// Pauses `account` if its period has lapsed; false when it had not (a
    /// payment arrived meanwhile).
    async fn lapse(&self, account: &AccountId) -> Result<bool, BillingError> {
        for _ in 0..STALE_RETRIES {
            let subscriber = self.subscriber(account).await?;
            let now = self.clock.now();
            let paid_until = match subscriber.paid_until {
                Some(until) if has_lapsed(&subscriber, now) => until,
                _ => return Ok(false),
            };
            if let Some(to) = subscriber.pending_plan {
                let mut records = Records::new();
                records.subscription_updated(account, to, now);
                let limits = sealpost_plans::plan(to);
                let change = PendingApplied {
                    account: account.clone(),
                    plan: subscriber.plan,
                    paid_until,
                    to,
                    max_addresses: limits.addresses,
                    max_paired: limits.devices,
                    records,
                };
                // A paid pending plan is not paid for: it lapses next round.
                if self.repo.apply_pending(change).await? == Applied::Done && to == PlanId::Free {
                    return Ok(true);
                }
                continue;
            }
            let mut records = Records::new();
            records.subscription_updated(account, PlanId::Free, now);
            let lapse = Lapse {
                account: account.clone(),
                plan: subscriber.plan,
                paid_until,
                since: now,
                deletes_at: now + PAUSE_DELETES_AFTER,
                records,
            };
            if self.repo.lapse(lapse).await? == Applied::Done {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
