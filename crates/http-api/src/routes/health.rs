use actix_web::HttpResponse;
use actix_web::web::Data;
use sealpost_wire::Health;

use crate::state::AppState;

fn health(status: &str) -> Health {
    Health {
        status: status.to_owned(),
    }
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health", responses((status = 200, body = Health)))]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(health("up"))
}

/// Readiness: the database answers.
#[utoipa::path(get, path = "/readyz", tag = "health", responses(
    (status = 200, body = Health),
    (status = 503, body = Health),
))]
pub async fn readyz(state: Data<AppState>) -> HttpResponse {
    match state.health.ping().await {
        Ok(()) => HttpResponse::Ok().json(health("ready")),
        Err(error) => {
            tracing::warn!(%error, "readiness check failed");
            HttpResponse::ServiceUnavailable().json(health("unavailable"))
        }
    }
}
