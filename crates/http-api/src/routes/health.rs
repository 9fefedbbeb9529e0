use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::HttpResponse;
use actix_web::web::Data;
use sealpost_kernel::StoreError;
use sealpost_wire::Health;

use crate::state::{AppState, HealthProbe};

/// How long one answer of the database serves `/readyz`: a flood of probes
/// (they skip the edge limit) costs at most one ping a second.
pub const READINESS_CACHE: Duration = Duration::from_secs(1);

/// A [`HealthProbe`] that asks `inner` at most once per `ttl` and answers
/// every probe in between, and every probe waiting on that one ping, with
/// its result.
pub struct CachedHealth {
    inner: Arc<dyn HealthProbe>,
    ttl: Duration,
    /// When the last ping ended and what it answered (a failure as its
    /// text). Held across a ping, so probes arriving meanwhile wait for it
    /// instead of pinging too.
    last: tokio::sync::Mutex<Option<(Instant, Result<(), String>)>>,
}

impl CachedHealth {
    pub fn new(inner: Arc<dyn HealthProbe>, ttl: Duration) -> Self {
        Self {
            inner,
            ttl,
            last: tokio::sync::Mutex::new(None),
        }
    }

    async fn check(&self) -> Result<(), StoreError> {
        let mut last = self.last.lock().await;
        if let Some((at, answer)) = &*last
            && at.elapsed() < self.ttl
        {
            return answer.clone().map_err(StoreError::Unavailable);
        }
        let answer = self.inner.ping().await;
        if let Err(error) = &answer {
            // Once per ping, not once per probe.
            tracing::warn!(%error, "readiness check failed");
        }
        let kept = answer.as_ref().map(|_| ()).map_err(ToString::to_string);
        *last = Some((Instant::now(), kept));
        answer
    }
}

impl HealthProbe for CachedHealth {
    fn ping(&self) -> Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + '_>> {
        Box::pin(self.check())
    }
}

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
    // `state.health` is a `CachedHealth`: it logs a failed ping itself.
    match state.health.ping().await {
        Ok(()) => HttpResponse::Ok().json(health("ready")),
        Err(_) => HttpResponse::ServiceUnavailable().json(health("unavailable")),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Counts its pings; fails them while `down`.
    #[derive(Default)]
    struct Counting {
        pings: AtomicUsize,
        down: std::sync::atomic::AtomicBool,
    }

    impl HealthProbe for Counting {
        fn ping(&self) -> Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + '_>> {
            Box::pin(async move {
                self.pings.fetch_add(1, Ordering::SeqCst);
                // A round trip takes a while: probes arriving meanwhile wait for it.
                tokio::time::sleep(Duration::from_millis(20)).await;
                if self.down.load(Ordering::SeqCst) {
                    Err(StoreError::Unavailable("down".into()))
                } else {
                    Ok(())
                }
            })
        }
    }

    #[tokio::test]
    async fn a_flood_of_probes_costs_one_ping_per_period() {
        let database = Arc::new(Counting::default());
        let ttl = Duration::from_millis(300);
        let cached = Arc::new(CachedHealth::new(database.clone(), ttl));
        let flood = || {
            let cached = cached.clone();
            async move {
                let mut probes = tokio::task::JoinSet::new();
                for _ in 0..200 {
                    let cached = cached.clone();
                    probes.spawn(async move { cached.ping().await });
                }
                probes.join_all().await
            }
        };
        assert!(flood().await.iter().all(Result::is_ok));
        assert!(flood().await.iter().all(Result::is_ok));
        assert_eq!(database.pings.load(Ordering::SeqCst), 1);
        // The next period asks again, and a failure is kept as long.
        database.down.store(true, Ordering::SeqCst);
        tokio::time::sleep(ttl).await;
        assert!(flood().await.iter().all(Result::is_err));
        assert!(flood().await.iter().all(Result::is_err));
        assert_eq!(database.pings.load(Ordering::SeqCst), 2);
        database.down.store(false, Ordering::SeqCst);
        tokio::time::sleep(ttl).await;
        assert!(cached.ping().await.is_ok());
        assert_eq!(database.pings.load(Ordering::SeqCst), 3);
    }
}
