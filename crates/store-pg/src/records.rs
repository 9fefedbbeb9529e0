//! Writing activity entries and outbox events inside a change's transaction,
//! and remembering retired ids.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Jsonb, Nullable, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use sealpost_activity::Records;
use sealpost_kernel::{StoreError, Timestamp};
use sealpost_seal::{SealedBox, sha256};

use crate::prepared::PrepareOnce;
use crate::schema::retired_ids;

pub(crate) async fn write_records(
    conn: &mut AsyncPgConnection,
    records: &Records,
) -> Result<(), diesel::result::Error> {
    write_numbered_records(conn, records, 0).await
}

/// `write_records` for a change with a commit number (a group commit's
/// batch): its events take the number of its messages, so a reader of the
/// events in commit order meets them in the same order as the mail.
///
/// One statement for both tables (the activity's insert a data-modifying
/// `WITH`), its text fixed and its rows as arrays: prepared once per
/// connection (`prepared.rs`), where a multi-row VALUES list would be new
/// text, parsed and planned, for every row count; and one statement fewer
/// to bind, run and answer on every change. Takes the connection shared,
/// so a caller may send its own statements beside it (pipelined).
pub(crate) async fn write_numbered_records(
    mut conn: &AsyncPgConnection,
    records: &Records,
    commit_seq: i64,
) -> Result<(), diesel::result::Error> {
    if records.activity.is_empty() && records.events.is_empty() && records.notices.is_empty() {
        return Ok(());
    }
    let entries = &records.activity;
    let activity_ids: Vec<&str> = entries.iter().map(|entry| entry.id.as_str()).collect();
    let activity_accounts: Vec<&str> = entries.iter().map(|entry| entry.account.as_str()).collect();
    let activity_kinds: Vec<&str> = entries.iter().map(|entry| entry.kind.as_str()).collect();
    let activity_addresses: Vec<Option<&str>> = entries
        .iter()
        .map(|entry| entry.address.as_ref().map(|id| id.as_str()))
        .collect();
    let activity_devices: Vec<Option<&str>> = entries
        .iter()
        .map(|entry| entry.device.as_ref().map(|id| id.as_str()))
        .collect();
    let activity_at: Vec<DateTime<Utc>> =
        entries.iter().map(|entry| entry.at.as_datetime()).collect();
    // Events, then notices (push-only outbox entries, born fanned out so
    // webhooks skip them).
    let outbox = records
        .events
        .iter()
        .map(|event| {
            (
                &event.id,
                &event.account,
                event.kind.as_str(),
                &event.payload,
                event.at,
                false,
            )
        })
        .chain(records.notices.iter().map(|notice| {
            (
                &notice.id,
                &notice.account,
                notice.kind.as_str(),
                &notice.payload,
                notice.at,
                true,
            )
        }));
    let mut ids: Vec<&str> = Vec::new();
    let mut accounts: Vec<&str> = Vec::new();
    let mut kinds: Vec<&str> = Vec::new();
    let mut payloads: Vec<&serde_json::Value> = Vec::new();
    let mut at: Vec<DateTime<Utc>> = Vec::new();
    let mut fanned_out: Vec<bool> = Vec::new();
    for (id, account, kind, payload, when, notice) in outbox {
        ids.push(id.as_str());
        accounts.push(account.as_str());
        kinds.push(kind);
        payloads.push(payload);
        at.push(when.as_datetime());
        fanned_out.push(notice);
    }
    diesel::sql_query(
        "WITH activity_entries AS ( \
             INSERT INTO activity (id, account_id, kind, inbox_id, worker_id, created_at) \
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], \
                 $6::timestamptz[])) \
         INSERT INTO events (id, account_id, type, payload, created_at, fanned_out, commit_seq) \
         SELECT e.id, e.account_id, e.event_type, e.payload, e.created_at, e.fanned_out, $13 \
         FROM unnest($7::text[], $8::text[], $9::text[], $10::jsonb[], $11::timestamptz[], \
             $12::bool[]) AS e(id, account_id, event_type, payload, created_at, fanned_out)",
    )
    .bind::<Array<Text>, _>(activity_ids)
    .bind::<Array<Text>, _>(activity_accounts)
    .bind::<Array<Text>, _>(activity_kinds)
    .bind::<Array<Nullable<Text>>, _>(activity_addresses)
    .bind::<Array<Nullable<Text>>, _>(activity_devices)
    .bind::<Array<Timestamptz>, _>(activity_at)
    .bind::<Array<Text>, _>(ids)
    .bind::<Array<Text>, _>(accounts)
    .bind::<Array<Text>, _>(kinds)
    .bind::<Array<Jsonb>, _>(payloads)
    .bind::<Array<Timestamptz>, _>(at)
    .bind::<Array<Bool>, _>(fanned_out)
    .bind::<BigInt, _>(commit_seq)
    .prepared()
    .execute(&mut conn)
    .await?;
    Ok(())
}

