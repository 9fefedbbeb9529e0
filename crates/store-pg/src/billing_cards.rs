//! Plans that renew by card (docs/api.md, Billing): the card subscription
//! kept on the account row (`card_subscription_id`, `card_customer_id`,
//! `card_plan_id`, `renewing`), started by a paid card checkout and turned
//! off or on by the provider's notices; and the subscriptions queued to be
//! stopped (a later card checkout replaced them while they renewed, or
//! their account was erased) until the provider stopped them
//! (`card_subscriptions_to_stop`).

use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_billing::{Applied, CardAccount, CardPlanChange, RenewingChange, SubscriptionStart};
use sealpost_kernel::{AccountId, PlanId, StoreError, Timestamp};

use crate::billing::{LockedAccount, lock_account};
use crate::records::write_records;
use crate::schema::{accounts, card_subscriptions_to_stop};
use crate::{PgStore, db_error};

type CardRow = (String, Option<String>, Option<String>, Option<String>, bool);

const CARD_COLUMNS: (
    accounts::id,
    accounts::card_subscription_id,
    accounts::card_customer_id,
    accounts::card_plan_id,
    accounts::renewing,
) = (
    accounts::id,
    accounts::card_subscription_id,
    accounts::card_customer_id,
    accounts::card_plan_id,
    accounts::renewing,
);

fn into_card(row: CardRow) -> Result<Option<CardAccount>, StoreError> {
    let (account, subscription, customer, plan, renewing) = row;
    let (Some(subscription), Some(customer), Some(plan)) = (subscription, customer, plan) else {
        return Ok(None);
    };
    Ok(Some(CardAccount {
        account: AccountId::from_trusted(account),
        subscription,
        customer,
        plan: plan.parse::<PlanId>().map_err(StoreError::failed)?,
        renewing,
    }))
}

pub(crate) async fn card_by_subscription(
    store: &PgStore,
    subscription: &str,
) -> Result<Option<CardAccount>, StoreError> {
    let mut conn = store.conn().await?;
    let row: Option<CardRow> = accounts::table
        .filter(accounts::card_subscription_id.eq(subscription))
        .select(CARD_COLUMNS)
        .first(&mut conn)
        .await
        .optional()
        .map_err(db_error)?;
    Ok(row.map(into_card).transpose()?.flatten())
}

pub(crate) async fn card_of(
    store: &PgStore,
    account: &AccountId,
) -> Result<Option<CardAccount>, StoreError> {
    let mut conn = store.conn().await?;
    let row: Option<CardRow> = accounts::table
        .find(account.as_str())
        .select(CARD_COLUMNS)
        .first(&mut conn)
        .await
        .optional()
        .map_err(db_error)?;
    Ok(row.map(into_card).transpose()?.flatten())
}

/// The subscription a paid checkout's `started` replaces while it still
/// renews, on the account row as locked: what [`SubscriptionStart::supersedes`]
/// must say.
pub(crate) fn superseded_by<'a>(
    locked: &'a LockedAccount,
    started: &SubscriptionStart,
) -> Option<&'a str> {
    locked
        .card_subscription
        .as_deref()
        .filter(|id| locked.renewing && *id != started.id)
}

/// In a settlement's transaction, with the account row locked: the paid
/// checkout's subscription becomes the account's, renewing (it replaces an
/// earlier one, whose notices are then no longer the account's); an earlier
/// one that still renews is recorded to be stopped at the provider.
pub(crate) async fn start_subscription(
    conn: &mut AsyncPgConnection,
    account: &AccountId,
    started: &SubscriptionStart,
    at: Timestamp,
) -> Result<(), diesel::result::Error> {
    diesel::update(accounts::table.find(account.as_str()))
        .set((
            accounts::card_subscription_id.eq(Some(started.id.as_str())),
            accounts::card_customer_id.eq(Some(started.customer.as_str())),
            accounts::card_plan_id.eq(Some(started.plan.as_str())),
            accounts::renewing.eq(true),
        ))
        .execute(conn)
        .await?;
    if let Some(superseded) = &started.supersedes {
        to_be_stopped(conn, superseded, account, at).await?;
    }
    Ok(())
}

