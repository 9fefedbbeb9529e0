//! The ingest's side of the repository: what RCPT and `POST /messages`
//! read about a recipient, the usage counters they check, the pending
//! blobs a delivery registers and its commit (`group_commit.rs`).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Timestamptz};
use diesel_async::RunQueryDsl;
use sealpost_kernel::{AccountId, AddressId, PlanId, StoreError, Timestamp};
use sealpost_messages::store::{Commit, NewMessage, RecipientRecord};

use crate::prepared::PrepareOnce;
use crate::schema::{account_suspensions, accounts, addresses, pending_blobs};
use crate::{PgStore, bytes32, db_error};

type RecipientColumns = (
    String,
    String,
    String,
    Option<String>,
    DateTime<Utc>,
    String,
    Option<Vec<u8>>,
    i32,
    Option<DateTime<Utc>>,
);

/// What RCPT and `POST /messages` read about an address, in `RecipientColumns` order.
const RECIPIENT_COLUMNS: (
    addresses::id,
    addresses::account_id,
    accounts::plan_id,
    accounts::lapsed_plan_id,
    accounts::created_at,
    addresses::domain,
    addresses::public_key,
    addresses::key_epoch,
    addresses::paused_at,
) = (
    addresses::id,
    addresses::account_id,
    accounts::plan_id,
    accounts::lapsed_plan_id,
    accounts::created_at,
    addresses::domain,
    addresses::public_key,
    addresses::key_epoch,
    addresses::paused_at,
);

/// The account's stored bytes, the sum of its shards, read with the
/// recipient (beside [`RECIPIENT_COLUMNS`]).
fn stored_bytes_of_account() -> diesel::expression::SqlLiteral<BigInt> {
    diesel::dsl::sql::<BigInt>(
        "(SELECT COALESCE(sum(s.bytes), 0)::bigint FROM stored_bytes s \
          WHERE s.account_id = accounts.id)",
    )
}

/// The start of the account's latest `received` window that has a counter,
/// read with the recipient.
fn latest_received_window() -> diesel::expression::SqlLiteral<Nullable<Timestamptz>> {
    diesel::dsl::sql::<Nullable<Timestamptz>>(
        "(SELECT max(u.window_start) FROM usage_counters u \
          WHERE u.account_id = accounts.id AND u.counter = 'received')",
    )
}

/// The account's `received` count in that window, the sum of its shards
/// (see `COUNTER_SHARDS`).
fn latest_received_count() -> diesel::expression::SqlLiteral<BigInt> {
    diesel::dsl::sql::<BigInt>(
        "(SELECT COALESCE(sum(u.used), 0)::bigint FROM usage_counters u \
          WHERE u.account_id = accounts.id AND u.counter = 'received' \
            AND u.window_start = (SELECT max(w.window_start) FROM usage_counters w \
              WHERE w.account_id = accounts.id AND w.counter = 'received'))",
    )
}

/// The address's account's suspension, if any, read with the recipient
/// (`.left_join(with_suspension())`, then [`account_suspensions::account_id`]
/// beside [`RECIPIENT_COLUMNS`]).
fn with_suspension() -> diesel::dsl::On<
    account_suspensions::table,
    diesel::dsl::Eq<account_suspensions::account_id, addresses::account_id>,
> {
    account_suspensions::table.on(account_suspensions::account_id.eq(addresses::account_id))
}

/// Everything RCPT reads about a recipient, in one row.
type RecipientRow = (
    RecipientColumns,
    Option<String>,
    i64,
    Option<DateTime<Utc>>,
    i64,
);

fn into_recipient(
    (row, suspension, stored_bytes, received_window, received): RecipientRow,
) -> Result<RecipientRecord, StoreError> {
    let (address, account, plan, lapsed_plan, created, domain, public_key, key_epoch, paused_at) =
        row;
    Ok(RecipientRecord {
        address: AddressId::from_trusted(address),
        account: AccountId::from_trusted(account),
        plan: lapsed_plan
            .unwrap_or(plan)
            .parse::<PlanId>()
            .map_err(StoreError::failed)?,
        account_created_at: created.into(),
        domain,
        public_key: public_key.map(bytes32).transpose()?,
        key_epoch: u32::try_from(key_epoch).map_err(StoreError::failed)?,
        paused: paused_at.is_some(),
        suspended: suspension.is_some(),
        stored_bytes: stored_bytes.max(0) as u64,
        latest_received: received_window
            .map(|start| (Timestamp::from_datetime(start), received.max(0) as u64)),
    })
}

/// The recipient columns of the addresses `filter` picks, its account's
/// suspension and stored bytes beside them: the one query RCPT (by email
/// address) and `POST /messages` (by id) share.
macro_rules! recipient_query {
    ($filter:expr) => {
        addresses::table
            .inner_join(accounts::table)
            .left_join(with_suspension())
            .filter($filter)
            .select((
                RECIPIENT_COLUMNS,
                account_suspensions::account_id.nullable(),
                stored_bytes_of_account(),
                latest_received_window(),
                latest_received_count(),
            ))
    };
}

pub(super) async fn recipient(
    store: &PgStore,
    email_address: &str,
) -> Result<Option<RecipientRecord>, StoreError> {
    let mut conn = store.conn().await?;
    recipient_query!(addresses::email_address.eq(email_address))
        .limit(1)
        .prepared()
        .get_result::<RecipientRow>(&mut conn)
        .await
        .optional()
        .map_err(db_error)?
        .map(into_recipient)
        .transpose()
}

