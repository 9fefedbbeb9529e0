//! `StaffRepository` over PostgreSQL: staff tokens, the audit log, abuse
//! reports, suspensions and the operator switches.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text, Timestamptz};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::{AccountId, PageRequest, StoreError, Timestamp};
use sealpost_support::{
    AbuseReport, AbuseStatus, AbuseTarget, AuditEntry, PublicKey, Role, Roles, StaffMember,
    StaffRepository, StaffTokenInfo, Suspension, Switches,
};

use crate::schema::{abuse_reports, account_suspensions, accounts, staff_audit, staff_tokens};
use crate::{PgStore, db_error};

#[derive(Queryable, Selectable)]
#[diesel(table_name = abuse_reports, check_for_backend(diesel::pg::Pg))]
struct ReportRow {
    id: String,
    email_address: Option<String>,
    message_id: Option<String>,
    reason: String,
    details: Option<String>,
    contact: Option<String>,
    status: String,
    account_id: Option<String>,
    created_at: DateTime<Utc>,
    resolved_at: Option<DateTime<Utc>>,
    resolution: Option<String>,
}

impl TryFrom<ReportRow> for AbuseReport {
    type Error = StoreError;

    fn try_from(row: ReportRow) -> Result<Self, StoreError> {
        let target = match (row.email_address, row.message_id) {
            (Some(address), _) => AbuseTarget::EmailAddress(address),
            (None, Some(message)) => AbuseTarget::MessageId(message),
            (None, None) => return Err(StoreError::Failed("a report without a target".into())),
        };
        Ok(AbuseReport {
            id: row.id,
            target,
            reason: row.reason.parse().map_err(StoreError::failed)?,
            details: row.details,
            contact: row.contact,
            status: row.status.parse().map_err(StoreError::failed)?,
            account: row.account_id.map(AccountId::from_trusted),
            created_at: row.created_at.into(),
            resolved_at: row.resolved_at.map(Timestamp::from),
            resolution: row.resolution,
        })
    }
}

/// A token's roles as stored: their names.
fn role_names(roles: &Roles) -> Vec<&'static str> {
    roles.as_slice().iter().map(|role| role.as_str()).collect()
}

/// Roles as stored; a name the service does not know is a failure (a CHECK
/// keeps them known).
fn roles_of(names: &[String]) -> Result<Roles, StoreError> {
    let roles = names
        .iter()
        .map(|name| name.parse::<Role>().map_err(StoreError::failed))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Roles::of(&roles))
}

