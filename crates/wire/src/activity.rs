//! `GET /activity`: the activity log, newest first. An entry holds ids and
//! a time, never content; `kind` is for example `worker.paired` or
//! `inbox.assigned`.

use sealpost_kernel::{AccountId, ActivityId, AddressId, DeviceId, Timestamp};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ActivityEntry {
    pub id: ActivityId,
    pub operator_id: AccountId,
    pub kind: String,
    pub created_at: Timestamp,
    #[serde(rename = "inboxId")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_id: Option<AddressId>,
    #[serde(rename = "workerId")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_id: Option<DeviceId>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ActivityPage {
    pub activity: Vec<ActivityEntry>,
    pub next_cursor: Option<String>,
}

/// The `data:` of one frame of `GET /events/stream` (server-sent events):
/// an event's type (`type`, docs/api.md "Events") and its payload, ids
/// only. The frame's `id:` is the stream position to resume from. The type
/// `resync` (payload `{}`) says events were missed: read the state again,
/// the stream goes on from now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StreamFrame {
    #[serde(rename = "type")]
    pub kind: String,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub payload: serde_json::Value,
}

impl StreamFrame {
    /// The frame type telling a client it missed events.
    pub const RESYNC: &'static str = "resync";
}
