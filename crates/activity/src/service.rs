use std::sync::Arc;

use sealpost_kernel::{AccountId, Clock, Cursor, DeviceId, Page, PageRequest, StoreError};

use crate::{ACTIVITY_RETENTION, ActivityEntry, ActivityRepository};

/// `GET /activity` and its retention sweep.
#[derive(Clone)]
pub struct ActivityLog {
    repo: Arc<dyn ActivityRepository>,
    clock: Arc<dyn Clock>,
}

impl ActivityLog {
    pub fn new(repo: Arc<dyn ActivityRepository>, clock: Arc<dyn Clock>) -> Self {
        Self { repo, clock }
    }

    /// The account's log; for a device, only the entries about it.
    pub async fn page(
        &self,
        account: &AccountId,
        device: Option<DeviceId>,
        request: &PageRequest,
    ) -> Result<Page<ActivityEntry>, StoreError> {
        let rows = self.repo.activity_page(account, device, request).await?;
        Ok(Page::from_rows(rows, request, |entry| Cursor {
            at: entry.at,
            id: entry.id.to_string(),
        }))
    }

    /// Removes entries older than 90 days.
    pub async fn sweep(&self) -> Result<u64, StoreError> {
        self.repo
            .delete_activity_before(self.clock.now() - ACTIVITY_RETENTION)
            .await
    }
}
