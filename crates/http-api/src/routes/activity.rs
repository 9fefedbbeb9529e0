use actix_web::web::{Data, Query};
use actix_web::{HttpResponse, get};
use sealpost_activity::ActivityEntry;
use sealpost_kernel::{
    AccountId, ActivityId, InboxId, PageLimits, PageRequest, Timestamp, WorkerId,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Authenticated;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

#[derive(Deserialize, IntoParams)]
pub struct PageQuery {
    /// Page size; default and maximum depend on the list (SPEC.md Limits).
    pub limit: Option<String>,
    /// `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

impl PageQuery {
    pub fn request(&self, limits: PageLimits) -> Result<PageRequest, ApiError> {
        Ok(PageRequest::parse(
            self.limit.as_deref(),
            self.cursor.as_deref(),
            limits,
        )?)
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivityBody {
    id: ActivityId,
    operator_id: AccountId,
    kind: String,
    created_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    inbox_id: Option<InboxId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    worker_id: Option<WorkerId>,
}

impl From<ActivityEntry> for ActivityBody {
    fn from(entry: ActivityEntry) -> Self {
        Self {
            id: entry.id,
            operator_id: entry.account,
            kind: entry.kind.as_str().to_owned(),
            created_at: entry.at,
            inbox_id: entry.inbox,
            worker_id: entry.worker,
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivityPage {
    activity: Vec<ActivityBody>,
    next_cursor: Option<String>,
}

/// The activity log, newest first (kept 90 days). A device sees the entries about itself.
#[utoipa::path(get, path = "/activity", tag = "activity", security(("bearer" = [])), params(PageQuery),
    responses((status = 200, body = ActivityPage), (status = 400, body = ErrorBody)))]
#[get("/activity")]
pub async fn list(
    state: Data<AppState>,
    caller: Authenticated,
    query: Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let request = query.request(PageLimits::ACTIVITY)?;
    let page = state
        .activity
        .page(caller.account(), caller.worker().cloned(), &request)
        .await?;
    Ok(HttpResponse::Ok().json(ActivityPage {
        activity: page.items.into_iter().map(ActivityBody::from).collect(),
        next_cursor: page.next_cursor,
    }))
}
