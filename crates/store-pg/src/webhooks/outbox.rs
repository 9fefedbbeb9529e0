//! Fan-out: events from the outbox become deliveries to the account's
//! endpoints, the events marked in the same transaction.

use std::collections::HashMap;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_activity::Event;
use sealpost_kernel::{AccountId, EventId, PlanId, StoreError};
use sealpost_webhooks::{Endpoint, FanOutRule};

use super::deliveries::insert_delivery_rows;
use super::load_endpoints;
use crate::outbox::{OutboxConsumer, claim_outbox};
use crate::schema::{accounts, events};
use crate::{PgStore, db_error};

pub(super) async fn fan_out(
    store: &PgStore,
    limit: i64,
    rule: &FanOutRule,
) -> Result<usize, StoreError> {
    let mut conn = store.conn().await?;
    conn.transaction(async |conn| {
        let rows = claim_outbox(conn, OutboxConsumer::Webhooks, limit).await?;
        if rows.is_empty() {
            return Ok(0);
        }
        let mut accounts_seen: HashMap<String, (Vec<Endpoint>, PlanId)> = HashMap::new();
        let mut created = Vec::new();
        for (id, account, kind, payload, at) in &rows {
            if !accounts_seen.contains_key(account) {
                let plan: Option<String> = accounts::table
                    .find(account.as_str())
                    .select(accounts::plan_id)
                    .first(conn)
                    .await
                    .optional()?;
                let endpoints = load_endpoints(conn, account)
                    .await?
                    .into_iter()
                    .filter_map(|row| row.into_endpoint().ok())
                    .collect();
                let plan = plan.and_then(|p| p.parse().ok()).unwrap_or(PlanId::Free);
                accounts_seen.insert(account.clone(), (endpoints, plan));
            }
            let Some((endpoints, plan)) = accounts_seen.get(account) else {
                continue;
            };
            let Ok(kind) = kind.parse() else {
                continue;
            };
            let event = Event {
                id: EventId::from_trusted(id.clone()),
                account: AccountId::from_trusted(account.clone()),
                kind,
                payload: payload.clone(),
                at: (*at).into(),
            };
            created.extend(
                rule(&event, endpoints, *plan)
                    .into_iter()
                    .map(|delivery| (event.account.clone(), delivery)),
            );
        }
        insert_delivery_rows(conn, &created, false).await?;
        let ids: Vec<&str> = rows.iter().map(|row| row.0.as_str()).collect();
        diesel::update(events::table.filter(events::id.eq_any(ids)))
            .set(events::fanned_out.eq(true))
            .execute(conn)
            .await?;
        Ok::<_, diesel::result::Error>(rows.len())
    })
    .await
    .map_err(db_error)
}
