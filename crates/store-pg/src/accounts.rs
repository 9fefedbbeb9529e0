//! `AccountRepository` over PostgreSQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_accounts::{
    Account, AccountRepository, ApiKey, ApiKeyOutcome, Bearer, Challenge, FoundBearer, NewAccount,
    RegisterOutcome, RegistrationSource, Session,
};
use sealpost_activity::Records;
use sealpost_kernel::{AccountId, ApiKeyId, DeviceId, PlanId, SessionId, StoreError, Timestamp};
use sealpost_seal::sha256;

use crate::addresses::retire_address;
use crate::devices::DEVICE_ID_KIND;
use crate::records::{delete_messages_of, lock_account_row, retire_id, write_records};
use crate::schema::{
    account_suspensions, accounts, addresses, auth_challenges, device_credentials, devices,
    registrations, retired_account_ids, sessions,
};
use crate::{PgStore, bytes32, db_error};

#[derive(Queryable, Selectable)]
#[diesel(table_name = accounts, check_for_backend(diesel::pg::Pg))]
struct AccountRow {
    id: String,
    plan_id: String,
    auth_public_key: Vec<u8>,
    created_at: DateTime<Utc>,
}

impl AccountRow {
    fn into_account(self) -> Result<Account, StoreError> {
        Ok(Account {
            id: AccountId::from_trusted(self.id),
            plan: self.plan_id.parse::<PlanId>().map_err(StoreError::failed)?,
            auth_public_key: bytes32(self.auth_public_key)?,
            created_at: self.created_at.into(),
        })
    }
}

#[derive(Insertable)]
#[diesel(table_name = accounts)]
struct NewAccountRow<'a> {
    id: &'a str,
    plan_id: &'a str,
    auth_public_key: &'a [u8],
    auth_verifier_hash: &'a [u8],
    created_at: DateTime<Utc>,
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = sessions, check_for_backend(diesel::pg::Pg))]
struct SessionRow {
    id: String,
    account_id: String,
    token_hash: Vec<u8>,
    created_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
}

impl SessionRow {
    fn from_session(session: &Session) -> Self {
        Self {
            id: session.id.to_string(),
            account_id: session.account_id.to_string(),
            token_hash: session.token_hash.to_vec(),
            created_at: session.created_at.as_datetime(),
            expires_at: session.expires_at.as_datetime(),
        }
    }

    fn into_session(self) -> Result<Session, StoreError> {
        Ok(Session {
            id: SessionId::from_trusted(self.id),
            account_id: AccountId::from_trusted(self.account_id),
            token_hash: bytes32(self.token_hash)?,
            created_at: self.created_at.into(),
            expires_at: self.expires_at.into(),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = auth_challenges, check_for_backend(diesel::pg::Pg))]
struct ChallengeRow {
    nonce_hash: Vec<u8>,
    account_id: String,
    expires_at: DateTime<Utc>,
}

#[async_trait]
impl AccountRepository for PgStore {
    async fn account(&self, id: &AccountId) -> Result<Option<Account>, StoreError> {
        let mut conn = self.conn().await?;
        accounts::table
            .find(id.as_str())
            .select(AccountRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?
            .map(AccountRow::into_account)
            .transpose()
    }

    async fn register(
        &self,
        new: NewAccount,
        first_session: Session,
        source: RegistrationSource,
    ) -> Result<RegisterOutcome, StoreError> {
        let mut conn = self.conn().await?;
        let retired_hash = sha256(new.account.id.as_str().as_bytes());
        conn.transaction(async |conn| {
            // One registration at a time per network: count and insert
            // together, whichever API process takes it.
            diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 11))")
                .bind::<diesel::sql_types::Text, _>(sealpost_seal::b64::encode(
                    &source.network_hash,
                ))
                .execute(conn)
                .await?;
            let recent = registrations::table
                .filter(registrations::network_hash.eq(source.network_hash.as_slice()))
                .filter(registrations::registered_at.gt(source.since.as_datetime()));
            let (held, oldest): (i64, Option<DateTime<Utc>>) = recent
                .select((
                    diesel::dsl::count_star(),
                    diesel::dsl::min(registrations::registered_at),
                ))
                .first(conn)
                .await?;
            if let Some(oldest) = oldest
                && held >= i64::from(source.limit)
            {
                return Ok(RegisterOutcome::TooMany {
                    oldest: oldest.into(),
                });
            }
            let retired: i64 = retired_account_ids::table
                .filter(retired_account_ids::id_hash.eq(retired_hash.as_slice()))
                .count()
                .get_result(conn)
                .await?;
            if retired > 0 {
                return Ok(RegisterOutcome::IdTaken);
            }
            let inserted = diesel::insert_into(accounts::table)
                .values(NewAccountRow {
                    id: new.account.id.as_str(),
                    plan_id: new.account.plan.as_str(),
                    auth_public_key: &new.account.auth_public_key,
                    auth_verifier_hash: &new.auth_verifier_hash,
                    created_at: new.account.created_at.as_datetime(),
                })
                .on_conflict_do_nothing()
                .execute(conn)
                .await?;
            if inserted == 0 {
                return Ok(RegisterOutcome::IdTaken);
            }
            diesel::insert_into(sessions::table)
                .values(SessionRow::from_session(&first_session))
                .execute(conn)
                .await?;
            diesel::insert_into(registrations::table)
                .values((
                    registrations::network_hash.eq(source.network_hash.as_slice()),
                    registrations::registered_at.eq(new.account.created_at.as_datetime()),
                ))
                .execute(conn)
                .await?;
            Ok::<_, diesel::result::Error>(RegisterOutcome::Registered)
        })
        .await
        .map_err(db_error)
    }

    async fn save_challenge(&self, challenge: Challenge) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        diesel::insert_into(auth_challenges::table)
            .values(ChallengeRow {
                nonce_hash: challenge.nonce_hash.to_vec(),
                account_id: challenge.account_id.into_string(),
                expires_at: challenge.expires_at.as_datetime(),
            })
            .execute(&mut conn)
            .await
            .map(|_| ())
            .map_err(db_error)
    }

