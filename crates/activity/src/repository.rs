use async_trait::async_trait;
use sealpost_kernel::{AccountId, DeviceId, PageRequest, StoreError, Timestamp};

use crate::ActivityEntry;

#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ActivityRepository: Send + Sync {
    /// Newest first, after the request's cursor, up to `fetch_limit()` rows.
    async fn activity_page(
        &self,
        account: &AccountId,
        device: Option<DeviceId>,
        page: &PageRequest,
    ) -> Result<Vec<ActivityEntry>, StoreError>;
    async fn delete_activity_before(&self, before: Timestamp) -> Result<u64, StoreError>;
}
