//! Devices and the pairing flow (docs/api.md "Devices and pairing",
//! docs/protocol.md "Pairing a device"). A device record is a *worker* on the
//! wire, of kind `device` or `agent`.
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `POST /workers/pairing-session` (the device) | [`OpenPairingRequest`] | [`OpenedPairing`] |
//! | `GET /workers/pairing-session/{token}` (the device) | | [`PairingPoll`] |
//! | `POST /workers/pair/lookup` | [`LookupRequest`] | [`LookupReply`] |
//! | `POST /workers/pair` | [`ClaimRequest`] | [`DeviceReply`] |
//! | `GET /workers` | | [`DevicePage`] |
//! | `GET /workers/{id}`, `POST /workers/heartbeat` | | [`DeviceReply`] |
//! | `PATCH /workers/{id}` | [`UpdateDeviceRequest`] | [`DeviceReply`] |
//! | `POST /workers/{id}/keys` | [`KeysRequest`] | [`DeviceKeys`] |
//! | `GET /workers/{id}/keys` | | [`DeviceKeys`] |
//!
//! The pairing token, the device credential and the session token are
//! secrets: [`OpenedPairing`] and [`PairingPoll`] do not show them in
//! `Debug`. `workerId` and the credential come once, on the first poll after
//! the claim.

use std::fmt;

use sealpost_kernel::{AccountId, DeviceId, PairingSessionId, Timestamp};
use sealpost_seal::{SealedBox, b64};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::encoding::{opt_b64_32, sealed_json, wire_enum};

wire_enum!(
    /// The platform a device reports when it opens a pairing session.
    Platform {
        Ios = "ios",
        Android = "android",
        Web = "web",
        Unknown = "unknown",
    }
);

wire_enum!(
    /// State of a pairing session (`docs/protocol.md`, Pairing).
    PairingState {
        /// Opened by the device.
        Waiting = "waiting",
        /// An operator looked the code up.
        OperatorDetected = "operator_detected",
        /// Claimed; the credential is minted.
        AwaitingAddress = "awaiting_inbox",
        /// The first address was assigned to the new device.
        AddressAssigned = "inbox_assigned",
    }
);

wire_enum!(
    /// A device's status.
    DeviceStatus {
        Online = "online",
        /// Not active for two hours.
        Offline = "offline",
        /// Its credential is revoked.
        Disabled = "disabled",
    }
);

wire_enum!(
    /// What kind of worker a device record is.
    DeviceKind {
        Device = "device",
        Agent = "agent",
    }
);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct OpenPairingRequest {
    /// ios, android, web or unknown.
    pub platform: Platform,
    /// What the claim makes: `device` (the default) or `agent`, a machine
    /// such as a CI runner or a server (Operator plan and up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<DeviceKind>,
    pub device_name: String,
    /// The device's X25519 public key, base64url; its key bundle is sealed to it.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::Key32))]
    pub public_key: String,
}

impl OpenPairingRequest {
    /// A session for a device on `platform` called `device_name` (at most
    /// 100 characters, shown to the operator) whose key bundle is to be
    /// sealed to `public_key`.
    #[must_use]
    pub fn new(platform: Platform, device_name: &str, public_key: &[u8; 32]) -> Self {
        Self {
            platform,
            kind: None,
            device_name: device_name.to_owned(),
            public_key: b64::encode(public_key),
        }
    }

    /// The same session, claimed as `kind` (`agent`: a machine, allowed
    /// from the Operator plan up).
    #[must_use]
    pub fn with_kind(mut self, kind: DeviceKind) -> Self {
        self.kind = Some(kind);
        self
    }
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OpenedPairing {
    /// Secret to this device: polls and cancels with it.
    pub token: String,
    /// 8 digits to show the operator.
    pub code: String,
    pub state: PairingState,
}

impl fmt::Debug for OpenedPairing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenedPairing")
            .field("token", &"<redacted>")
            .field("code", &self.code)
            .field("state", &self.state)
            .finish()
    }
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PairingPoll {
    pub state: PairingState,
    pub code: String,
    /// Only on the first poll after the claim.
    #[serde(rename = "workerId")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_id: Option<DeviceId>,
    /// The device credential; only on the first poll after the claim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

impl fmt::Debug for PairingPoll {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PairingPoll")
            .field("state", &self.state)
            .field("code", &self.code)
            .field("worker_id", &self.device_id)
            .field(
                "credential",
                &self.credential.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LookupRequest {
    /// The 8-digit code the device shows.
    pub code: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PairingSession {
    pub id: PairingSessionId,
    pub state: PairingState,
    /// What claiming it makes: `device` or `agent`.
    pub kind: DeviceKind,
    pub platform: Platform,
    pub device_name: String,
    #[serde(with = "b64::serde_32")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub public_key: [u8; 32],
    pub created_at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LookupReply {
    pub session: PairingSession,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClaimRequest {
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::PairingSessionId))]
    pub session_id: String,
    /// `wkr_` + 4 to 48 letters and digits, chosen by the client.
    #[serde(rename = "workerId")]
    #[cfg_attr(feature = "openapi", schema(value_type = sealpost_kernel::DeviceId))]
    pub device_id: String,
    /// Sealed profile box (context `service/v1/worker-profile:<workerId>`).
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::SealedBoxJson))]
    pub profile: Value,
}

impl ClaimRequest {
    /// Claims session `session_id` as device `worker_id` with its sealed
    /// profile.
    #[must_use]
    pub fn new(session_id: &PairingSessionId, device_id: &DeviceId, profile: &SealedBox) -> Self {
        Self {
            session_id: session_id.to_string(),
            device_id: device_id.to_string(),
            profile: sealed_json(profile),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Device {
    pub id: DeviceId,
    pub operator_id: AccountId,
    /// `device` or `agent`.
    pub kind: DeviceKind,
    pub platform: Platform,
    /// `online`, `offline` (not active for two hours) or `disabled`.
    pub status: DeviceStatus,
    pub created_at: Timestamp,
    /// Truncated to the hour.
    pub last_active_at: Option<Timestamp>,
    pub paused_at: Option<Timestamp>,
    /// Sealed profile box.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub profile: Option<SealedBox>,
    /// The device's pairing X25519 public key (base64url): seal its key bundle to it.
    #[serde(default, with = "opt_b64_32")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub public_key: Option<[u8; 32]>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeviceReply {
    #[serde(rename = "worker")]
    pub device: Device,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DevicePage {
    #[serde(rename = "workers")]
    pub devices: Vec<Device>,
    pub next_cursor: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UpdateDeviceRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schemas::SealedBoxJson>))]
    pub profile: Option<Value>,
    /// Only `disabled`: revokes the device credential at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schemas::DisableStatus>))]
    pub status: Option<DeviceStatus>,
}

impl UpdateDeviceRequest {
    /// Replaces the sealed profile (name, tags, notes).
    #[must_use]
    pub fn profile(profile: &SealedBox) -> Self {
        Self {
            profile: Some(sealed_json(profile)),
            status: None,
        }
    }

    /// Disables the device: its credential stops working at once.
    #[must_use]
    pub fn disable() -> Self {
        Self {
            profile: None,
            status: Some(DeviceStatus::Disabled),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct KeysRequest {
    /// Sealed to the device's pairing public key, context `service/v1/worker-keys:<workerId>`.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schemas::SealedBoxJson))]
    pub keys: Value,
}

impl KeysRequest {
    /// A sealed key bundle.
    #[must_use]
    pub fn new(keys: &SealedBox) -> Self {
        Self {
            keys: sealed_json(keys),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeviceKeys {
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub keys: SealedBox,
    pub updated_at: Timestamp,
}
