use async_trait::async_trait;
use sealpost_kernel::{AccountId, AddressId, DeviceId, StoreError, Timestamp};

use crate::kind::{Preferences, PreferencesPatch};
use crate::settings::{PushDevice, Registered};
use crate::token::PushToken;

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait NotificationRepository: Send + Sync {
    /// The stored preferences; `None` while the account never changed any.
    async fn preferences(&self, account: &AccountId) -> Result<Option<Preferences>, StoreError>;
    /// Applies `patch` to the stored preferences (or to `defaults` when none
    /// are stored) in one statement, so concurrent patches of different kinds
    /// both take effect. Returns the result.
    async fn update_preferences(
        &self,
        account: &AccountId,
        patch: &PreferencesPatch,
        defaults: &Preferences,
        at: Timestamp,
    ) -> Result<Preferences, StoreError>;
    async fn muted_addresses(&self, account: &AccountId) -> Result<Vec<AddressId>, StoreError>;
    /// Mutes or unmutes the address when it is the account's (and, for a
    /// device credential, assigned to `device`). `false`: no such address.
    async fn set_muted(
        &self,
        account: &AccountId,
        device: Option<DeviceId>,
        address: &AddressId,
        muted: bool,
        at: Timestamp,
    ) -> Result<bool, StoreError>;
    /// Stores the token for `device.account`, keeping the newest `keep`
    /// tokens of that account. `None`: another account holds the token,
    /// and nothing changed.
    async fn register_device(
        &self,
        device: &PushDevice,
        keep: u32,
    ) -> Result<Option<Registered>, StoreError>;
    /// `false`: the account holds no such token.
    async fn remove_device(
        &self,
        account: &AccountId,
        token: &PushToken,
    ) -> Result<bool, StoreError>;
}