/// Writes one audit entry on `conn`: inside the transaction of the action it
/// records.
pub(crate) async fn insert_audit(
    conn: &mut AsyncPgConnection,
    entry: &AuditEntry,
) -> QueryResult<()> {
    diesel::insert_into(staff_audit::table)
        .values((
            staff_audit::actor.eq(&entry.actor),
            staff_audit::action.eq(&entry.action),
            staff_audit::target.eq(entry.target.as_deref()),
            staff_audit::note.eq(entry.note.as_deref()),
            staff_audit::at.eq(entry.at.as_datetime()),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

#[async_trait]
impl StaffRepository for PgStore {
    async fn create_token(
        &self,
        token: &StaffTokenInfo,
        token_hash: [u8; 32],
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            diesel::insert_into(staff_tokens::table)
                .values((
                    staff_tokens::id.eq(&token.id),
                    staff_tokens::name.eq(&token.name),
                    staff_tokens::token_hash.eq(token_hash.as_slice()),
                    staff_tokens::created_at.eq(token.created_at.as_datetime()),
                    staff_tokens::expires_at.eq(token.expires_at.as_datetime()),
                    staff_tokens::roles.eq(role_names(&token.roles)),
                ))
                .execute(conn)
                .await?;
            insert_audit(conn, audit).await
        })
        .await
        .map_err(db_error)
    }

    async fn staff_by_token(
        &self,
        token_hash: [u8; 32],
    ) -> Result<Option<StaffMember>, StoreError> {
        let mut conn = self.conn().await?;
        let row: Option<(String, String, Vec<String>, DateTime<Utc>)> = staff_tokens::table
            .filter(staff_tokens::token_hash.eq(token_hash.as_slice()))
            .filter(staff_tokens::revoked_at.is_null())
            .select((
                staff_tokens::id,
                staff_tokens::name,
                staff_tokens::roles,
                staff_tokens::expires_at,
            ))
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        row.map(|(id, name, roles, expires_at)| {
            Ok(StaffMember {
                id,
                name,
                roles: roles_of(&roles)?,
                expires_at: expires_at.into(),
            })
        })
        .transpose()
    }

    async fn revoke_token(
        &self,
        id_or_name: &str,
        at: Timestamp,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            let revoked = diesel::update(
                staff_tokens::table
                    .filter(
                        staff_tokens::id
                            .eq(id_or_name)
                            .or(staff_tokens::name.eq(id_or_name)),
                    )
                    .filter(staff_tokens::revoked_at.is_null()),
            )
            .set(staff_tokens::revoked_at.eq(at.as_datetime()))
            .execute(conn)
            .await?;
            if revoked > 0 {
                insert_audit(conn, audit).await?;
            }
            Ok(revoked > 0)
        })
        .await
        .map_err(db_error)
    }

    async fn tokens(&self) -> Result<Vec<StaffTokenInfo>, StoreError> {
        type TokenRow = (
            String,
            String,
            Vec<String>,
            DateTime<Utc>,
            DateTime<Utc>,
            Option<DateTime<Utc>>,
        );
        let mut conn = self.conn().await?;
        let rows: Vec<TokenRow> = staff_tokens::table
            .order(staff_tokens::created_at.asc())
            .select((
                staff_tokens::id,
                staff_tokens::name,
                staff_tokens::roles,
                staff_tokens::created_at,
                staff_tokens::expires_at,
                staff_tokens::revoked_at,
            ))
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        rows.into_iter()
            .map(|(id, name, roles, created_at, expires_at, revoked_at)| {
                Ok(StaffTokenInfo {
                    id,
                    name,
                    roles: roles_of(&roles)?,
                    created_at: created_at.into(),
                    expires_at: expires_at.into(),
                    revoked_at: revoked_at.map(Timestamp::from),
                })
            })
            .collect()
    }

    async fn write_audit(&self, entry: &AuditEntry) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        insert_audit(&mut conn, entry).await.map_err(db_error)
    }

    async fn audit_log(
        &self,
        page: &PageRequest,
        read: &AuditEntry,
    ) -> Result<Vec<(i64, AuditEntry)>, StoreError> {
        type AuditRow = (
            i64,
            String,
            String,
            Option<String>,
            Option<String>,
            DateTime<Utc>,
        );
        // An audit cursor names a row id; anything else was not handed out.
        let after = match &page.after {
            Some(after) => Some((
                after.at.as_datetime(),
                after
                    .id
                    .parse::<i64>()
                    .map_err(|_| StoreError::Failed("an audit cursor without a row id".into()))?,
            )),
            None => None,
        };
        let mut conn = self.conn().await?;
        let rows: Vec<AuditRow> = conn
            .transaction(async |conn| {
                let mut query = staff_audit::table
                    .order((staff_audit::at.desc(), staff_audit::id.desc()))
                    .limit(page.fetch_limit())
                    .select((
                        staff_audit::id,
                        staff_audit::actor,
                        staff_audit::action,
                        staff_audit::target,
                        staff_audit::note,
                        staff_audit::at,
                    ))
                    .into_boxed();
                if let Some((at, id)) = after {
                    query = query.filter(
                        staff_audit::at
                            .lt(at)
                            .or(staff_audit::at.eq(at).and(staff_audit::id.lt(id))),
                    );
                }
                let rows = query.load(conn).await?;
                insert_audit(conn, read).await?;
                diesel::QueryResult::Ok(rows)
            })
            .await
            .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|(id, actor, action, target, note, at)| {
                (
                    id,
                    AuditEntry {
                        actor,
                        action,
                        target,
                        note,
                        at: at.into(),
                    },
                )
            })
            .collect())
    }

    async fn add_report(&self, report: &AbuseReport) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        let (address, message) = match &report.target {
            AbuseTarget::EmailAddress(address) => (Some(address.as_str()), None),
            AbuseTarget::MessageId(message) => (None, Some(message.as_str())),
        };
        // The account is looked up in the same statement and never returned.
        diesel::sql_query(
            "INSERT INTO abuse_reports (id, email_address, message_id, reason, details, contact, \
             status, account_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, 'open', \
             COALESCE((SELECT account_id FROM addresses WHERE email_address = $2), \
                      (SELECT a.account_id FROM messages m JOIN addresses a ON a.id = m.inbox_id \
                       WHERE m.id = $3)), $7)",
        )
        .bind::<Text, _>(&report.id)
        .bind::<Nullable<Text>, _>(address)
        .bind::<Nullable<Text>, _>(message)
        .bind::<Text, _>(report.reason.as_str())
        .bind::<Nullable<Text>, _>(report.details.as_deref())
        .bind::<Nullable<Text>, _>(report.contact.as_deref())
        .bind::<Timestamptz, _>(report.created_at.as_datetime())
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    async fn reports(
        &self,
        status: Option<AbuseStatus>,
        page: &PageRequest,
        read: &AuditEntry,
    ) -> Result<Vec<AbuseReport>, StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<ReportRow> = conn
            .transaction(async |conn| {
                let mut query = abuse_reports::table
                    .order((abuse_reports::created_at.desc(), abuse_reports::id.desc()))
                    .limit(page.fetch_limit())
                    .select(ReportRow::as_select())
                    .into_boxed();
                if let Some(status) = status {
                    query = query.filter(abuse_reports::status.eq(status.as_str()));
                }
                if let Some(after) = &page.after {
                    let at = after.at.as_datetime();
                    query = query.filter(
                        abuse_reports::created_at
                            .lt(at)
                            .or(abuse_reports::created_at
                                .eq(at)
                                .and(abuse_reports::id.lt(after.id.clone()))),
                    );
                }
                let rows = query.load(conn).await?;
                insert_audit(conn, read).await?;
                diesel::QueryResult::Ok(rows)
            })
            .await
            .map_err(db_error)?;
        rows.into_iter().map(AbuseReport::try_from).collect()
    }

    async fn resolve_report(
        &self,
        id: &str,
        resolution: &str,
        at: Timestamp,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            let changed = diesel::update(
                abuse_reports::table
                    .find(id)
                    .filter(abuse_reports::status.eq(AbuseStatus::Open.as_str())),
            )
            .set((
                abuse_reports::status.eq(AbuseStatus::Resolved.as_str()),
                abuse_reports::resolved_at.eq(at.as_datetime()),
                abuse_reports::resolution.eq(resolution),
            ))
            .execute(conn)
            .await?;
            if changed > 0 {
                insert_audit(conn, audit).await?;
            }
            Ok(changed > 0)
        })
        .await
        .map_err(db_error)
    }

    async fn set_suspension(
        &self,
        account: &AccountId,
        suspension: Option<Suspension>,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            let exists: i64 = accounts::table
                .filter(accounts::id.eq(account.as_str()))
                .count()
                .get_result(conn)
                .await?;
            if exists == 0 {
                return Ok(false);
            }
            match &suspension {
                Some(suspension) => {
                    diesel::insert_into(account_suspensions::table)
                        .values((
                            account_suspensions::account_id.eq(account.as_str()),
                            account_suspensions::reason.eq(&suspension.reason),
                            account_suspensions::since.eq(suspension.since.as_datetime()),
                        ))
                        .on_conflict(account_suspensions::account_id)
                        .do_update()
                        .set(account_suspensions::reason.eq(&suspension.reason))
                        .execute(conn)
                        .await?;
                }
                None => {
                    diesel::delete(account_suspensions::table.find(account.as_str()))
                        .execute(conn)
                        .await?;
                }
            }
            insert_audit(conn, audit).await?;
            Ok(true)
        })
        .await
        .map_err(db_error)
    }

    async fn suspension(&self, account: &AccountId) -> Result<Option<Suspension>, StoreError> {
        let mut conn = self.conn().await?;
        let row: Option<(String, DateTime<Utc>)> = account_suspensions::table
            .find(account.as_str())
            .select((account_suspensions::reason, account_suspensions::since))
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        Ok(row.map(|(reason, since)| Suspension {
            reason,
            since: since.into(),
        }))
    }

    async fn update_switches(
        &self,
        support_key: Option<PublicKey>,
        support_off: Option<bool>,
        webhooks_paused: Option<bool>,
        at: Timestamp,
        audit: &AuditEntry,
    ) -> Result<Switches, StoreError> {
        self.set_switches(support_key, support_off, webhooks_paused, at, audit)
            .await
    }
}
