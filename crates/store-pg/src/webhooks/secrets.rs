//! Endpoint signing secrets: the two columns a secret is stored in
//! (sealed, or still in the clear), rotation, and sealing them again under
//! the current server key in the current form.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text};
use diesel_async::RunQueryDsl;
use sealpost_kernel::{AccountId, StoreError, WebhookId};
use sealpost_webhooks::endpoint::StoredSecret;

use crate::schema::webhooks;
use crate::{PgStore, db_error};

/// The one of the two secret columns that is set (a CHECK keeps it one).
pub(super) fn stored_secret(
    plain: Option<String>,
    sealed: Option<Vec<u8>>,
) -> Result<StoredSecret, StoreError> {
    match (plain, sealed) {
        (_, Some(sealed)) => Ok(StoredSecret::Sealed(sealed)),
        (Some(plain), None) => Ok(StoredSecret::Plain(plain)),
        (None, None) => Err(StoreError::Failed("a webhook row without a secret".into())),
    }
}

/// The two secret columns of a stored secret.
pub(super) fn secret_columns(secret: &StoredSecret) -> (Option<&str>, Option<&[u8]>) {
    match secret {
        StoredSecret::Sealed(sealed) => (None, Some(sealed.as_slice())),
        StoredSecret::Plain(plain) => (Some(plain.as_str()), None),
    }
}

pub(super) async fn set_secret(
    store: &PgStore,
    account: &AccountId,
    id: &WebhookId,
    secret: StoredSecret,
) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
    let (plain, sealed) = secret_columns(&secret);
    let updated = diesel::update(
        webhooks::table
            .filter(webhooks::id.eq(id.as_str()))
            .filter(webhooks::account_id.eq(account.as_str())),
    )
    .set((
        webhooks::secret.eq(plain),
        webhooks::secret_sealed.eq(sealed),
    ))
    .execute(&mut conn)
    .await
    .map_err(db_error)?;
    Ok(updated > 0)
}

pub(super) async fn secrets_to_seal(
    store: &PgStore,
    current_key: &str,
    after: Option<WebhookId>,
    limit: i64,
) -> Result<Vec<(WebhookId, StoredSecret)>, StoreError> {
    #[derive(QueryableByName)]
    struct SecretRow {
        #[diesel(sql_type = Text)]
        id: String,
        #[diesel(sql_type = Nullable<Text>)]
        secret: Option<String>,
        #[diesel(sql_type = Nullable<diesel::sql_types::Bytea>)]
        secret_sealed: Option<Vec<u8>>,
    }
    let mut conn = store.conn().await?;
    // The first byte of a sealed value is its form's version, bytes 2 to 5
    // its key's id.
    let rows: Vec<SecretRow> = diesel::sql_query(
        "SELECT id, secret, secret_sealed FROM webhooks \
         WHERE (secret IS NOT NULL \
                OR get_byte(secret_sealed, 0) <> $4 \
                OR encode(substring(secret_sealed FROM 2 FOR 4), 'hex') <> $1) \
           AND id > $2 \
         ORDER BY id LIMIT $3",
    )
    .bind::<Text, _>(current_key)
    .bind::<Text, _>(after.as_ref().map_or("", WebhookId::as_str))
    .bind::<BigInt, _>(limit)
    .bind::<Integer, _>(i32::from(sealpost_seal::ServerKeys::current_version()))
    .load(&mut conn)
    .await
    .map_err(db_error)?;
    rows.into_iter()
        .map(|row| {
            Ok((
                WebhookId::from_trusted(row.id),
                stored_secret(row.secret, row.secret_sealed)?,
            ))
        })
        .collect()
}

pub(super) async fn replace_secret(
    store: &PgStore,
    id: &WebhookId,
    old: StoredSecret,
    new: StoredSecret,
) -> Result<bool, StoreError> {
    let mut conn = store.conn().await?;
    let (old_plain, old_sealed) = secret_columns(&old);
    let (plain, sealed) = secret_columns(&new);
    let updated = diesel::update(
        webhooks::table
            .filter(webhooks::id.eq(id.as_str()))
            .filter(webhooks::secret.is_not_distinct_from(old_plain))
            .filter(webhooks::secret_sealed.is_not_distinct_from(old_sealed)),
    )
    .set((
        webhooks::secret.eq(plain),
        webhooks::secret_sealed.eq(sealed),
    ))
    .execute(&mut conn)
    .await
    .map_err(db_error)?;
    Ok(updated > 0)
}
