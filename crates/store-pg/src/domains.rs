//! Own domains over PostgreSQL: `DomainRepository`, the lookups address
//! creation and RCPT make, and the zones the authoritative DNS serves.

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Text, Timestamptz};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_activity::{ActivityKind, Records};
use sealpost_addresses::{OwnDomainDirectory, OwnDomainState};
use sealpost_domains::{
    AddOutcome, DomainName, DomainRepository, OwnDomain, ProveOutcome, RemoveOutcome, Step,
    StepChange, StoredDkim,
};
use sealpost_kernel::{AccountId, PlanId, StoreError, Timestamp};
use sealpost_messages::own_domains::{OwnDomainGate, OwnDomainHold};

use crate::records::{lock_account_plan, lock_account_row, write_records};
use crate::schema::{accounts, addresses, own_domains};
use crate::{PgStore, db_error};

#[derive(Queryable, Selectable)]
#[diesel(table_name = own_domains, check_for_backend(diesel::pg::Pg))]
struct DomainRow {
    account_id: String,
    name: String,
    token: String,
    step: String,
    proved_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    checked_at: Option<DateTime<Utc>>,
    next_check_at: DateTime<Utc>,
    checks_in_step: i32,
    plan_lost_at: Option<DateTime<Utc>>,
}

impl DomainRow {
    fn into_domain(self) -> Result<OwnDomain, StoreError> {
        Ok(OwnDomain {
            account: AccountId::from_trusted(self.account_id),
            name: DomainName::from_trusted(self.name),
            token: self.token,
            step: self.step.parse::<Step>().map_err(StoreError::failed)?,
            proved_at: self.proved_at.map(Timestamp::from_datetime),
            created_at: Timestamp::from_datetime(self.created_at),
            checked_at: self.checked_at.map(Timestamp::from_datetime),
            next_check_at: Timestamp::from_datetime(self.next_check_at),
            checks_in_step: u32::try_from(self.checks_in_step).unwrap_or(0),
            plan_lost_at: self.plan_lost_at.map(Timestamp::from_datetime),
        })
    }
}

fn into_domains(rows: Vec<DomainRow>) -> Result<Vec<OwnDomain>, StoreError> {
    rows.into_iter().map(DomainRow::into_domain).collect()
}

/// A proved own domain's zone, as `sealpost-dns` serves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainZone {
    pub name: String,
    pub step: String,
    /// `(selector, algorithm, SubjectPublicKeyInfo DER)` when a key was made.
    pub dkim: Option<(String, String, Vec<u8>)>,
}

async fn proved_by_other(
    conn: &mut AsyncPgConnection,
    account: &str,
    name: &str,
) -> Result<bool, diesel::result::Error> {
    diesel::select(diesel::dsl::exists(
        own_domains::table
            .filter(own_domains::name.eq(name))
            .filter(own_domains::account_id.ne(account))
            .filter(own_domains::proved_at.is_not_null()),
    ))
    .get_result(conn)
    .await
}

fn is_unique_violation(error: &diesel::result::Error) -> bool {
    matches!(
        error,
        diesel::result::Error::DatabaseError(diesel::result::DatabaseErrorKind::UniqueViolation, _)
    )
}