    async fn take_challenge(&self, nonce_hash: [u8; 32]) -> Result<Option<Challenge>, StoreError> {
        let mut conn = self.conn().await?;
        let row: Option<ChallengeRow> = diesel::delete(
            auth_challenges::table.filter(auth_challenges::nonce_hash.eq(nonce_hash.as_slice())),
        )
        .returning(ChallengeRow::as_returning())
        .get_result(&mut conn)
        .await
        .optional()
        .map_err(db_error)?;
        row.map(|row| {
            Ok(Challenge {
                nonce_hash: bytes32(row.nonce_hash)?,
                account_id: AccountId::from_trusted(row.account_id),
                expires_at: row.expires_at.into(),
            })
        })
        .transpose()
    }

    async fn create_session(&self, session: Session, records: Records) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            diesel::insert_into(sessions::table)
                .values(SessionRow::from_session(&session))
                .execute(conn)
                .await?;
            write_records(conn, &records).await
        })
        .await
        .map_err(db_error)
    }

    async fn bearer(&self, token_hash: [u8; 32]) -> Result<Option<FoundBearer>, StoreError> {
        let mut conn = self.conn().await?;
        // The suspension comes with the token row (a left join), so an
        // authenticated request costs one query per credential kind.
        let session: Option<(SessionRow, Option<String>)> = session_bearer(&token_hash)
            .get_result(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        if let Some((row, suspension)) = session {
            return Ok(Some(FoundBearer {
                bearer: Bearer::Session(row.into_session()?),
                suspended: suspension.is_some(),
            }));
        }
        // Disabling or removing a device deletes its credential row, so a
        // match here is a live credential.
        let device: Option<(String, String, Option<String>)> = device_credentials::table
            .left_join(
                account_suspensions::table
                    .on(account_suspensions::account_id.eq(device_credentials::account_id)),
            )
            .filter(device_credentials::token_hash.eq(token_hash.as_slice()))
            .select((
                device_credentials::account_id,
                device_credentials::device_id,
                account_suspensions::account_id.nullable(),
            ))
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        if let Some((account_id, device_id, suspension)) = device {
            return Ok(Some(FoundBearer {
                bearer: Bearer::Device {
                    account_id: AccountId::from_trusted(account_id),
                    device_id: DeviceId::from_trusted(device_id),
                },
                suspended: suspension.is_some(),
            }));
        }
        crate::api_keys::bearer(&mut conn, &token_hash).await
    }

    async fn create_api_key(
        &self,
        key: ApiKey,
        plan: PlanId,
        limit: u32,
    ) -> Result<ApiKeyOutcome, StoreError> {
        crate::api_keys::create(self, key, plan, limit).await
    }

    async fn api_keys(&self, account: &AccountId) -> Result<Vec<ApiKey>, StoreError> {
        crate::api_keys::list(self, account).await
    }

    async fn delete_api_key(
        &self,
        account: &AccountId,
        id: &ApiKeyId,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        crate::api_keys::delete(self, account, id, at).await
    }

    async fn touch_api_key(&self, id: &ApiKeyId, hour: Timestamp) -> Result<(), StoreError> {
        crate::api_keys::touch(self, id, hour).await
    }

    async fn sessions(&self, account: &AccountId) -> Result<Vec<Session>, StoreError> {
        let mut conn = self.conn().await?;
        sessions::table
            .filter(sessions::account_id.eq(account.as_str()))
            .select(SessionRow::as_select())
            .load(&mut conn)
            .await
            .map_err(db_error)?
            .into_iter()
            .map(SessionRow::into_session)
            .collect()
    }

    async fn delete_session(
        &self,
        account: &AccountId,
        id: &SessionId,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let deleted = diesel::delete(
            sessions::table
                .filter(sessions::id.eq(id.as_str()))
                .filter(sessions::account_id.eq(account.as_str())),
        )
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(deleted > 0)
    }

    async fn delete_sessions_except(
        &self,
        account: &AccountId,
        keep: &SessionId,
    ) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        let deleted = diesel::delete(
            sessions::table
                .filter(sessions::account_id.eq(account.as_str()))
                .filter(sessions::id.ne(keep.as_str())),
        )
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok(deleted as u64)
    }

    async fn erase(
        &self,
        account: &AccountId,
        at: Timestamp,
    ) -> Result<Option<String>, StoreError> {
        let mut conn = self.conn().await?;
        let id_hash = sha256(account.as_str().as_bytes());
        conn.transaction(async |conn| {
            // Locked first: a delivery's foreign key check waits for this
            // lock, so no message is added after its mail is deleted below.
            lock_account_row(conn, account).await.optional()?;
            // Addresses and client ids are retired before they go: never issued again.
            let owned: Vec<(String, String)> = addresses::table
                .filter(addresses::account_id.eq(account.as_str()))
                .select((addresses::id, addresses::email_address))
                .load(conn)
                .await?;
            for (id, email_address) in &owned {
                retire_address(conn, id, email_address, at).await?;
            }
            let devices: Vec<String> = devices::table
                .filter(devices::account_id.eq(account.as_str()))
                .select(devices::id)
                .load(conn)
                .await?;
            for id in &devices {
                retire_id(conn, DEVICE_ID_KIND, id, at).await?;
            }
            crate::api_keys::retire_all(conn, account, at).await?;
            delete_messages_of(conn, "m.account_id = $1", account.as_str(), Some(at)).await?;
            let renewing = crate::billing_cards::stop_renewal_on_erasure(conn, account, at).await?;
            // Everything the account owns hangs off `accounts` with ON DELETE CASCADE:
            // devices, credentials, addresses, activity, events, pairing claims.
            diesel::delete(accounts::table.find(account.as_str()))
                .execute(conn)
                .await?;
            diesel::delete(
                auth_challenges::table.filter(auth_challenges::account_id.eq(account.as_str())),
            )
            .execute(conn)
            .await?;
            diesel::insert_into(retired_account_ids::table)
                .values((
                    retired_account_ids::id_hash.eq(id_hash.as_slice()),
                    retired_account_ids::retired_at.eq(at.as_datetime()),
                ))
                .on_conflict_do_nothing()
                .execute(conn)
                .await?;
            Ok::<_, diesel::result::Error>(renewing)
        })
        .await
        .map_err(db_error)
    }

    async fn sweep_expired(
        &self,
        now: Timestamp,
        sessions_before: Timestamp,
        registrations_before: Timestamp,
    ) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        let challenges = diesel::delete(
            auth_challenges::table.filter(auth_challenges::expires_at.le(now.as_datetime())),
        )
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        let sessions = diesel::delete(
            sessions::table.filter(sessions::expires_at.le(sessions_before.as_datetime())),
        )
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        // Registrations past the window no longer count; nothing else reads them.
        diesel::delete(
            registrations::table
                .filter(registrations::registered_at.le(registrations_before.as_datetime())),
        )
        .execute(&mut conn)
        .await
        .map_err(db_error)?;
        Ok((challenges + sessions) as u64)
    }
}

/// The session a token hash names, with its account's suspension (a left
/// join): the first statement of every request signed in with a session.
#[diesel::dsl::auto_type(no_type_alias)]
fn session_bearer<'a>(token_hash: &'a [u8; 32]) -> _ {
    let hash: &'a [u8] = token_hash.as_slice();
    let row: diesel::dsl::AsSelect<SessionRow, diesel::pg::Pg> = SessionRow::as_select();
    let suspension: diesel::dsl::Nullable<account_suspensions::account_id> =
        account_suspensions::account_id.nullable();
    sessions::table
        .left_join(
            account_suspensions::table.on(account_suspensions::account_id.eq(sessions::account_id)),
        )
        .filter(sessions::token_hash.eq(hash))
        .select((row, suspension))
        .limit(1_i64)
}

/// The SQL of [`session_bearer`], as diesel's `debug_query` writes it.
pub(crate) fn session_bearer_sql(token_hash: &[u8; 32]) -> String {
    diesel::debug_query::<diesel::pg::Pg, _>(&session_bearer(token_hash)).to_string()
}
