//! Push notifications to the apps a person carries (docs/api.md
//! "Notifications": the preferences, the endpoints, and what is pushed when).
//!
//! Pure like every domain crate: [`settings`] holds the preferences, the
//! address mutes and the push tokens behind [`NotificationRepository`];
//! [`push`] decides which outbox events become pushes, coalesces bursts,
//! writes the generic texts and schedules retries, behind
//! [`push::PushRepository`] and [`push::PushTransport`].

mod error;
pub mod kind;
pub mod push;
mod repository;
pub mod settings;
pub mod token;

pub use kind::{Preferences, PreferencesPatch, PushKind};
pub use settings::{
    MAX_TOKENS_PER_ACCOUNT, NotificationError, NotificationRepository, Notifications, PushDevice,
    Registered,
};
pub use token::{Platform, PushToken, TokenError};

#[cfg(any(test, feature = "mock"))]
pub use settings::MockNotificationRepository;