#[async_trait]
impl DomainRepository for PgStore {
    async fn add(
        &self,
        domain: &OwnDomain,
        plan: PlanId,
        max: u32,
        records: Records,
    ) -> Result<AddOutcome, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            // The account row serialises one account's additions and plan
            // changes: the count and the plan it is checked against hold.
            let current = lock_account_plan(conn, &domain.account).await?;
            if current != plan {
                return Ok(AddOutcome::PlanChanged(current));
            }
            let existing: i64 = own_domains::table
                .filter(own_domains::account_id.eq(domain.account.as_str()))
                .filter(own_domains::name.eq(domain.name.as_str()))
                .count()
                .get_result(conn)
                .await?;
            if existing > 0 {
                return Ok(AddOutcome::AlreadyYours);
            }
            if proved_by_other(conn, domain.account.as_str(), domain.name.as_str()).await? {
                return Ok(AddOutcome::TakenByOther);
            }
            let held: i64 = own_domains::table
                .filter(own_domains::account_id.eq(domain.account.as_str()))
                .count()
                .get_result(conn)
                .await?;
            if held >= i64::from(max) {
                return Ok(AddOutcome::LimitReached);
            }
            diesel::insert_into(own_domains::table)
                .values((
                    own_domains::account_id.eq(domain.account.as_str()),
                    own_domains::name.eq(domain.name.as_str()),
                    own_domains::token.eq(&domain.token),
                    own_domains::step.eq(domain.step.as_str()),
                    own_domains::created_at.eq(domain.created_at.as_datetime()),
                    own_domains::next_check_at.eq(domain.next_check_at.as_datetime()),
                    own_domains::checks_in_step.eq(0),
                ))
                .execute(conn)
                .await?;
            write_records(conn, &records).await?;
            Ok::<_, diesel::result::Error>(AddOutcome::Added)
        })
        .await
        .map_err(db_error)
    }

    async fn domains(&self, account: &AccountId) -> Result<Vec<OwnDomain>, StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<DomainRow> = own_domains::table
            .filter(own_domains::account_id.eq(account.as_str()))
            .order(own_domains::name.asc())
            .select(DomainRow::as_select())
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        into_domains(rows)
    }

    async fn domain(
        &self,
        account: &AccountId,
        name: &DomainName,
    ) -> Result<Option<OwnDomain>, StoreError> {
        let mut conn = self.conn().await?;
        let row: Option<DomainRow> = own_domains::table
            .find((account.as_str(), name.as_str()))
            .select(DomainRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        row.map(DomainRow::into_domain).transpose()
    }

    async fn prove(
        &self,
        change: &StepChange,
        dkim: Option<StoredDkim>,
        records: Records,
    ) -> Result<ProveOutcome, StoreError> {
        let mut conn = self.conn().await?;
        let outcome = conn
            .transaction(async |conn| {
                let account = change.account.as_str();
                let name = change.name.as_str();
                if proved_by_other(conn, account, name).await? {
                    return Ok(ProveOutcome::TakenByOther);
                }
                let target = own_domains::table
                    .filter(own_domains::account_id.eq(account))
                    .filter(own_domains::name.eq(name))
                    .filter(own_domains::step.eq(change.from.as_str()))
                    .filter(own_domains::proved_at.is_null());
                let updated = diesel::update(target)
                    .set((
                        own_domains::proved_at.eq(change.checked_at.as_datetime()),
                        own_domains::step.eq(change.to.as_str()),
                        own_domains::checked_at.eq(change.checked_at.as_datetime()),
                        own_domains::next_check_at.eq(change.next_check_at.as_datetime()),
                        own_domains::checks_in_step.eq(change.checks_in_step as i32),
                        own_domains::dkim_selector.eq(dkim.as_ref().map(|k| k.selector.as_str())),
                        own_domains::dkim_algorithm.eq(dkim.as_ref().map(|k| k.algorithm.as_str())),
                        own_domains::dkim_public_key
                            .eq(dkim.as_ref().map(|k| k.public_spki_der.as_slice())),
                        own_domains::dkim_private_key
                            .eq(dkim.as_ref().map(|k| k.sealed_private_key.as_slice())),
                    ))
                    .execute(conn)
                    .await?;
                if updated == 0 {
                    return Ok(ProveOutcome::Stale);
                }
                // Every other claim on the name loses; each owner is told once.
                let at = change.checked_at;
                let losers: Vec<String> = diesel::update(
                    own_domains::table
                        .filter(own_domains::name.eq(name))
                        .filter(own_domains::account_id.ne(account)),
                )
                .set((
                    own_domains::step.eq(Step::Attention.as_str()),
                    own_domains::checks_in_step.eq(0),
                    own_domains::next_check_at.eq((at + TimeDelta::hours(1)).as_datetime()),
                ))
                .returning(own_domains::account_id)
                .get_results(conn)
                .await?;
                let mut all = records.clone();
                for loser in &losers {
                    all.domain(
                        &AccountId::from_trusted(loser.clone()),
                        ActivityKind::DomainAttention,
                        at,
                    );
                }
                write_records(conn, &all).await?;
                Ok::<_, diesel::result::Error>(ProveOutcome::Proved)
            })
            .await;
        match outcome {
            Ok(outcome) => Ok(outcome),
            // Two proofs at once: the unique index lets one through.
            Err(error) if is_unique_violation(&error) => Ok(ProveOutcome::TakenByOther),
            Err(error) => Err(db_error(error)),
        }
    }

    async fn update(&self, change: &StepChange, records: Records) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            let updated = diesel::update(
                own_domains::table
                    .filter(own_domains::account_id.eq(change.account.as_str()))
                    .filter(own_domains::name.eq(change.name.as_str()))
                    .filter(own_domains::step.eq(change.from.as_str())),
            )
            .set((
                own_domains::step.eq(change.to.as_str()),
                own_domains::checked_at.eq(change.checked_at.as_datetime()),
                own_domains::next_check_at.eq(change.next_check_at.as_datetime()),
                own_domains::checks_in_step.eq(change.checks_in_step as i32),
            ))
            .execute(conn)
            .await?;
            if updated == 1 {
                write_records(conn, &records).await?;
            }
            Ok::<_, diesel::result::Error>(updated == 1)
        })
        .await
        .map_err(db_error)
    }

    async fn remove(
        &self,
        account: &AccountId,
        name: &DomainName,
        records: Records,
    ) -> Result<RemoveOutcome, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            // The lock creating an address takes: an address being created
            // on the domain commits first and is seen below, or sees the
            // domain gone (`CreateOutcome::DomainGone`).
            lock_account_row(conn, account).await.optional()?;
            let found: Option<String> = own_domains::table
                .find((account.as_str(), name.as_str()))
                .select(own_domains::name)
                .for_update()
                .first(conn)
                .await
                .optional()?;
            if found.is_none() {
                return Ok(RemoveOutcome::NotFound);
            }
            let in_use: bool = diesel::select(diesel::dsl::exists(
                addresses::table
                    .filter(addresses::account_id.eq(account.as_str()))
                    .filter(addresses::domain.eq(name.as_str())),
            ))
            .get_result(conn)
            .await?;
            if in_use {
                return Ok(RemoveOutcome::InUse);
            }
            diesel::delete(own_domains::table.find((account.as_str(), name.as_str())))
                .execute(conn)
                .await?;
            write_records(conn, &records).await?;
            Ok::<_, diesel::result::Error>(RemoveOutcome::Removed)
        })
        .await
        .map_err(db_error)
    }

    async fn due(&self, now: Timestamp, limit: i64) -> Result<Vec<OwnDomain>, StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<DomainRow> = own_domains::table
            .filter(own_domains::next_check_at.le(now.as_datetime()))
            .order(own_domains::next_check_at.asc())
            .limit(limit)
            .select(DomainRow::as_select())
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        into_domains(rows)
    }

    async fn track_plan_loss(&self, without: &[PlanId], now: Timestamp) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        let plans: Vec<&str> = without.iter().map(|plan| plan.as_str()).collect();
        let marked = diesel::sql_query(
            "UPDATE own_domains d SET plan_lost_at = $2 FROM accounts a \
             WHERE a.id = d.account_id AND a.plan_id = ANY($1) AND d.plan_lost_at IS NULL",
        )
        .bind::<Array<Text>, _>(&plans)
        .bind::<Timestamptz, _>(now.as_datetime())
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        let cleared = diesel::sql_query(
            "UPDATE own_domains d SET plan_lost_at = NULL FROM accounts a \
             WHERE a.id = d.account_id AND NOT (a.plan_id = ANY($1)) AND d.plan_lost_at IS NOT NULL",
        )
        .bind::<Array<Text>, _>(&plans)
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok((marked + cleared) as u64)
    }

    async fn remove_unpaid(&self, now: Timestamp) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        let removed = diesel::sql_query(
            "DELETE FROM own_domains d USING accounts a \
             WHERE a.id = d.account_id AND a.pause_deletes_at IS NOT NULL \
             AND a.pause_deletes_at <= $1",
        )
        .bind::<Timestamptz, _>(now.as_datetime())
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(removed as u64)
    }
}