pub(super) async fn recipient_by_id(
    store: &PgStore,
    account: &AccountId,
    address: &AddressId,
) -> Result<Option<RecipientRecord>, StoreError> {
    let mut conn = store.conn().await?;
    recipient_query!(
        addresses::id
            .eq(address.as_str())
            .and(addresses::account_id.eq(account.as_str()))
    )
    .limit(1)
    .prepared()
    .get_result::<RecipientRow>(&mut conn)
    .await
    .optional()
    .map_err(db_error)?
    .map(into_recipient)
    .transpose()
}

pub(super) async fn register_pending_blobs(
    store: &PgStore,
    keys: Vec<String>,
    owner: &str,
    at: Timestamp,
) -> Result<(), StoreError> {
    let mut conn = store.conn().await?;
    let rows: Vec<_> = keys
        .iter()
        .map(|key| {
            (
                pending_blobs::blob_key.eq(key),
                pending_blobs::written_at.eq(at.as_datetime()),
                pending_blobs::owner.eq(Some(owner)),
            )
        })
        .collect();
    diesel::insert_into(pending_blobs::table)
        .values(rows)
        .execute(&mut conn)
        .await
        .map(|_| ())
        .map_err(db_error)
}

pub(super) async fn commit(store: &PgStore, new: NewMessage) -> Result<Commit, StoreError> {
    // Batched with the commits running at the same time (group_commit.rs).
    store.group_commit(new).await
}

#[cfg(test)]
mod tests {
    use sealpost_subscriptions::{SubscriptionRepository, UsageWindows};

    use sealpost_messages::store::MessageRepository;

    use super::*;
    use crate::schema::usage_counters;
    use crate::test_db::{drop_database, fresh_store};

    /// GET /usage and the RCPT allowance check read the sum of every shard
    /// of `received`; object reads keep their atomic limit on one row.
    #[tokio::test(flavor = "multi_thread")]
    async fn received_counter_sums_its_shards() {
        use diesel::sql_types::Text;
        const DATABASE: &str = "sealpost_store_pg_received_shards";
        let store = fresh_store(DATABASE).await;
        let account = AccountId::from_trusted("acct_shards01".to_owned());
        let created =
            Timestamp::from_datetime(DateTime::<Utc>::UNIX_EPOCH + chrono::TimeDelta::days(20_000));
        let now = created + chrono::TimeDelta::hours(5);
        let windows = UsageWindows::at(created, now);
        let window = windows.received_start.as_datetime();
        {
            let mut conn = store.conn().await.unwrap();
            diesel::insert_into(accounts::table)
                .values((
                    accounts::id.eq(account.as_str()),
                    accounts::auth_public_key.eq(vec![0_u8; 32]),
                    accounts::auth_verifier_hash.eq(vec![0_u8; 32]),
                    accounts::created_at.eq(created.as_datetime()),
                ))
                .execute(&mut conn)
                .await
                .unwrap();
            diesel::insert_into(addresses::table)
                .values((
                    addresses::id.eq("ibx_shards01"),
                    addresses::account_id.eq(account.as_str()),
                    addresses::email_address.eq("shards@mail.localhost"),
                    addresses::domain.eq("mail.localhost"),
                    addresses::retention_days.eq(30_i16),
                    addresses::created_at.eq(created.as_datetime()),
                ))
                .execute(&mut conn)
                .await
                .unwrap();
            // A row from before the shards (shard 0 by default), two more
            // shards, and an earlier window that must not count.
            diesel::sql_query(
                "INSERT INTO usage_counters (account_id, counter, window_start, used) \
                 VALUES ($1, 'received', $2, 7)",
            )
            .bind::<Text, _>(account.as_str())
            .bind::<Timestamptz, _>(window)
            .execute(&mut conn)
            .await
            .unwrap();
            for (shard, window_start, used) in [
                (3_i16, window, 5_i64),
                (31, window, 1),
                (3, window - chrono::TimeDelta::days(30), 100),
            ] {
                diesel::insert_into(usage_counters::table)
                    .values((
                        usage_counters::account_id.eq(account.as_str()),
                        usage_counters::counter.eq(sealpost_messages::store::RECEIVED_COUNTER),
                        usage_counters::window_start.eq(window_start),
                        usage_counters::shard.eq(shard),
                        usage_counters::used.eq(used),
                    ))
                    .execute(&mut conn)
                    .await
                    .unwrap();
            }
        }
        // RCPT reads the latest window's count with the address.
        let recipient = store
            .recipient("shards@mail.localhost")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            recipient.latest_received,
            Some((windows.received_start, 13))
        );
        assert_eq!(recipient.received_in(windows.received_start), 13);
        assert_eq!(
            recipient.received_in(windows.received_start + chrono::TimeDelta::days(30)),
            0
        );
        let usage = store.usage_counts(&account, windows, now).await.unwrap();
        assert_eq!(usage.received, 13);

        // Object reads: an exact limit, on shard 0.
        for _ in 0..3 {
            assert!(
                store
                    .spend_object_read(&account, windows.hour_start, 3)
                    .await
                    .unwrap()
            );
        }
        assert!(
            !store
                .spend_object_read(&account, windows.hour_start, 3)
                .await
                .unwrap()
        );
        let usage = store.usage_counts(&account, windows, now).await.unwrap();
        assert_eq!((usage.received, usage.object_reads), (13, 3));
        drop(store);
        drop_database(DATABASE).await;
    }
}
