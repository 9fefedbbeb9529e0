//! Operator switches: the rotated support key, support off, webhooks
//! paused; read by every request, set with their audit entry.

use diesel::prelude::*;
use diesel::sql_types::{Nullable, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use sealpost_kernel::{StoreError, Timestamp};
use sealpost_support::{AuditEntry, PublicKey, SupportRepository, Switches};

use crate::schema::operator_switches;
use crate::{PgStore, bytes32, db_error};

impl PgStore {
    /// Operator switches (`None` leaves one as it is); the support key once
    /// rotated overrides the configured one. `audit` is written in the same
    /// transaction.
    pub async fn set_switches(
        &self,
        support_key: Option<PublicKey>,
        support_off: Option<bool>,
        webhooks_paused: Option<bool>,
        at: Timestamp,
        audit: &AuditEntry,
    ) -> Result<Switches, StoreError> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| {
            diesel::sql_query(
                "UPDATE operator_switches SET support_key = COALESCE($1, support_key), \
                 support_off = COALESCE($2, support_off), \
                 webhooks_paused = COALESCE($3, webhooks_paused), updated_at = $4",
            )
            .bind::<Nullable<diesel::sql_types::Bytea>, _>(support_key.map(|key| key.0.to_vec()))
            .bind::<Nullable<diesel::sql_types::Bool>, _>(support_off)
            .bind::<Nullable<diesel::sql_types::Bool>, _>(webhooks_paused)
            .bind::<Timestamptz, _>(at.as_datetime())
            .execute(conn)
            .await?;
            crate::staff::insert_audit(conn, audit).await
        })
        .await
        .map_err(db_error)?;
        drop(conn);
        self.switches().await
    }
}

pub(super) async fn switches(store: &PgStore) -> Result<Switches, StoreError> {
    let mut conn = store.conn().await?;
    let row: Option<(Option<Vec<u8>>, bool, bool)> = operator_switches::table
        .select((
            operator_switches::support_key,
            operator_switches::support_off,
            operator_switches::webhooks_paused,
        ))
        .first(&mut conn)
        .await
        .optional()
        .map_err(db_error)?;
    let Some((key, support_off, webhooks_paused)) = row else {
        return Ok(Switches::default());
    };
    Ok(Switches {
        support_key: key.map(bytes32).transpose()?.map(PublicKey),
        support_off,
        webhooks_paused,
    })
}
