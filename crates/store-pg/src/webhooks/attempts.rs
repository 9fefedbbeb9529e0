//! The sender's side: leasing due deliveries (per-endpoint in-flight caps,
//! `FOR UPDATE SKIP LOCKED`) and recording attempts with endpoint health.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Integer, Nullable, Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_kernel::{PlanId, StoreError, Timestamp};
use sealpost_webhooks::delivery::{
    DeliveryStatus, FAILING_IN_FLIGHT, HEALTHY_IN_FLIGHT, HealthWrite,
};
use sealpost_webhooks::endpoint::{DisabledReason, EndpointHealth};
use sealpost_webhooks::{AttemptRecord, DueDelivery, Endpoint};

use super::{DeliveryRow, EndpointRow};
use crate::prepared::PrepareOnce;
use crate::schema::{accounts, webhook_deliveries, webhooks};
use crate::{PgStore, db_error};

pub(super) async fn claim_due(
    store: &PgStore,
    now: Timestamp,
    lease_until: Timestamp,
    limit: i64,
) -> Result<Vec<DueDelivery>, StoreError> {
    let mut conn = store.conn().await?;
    // Per endpoint with pending deliveries (found by a skip scan of the
    // pending index, so cost follows endpoints, not queue length): its
    // free slots (cap less leased attempts, counted on the in-flight
    // index: only pending deliveries hold a lease, every status change
    // ends it; a failing endpoint has a smaller cap), then its oldest due
    // unleased deliveries up to that. The count walks the index in lease
    // order and stops at the cap: a plain index scan skips the entries
    // of ended leases once it has seen them dead, where a bitmap scan
    // would visit every one until vacuum.
    // Endpoints at their cap take nothing, so they never crowd out
    // others. A suspended account's endpoints take nothing either: their
    // deliveries wait, pending, until the suspension is lifted. While staff
    // pause webhooks (`webhooksPaused`) no endpoint takes anything: every
    // delivery waits, pending, and goes out once they resume. Rows another
    // sender is leasing right now are skipped, and
    // the lease is re-checked as it is taken: no delivery is leased twice.
    let rows: Vec<DeliveryRow> = diesel::sql_query(
        "WITH RECURSIVE endpoints AS ( \
           (SELECT webhook_id AS id FROM webhook_deliveries WHERE status = 'pending' \
            ORDER BY webhook_id LIMIT 1) \
           UNION ALL \
           SELECT (SELECT d.webhook_id FROM webhook_deliveries d \
                   WHERE d.status = 'pending' AND d.webhook_id > e.id \
                   ORDER BY d.webhook_id LIMIT 1) \
           FROM endpoints e WHERE e.id IS NOT NULL), \
         slots AS MATERIALIZED ( \
           SELECT w.id, CASE WHEN w.failing_since IS NULL THEN $4 ELSE $5 END \
             - (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries f \
                  WHERE f.webhook_id = w.id AND f.lease_until > $1 \
                  ORDER BY f.lease_until LIMIT $4) l) AS free \
           FROM endpoints e JOIN webhooks w ON w.id = e.id \
           WHERE NOT EXISTS (SELECT 1 FROM account_suspensions x \
                             WHERE x.account_id = w.account_id) \
             AND NOT EXISTS (SELECT 1 FROM operator_switches o WHERE o.webhooks_paused)), \
         picked AS ( \
           SELECT p.id, p.next_attempt_at FROM slots s CROSS JOIN LATERAL ( \
             SELECT d.id, d.next_attempt_at FROM webhook_deliveries d \
             WHERE d.webhook_id = s.id AND d.status = 'pending' AND d.next_attempt_at <= $1 \
               AND (d.lease_until IS NULL OR d.lease_until <= $1) \
             ORDER BY d.next_attempt_at LIMIT greatest(s.free, 0) \
             FOR UPDATE SKIP LOCKED) p \
           WHERE s.free > 0) \
         UPDATE webhook_deliveries SET lease_until = $2 \
         WHERE id IN (SELECT id FROM picked ORDER BY next_attempt_at LIMIT $3) \
           AND status = 'pending' AND (lease_until IS NULL OR lease_until <= $1) \
         RETURNING id, webhook_id, event_id, event_type, body, status, attempts, response_status, \
                   error, created_at, last_attempt_at, next_attempt_at",
    )
    .bind::<Timestamptz, _>(now.as_datetime())
    .bind::<Timestamptz, _>(lease_until.as_datetime())
    .bind::<BigInt, _>(limit)
    .bind::<BigInt, _>(i64::from(HEALTHY_IN_FLIGHT))
    .bind::<BigInt, _>(i64::from(FAILING_IN_FLIGHT))
    .prepared()
    .load(&mut conn)
    .await
    .map_err(db_error)?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    // The endpoints (and their accounts' plans) in one read.
    let mut ids: Vec<&str> = rows.iter().map(|row| row.webhook_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let found: Vec<(EndpointRow, String)> = webhooks::table
        .inner_join(accounts::table)
        .filter(webhooks::id.eq_any(&ids))
        .select((EndpointRow::as_select(), accounts::plan_id))
        .load(&mut conn)
        .await
        .map_err(db_error)?;
    let mut endpoints: HashMap<String, (Endpoint, PlanId)> = HashMap::new();
    for (endpoint, plan) in found {
        let endpoint = endpoint.into_endpoint()?;
        let plan = plan.parse().map_err(StoreError::failed)?;
        endpoints.insert(endpoint.id.to_string(), (endpoint, plan));
    }
    let mut due = Vec::with_capacity(rows.len());
    for row in rows {
        let delivery = row.into_delivery()?;
        if let Some((endpoint, plan)) = endpoints.get(delivery.webhook_id.as_str()) {
            due.push(DueDelivery {
                delivery,
                endpoint: endpoint.clone(),
                plan: *plan,
            });
        }
    }
    Ok(due)
}

pub(super) async fn record_attempts(
    store: &PgStore,
    records: &[AttemptRecord],
) -> Result<(), StoreError> {
    if records.is_empty() {
        return Ok(());
    }
    // Every delivery in one statement; one failure-record write per
    // endpoint, in id order (so concurrent senders lock endpoints in the
    // same order); then the rare switch-offs.
    let mut ids = Vec::with_capacity(records.len());
    let mut statuses = Vec::with_capacity(records.len());
    let mut attempts = Vec::with_capacity(records.len());
    let mut responses = Vec::with_capacity(records.len());
    let mut errors = Vec::with_capacity(records.len());
    let mut last_attempts = Vec::with_capacity(records.len());
    let mut next_attempts = Vec::with_capacity(records.len());
    let mut healths: std::collections::BTreeMap<&str, Vec<EndpointHealth>> =
        std::collections::BTreeMap::new();
    for record in records {
        let delivery = &record.delivery;
        ids.push(delivery.id.as_str());
        statuses.push(delivery.status.as_str());
        attempts.push(i32::try_from(delivery.attempts).unwrap_or(i32::MAX));
        responses.push(delivery.response_status.map(i32::from));
        errors.push(delivery.error.as_deref());
        last_attempts.push(delivery.last_attempt_at.map(|t| t.as_datetime()));
        next_attempts.push(delivery.next_attempt_at.map(|t| t.as_datetime()));
        healths
            .entry(delivery.webhook_id.as_str())
            .or_default()
            .push(record.health);
    }
    let mut conn = store.conn().await?;
    conn.transaction(async |conn| {
        diesel::sql_query(
            "UPDATE webhook_deliveries d SET status = v.status, attempts = v.attempts, \
               response_status = v.response_status, error = v.error, \
               last_attempt_at = v.last_attempt_at, next_attempt_at = v.next_attempt_at, \
               lease_until = NULL \
             FROM unnest($1::text[], $2::text[], $3::int4[], $4::int4[], $5::text[], \
                         $6::timestamptz[], $7::timestamptz[]) \
               AS v(id, status, attempts, response_status, error, last_attempt_at, next_attempt_at) \
             WHERE d.id = v.id",
        )
        .bind::<Array<Text>, _>(&ids)
        .bind::<Array<Text>, _>(&statuses)
        .bind::<Array<Integer>, _>(&attempts)
        .bind::<Array<Nullable<Integer>>, _>(&responses)
        .bind::<Array<Nullable<Text>>, _>(&errors)
        .bind::<Array<Nullable<Timestamptz>>, _>(&last_attempts)
        .bind::<Array<Nullable<Timestamptz>>, _>(&next_attempts).prepared()
        .execute(conn)
        .await?;
        for (webhook_id, records) in &healths {
            let Some(write) = HealthWrite::merge(records.iter().copied()) else {
                continue;
            };
            // After a success: cleared (or failing again from a later
            // failure) and `last_success_at` written. Failures only:
            // the earliest start is kept when attempts race.
            diesel::sql_query(
                "UPDATE webhooks SET \
                   failing_since = CASE WHEN $1 THEN $3 ELSE COALESCE(failing_since, $3) END, \
                   last_success_at = CASE WHEN $1 THEN $2 ELSE last_success_at END \
                 WHERE id = $4",
            )
            .bind::<Bool, _>(write.succeeded)
            .bind::<Nullable<Timestamptz>, _>(write.last_success_at.map(|t| t.as_datetime()))
            .bind::<Nullable<Timestamptz>, _>(write.failing_since.map(|t| t.as_datetime()))
            .bind::<Text, _>(*webhook_id).prepared()
            .execute(conn)
            .await?;
        }
        for record in records {
            let Some(error) = &record.disable else {
                continue;
            };
            let webhook_id = record.delivery.webhook_id.as_str();
            diesel::update(webhooks::table.find(webhook_id))
                .set((
                    webhooks::active.eq(false),
                    webhooks::disabled_reason.eq(DisabledReason::Failing.as_str()),
                ))
                .execute(conn)
                .await?;
            diesel::update(
                webhook_deliveries::table
                    .filter(webhook_deliveries::webhook_id.eq(webhook_id))
                    .filter(webhook_deliveries::status.eq(DeliveryStatus::Pending.as_str())),
            )
            .set((
                webhook_deliveries::status.eq(DeliveryStatus::Failed.as_str()),
                webhook_deliveries::error.eq(error),
                webhook_deliveries::next_attempt_at.eq(None::<DateTime<Utc>>),
                webhook_deliveries::lease_until.eq(None::<DateTime<Utc>>),
            ))
            .execute(conn)
            .await?;
        }
        Ok::<_, diesel::result::Error>(())
    })
    .await
    .map_err(db_error)
}
