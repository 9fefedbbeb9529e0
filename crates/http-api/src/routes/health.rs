use actix_web::web::Data;
use actix_web::{HttpResponse, get};
use serde::Serialize;
use utoipa::ToSchema;

use crate::state::AppState;

#[derive(Serialize, ToSchema)]
pub struct Status {
    /// `up`, `ready` or `unavailable`.
    status: &'static str,
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health", responses((status = 200, body = Status)))]
#[get("/healthz")]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(Status { status: "up" })
}

/// Readiness: the database answers.
#[utoipa::path(get, path = "/readyz", tag = "health", responses(
    (status = 200, body = Status),
    (status = 503, body = Status),
))]
#[get("/readyz")]
pub async fn readyz(state: Data<AppState>) -> HttpResponse {
    match state.health.ping().await {
        Ok(()) => HttpResponse::Ok().json(Status { status: "ready" }),
        Err(error) => {
            tracing::warn!(%error, "readiness check failed");
            HttpResponse::ServiceUnavailable().json(Status {
                status: "unavailable",
            })
        }
    }
}
