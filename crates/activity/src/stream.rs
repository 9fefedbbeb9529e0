//! The account's event stream (`GET /events/stream`): the outbox's events
//! in commit order, from a position on, ids only.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::TimeDelta;
use sealpost_kernel::{AccountId, DeviceId, EventId, StoreError, StreamPosition};
use serde_json::Value;

use crate::EventType;

/// Events stay readable to the stream this long after they were written,
/// whatever webhooks and push did with them (docs/api.md "Event stream").
pub const EVENT_STREAM_RETENTION: TimeDelta = TimeDelta::hours(24);

/// Most events one read returns: a slow reader holds one page at most.
pub const STREAM_PAGE: i64 = 100;

/// One event as the stream sends it.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamEvent {
    pub position: StreamPosition,
    pub id: EventId,
    pub kind: EventType,
    /// Ids only (docs/api.md "Events").
    pub payload: Value,
}

/// What a read from a position found.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamRead {
    /// The committed events after the position, oldest first, at most
    /// [`STREAM_PAGE`] (none: nothing new yet).
    Events(Vec<StreamEvent>),
    /// Events after the position were pruned: the reader must resync.
    Expired,
}

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait EventStreamRepository: Send + Sync {
    /// The position before every event not yet committed: a stream that
    /// starts "now" starts here.
    async fn stream_head(&self) -> Result<StreamPosition, StoreError>;

    /// Up to `limit` committed events of `account` after `after`, in
    /// commit order, never one that could still be followed by an event
    /// committing below it. For a device (`device`), only the events about
    /// it or an address assigned to it.
    async fn stream_after(
        &self,
        account: &AccountId,
        device: Option<DeviceId>,
        after: StreamPosition,
        limit: i64,
    ) -> Result<StreamRead, StoreError>;
}

/// Reads the event stream for the HTTP layer.
#[derive(Clone)]
pub struct EventFeed {
    repo: Arc<dyn EventStreamRepository>,
}

impl EventFeed {
    pub fn new(repo: Arc<dyn EventStreamRepository>) -> Self {
        Self { repo }
    }

    pub async fn head(&self) -> Result<StreamPosition, StoreError> {
        self.repo.stream_head().await
    }

    /// The next page after `after` ([`STREAM_PAGE`] at most).
    pub async fn after(
        &self,
        account: &AccountId,
        device: Option<DeviceId>,
        after: StreamPosition,
    ) -> Result<StreamRead, StoreError> {
        self.repo
            .stream_after(account, device, after, STREAM_PAGE)
            .await
    }
}
