use actix_web::HttpResponse;
use actix_web::web::{Data, Query};
use sealpost_activity::ActivityEntry;
use sealpost_kernel::{PageLimits, PageRequest};
use sealpost_wire as wire;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Authenticated;
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Page size; default and maximum depend on the list (`docs/api.md`).
    #[param(value_type = u32, required = false, minimum = 1, maximum = 200)]
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

fn activity_body(entry: ActivityEntry) -> wire::ActivityEntry {
    wire::ActivityEntry {
        id: entry.id,
        operator_id: entry.account,
        kind: entry.kind.as_str().to_owned(),
        created_at: entry.at,
        address_id: entry.address,
        device_id: entry.device,
    }
}

/// The activity log, newest first (kept 90 days). A device sees the entries about itself.
#[utoipa::path(get, path = "/activity", operation_id = "list_activity", tag = "activity", security(("bearer" = [])), params(PageQuery),
    responses((status = 200, body = wire::ActivityPage), (status = 400, body = wire::ErrorBody)))]
pub async fn list(
    state: Data<AppState>,
    caller: Authenticated,
    query: Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let request = query.request(PageLimits::ACTIVITY)?;
    let page = state
        .activity
        .page(caller.account(), caller.own_device().cloned(), &request)
        .await?;
    Ok(HttpResponse::Ok().json(wire::ActivityPage {
        activity: page.items.into_iter().map(activity_body).collect(),
        next_cursor: page.next_cursor,
    }))
}