pub(crate) fn id_hash(id: &str) -> Vec<u8> {
    sha256(id.as_bytes()).to_vec()
}

/// Remembers a client id as used, forever.
pub(crate) async fn retire_id(
    conn: &mut AsyncPgConnection,
    kind: &str,
    id: &str,
    at: Timestamp,
) -> Result<(), diesel::result::Error> {
    diesel::insert_into(retired_ids::table)
        .values((
            retired_ids::kind.eq(kind),
            retired_ids::id_hash.eq(id_hash(id)),
            retired_ids::retired_at.eq(at.as_datetime()),
        ))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    Ok(())
}

pub(crate) async fn id_retired(
    conn: &mut AsyncPgConnection,
    kind: &str,
    id: &str,
) -> Result<bool, diesel::result::Error> {
    let count: i64 = retired_ids::table
        .filter(retired_ids::kind.eq(kind))
        .filter(retired_ids::id_hash.eq(id_hash(id)))
        .count()
        .get_result(conn)
        .await?;
    Ok(count > 0)
}

pub(crate) fn box_to_json(sealed: &SealedBox) -> serde_json::Value {
    serde_json::to_value(sealed).unwrap_or(serde_json::Value::Null)
}

pub(crate) fn box_from_json(value: serde_json::Value) -> Result<SealedBox, StoreError> {
    serde_json::from_value(value).map_err(StoreError::failed)
}

/// A message's sealed content as stored (`messages.content`, bytea): the
/// binary box layout, version || epk || n || t || c, which for version 2 is
/// exactly the binary box of docs/protocol.md; version 1 boxes (read only)
/// have the same field lengths (the seal crate writes and reads the layout
/// for either). `None` for a box whose fixed fields have other lengths,
/// which no sealing produces.
pub(crate) fn box_to_stored(sealed: &SealedBox) -> Option<Vec<u8>> {
    sealed.to_binary_any_version().ok()
}

/// The box [`box_to_stored`] wrote.
pub(crate) fn box_from_stored(stored: &[u8]) -> Result<SealedBox, StoreError> {
    SealedBox::from_binary_any_version(stored).map_err(StoreError::failed)
}

/// The `stored_bytes` shard deletions subtract from. Inserts add to shards
/// 0 and up (`COUNTER_SHARDS`), so a deletion never waits on a delivery's
/// counter row; an account's stored bytes are the sum of all its
/// shards, this one negative.
pub(crate) const DELETED_BYTES_SHARD: i16 = -1;