#[async_trait]
impl OwnDomainDirectory for PgStore {
    async fn own_domain(
        &self,
        account: &AccountId,
        name: &str,
    ) -> Result<Option<OwnDomainState>, StoreError> {
        let mut conn = self.conn().await?;
        let row: Option<(String, Option<DateTime<Utc>>)> = own_domains::table
            .find((account.as_str(), name))
            .filter(own_domains::proved_at.is_not_null())
            .select((own_domains::step, own_domains::plan_lost_at))
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        Ok(row.map(|(step, lost)| OwnDomainState {
            live: step == Step::Live.as_str(),
            plan_lost_at: lost.map(Timestamp::from_datetime),
        }))
    }
}

#[async_trait]
impl OwnDomainGate for PgStore {
    async fn own_domain(&self, name: &str) -> Result<Option<OwnDomainHold>, StoreError> {
        let mut conn = self.conn().await?;
        let row: Option<(String, Option<DateTime<Utc>>)> = own_domains::table
            .inner_join(accounts::table)
            .filter(own_domains::name.eq(name))
            .filter(own_domains::proved_at.is_not_null())
            .select((accounts::plan_id, own_domains::plan_lost_at))
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        row.map(|(plan, lost)| {
            Ok(OwnDomainHold {
                plan: plan.parse::<PlanId>().map_err(StoreError::failed)?,
                plan_lost_at: lost.map(Timestamp::from_datetime),
            })
        })
        .transpose()
    }
}

