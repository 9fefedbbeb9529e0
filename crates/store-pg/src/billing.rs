//! `BillingRepository` over PostgreSQL: payments, the guarded settlement that
//! changes the plan and releases a pause in one transaction, and the lapse.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Timestamptz};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_activity::Records;
use sealpost_billing::{
    Applied, BillingRepository, CardAccount, CardPlanChange, Deleted, HoldingLimits, Lapse,
    PausedDeletion, PausedHoldings, Payment, PaymentStatus, PendingApplied, PlanPurchase,
    ProviderId, RenewalCandidate, RenewalReminder, RenewingChange, Settlement,
};
use sealpost_devices::WriteOutcome;
use sealpost_kernel::{
    AccountId, AddressId, DeviceId, MessageId, PageRequest, PaymentId, PlanId, StoreError,
    Timestamp,
};

use crate::addresses::delete_address;
use crate::devices::{device_addresses, remove_device};
use crate::group_commit::NEXT_COMMIT_SEQ;
use crate::records::write_records;
use crate::schema::{accounts, addresses, devices, payments};
use crate::subscriptions::paused_counts;
use crate::{PgStore, db_error};

type PaymentRow = (
    String,
    String,
    String,
    String,
    i64,
    String,
    String,
    String,
    String,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
);

const PAYMENT_COLUMNS: (
    payments::id,
    payments::account_id,
    payments::plan_id,
    payments::provider,
    payments::amount,
    payments::currency,
    payments::status,
    payments::reference,
    payments::checkout_url,
    payments::created_at,
    payments::settled_at,
) = (
    payments::id,
    payments::account_id,
    payments::plan_id,
    payments::provider,
    payments::amount,
    payments::currency,
    payments::status,
    payments::reference,
    payments::checkout_url,
    payments::created_at,
    payments::settled_at,
);

fn into_payment(row: PaymentRow) -> Result<Payment, StoreError> {
    let (id, account, plan, provider, amount, currency, status, reference, url, created, settled) =
        row;
    Ok(Payment {
        id: PaymentId::from_trusted(id),
        account: AccountId::from_trusted(account),
        plan: plan.parse::<PlanId>().map_err(StoreError::failed)?,
        provider: provider.parse::<ProviderId>().map_err(StoreError::failed)?,
        amount,
        currency,
        status: status
            .parse::<PaymentStatus>()
            .map_err(StoreError::failed)?,
        reference,
        checkout_url: url,
        created_at: created.into(),
        settled_at: settled.map(Into::into),
    })
}

/// The account row's billing columns, locked for the rest of the transaction.
pub(crate) struct LockedAccount {
    pub(crate) plan: String,
    pub(crate) paid_until: Option<Timestamp>,
    paused: bool,
    /// A lapse not paid yet (`pause.planId` set).
    pub(crate) lapsed: bool,
    /// The pause's `deletesAt`.
    deletes_at: Option<Timestamp>,
    /// A card subscription renews the period.
    pub(crate) renewing: bool,
    /// The account's card subscription (`sub_...`), renewing or not.
    pub(crate) card_subscription: Option<String>,
}

pub(crate) async fn lock_account(
    conn: &mut AsyncPgConnection,
    account: &AccountId,
) -> Result<Option<LockedAccount>, diesel::result::Error> {
    type Row = (
        String,
        Option<DateTime<Utc>>,
        Option<DateTime<Utc>>,
        Option<String>,
        Option<DateTime<Utc>>,
        bool,
        Option<String>,
    );
    let row: Option<Row> = accounts::table
        .find(account.as_str())
        .select((
            accounts::plan_id,
            accounts::paid_until,
            accounts::paused_since,
            accounts::lapsed_plan_id,
            accounts::pause_deletes_at,
            accounts::renewing,
            accounts::card_subscription_id,
        ))
        .for_update()
        .first(conn)
        .await
        .optional()?;
    Ok(row.map(
        |(plan, paid_until, paused_since, lapsed_plan, deletes_at, renewing, card_subscription)| {
            LockedAccount {
                plan,
                paid_until: paid_until.map(Into::into),
                paused: paused_since.is_some(),
                lapsed: lapsed_plan.is_some(),
                deletes_at: deletes_at.map(Into::into),
                renewing,
                card_subscription,
            }
        },
    ))
}

