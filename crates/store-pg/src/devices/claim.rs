//! Claiming a pairing session: the device, its credential and the
//! session's claim written in one transaction under the account's plan.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_devices::{Claim, ClaimOutcome, PairingState};
use sealpost_kernel::StoreError;

use super::DEVICE_ID_KIND;
use crate::records::{box_to_json, id_retired, lock_account_plan, write_records};
use crate::schema::{device_credentials, devices, pairing_sessions};
use crate::{PgStore, db_error};

pub(super) async fn claim(store: &PgStore, claim: Claim) -> Result<ClaimOutcome, StoreError> {
    let mut conn = store.conn().await?;
    let account = claim.device.account.clone();
    conn.transaction(async |conn| {
        // Serialises the account's limit checks, on the plan it holds now.
        let current = lock_account_plan(conn, &account).await?;
        if current != claim.plan {
            return Ok(ClaimOutcome::PlanChanged(current));
        }
        let session: Option<(Option<String>, Option<String>)> = pairing_sessions::table
            .find(claim.session.as_str())
            .select((pairing_sessions::detected_by, pairing_sessions::claimed_by))
            .for_update()
            .first(conn)
            .await
            .optional()?;
        match session {
            None => return Ok(ClaimOutcome::NotFound),
            Some((_, Some(_))) => return Ok(ClaimOutcome::AlreadyUsed),
            Some((detected_by, None)) if detected_by.as_deref() != Some(account.as_str()) => {
                return Ok(ClaimOutcome::NotFound);
            }
            Some(_) => {}
        }
        let id = claim.device.id.as_str();
        let exists: i64 = devices::table.find(id).count().get_result(conn).await?;
        if exists > 0 || id_retired(conn, DEVICE_ID_KIND, id).await? {
            return Ok(ClaimOutcome::IdTaken);
        }
        if let Some(max) = claim.max_devices {
            let paired: i64 = devices::table
                .filter(devices::account_id.eq(account.as_str()))
                .count()
                .get_result(conn)
                .await?;
            if paired >= i64::from(max) {
                return Ok(ClaimOutcome::LimitReached);
            }
        }
        let device = &claim.device;
        diesel::insert_into(devices::table)
            .values((
                devices::id.eq(id),
                devices::account_id.eq(account.as_str()),
                devices::kind.eq(device.kind.as_str()),
                devices::platform.eq(device.platform.as_str()),
                devices::created_at.eq(device.created_at.as_datetime()),
                devices::last_active_at.eq(device.last_active_at.map(|t| t.as_datetime())),
                devices::profile.eq(device.profile.as_ref().map(box_to_json)),
                devices::public_key.eq(device.public_key.map(|key| key.to_vec())),
            ))
            .execute(conn)
            .await?;
        diesel::insert_into(device_credentials::table)
            .values((
                device_credentials::token_hash.eq(claim.credential_hash.as_slice()),
                device_credentials::device_id.eq(id),
                device_credentials::account_id.eq(account.as_str()),
                device_credentials::created_at.eq(device.created_at.as_datetime()),
            ))
            .execute(conn)
            .await?;
        diesel::update(pairing_sessions::table.find(claim.session.as_str()))
            .set((
                pairing_sessions::state.eq(PairingState::AwaitingAddress.as_str()),
                pairing_sessions::claimed_by.eq(account.as_str()),
                pairing_sessions::device_id.eq(id),
                pairing_sessions::handoff.eq(box_to_json(&claim.handoff)),
            ))
            .execute(conn)
            .await?;
        write_records(conn, &claim.records).await?;
        Ok::<_, diesel::result::Error>(ClaimOutcome::Claimed)
    })
    .await
    .map_err(db_error)
}
