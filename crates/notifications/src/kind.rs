//! What a push can be about, and which of those a person wants.

use std::fmt;

/// A kind of push, each with its own preference switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PushKind {
    NewMail,
    DevicePaired,
    DeviceOffline,
    NewSignIn,
    Billing,
    /// A support reply or a ticket resolved.
    Support,
    /// A webhook switched off after three days of failures.
    WebhookFailures,
}

impl PushKind {
    pub const ALL: [PushKind; 7] = [
        PushKind::NewMail,
        PushKind::DevicePaired,
        PushKind::DeviceOffline,
        PushKind::NewSignIn,
        PushKind::Billing,
        PushKind::Support,
        PushKind::WebhookFailures,
    ];

    /// The preference key on the wire (the API names the first five; `support`
    /// and `webhookFailures` are this service's; docs/api.md "Notifications").
    pub fn key(self) -> &'static str {
        match self {
            PushKind::NewMail => "newMail",
            PushKind::DevicePaired => "devicePaired",
            PushKind::DeviceOffline => "deviceOffline",
            PushKind::NewSignIn => "newSignIn",
            PushKind::Billing => "billing",
            PushKind::Support => "support",
            PushKind::WebhookFailures => "webhookFailures",
        }
    }

    pub fn from_key(key: &str) -> Option<PushKind> {
        Self::ALL.into_iter().find(|kind| kind.key() == key)
    }
}

impl fmt::Display for PushKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// Which kinds an account receives. Every kind is on until switched off:
/// registering a push token is the request to be told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preferences {
    pub new_mail: bool,
    pub device_paired: bool,
    pub device_offline: bool,
    pub new_sign_in: bool,
    pub billing: bool,
    pub support: bool,
    pub webhook_failures: bool,
}

impl Default for Preferences {
    fn default() -> Self {
        Self {
            new_mail: true,
            device_paired: true,
            device_offline: true,
            new_sign_in: true,
            billing: true,
            support: true,
            webhook_failures: true,
        }
    }
}

impl Preferences {
    pub fn allows(&self, kind: PushKind) -> bool {
        match kind {
            PushKind::NewMail => self.new_mail,
            PushKind::DevicePaired => self.device_paired,
            PushKind::DeviceOffline => self.device_offline,
            PushKind::NewSignIn => self.new_sign_in,
            PushKind::Billing => self.billing,
            PushKind::Support => self.support,
            PushKind::WebhookFailures => self.webhook_failures,
        }
    }

    /// These preferences with `patch` applied: only what it sets changes.
    pub fn patched(self, patch: &PreferencesPatch) -> Preferences {
        Preferences {
            new_mail: patch.new_mail.unwrap_or(self.new_mail),
            device_paired: patch.device_paired.unwrap_or(self.device_paired),
            device_offline: patch.device_offline.unwrap_or(self.device_offline),
            new_sign_in: patch.new_sign_in.unwrap_or(self.new_sign_in),
            billing: patch.billing.unwrap_or(self.billing),
            support: patch.support.unwrap_or(self.support),
            webhook_failures: patch.webhook_failures.unwrap_or(self.webhook_failures),
        }
    }
}

/// `PATCH /notifications/preferences`: `None` leaves a kind as it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PreferencesPatch {
    pub new_mail: Option<bool>,
    pub device_paired: Option<bool>,
    pub device_offline: Option<bool>,
    pub new_sign_in: Option<bool>,
    pub billing: Option<bool>,
    pub support: Option<bool>,
    pub webhook_failures: Option<bool>,
}

impl PreferencesPatch {
    /// A patch that sets one kind.
    pub fn one(kind: PushKind, on: bool) -> PreferencesPatch {
        let mut patch = PreferencesPatch::default();
        let slot = match kind {
            PushKind::NewMail => &mut patch.new_mail,
            PushKind::DevicePaired => &mut patch.device_paired,
            PushKind::DeviceOffline => &mut patch.device_offline,
            PushKind::NewSignIn => &mut patch.new_sign_in,
            PushKind::Billing => &mut patch.billing,
            PushKind::Support => &mut patch.support,
            PushKind::WebhookFailures => &mut patch.webhook_failures,
        };
        *slot = Some(on);
        patch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_every_kind_starts_on() {
        for kind in PushKind::ALL {
            assert_eq!(PushKind::from_key(kind.key()), Some(kind));
            assert!(Preferences::default().allows(kind));
        }
        assert_eq!(PushKind::from_key("newmail"), None);
    }

    #[test]
    fn a_patch_changes_only_what_it_sets() {
        let patched = Preferences::default().patched(&PreferencesPatch {
            billing: Some(false),
            ..PreferencesPatch::default()
        });
        for kind in PushKind::ALL {
            assert_eq!(patched.allows(kind), kind != PushKind::Billing, "{kind}");
        }
        let back = patched.patched(&PreferencesPatch::one(PushKind::Billing, true));
        assert_eq!(back, Preferences::default());
    }
}