#[derive(QueryableByName)]
struct ReleasedMail {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(column_name = inbox_id)]
    #[diesel(sql_type = Text)]
    address_id: String,
    #[diesel(sql_type = Text)]
    account_id: String,
    #[diesel(sql_type = Timestamptz)]
    received_at: DateTime<Utc>,
}

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = Text)]
    id: String,
}

/// Locks the account row; whether its pause's `deletesAt` is at or before `due`.
async fn pause_due(
    conn: &mut AsyncPgConnection,
    account: &AccountId,
    due: Timestamp,
) -> Result<bool, diesel::result::Error> {
    Ok(lock_account(conn, account)
        .await?
        .is_some_and(|locked| locked.paused && locked.deletes_at.is_some_and(|at| at <= due)))
}

/// Whether anything on the account is still paused.
async fn anything_paused(
    conn: &mut AsyncPgConnection,
    account: &AccountId,
) -> Result<bool, diesel::result::Error> {
    Ok(paused_counts(conn, account).await?.holds_anything())
}

/// Unpauses the oldest paused rows of `table` (addresses or devices) while
/// the unpaused ones stay within `limit` (`None`: all of them).
async fn release_rows(
    conn: &mut AsyncPgConnection,
    table: &str,
    account: &AccountId,
    limit: Option<u32>,
) -> Result<(), diesel::result::Error> {
    diesel::sql_query(format!(
        "UPDATE {table} SET paused_at = NULL WHERE id IN ( \
           SELECT id FROM {table} WHERE account_id = $1 AND paused_at IS NOT NULL \
           ORDER BY created_at, id \
           LIMIT CASE WHEN $2 IS NULL THEN NULL ELSE GREATEST($2 - \
             (SELECT count(*) FROM {table} WHERE account_id = $1 AND paused_at IS NULL), 0) END)"
    ))
    .bind::<Text, _>(account.as_str())
    .bind::<Nullable<BigInt>, _>(limit.map(i64::from))
    .execute(conn)
    .await?;
    Ok(())
}

/// Lists the held mail of unpaused addresses (of `account`, or of every
/// account) with one `message.received` each, oldest first, at `at`.
/// Released mail takes a new commit number (group_commit.rs), so a waiter
/// whose cursor is past its delivery still gets it. It takes it under the
/// commit clock's row lock, held until this transaction ends (no in-flight
/// row needed: no number after it can be taken before it is visible), so
/// only when there is some; batches wait for it only to take a number.
async fn unhold_mail(
    conn: &mut AsyncPgConnection,
    account: Option<&AccountId>,
    at: Timestamp,
) -> Result<usize, diesel::result::Error> {
    let mut mail: Vec<ReleasedMail> = diesel::sql_query(
        "UPDATE messages m SET held = false FROM addresses a \
         WHERE m.inbox_id = a.id AND m.held AND a.paused_at IS NULL \
           AND ($1::text IS NULL OR a.account_id = $1) \
         RETURNING m.id, m.inbox_id, a.account_id, m.received_at",
    )
    .bind::<Nullable<Text>, _>(account.map(AccountId::as_str))
    .load(conn)
    .await?;
    if !mail.is_empty() {
        let ids: Vec<&str> = mail.iter().map(|message| message.id.as_str()).collect();
        diesel::sql_query(format!(
            "WITH clock AS ({NEXT_COMMIT_SEQ}) \
             UPDATE messages SET commit_seq = clock.seq FROM clock WHERE id = ANY($1)"
        ))
        .bind::<Array<Text>, _>(ids)
        .execute(conn)
        .await?;
    }
    mail.sort_by(|a, b| (a.received_at, &a.id).cmp(&(b.received_at, &b.id)));
    let mut records = Records::new();
    for message in &mail {
        records.held_mail_released(
            &AccountId::from_trusted(message.account_id.clone()),
            &AddressId::from_trusted(message.address_id.clone()),
            &MessageId::from_trusted(message.id.clone()),
            at,
        );
    }
    write_records(conn, &records).await?;
    Ok(mail.len())
}