impl PgStore {
    /// The account that proved the own domain `name`, its DKIM selector and
    /// sealed private key, for signing mail sent from it. `None` for any
    /// other name.
    pub async fn domain_dkim_key(
        &self,
        name: &str,
    ) -> Result<Option<(AccountId, String, Vec<u8>)>, StoreError> {
        let mut conn = self.conn().await?;
        let row: Option<(String, Option<String>, Option<Vec<u8>>)> = own_domains::table
            .filter(own_domains::name.eq(name))
            .filter(own_domains::proved_at.is_not_null())
            .select((
                own_domains::account_id,
                own_domains::dkim_selector,
                own_domains::dkim_private_key,
            ))
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        Ok(row.and_then(|(account, selector, key)| {
            Some((AccountId::from_trusted(account), selector?, key?))
        }))
    }

    /// Replaces the sealed DKIM private key of `account`'s domain `name`
    /// when it is still `old` (sealing it again in the current form);
    /// `false` when it changed meanwhile.
    pub async fn replace_domain_dkim_key(
        &self,
        account: &AccountId,
        name: &str,
        old: &[u8],
        new: &[u8],
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let updated = diesel::update(
            own_domains::table
                .filter(own_domains::account_id.eq(account.as_str()))
                .filter(own_domains::name.eq(name))
                .filter(own_domains::dkim_private_key.eq(old)),
        )
        .set(own_domains::dkim_private_key.eq(new))
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(updated > 0)
    }

    /// Every proved own domain with its DKIM public key: the zones the
    /// authoritative DNS serves, read whole in one query so that it asks
    /// the database once per cache life, whatever names it is asked.
    pub async fn proved_zones(&self) -> Result<Vec<DomainZone>, StoreError> {
        let mut conn = self.conn().await?;
        type ZoneRow = (
            String,
            String,
            Option<String>,
            Option<String>,
            Option<Vec<u8>>,
        );
        let rows: Vec<ZoneRow> = own_domains::table
            .filter(own_domains::proved_at.is_not_null())
            .select((
                own_domains::name,
                own_domains::step,
                own_domains::dkim_selector,
                own_domains::dkim_algorithm,
                own_domains::dkim_public_key,
            ))
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|(name, step, selector, algorithm, key)| DomainZone {
                name,
                step,
                dkim: match (selector, algorithm, key) {
                    (Some(selector), Some(algorithm), Some(key)) => {
                        Some((selector, algorithm, key))
                    }
                    _ => None,
                },
            })
            .collect())
    }
}
