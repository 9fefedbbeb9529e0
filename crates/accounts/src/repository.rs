use async_trait::async_trait;
use sealpost_activity::Records;
use sealpost_kernel::{AccountId, ApiKeyId, PlanId, SessionId, StoreError, Timestamp};

use crate::{Account, ApiKey, Challenge, FoundBearer, NewAccount, RegistrationSource, Session};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterOutcome {
    Registered,
    IdTaken,
    /// The source holds its limit of registrations since `since`; the
    /// oldest of them was at `oldest`.
    TooMany {
        oldest: Timestamp,
    },
}

/// How storing a new API key ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiKeyOutcome {
    Created,
    /// The id is used, or was used, by any account.
    IdTaken,
    /// The account already holds `limit` keys (paused ones too).
    LimitReached,
    /// Nothing stored: the locked account holds this plan now.
    PlanChanged(PlanId),
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AccountRepository: Send + Sync {
    async fn account(&self, id: &AccountId) -> Result<Option<Account>, StoreError>;

    /// Stores the account, its first session and the registration of its
    /// source in one transaction, unless the id belongs to a live account or
    /// to one that was ever erased, or the source already holds its limit of
    /// registrations since `source.since` (counted under a lock per source,
    /// so parallel registrations never pass it).
    async fn register(
        &self,
        account: NewAccount,
        first_session: Session,
        source: RegistrationSource,
    ) -> Result<RegisterOutcome, StoreError>;

    async fn save_challenge(&self, challenge: Challenge) -> Result<(), StoreError>;

    /// Removes and returns the challenge: a nonce is consumed by its first use.
    async fn take_challenge(&self, nonce_hash: [u8; 32]) -> Result<Option<Challenge>, StoreError>;

    /// Stores a session opened by sign-in, with its records (the sign-in
    /// notice), in one transaction.
    async fn create_session(&self, session: Session, records: Records) -> Result<(), StoreError>;

    /// Resolves a token hash to the session or device credential it belongs
    /// to, with its account's suspension, in one query.
    async fn bearer(&self, token_hash: [u8; 32]) -> Result<Option<FoundBearer>, StoreError>;

    async fn sessions(&self, account: &AccountId) -> Result<Vec<Session>, StoreError>;

    /// Returns whether a session of this account was removed.
    async fn delete_session(&self, account: &AccountId, id: &SessionId)
    -> Result<bool, StoreError>;

    async fn delete_sessions_except(
        &self,
        account: &AccountId,
        keep: &SessionId,
    ) -> Result<u64, StoreError>;

    /// Stores the key unless its id was ever used, the account's plan is no
    /// longer `plan` (under the account's lock), or it holds `limit` keys.
    async fn create_api_key(
        &self,
        key: ApiKey,
        plan: PlanId,
        limit: u32,
    ) -> Result<ApiKeyOutcome, StoreError>;

    /// The account's keys, oldest first.
    async fn api_keys(&self, account: &AccountId) -> Result<Vec<ApiKey>, StoreError>;

    /// Deletes the key (its token stops at once) and retires its id.
    /// Returns whether the account had it.
    async fn delete_api_key(
        &self,
        account: &AccountId,
        id: &ApiKeyId,
        at: Timestamp,
    ) -> Result<bool, StoreError>;

    /// Records the key's last use, to the hour.
    async fn touch_api_key(&self, id: &ApiKeyId, hour: Timestamp) -> Result<(), StoreError>;

    /// Erases the account and everything in it, and remembers the id as
    /// used. Returns the card subscription that still renewed, if any: it
    /// was queued in the same transaction to be stopped at the provider.
    async fn erase(&self, account: &AccountId, at: Timestamp)
    -> Result<Option<String>, StoreError>;

    /// Removes challenges that expired before `now`, sessions that expired
    /// before `sessions_before` and registrations counted before
    /// `registrations_before`.
    async fn sweep_expired(
        &self,
        now: Timestamp,
        sessions_before: Timestamp,
        registrations_before: Timestamp,
    ) -> Result<u64, StoreError>;
}