/// Records `subscription` to be stopped at the provider (the sweep tells it
/// until it confirms).
async fn to_be_stopped(
    conn: &mut AsyncPgConnection,
    subscription: &str,
    account: &AccountId,
    at: Timestamp,
) -> Result<(), diesel::result::Error> {
    diesel::insert_into(card_subscriptions_to_stop::table)
        .values((
            card_subscriptions_to_stop::subscription_id.eq(subscription),
            card_subscriptions_to_stop::account_id.eq(account.as_str()),
            card_subscriptions_to_stop::queued_at.eq(at.as_datetime()),
        ))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    Ok(())
}

/// In an erasure's transaction, before the account row goes: a card
/// subscription that still renews would go on charging for an account that
/// no longer exists, so it is recorded to be stopped at the provider as a
/// replaced one is (the sweep tells the provider until it confirms). The
/// row keeps no account id once the account is gone (`ON DELETE SET NULL`).
/// Returns the subscription queued, if any.
pub(crate) async fn stop_renewal_on_erasure(
    conn: &mut AsyncPgConnection,
    account: &AccountId,
    at: Timestamp,
) -> Result<Option<String>, diesel::result::Error> {
    let renewing: Option<Option<String>> = accounts::table
        .find(account.as_str())
        .filter(accounts::renewing)
        .select(accounts::card_subscription_id)
        .first(conn)
        .await
        .optional()?;
    let Some(Some(subscription)) = renewing else {
        return Ok(None);
    };
    to_be_stopped(conn, &subscription, account, at).await?;
    Ok(Some(subscription))
}

pub(crate) async fn set_card_plan(
    store: &PgStore,
    change: CardPlanChange,
) -> Result<Applied, StoreError> {
    let mut conn = store.conn().await?;
    let updated = diesel::update(accounts::table.find(change.account.as_str()))
        .filter(accounts::card_subscription_id.eq(change.subscription.as_str()))
        .set(accounts::card_plan_id.eq(Some(change.plan.as_str())))
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
    Ok(if updated == 1 {
        Applied::Done
    } else {
        Applied::Stale
    })
}

pub(crate) async fn subscriptions_to_stop(
    store: &PgStore,
    limit: i64,
) -> Result<Vec<String>, StoreError> {
    let mut conn = store.conn().await?;
    card_subscriptions_to_stop::table
        .order((
            card_subscriptions_to_stop::queued_at,
            card_subscriptions_to_stop::subscription_id,
        ))
        .select(card_subscriptions_to_stop::subscription_id)
        .limit(limit)
        .load(&mut conn)
        .await
        .map_err(db_error)
}

pub(crate) async fn queued_subscription_stopped(
    store: &PgStore,
    subscription: &str,
) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
    let deleted = diesel::delete(card_subscriptions_to_stop::table.find(subscription))
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
    Ok(deleted == 1)
}

pub(crate) async fn set_renewing(
    store: &PgStore,
    change: RenewingChange,
) -> Result<Applied, StoreError> {
    let mut conn = store.conn().await?;
    conn.transaction(async |conn| {
        let Some(locked) = lock_account(conn, &change.account).await? else {
            return Ok(Applied::Stale);
        };
        if locked.plan != change.plan.as_str() {
            return Ok(Applied::Stale);
        }
        let updated = diesel::update(accounts::table.find(change.account.as_str()))
            .filter(accounts::card_subscription_id.eq(change.subscription.as_str()))
            .filter(accounts::renewing.eq(!change.renewing))
            .set(accounts::renewing.eq(change.renewing))
            .execute(conn)
            .await?;
        if updated == 0 {
            return Ok(Applied::Stale);
        }
        write_records(conn, &change.records).await?;
        Ok::<_, diesel::result::Error>(Applied::Done)
    })
    .await
    .map_err(db_error)
}
