//! `TeamRepository` over PostgreSQL. What a grant lets a member do is
//! decided by the store's one access rule (`access.rs`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Text};
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_kernel::{AccountId, AddressId, PlanId, StoreError, Timestamp};
use sealpost_teams::{
    Access, AddOutcome, Grant, Member, MemberGrant, Membership, NewMember, OwnedAddress,
    SharedAddress, SharedKey, TeamRepository,
};

use crate::records::{box_from_json, box_to_json, lock_account_plan};
use crate::schema::{accounts, addresses, team_grants, team_members};
use crate::{PgStore, bytes32, db_error};

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

fn access(text: &str) -> Result<Access, StoreError> {
    text.parse().map_err(StoreError::failed)
}

fn epoch(value: i32) -> Result<u32, StoreError> {
    u32::try_from(value).map_err(StoreError::failed)
}

#[async_trait]
impl TeamRepository for PgStore {
    async fn plan(&self, account: &AccountId) -> Result<Option<PlanId>, StoreError> {
        let mut conn = self.conn().await?;
        let plan: Option<String> = accounts::table
            .find(account.as_str())
            .select(accounts::plan_id)
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        plan.map(|plan| plan.parse().map_err(StoreError::failed))
            .transpose()
    }

    async fn sign_in_key(&self, account: &AccountId) -> Result<Option<[u8; 32]>, StoreError> {
        let mut conn = self.conn().await?;
        let key: Option<Vec<u8>> = accounts::table
            .find(account.as_str())
            .select(accounts::auth_public_key)
            .first(&mut conn)
            .await
            .optional()
            .map_err(db_error)?;
        key.map(bytes32).transpose()
    }