/// SQL deleting the messages `m` (joined to their address `a`) that match
/// `condition` and queuing, at `$2` (the transaction's start when null), the blobs of exactly the messages that
/// DELETE removed (`RETURNING`), in one statement: a message kept because it
/// changed meanwhile never loses its blob, and one committed meanwhile is
/// either deleted with its blob queued or kept. The attachments the DELETE
/// cascades to are still visible to the INSERT (same snapshot). The bytes
/// the deleted rows took come off their accounts' stored bytes in the same
/// statement, so the counter moves exactly with the rows. Selects
/// `deleted`, the number of messages deleted ([`DeletedMessages`]).
pub(crate) fn delete_messages_sql(condition: &str) -> String {
    format!(
        "WITH gone AS (DELETE FROM messages m USING addresses a \
             WHERE a.id = m.inbox_id AND ({condition}) \
             RETURNING m.id, m.account_id, m.stored_bytes), \
           queued AS (INSERT INTO blob_garbage (blob_key, queued_at) \
             SELECT t.blob_key, coalesce($2, now()) FROM attachments t JOIN gone g ON g.id = t.message_id \
             WHERE t.blob_key IS NOT NULL ON CONFLICT DO NOTHING), \
           freed AS (INSERT INTO stored_bytes (account_id, shard, bytes) \
             SELECT g.account_id, {DELETED_BYTES_SHARD}, -sum(g.stored_bytes) FROM gone g \
             GROUP BY g.account_id ORDER BY g.account_id \
             ON CONFLICT (account_id, shard) DO UPDATE SET bytes = stored_bytes.bytes + EXCLUDED.bytes) \
         SELECT count(*) AS deleted FROM gone"
    )
}

/// The row [`delete_messages_sql`] answers.
#[derive(diesel::QueryableByName)]
pub(crate) struct DeletedMessages {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub(crate) deleted: i64,
}

/// Deletes the messages matching `condition` (SQL over `m` and `a`, with `$1`
/// bound to `value`) in the caller's transaction, their blobs queued for
/// deletion at `at` once it commits ([`delete_messages_sql`]). The caller
/// locks the row the messages hang off first, so none is added before it
/// deletes that row (a message's foreign key check waits for the lock).
pub(crate) async fn delete_messages_of(
    conn: &mut AsyncPgConnection,
    condition: &str,
    value: &str,
    at: Option<Timestamp>,
) -> Result<u64, diesel::result::Error> {
    use diesel::sql_types::{Nullable, Text, Timestamptz};
    let DeletedMessages { deleted } = diesel::sql_query(delete_messages_sql(condition))
        .bind::<Text, _>(value)
        .bind::<Nullable<Timestamptz>, _>(at.map(|at| at.as_datetime()))
        .get_result(conn)
        .await?;
    Ok(deleted.max(0) as u64)
}

/// Locks the account row for the rest of the transaction and answers the
/// plan it holds now: a limit is checked against this plan, never against
/// one read before the lock (a plan change takes the same lock).
/// Locks the account's row for the rest of the transaction: what one
/// account counts and then inserts holds until commit. `NotFound` when
/// there is no such account.
pub(crate) async fn lock_account_row(
    conn: &mut AsyncPgConnection,
    account: &sealpost_kernel::AccountId,
) -> Result<(), diesel::result::Error> {
    use crate::schema::accounts;
    accounts::table
        .find(account.as_str())
        .select(accounts::id)
        .for_update()
        .first::<String>(conn)
        .await?;
    Ok(())
}

pub(crate) async fn lock_account_plan(
    conn: &mut AsyncPgConnection,
    account: &sealpost_kernel::AccountId,
) -> Result<sealpost_kernel::PlanId, diesel::result::Error> {
    use crate::schema::accounts;
    let plan: String = accounts::table
        .find(account.as_str())
        .select(accounts::plan_id)
        .for_update()
        .first(conn)
        .await?;
    plan.parse()
        .map_err(|error| diesel::result::Error::DeserializationError(Box::new(error)))
}

#[cfg(test)]
mod tests {
    use sealpost_seal::BINARY_HEADER_LEN;

    use super::*;

    fn sealed(v: u8, ciphertext: &[u8]) -> SealedBox {
        SealedBox {
            v,
            epk: vec![1; 32],
            n: vec![2; 12],
            c: ciphertext.to_vec(),
            t: vec![3; 16],
        }
    }