/// Pauses, at `at`, the active rows of `table` beyond `limit`: the newest
/// go, the oldest `limit` stay.
async fn pause_excess(
    conn: &mut AsyncPgConnection,
    table: &str,
    account: &AccountId,
    limit: u32,
    at: Timestamp,
) -> Result<(), diesel::result::Error> {
    diesel::sql_query(format!(
        "UPDATE {table} SET paused_at = $3 WHERE id IN ( \
           SELECT id FROM {table} WHERE account_id = $1 AND paused_at IS NULL \
           ORDER BY created_at, id OFFSET $2)"
    ))
    .bind::<Text, _>(account.as_str())
    .bind::<BigInt, _>(i64::from(limit))
    .bind::<Timestamptz, _>(at.as_datetime())
    .execute(conn)
    .await?;
    Ok(())
}

/// Fits the account to a paid plan's `limits` (see [`PlanPurchase`]).
/// Devices before addresses: the order device removal and assignment lock
/// them in.
async fn fit(
    conn: &mut AsyncPgConnection,
    account: &AccountId,
    locked: &LockedAccount,
    purchase: &PlanPurchase,
    at: Timestamp,
) -> Result<(), diesel::result::Error> {
    let HoldingLimits {
        addresses,
        devices,
        api_keys,
    } = purchase.limits;
    // Past `deletesAt` what is paused is being deleted: nothing comes back.
    let may_release = locked.deletes_at.is_none_or(|deletes_at| at < deletes_at);
    if let Some(devices) = devices {
        pause_excess(conn, "devices", account, devices, at).await?;
    }
    if may_release {
        release_rows(conn, "devices", account, devices).await?;
    }
    pause_excess(conn, "addresses", account, addresses, at).await?;
    if may_release {
        release_rows(conn, "addresses", account, Some(addresses)).await?;
    }
    // Keys are never deleted with a pause: paying releases them any time.
    pause_excess(conn, "api_keys", account, api_keys, at).await?;
    release_rows(conn, "api_keys", account, Some(api_keys)).await?;
    unhold_mail(conn, Some(account), at).await?;
    if !anything_paused(conn, account).await? {
        clear_pause(conn, account).await?;
        return Ok(());
    }
    let target = diesel::update(accounts::table.find(account.as_str()));
    if locked.paused {
        target
            .set(accounts::lapsed_plan_id.eq(None::<String>))
            .execute(conn)
            .await?;
    } else {
        target
            .set((
                accounts::lapsed_plan_id.eq(None::<String>),
                accounts::paused_since.eq(Some(at.as_datetime())),
                accounts::pause_deletes_at.eq(Some(purchase.deletes_at.as_datetime())),
            ))
            .execute(conn)
            .await?;
    }
    Ok(())
}

async fn clear_pause(
    conn: &mut AsyncPgConnection,
    account: &AccountId,
) -> Result<usize, diesel::result::Error> {
    let none: Option<DateTime<Utc>> = None;
    diesel::update(accounts::table.find(account.as_str()))
        .set((
            accounts::lapsed_plan_id.eq(None::<String>),
            accounts::paused_since.eq(none),
            accounts::pause_deletes_at.eq(none),
        ))
        .execute(conn)
        .await
}