    async fn members(&self, owner: &AccountId) -> Result<Vec<Member>, StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<(String, Vec<u8>, serde_json::Value, DateTime<Utc>)> = team_members::table
            .filter(team_members::owner_id.eq(owner.as_str()))
            .select((
                team_members::member_id,
                team_members::public_key,
                team_members::pin,
                team_members::joined_at,
            ))
            .order((team_members::joined_at.asc(), team_members::member_id.asc()))
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        let grants: Vec<(String, String, i32, String)> = team_grants::table
            .filter(team_grants::owner_id.eq(owner.as_str()))
            .select((
                team_grants::member_id,
                team_grants::address_id,
                team_grants::epoch,
                team_grants::access,
            ))
            .order((team_grants::address_id.asc(), team_grants::epoch.asc()))
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        rows.into_iter()
            .map(|(member, public_key, pin, joined_at)| {
                let grants = grants
                    .iter()
                    .filter(|(of, ..)| *of == member)
                    .map(|(_, address, epoch_value, access_text)| {
                        Ok(MemberGrant {
                            address: AddressId::from_trusted(address.clone()),
                            epoch: epoch(*epoch_value)?,
                            access: access(access_text)?,
                        })
                    })
                    .collect::<Result<Vec<_>, StoreError>>()?;
                Ok(Member {
                    member: AccountId::from_trusted(member),
                    public_key: bytes32(public_key)?,
                    pin: box_from_json(pin)?,
                    joined_at: Timestamp::from(joined_at),
                    grants,
                })
            })
            .collect()
    }

    async fn add_member(
        &self,
        new: NewMember,
        plan: PlanId,
        limit: u32,
    ) -> Result<AddOutcome, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            // The owner's row serialises adds and plan changes, so the plan
            // and the count hold until commit.
            let current = lock_account_plan(conn, &new.owner).await?;
            if current != plan {
                return Ok(AddOutcome::PlanChanged(current));
            }
            let present: i64 = team_members::table
                .filter(team_members::owner_id.eq(new.owner.as_str()))
                .filter(team_members::member_id.eq(new.member.as_str()))
                .count()
                .get_result(conn)
                .await?;
            if present > 0 {
                return Ok(AddOutcome::AlreadyMember);
            }
            let members: i64 = team_members::table
                .filter(team_members::owner_id.eq(new.owner.as_str()))
                .count()
                .get_result(conn)
                .await?;
            if members >= i64::from(limit) {
                return Ok(AddOutcome::LimitReached);
            }
            diesel::insert_into(team_members::table)
                .values((
                    team_members::owner_id.eq(new.owner.as_str()),
                    team_members::member_id.eq(new.member.as_str()),
                    team_members::public_key.eq(new.public_key.to_vec()),
                    team_members::pin.eq(box_to_json(&new.pin)),
                    team_members::joined_at.eq(new.joined_at.as_datetime()),
                ))
                .execute(conn)
                .await?;
            Ok::<_, diesel::result::Error>(AddOutcome::Added)
        })
        .await
        .map_err(db_error)
    }

    async fn remove_member(
        &self,
        owner: &AccountId,
        member: &AccountId,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        // The grants go with it (foreign key, cascade).
        diesel::delete(
            team_members::table
                .filter(team_members::owner_id.eq(owner.as_str()))
                .filter(team_members::member_id.eq(member.as_str())),
        )
        .execute(&mut conn)
        .await
        .map(|deleted| deleted > 0)
        .map_err(db_error)
    }

    async fn owned_addresses(
        &self,
        owner: &AccountId,
        addresses: Vec<AddressId>,
    ) -> Result<Vec<(AddressId, OwnedAddress)>, StoreError> {
        let ids: Vec<String> = addresses.into_iter().map(AddressId::into_string).collect();
        let mut conn = self.conn().await?;
        let rows: Vec<(String, i32)> = addresses::table
            .filter(addresses::account_id.eq(owner.as_str()))
            .filter(addresses::id.eq_any(ids))
            .select((addresses::id, addresses::key_epoch))
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        rows.into_iter()
            .map(|(id, key_epoch)| {
                Ok((
                    AddressId::from_trusted(id),
                    OwnedAddress {
                        key_epoch: epoch(key_epoch)?,
                    },
                ))
            })
            .collect()
    }

    async fn put_grants(
        &self,
        owner: &AccountId,
        member: &AccountId,
        grants: Vec<Grant>,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            // Locks the membership: a removal waits for the grants or wins.
            let present: Option<String> = team_members::table
                .filter(team_members::owner_id.eq(owner.as_str()))
                .filter(team_members::member_id.eq(member.as_str()))
                .select(team_members::member_id)
                .for_update()
                .first(conn)
                .await
                .optional()?;
            if present.is_none() {
                return Ok(false);
            }
            // Addresses deleted since the check: the foreign key refuses the
            // insert and the whole request fails; checked again under lock.
            let ids: Vec<&str> = grants.iter().map(|grant| grant.address.as_str()).collect();
            let owned: i64 = diesel::sql_query(
                "SELECT count(*) AS n FROM (SELECT 1 FROM addresses \
                 WHERE account_id = $1 AND id = ANY($2) FOR SHARE) a",
            )
            .bind::<Text, _>(owner.as_str())
            .bind::<Array<Text>, _>(&ids)
            .get_result::<Count>(conn)
            .await?
            .n;
            let mut distinct = ids.clone();
            distinct.sort_unstable();
            distinct.dedup();
            if owned != distinct.len() as i64 {
                return Ok(false);
            }
            for grant in &grants {
                diesel::insert_into(team_grants::table)
                    .values((
                        team_grants::owner_id.eq(owner.as_str()),
                        team_grants::member_id.eq(member.as_str()),
                        team_grants::address_id.eq(grant.address.as_str()),
                        team_grants::epoch.eq(i32::try_from(grant.epoch).unwrap_or(i32::MAX)),
                        team_grants::access.eq(grant.access.as_str()),
                        team_grants::sealed.eq(box_to_json(&grant.sealed)),
                        team_grants::granted_at.eq(grant.granted_at.as_datetime()),
                    ))
                    .on_conflict((
                        team_grants::owner_id,
                        team_grants::member_id,
                        team_grants::address_id,
                        team_grants::epoch,
                    ))
                    .do_update()
                    .set((
                        team_grants::access.eq(grant.access.as_str()),
                        team_grants::sealed.eq(box_to_json(&grant.sealed)),
                        team_grants::granted_at.eq(grant.granted_at.as_datetime()),
                    ))
                    .execute(conn)
                    .await?;
                // One access per address: every epoch the member holds.
                diesel::update(
                    team_grants::table
                        .filter(team_grants::owner_id.eq(owner.as_str()))
                        .filter(team_grants::member_id.eq(member.as_str()))
                        .filter(team_grants::address_id.eq(grant.address.as_str())),
                )
                .set(team_grants::access.eq(grant.access.as_str()))
                .execute(conn)
                .await?;
            }
            Ok::<_, diesel::result::Error>(true)
        })
        .await
        .map_err(db_error)
    }

    async fn remove_grants(
        &self,
        owner: &AccountId,
        member: &AccountId,
        address: &AddressId,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        diesel::delete(
            team_grants::table
                .filter(team_grants::owner_id.eq(owner.as_str()))
                .filter(team_grants::member_id.eq(member.as_str()))
                .filter(team_grants::address_id.eq(address.as_str())),
        )
        .execute(&mut conn)
        .await
        .map(|deleted| deleted > 0)
        .map_err(db_error)
    }

    async fn memberships(&self, member: &AccountId) -> Result<Vec<Membership>, StoreError> {
        let mut conn = self.conn().await?;
        let teams: Vec<(String, String, DateTime<Utc>)> = team_members::table
            .inner_join(accounts::table.on(accounts::id.eq(team_members::owner_id)))
            .filter(team_members::member_id.eq(member.as_str()))
            .select((
                team_members::owner_id,
                accounts::plan_id,
                team_members::joined_at,
            ))
            .order((team_members::joined_at.asc(), team_members::owner_id.asc()))
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        type GrantRow = (String, String, String, i32, i32, String, serde_json::Value);
        let grants: Vec<GrantRow> = team_grants::table
            .inner_join(addresses::table)
            .filter(team_grants::member_id.eq(member.as_str()))
            .select((
                team_grants::owner_id,
                team_grants::address_id,
                addresses::email_address,
                addresses::key_epoch,
                team_grants::epoch,
                team_grants::access,
                team_grants::sealed,
            ))
            .order((team_grants::address_id.asc(), team_grants::epoch.asc()))
            .load(&mut conn)
            .await
            .map_err(db_error)?;
        let mut memberships = Vec::with_capacity(teams.len());
        for (owner, plan, joined_at) in teams {
            let mut addresses: Vec<SharedAddress> = Vec::new();
            for (_, address, email_address, key_epoch, grant_epoch, access_text, sealed) in
                grants.iter().filter(|row| row.0 == owner)
            {
                let key = SharedKey {
                    epoch: epoch(*grant_epoch)?,
                    sealed: box_from_json(sealed.clone())?,
                };
                match addresses.last_mut() {
                    Some(last) if last.address.as_str() == address => last.grants.push(key),
                    _ => addresses.push(SharedAddress {
                        address: AddressId::from_trusted(address.clone()),
                        email_address: email_address.clone(),
                        key_epoch: epoch(*key_epoch)?,
                        access: access(access_text)?,
                        grants: vec![key],
                    }),
                }
            }
            memberships.push(Membership {
                owner: AccountId::from_trusted(owner),
                owner_plan: plan.parse().map_err(StoreError::failed)?,
                joined_at: Timestamp::from(joined_at),
                active: false,
                addresses,
            });
        }
        Ok(memberships)
    }
}
