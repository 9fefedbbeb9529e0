//! Push notification preferences and muted addresses (`notifications`).

use clap::Subcommand;

/// Push notification preferences and muted addresses.
#[derive(Debug, Subcommand)]
pub enum NotificationsCommand {
    /// Each kind on or off, and the muted addresses.
    Show,
    /// Switch one kind on or off.
    Set {
        /// new-mail, device-paired, device-offline, new-sign-in, billing,
        /// support or webhook-failures.
        kind: String,
        /// on or off.
        state: String,
    },
    /// Stop pushing new mail of one address (its id or email address).
    Mute { address: String },
    /// Push new mail of the address again.
    Unmute { address: String },
}
