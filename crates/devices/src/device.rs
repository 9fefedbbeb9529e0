use chrono::TimeDelta;
use sealpost_kernel::{AccountId, DeviceId, Timestamp, string_enum};
use sealpost_seal::SealedBox;

use crate::Platform;

/// A device not active for two hours is reported disconnected by the hourly
/// sweep (docs/api.md "Events", `worker.disconnected`): between two and three
/// hours after its last activity, which is kept exact for this (the API
/// shows it to the hour).
pub const DISCONNECT_AFTER: TimeDelta = TimeDelta::hours(2);

string_enum! {
    pub enum DeviceKind: "device kind" {
        Device => "device",
        Agent => "agent",
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Device {
    pub id: DeviceId,
    pub account: AccountId,
    pub kind: DeviceKind,
    pub platform: Platform,
    pub disabled: bool,
    /// False after the sweep reported it disconnected, until it is active again.
    pub connected: bool,
    pub created_at: Timestamp,
    /// Exact; the API shows it to the hour.
    pub last_active_at: Option<Timestamp>,
    pub paused_at: Option<Timestamp>,
    /// Sealed name, tags and notes.
    pub profile: Option<SealedBox>,
    /// The X25519 key the device paired with: key bundles are sealed to it.
    pub public_key: Option<[u8; 32]>,
}

impl Device {
    /// The API's status: `disabled`, else `online` or `offline` by the last
    /// sweep.
    pub fn status(&self) -> &'static str {
        if self.disabled {
            "disabled"
        } else if self.connected {
            "online"
        } else {
            "offline"
        }
    }
}

/// A device's sealed key bundle (docs/protocol.md context `worker-keys:<id>`).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyBundle {
    pub keys: SealedBox,
    pub updated_at: Timestamp,
}