    /// Activity, events and notices go in one statement, and each table
    /// gets exactly its rows whichever of them a change has (none, one kind,
    /// all three); events and notices take the change's commit number,
    /// notices born fanned out (webhooks skip them).
    #[tokio::test(flavor = "multi_thread")]
    async fn records_of_every_shape_are_written_whole() {
        use sealpost_activity::{ActivityKind, Notice};
        use sealpost_kernel::{AccountId, AddressId, DeviceId, SessionId};

        use crate::schema::activity;
        use crate::test_db::{
            TEST_ACCOUNT, TEST_ADDRESS, drop_database, store_with_address, test_instant,
        };

        #[derive(QueryableByName, Debug, PartialEq)]
        struct Row {
            #[diesel(sql_type = Text)]
            kind: String,
            #[diesel(sql_type = Bool)]
            fanned_out: bool,
            #[diesel(sql_type = BigInt)]
            commit_seq: i64,
        }

        const DATABASE: &str = "sealpost_store_pg_records_shapes";
        let store = store_with_address(DATABASE).await;
        let mut conn = store.conn().await.unwrap();
        let account = AccountId::from_trusted(TEST_ACCOUNT.to_owned());
        let address = AddressId::from_trusted(TEST_ADDRESS.to_owned());
        let at = test_instant(0);
        let signed_in = || Records::notice(Notice::signed_in(&account, &SessionId::generate(), at));

        write_numbered_records(&conn, &Records::new(), 1)
            .await
            .unwrap();
        let mut activity_only = Records::new();
        activity_only.domain(&account, ActivityKind::DomainVerified, at);
        write_numbered_records(&conn, &activity_only, 2)
            .await
            .unwrap();
        let mut events_only = Records::new();
        events_only.device_connected(&account, &DeviceId::from_trusted("wkr_records".into()), at);
        write_numbered_records(&conn, &events_only, 3)
            .await
            .unwrap();
        write_numbered_records(&conn, &signed_in(), 4)
            .await
            .unwrap();
        let mut all = Records::new();
        all.address_created(&account, &address, at);
        all.extend(signed_in());
        write_numbered_records(&conn, &all, 5).await.unwrap();

        let activity: Vec<String> = activity::table
            .select(activity::kind)
            .order(activity::kind)
            .load(&mut conn)
            .await
            .unwrap();
        let events: Vec<Row> = diesel::sql_query(
            "SELECT type AS kind, fanned_out, commit_seq FROM events \
             WHERE account_id = $1 ORDER BY seq",
        )
        .bind::<Text, _>(TEST_ACCOUNT)
        .load(&mut conn)
        .await
        .unwrap();
        let row = |kind: &str, fanned_out: bool, commit_seq: i64| Row {
            kind: kind.to_owned(),
            fanned_out,
            commit_seq,
        };
        assert_eq!(activity, ["domain.verified", "inbox.created"]);
        let signed_in_kind = Notice::signed_in(&account, &SessionId::generate(), at)
            .kind
            .as_str()
            .to_owned();
        assert_eq!(
            events,
            [
                row("worker.connected", false, 3),
                row(&signed_in_kind, true, 4),
                row("inbox.created", false, 5),
                row(&signed_in_kind, true, 5),
            ]
        );
        drop(conn);
        drop(store);
        drop_database(DATABASE).await;
    }

    #[test]
    fn a_stored_version_2_box_is_the_binary_box_and_reads_back() {
        let original = SealedBox::seal(&[9; 32], "service/v1/message:a:b", b"hello");
        let stored = box_to_stored(&original).unwrap();
        assert_eq!(stored, original.to_binary().unwrap());
        assert_eq!(box_from_stored(&stored).unwrap(), original);
    }

    #[test]
    fn version_1_boxes_and_empty_ciphertext_read_back() {
        for original in [sealed(1, b"old"), sealed(2, b"")] {
            let stored = box_to_stored(&original).unwrap();
            assert_eq!(stored.len(), BINARY_HEADER_LEN + original.c.len());
            assert_eq!(box_from_stored(&stored).unwrap(), original);
        }
    }

    #[test]
    fn boxes_with_fields_of_other_lengths_are_not_stored_and_short_rows_not_read() {
        let mut short_tag = sealed(2, b"x");
        short_tag.t.pop();
        assert_eq!(box_to_stored(&short_tag), None);
        assert!(box_from_stored(&[]).is_err());
        assert!(box_from_stored(&[2; 60]).is_err());
    }
}
