//! The `/notifications` endpoints: preferences, address mutes, push tokens.

use std::sync::Arc;

use sealpost_kernel::{AccountId, AddressId, Clock, DeviceId, Timestamp};

use crate::kind::{Preferences, PreferencesPatch};
use crate::token::{Platform, PushToken};

pub use crate::error::NotificationError;
#[cfg(any(test, feature = "mock"))]
pub use crate::repository::MockNotificationRepository;
pub use crate::repository::NotificationRepository;

/// Push tokens kept per account: registering another drops the oldest.
/// Phones renew their tokens, so old ones are the likeliest to be dead.
pub const MAX_TOKENS_PER_ACCOUNT: u32 = 20;

/// A registered push token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushDevice {
    pub token: PushToken,
    pub account: AccountId,
    pub platform: Platform,
    pub registered_at: Timestamp,
}

/// What registering a token did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Registered {
    /// New: stored as given.
    Added(PushDevice),
    /// Already this account's: unchanged but for its platform.
    Existing(PushDevice),
}

/// Preferences, mutes and tokens: what the account says it wants pushed.
#[derive(Clone)]
pub struct Notifications {
    repo: Arc<dyn NotificationRepository>,
    clock: Arc<dyn Clock>,
}

impl Notifications {
    pub fn new(repo: Arc<dyn NotificationRepository>, clock: Arc<dyn Clock>) -> Self {
        Self { repo, clock }
    }

    pub async fn preferences(&self, account: &AccountId) -> Result<Preferences, NotificationError> {
        Ok(self.repo.preferences(account).await?.unwrap_or_default())
    }

    pub async fn update_preferences(
        &self,
        account: &AccountId,
        patch: &PreferencesPatch,
    ) -> Result<Preferences, NotificationError> {
        Ok(self
            .repo
            .update_preferences(account, patch, &Preferences::default(), self.clock.now())
            .await?)
    }

    pub async fn muted_addresses(
        &self,
        account: &AccountId,
    ) -> Result<Vec<AddressId>, NotificationError> {
        Ok(self.repo.muted_addresses(account).await?)
    }

    /// Mutes (or unmutes) new-mail pushes for one address. Another account's
    /// address, or for a device credential one not assigned to it, is
    /// [`NotificationError::NotFound`].
    pub async fn set_muted(
        &self,
        account: &AccountId,
        device: Option<&DeviceId>,
        address: &AddressId,
        muted: bool,
    ) -> Result<(), NotificationError> {
        if self
            .repo
            .set_muted(account, device.cloned(), address, muted, self.clock.now())
            .await?
        {
            Ok(())
        } else {
            Err(NotificationError::NotFound)
        }
    }

    /// Registers a token for the account. Idempotent; a token another
    /// account holds is refused ([`NotificationError::TokenHeldByAnother`]):
    /// it stays where it is until that account removes it (a phone leaving
    /// an account removes its token there) or the provider reports it dead.
    pub async fn register_device(
        &self,
        account: &AccountId,
        token: PushToken,
        platform: Platform,
    ) -> Result<Registered, NotificationError> {
        let device = PushDevice {
            token,
            account: account.clone(),
            platform,
            registered_at: self.clock.now(),
        };
        self.repo
            .register_device(&device, MAX_TOKENS_PER_ACCOUNT)
            .await?
            .ok_or(NotificationError::TokenHeldByAnother)
    }

    pub async fn remove_device(
        &self,
        account: &AccountId,
        token: &PushToken,
    ) -> Result<(), NotificationError> {
        if self.repo.remove_device(account, token).await? {
            Ok(())
        } else {
            Err(NotificationError::NotFound)
        }
    }
}

#[cfg(test)]
mod tests {
    use mockall::predicate::eq;
    use sealpost_kernel::TestClock;

    use super::*;
    use crate::kind::PushKind;

    const NOW: &str = "2026-11-23T10:00:00Z";

    fn now() -> Timestamp {
        Timestamp::parse(NOW).unwrap()
    }

    fn service(repo: MockNotificationRepository) -> Notifications {
        Notifications::new(Arc::new(repo), Arc::new(TestClock::at(now())))
    }

    fn account() -> AccountId {
        AccountId::from_trusted("acct_test".to_owned())
    }

    #[tokio::test]
    async fn an_account_that_never_chose_gets_everything() {
        let mut repo = MockNotificationRepository::new();
        repo.expect_preferences().returning(|_| Ok(None));
        assert_eq!(
            service(repo).preferences(&account()).await.unwrap(),
            Preferences::default()
        );
    }

    #[tokio::test]
    async fn a_patch_goes_to_the_store_with_the_defaults() {
        let patch = PreferencesPatch::one(PushKind::NewMail, false);
        let mut repo = MockNotificationRepository::new();
        repo.expect_update_preferences()
            .with(
                eq(account()),
                eq(patch),
                eq(Preferences::default()),
                eq(now()),
            )
            .times(1)
            .returning(|_, patch, defaults, _| Ok(defaults.patched(patch)));
        let preferences = service(repo)
            .update_preferences(&account(), &patch)
            .await
            .unwrap();
        assert!(!preferences.new_mail);
        assert!(preferences.billing);
    }

    #[tokio::test]
    async fn muting_an_address_that_is_not_yours_is_not_found() {
        let address = AddressId::from_trusted("ibx_other".to_owned());
        let mut repo = MockNotificationRepository::new();
        repo.expect_set_muted()
            .withf(|_, device, _, muted, at| device.is_none() && *muted && *at == now())
            .returning(|_, _, _, _, _| Ok(false));
        assert!(matches!(
            service(repo)
                .set_muted(&account(), None, &address, true)
                .await,
            Err(NotificationError::NotFound)
        ));
    }

    #[tokio::test]
    async fn registering_keeps_a_bounded_number_of_tokens() {
        let token = PushToken::parse("abc123").unwrap();
        let mut repo = MockNotificationRepository::new();
        repo.expect_register_device()
            .withf(|device, keep| {
                device.token.as_str() == "abc123"
                    && device.platform == Platform::Android
                    && device.registered_at == now()
                    && *keep == MAX_TOKENS_PER_ACCOUNT
            })
            .times(1)
            .returning(|device, _| Ok(Some(Registered::Added(device.clone()))));
        let registered = service(repo)
            .register_device(&account(), token, Platform::Android)
            .await
            .unwrap();
        assert!(matches!(registered, Registered::Added(device) if device.account == account()));
    }

    #[tokio::test]
    async fn a_token_another_account_holds_is_refused() {
        let mut repo = MockNotificationRepository::new();
        repo.expect_register_device().returning(|_, _| Ok(None));
        let token = PushToken::parse("abc").unwrap();
        assert!(matches!(
            service(repo)
                .register_device(&account(), token, Platform::Ios)
                .await,
            Err(NotificationError::TokenHeldByAnother)
        ));
    }

    #[tokio::test]
    async fn removing_a_token_the_account_does_not_hold_is_not_found() {
        let mut repo = MockNotificationRepository::new();
        repo.expect_remove_device().returning(|_, _| Ok(false));
        let token = PushToken::parse("abc").unwrap();
        assert!(matches!(
            service(repo).remove_device(&account(), &token).await,
            Err(NotificationError::NotFound)
        ));
    }
}