async fn buy(
    conn: &mut AsyncPgConnection,
    account: &AccountId,
    locked: &LockedAccount,
    purchase: &PlanPurchase,
    at: Timestamp,
) -> Result<(), diesel::result::Error> {
    diesel::update(accounts::table.find(account.as_str()))
        .set((
            accounts::plan_id.eq(purchase.plan.as_str()),
            accounts::paid_until.eq(Some(purchase.paid_until.as_datetime())),
            // A plan paid for is the one chosen: a scheduled move is dropped.
            accounts::pending_plan_id.eq(None::<String>),
        ))
        .execute(conn)
        .await?;
    fit(conn, account, locked, purchase, at).await?;
    write_records(conn, &purchase.records).await
}

/// The insert of a payment row.
#[allow(clippy::type_complexity, reason = "diesel's insert tuple")]
fn payment_values(
    payment: &Payment,
) -> (
    diesel::dsl::Eq<payments::id, &str>,
    diesel::dsl::Eq<payments::account_id, &str>,
    diesel::dsl::Eq<payments::plan_id, &str>,
    diesel::dsl::Eq<payments::provider, &str>,
    diesel::dsl::Eq<payments::amount, i64>,
    diesel::dsl::Eq<payments::currency, &String>,
    diesel::dsl::Eq<payments::status, &str>,
    diesel::dsl::Eq<payments::reference, &String>,
    diesel::dsl::Eq<payments::checkout_url, &String>,
    diesel::dsl::Eq<payments::created_at, DateTime<Utc>>,
    diesel::dsl::Eq<payments::settled_at, Option<DateTime<Utc>>>,
) {
    (
        payments::id.eq(payment.id.as_str()),
        payments::account_id.eq(payment.account.as_str()),
        payments::plan_id.eq(payment.plan.as_str()),
        payments::provider.eq(payment.provider.as_str()),
        payments::amount.eq(payment.amount),
        payments::currency.eq(&payment.currency),
        payments::status.eq(payment.status.as_str()),
        payments::reference.eq(&payment.reference),
        payments::checkout_url.eq(&payment.checkout_url),
        payments::created_at.eq(payment.created_at.as_datetime()),
        payments::settled_at.eq(payment.settled_at.map(|at| at.as_datetime())),
    )
}

#[async_trait]
impl BillingRepository for PgStore {
    async fn create_payment(&self, payment: &Payment) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        diesel::insert_into(payments::table)
            .values(payment_values(payment))
            .execute(&mut conn)
            .await
            .map_err(db_error)?;
        Ok(())
    }

    async fn create_renewal(&self, payment: &Payment) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let inserted = diesel::insert_into(payments::table)
            .values(payment_values(payment))
            .on_conflict((payments::provider, payments::reference))
            .do_nothing()
            .execute(&mut conn)
            .await
            .map_err(db_error)?;
        Ok(inserted == 1)
    }

    async fn card_by_subscription(
        &self,
        subscription: &str,
    ) -> Result<Option<CardAccount>, StoreError> {
        crate::billing_cards::card_by_subscription(self, subscription).await
    }

    async fn card_of(&self, account: &AccountId) -> Result<Option<CardAccount>, StoreError> {
        crate::billing_cards::card_of(self, account).await
    }

    async fn set_renewing(&self, change: RenewingChange) -> Result<Applied, StoreError> {
        crate::billing_cards::set_renewing(self, change).await
    }

    async fn set_card_plan(&self, change: CardPlanChange) -> Result<Applied, StoreError> {
        crate::billing_cards::set_card_plan(self, change).await
    }

    async fn subscriptions_to_stop(&self, limit: i64) -> Result<Vec<String>, StoreError> {
        crate::billing_cards::subscriptions_to_stop(self, limit).await
    }

    async fn queued_subscription_stopped(&self, subscription: &str) -> Result<bool, StoreError> {
        crate::billing_cards::queued_subscription_stopped(self, subscription).await
    }

    async fn payment(
        &self,
        account: &AccountId,
        id: &PaymentId,
    ) -> Result<Option<Payment>, StoreError> {
        let mut conn = self.conn().await?;
        let row: Option<PaymentRow> = payments::table
            .filter(payments::id.eq(id.as_str()))
            .filter(payments::account_id.eq(account.as_str()))
            .select(PAYMENT_COLUMNS)
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        row.map(into_payment).transpose()
    }

    async fn payments_page(
        &self,
        account: &AccountId,
        page: &PageRequest,
    ) -> Result<Vec<Payment>, StoreError> {
        let mut conn = self.conn().await?;
        let mut query = payments::table
            .filter(payments::account_id.eq(account.as_str()))
            .select(PAYMENT_COLUMNS)
            .order((payments::created_at.desc(), payments::id.desc()))
            .limit(page.fetch_limit())
            .into_boxed();
        if let Some(after) = &page.after {
            let at = after.at.as_datetime();
            query = query.filter(
                payments::created_at.lt(at).or(payments::created_at
                    .eq(at)
                    .and(payments::id.lt(after.id.clone()))),
            );
        }
        let rows: Vec<PaymentRow> = query.load(&mut conn).await.map_err(db_error)?;
        rows.into_iter().map(into_payment).collect()
    }

    async fn payment_by_reference(
        &self,
        provider: ProviderId,
        reference: &str,
    ) -> Result<Option<Payment>, StoreError> {
        let mut conn = self.conn().await?;
        let row: Option<PaymentRow> = payments::table
            .filter(payments::provider.eq(provider.as_str()))
            .filter(payments::reference.eq(reference))
            .select(PAYMENT_COLUMNS)
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        row.map(into_payment).transpose()
    }

    async fn settle(&self, settlement: Settlement) -> Result<Applied, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            // Account first, then payment: the order every writer here takes.
            let Some(account) = lock_account(conn, &settlement.account).await? else {
                return Ok(Applied::Stale);
            };
            let status: Option<String> = payments::table
                .find(settlement.payment.as_str())
                .select(payments::status)
                .for_update()
                .first(conn)
                .await
                .optional()?;
            if status.as_deref() != Some(settlement.from.as_str()) {
                return Ok(Applied::Stale);
            }
            if let Some(purchase) = &settlement.purchase
                && (account.plan != purchase.from_plan.as_str()
                    || account.paid_until != purchase.from_paid_until
                    || account.paused != purchase.was_paused)
            {
                return Ok(Applied::Stale);
            }
            if let Some(credit) = &settlement.credit
                && (account.plan != credit.plan.as_str()
                    || account.paid_until != Some(credit.paid_until)
                    || account.paused)
            {
                return Ok(Applied::Stale);
            }
            if let Some(started) = &settlement.subscription
                && crate::billing_cards::superseded_by(&account, started)
                    != started.supersedes.as_deref()
            {
                return Ok(Applied::Stale);
            }
            diesel::update(payments::table.find(settlement.payment.as_str()))
                .set((
                    payments::status.eq(settlement.to.as_str()),
                    payments::settled_at.eq(Some(settlement.at.as_datetime())),
                    payments::refund_due.eq(settlement.credit.is_some()),
                ))
                .execute(conn)
                .await?;
            if let Some(purchase) = &settlement.purchase {
                buy(conn, &settlement.account, &account, purchase, settlement.at).await?;
            }
            if let Some(started) = &settlement.subscription {
                crate::billing_cards::start_subscription(
                    conn,
                    &settlement.account,
                    started,
                    settlement.at,
                )
                .await?;
            }
            write_records(conn, &settlement.records).await?;
            Ok::<_, diesel::result::Error>(Applied::Done)
        })
        .await
        .map_err(db_error)
    }

    async fn lapsed_accounts(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> Result<Vec<AccountId>, StoreError> {
        let mut conn = self.conn().await?;
        // Plans sold through checkout only: Enterprise is by contract.
        let sold: Vec<&str> = PlanId::ALL
            .into_iter()
            .filter(|id| sealpost_plans::plan(*id).sold_through_checkout())
            .map(PlanId::as_str)
            .collect();
        let ids: Vec<String> =
            accounts::table
                .filter(accounts::paid_until.le(now.as_datetime()))
                // A renewing card subscription's renewal is awaited a while.
                .filter(accounts::renewing.eq(false).or(
                    accounts::paid_until.le((now - sealpost_billing::RENEWAL_GRACE).as_datetime()),
                ))
                .filter(accounts::lapsed_plan_id.is_null())
                .filter(accounts::plan_id.eq_any(sold))
                .order(accounts::paid_until)
                .select(accounts::id)
                .limit(limit)
                .load(&mut conn)
                .await
                .map_err(db_error)?;
        Ok(ids.into_iter().map(AccountId::from_trusted).collect())
    }

    async fn renewal_candidates(
        &self,
        now: Timestamp,
        until: Timestamp,
        last_reminder: u32,
        limit: i64,
    ) -> Result<Vec<RenewalCandidate>, StoreError> {
        crate::billing_reminders::renewal_candidates(self, now, until, last_reminder, limit).await
    }

    async fn remind_renewal(&self, reminder: RenewalReminder) -> Result<Applied, StoreError> {
        crate::billing_reminders::remind_renewal(self, reminder).await
    }

    async fn lapse(&self, lapse: Lapse) -> Result<Applied, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            let Some(account) = lock_account(conn, &lapse.account).await? else {
                return Ok(Applied::Stale);
            };
            if account.plan != lapse.plan.as_str()
                || account.paid_until != Some(lapse.paid_until)
                || account.lapsed
            {
                return Ok(Applied::Stale);
            }
            let since = lapse.since.as_datetime();
            // A pause left from an earlier lapse starts again with this one.
            diesel::update(accounts::table.find(lapse.account.as_str()))
                .set((
                    accounts::plan_id.eq(PlanId::Free.as_str()),
                    accounts::lapsed_plan_id.eq(Some(lapse.plan.as_str())),
                    accounts::paid_until.eq(None::<DateTime<Utc>>),
                    accounts::paused_since.eq(Some(since)),
                    accounts::pause_deletes_at.eq(Some(lapse.deletes_at.as_datetime())),
                    accounts::pending_plan_id.eq(None::<String>),
                    // Nothing renews a lapsed period (a renewal the provider
                    // reports later is a payment like any other).
                    accounts::renewing.eq(false),
                ))
                .execute(conn)
                .await?;
            // Everything active (beyond a limit of 0); devices before
            // addresses: the order device removal and assignment lock them in.
            pause_excess(conn, "devices", &lapse.account, 0, lapse.since).await?;
            pause_excess(conn, "addresses", &lapse.account, 0, lapse.since).await?;
            pause_excess(conn, "api_keys", &lapse.account, 0, lapse.since).await?;
            // `pause` is null when nothing is paused (docs/api.md).
            if !anything_paused(conn, &lapse.account).await? {
                clear_pause(conn, &lapse.account).await?;
            }
            write_records(conn, &lapse.records).await?;
            Ok::<_, diesel::result::Error>(Applied::Done)
        })
        .await
        .map_err(db_error)
    }

    async fn apply_pending(&self, change: PendingApplied) -> Result<Applied, StoreError> {
        crate::billing_pending::apply_pending(self, change).await
    }

    async fn expired_pauses(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> Result<Vec<AccountId>, StoreError> {
        let mut conn = self.conn().await?;
        // Also pauses with nothing left in them (the owner deleted it all):
        // they end at once, with nothing to delete.
        let rows: Vec<IdRow> = diesel::sql_query(
            "SELECT a.id FROM accounts a WHERE a.paused_since IS NOT NULL AND ( \
               a.pause_deletes_at <= $1 \
               OR (NOT EXISTS (SELECT 1 FROM addresses d WHERE d.account_id = a.id AND d.paused_at IS NOT NULL) \
                   AND NOT EXISTS (SELECT 1 FROM devices v WHERE v.account_id = a.id AND v.paused_at IS NOT NULL))) \
             ORDER BY a.pause_deletes_at LIMIT $2",
        )
        .bind::<Timestamptz, _>(now.as_datetime())
        .bind::<BigInt, _>(limit)
        .load(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|row| AccountId::from_trusted(row.id))
            .collect())
    }

    async fn paused_holdings(&self, account: &AccountId) -> Result<PausedHoldings, StoreError> {
        let mut conn = self.conn().await?;
        let addresses: Vec<String> = addresses::table
            .filter(addresses::account_id.eq(account.as_str()))
            .filter(addresses::paused_at.is_not_null())
            .order((addresses::created_at, addresses::id))
            .select(addresses::id)
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        let devices: Vec<String> = devices::table
            .filter(devices::account_id.eq(account.as_str()))
            .filter(devices::paused_at.is_not_null())
            .order((devices::created_at, devices::id))
            .select(devices::id)
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        Ok(PausedHoldings {
            addresses: addresses.into_iter().map(AddressId::from_trusted).collect(),
            devices: devices.into_iter().map(DeviceId::from_trusted).collect(),
        })
    }

    async fn device_addresses(
        &self,
        account: &AccountId,
        device: &DeviceId,
    ) -> Result<Vec<AddressId>, StoreError> {
        let mut conn = self.conn().await?;
        device_addresses(&mut conn, account, device)
            .await
            .map_err(db_error)
    }

    async fn delete_paused_address(
        &self,
        deletion: PausedDeletion<AddressId>,
    ) -> Result<Deleted, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            // The account first, then the address: the order settlement takes.
            if !pause_due(conn, &deletion.account, deletion.due).await? {
                return Ok(Deleted::Spared);
            }
            let paused: Option<String> = addresses::table
                .filter(addresses::id.eq(deletion.id.as_str()))
                .filter(addresses::account_id.eq(deletion.account.as_str()))
                .filter(addresses::paused_at.is_not_null())
                .select(addresses::id)
                .for_update()
                .first(conn)
                .await
                .optional()?;
            if paused.is_none() {
                return Ok(Deleted::Spared);
            }
            delete_address(conn, &deletion.account, &deletion.id, &deletion.records).await?;
            Ok::<_, diesel::result::Error>(Deleted::Deleted)
        })
        .await
        .map_err(db_error)
    }

    async fn remove_paused_device(
        &self,
        deletion: PausedDeletion<DeviceId>,
    ) -> Result<Deleted, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            if !pause_due(conn, &deletion.account, deletion.due).await? {
                return Ok(Deleted::Spared);
            }
            let paused: Option<String> = devices::table
                .filter(devices::id.eq(deletion.id.as_str()))
                .filter(devices::account_id.eq(deletion.account.as_str()))
                .filter(devices::paused_at.is_not_null())
                .select(devices::id)
                .for_update()
                .first(conn)
                .await
                .optional()?;
            if paused.is_none() {
                return Ok(Deleted::Spared);
            }
            let removed = remove_device(
                conn,
                &deletion.account,
                &deletion.id,
                &deletion.assigned,
                &deletion.records,
            )
            .await?;
            Ok::<_, diesel::result::Error>(match removed {
                WriteOutcome::Changed => Deleted::Deleted,
                WriteOutcome::NotFound => Deleted::Spared,
                WriteOutcome::Stale => Deleted::Stale,
            })
        })
        .await
        .map_err(db_error)
    }

    async fn end_pause(&self, account: &AccountId) -> Result<Applied, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            if lock_account(conn, account).await?.is_none() {
                return Ok(Applied::Stale);
            }
            if anything_paused(conn, account).await? {
                return Ok(Applied::Stale);
            }
            clear_pause(conn, account).await?;
            Ok::<_, diesel::result::Error>(Applied::Done)
        })
        .await
        .map_err(db_error)
    }

    async fn release_stragglers(&self, at: Timestamp) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| unhold_mail(conn, None, at).await)
            .await
            .map_err(db_error)
    }
}
