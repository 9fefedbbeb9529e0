//! The HTTP layer (actix-web): thin handlers that parse, call a domain
//! service, and answer. Errors leave through one mapping ([`error`]).

pub mod auth;
pub mod client_ip;
pub mod error;
pub mod json;
pub mod rate_limit;
pub mod routes;
pub mod state;

mod fallback;
mod openapi;

use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::{Next, from_fn};
use actix_web::web::{self, Data, PayloadConfig};
use actix_web::{App, HttpMessage, HttpResponse, HttpServer};
use tracing_actix_web::{RequestId, RootSpanBuilder, TracingLogger};

pub use error::{ApiError, ErrorCode};
pub use openapi::openapi_json;
pub use state::{AppState, HealthProbe};

/// Starts serving on an already bound listener (port 0 in tests): HTTPS
/// only when `tls` is given (`SEALPOST_TLS_CERT` / `SEALPOST_TLS_KEY`),
/// else plain HTTP for a TLS-terminating proxy in front.
pub fn serve(
    listener: std::net::TcpListener,
    state: AppState,
    workers: usize,
    tls: Option<rustls::ServerConfig>,
) -> std::io::Result<Server> {
    // The middlewares read these alone, not the whole state.
    let trusted_proxies = Data::new(state.trusted_proxies.clone());
    let limiter = Data::from(state.limiter.clone());
    let state = Data::new(state);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .app_data(trusted_proxies.clone())
            .app_data(limiter.clone())
            .app_data(PayloadConfig::new(json::DEFAULT_BODY_LIMIT))
            .app_data(web::QueryConfig::default().error_handler(|error, _| {
                ApiError::new(ErrorCode::InvalidField, format!("query: {error}")).into()
            }))
            .app_data(web::PathConfig::default().error_handler(|_, _| ApiError::not_found().into()))
            .configure(routes)
            .default_service(web::to(fallback::no_route))
            .wrap(from_fn(refuse_shadowed))
            .wrap(from_fn(limit_by_ip))
            .wrap(from_fn(request_id_header))
            .wrap(from_fn(log_request))
            .wrap(TracingLogger::<RequestSpan>::new())
            .wrap(from_fn(client_ip::resolve_client_ip))
    })
    .workers(workers);
    let server = match tls {
        Some(tls) => server.listen_rustls_0_23(listener, tls)?,
        None => server.listen(listener)?,
    };
    let server = server.disable_signals().run();
    Ok(server)
}

fn routes(config: &mut web::ServiceConfig) {
    use routes::{
        abuse, accounts, activity, addresses, billing, devices, domains, folders, health, messages,
        notifications, plans, sending, staff, support, teams, webhooks,
    };
    config
        .route("/", web::get().to(index))
        .route(
            "/docs",
            web::get().to(|| async {
                HttpResponse::PermanentRedirect()
                    .insert_header((actix_web::http::header::LOCATION, "/docs/"))
                    .finish()
            }),
        )
        .service(
            utoipa_swagger_ui::SwaggerUi::new("/docs/{_:.*}")
                .config(utoipa_swagger_ui::Config::from("/openapi.json")),
        )
        .service(health::healthz)
        .service(health::readyz)
        .route(
            "/openapi.json",
            web::get().to(|| async {
                HttpResponse::Ok()
                    .content_type("application/json")
                    .body(openapi_json())
            }),
        )
        .service(accounts::register)
        .service(accounts::challenge)
        .service(accounts::verify)
        .service(accounts::me)
        .service(accounts::sign_out)
        .service(accounts::sessions)
        .service(accounts::revoke_other_sessions)
        .service(accounts::revoke_session)
        .service(accounts::erase)
        .service(activity::list)
        .service(plans::list)
        .service(plans::usage)
        .service(plans::overview)
        .service(plans::get_subscription)
        .service(plans::change_plan)
        .service(billing::providers)
        .service(billing::checkout)
        .service(billing::get_payment)
        .service(billing::notice)
        .service(billing::sandbox_page)
        .service(billing::sandbox_settle)
        .service(billing::returned)
        // Fixed paths before `/workers/{id}` and `/inboxes/{id}`.
        .service(devices::open_pairing)
        .service(devices::poll_pairing)
        .service(devices::cancel_pairing)
        .service(devices::lookup)
        .service(devices::claim)
        .service(devices::heartbeat)
        .service(messages::worker_messages)
        .service(devices::list)
        .service(devices::get_one)
        .service(devices::update)
        .service(devices::remove)
        .service(devices::set_keys)
        .service(devices::get_keys)
        .service(domains::list)
        .service(domains::add)
        .service(domains::check)
        .service(domains::remove)
        .service(addresses::domains)
        .service(addresses::allocation)
        .service(addresses::list)
        .service(addresses::create)
        .service(addresses::update)
        .service(addresses::remove)
        .service(addresses::assign)
        .service(addresses::unassign)
        .service(messages::list)
        .service(messages::wait)
        // Fixed paths before `/messages/{id}`.
        .service(
            web::resource("/messages/send")
                .app_data(PayloadConfig::new(sending::SEND_BODY_LIMIT))
                .route(web::post().to(sending::send)),
        )
        .service(folders::list)
        .service(folders::folder_counts)
        .service(folders::empty_trash)
        .service(messages::get_one)
        .service(folders::star)
        .service(folders::move_to)
        .service(folders::remove)
        .service(messages::attachment)
        .service(messages::mark_read)
        .service(webhooks::list)
        .service(webhooks::create)
        .service(webhooks::update)
        .service(webhooks::remove)
        .service(webhooks::rotate_secret)
        .service(webhooks::test)
        .service(webhooks::deliveries)
        .service(webhooks::redeliver)
        .service(notifications::get_preferences)
        .service(notifications::update_preferences)
        .service(notifications::mute_inbox)
        .service(notifications::register_device)
        .service(notifications::remove_device)
        .service(teams::show)
        .service(teams::add_member)
        .service(teams::remove_member)
        .service(
            web::resource("/team/members/{member_id}/grants")
                .app_data(PayloadConfig::new(teams::GRANTS_BODY_LIMIT))
                .route(web::post().to(teams::grant)),
        )
        .service(teams::revoke)
        .service(teams::rotate)
        .service(teams::memberships)
        .service(teams::leave)
        .service(support::overview)
        .service(support::create)
        .service(support::get_one)
        .service(support::add_message)
        .service(support::close)
        .service(support::reopen)
        .service(support::bind_key)
        .service(abuse::report)
        .service(staff::tickets)
        .service(staff::get_ticket)
        .service(staff::reply)
        .service(staff::resolve)
        .service(staff::rotate_key)
        .service(staff::get_switches)
        .service(staff::update_switches)
        .service(staff::suspend)
        .service(staff::unsuspend)
        .service(staff::abuse_reports)
        .service(staff::resolve_report)
        .service(staff::audit)
        .service(
            web::resource("/messages")
                .app_data(PayloadConfig::new(messages::INBOUND_BODY_LIMIT))
                .route(web::post().to(messages::inbound)),
        );
}

/// Health probes: exempt from the edge limit, logged at debug only.
fn is_probe(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz")
}

/// `GET /`: where to go from here, for a person who opened the API's address.
async fn index() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({
        "service": "Sealpost API",
        "docs": "/docs/",
        "openapi": "/openapi.json",
        "health": "/healthz",
    }))
}

/// 405 for a method a literal path does not serve, before a template route
/// of that method takes it (see `fallback::shadowed`).
async fn refuse_shadowed(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if let Some(response) = fallback::shadowed(req.request()) {
        return Err(
            actix_web::error::InternalError::from_response("method not allowed", response).into(),
        );
    }
    next.call(req).await
}

/// Per-IP edge limit, before any handler work. Probes are exempt.
async fn limit_by_ip(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if !is_probe(req.path())
        && let Some(limiter) = req.app_data::<Data<rate_limit::EdgeLimiter>>()
    {
        let client = client_ip::ClientIp::of(req.request());
        limiter.check_ip(client_ip::limit_key(client.0))?;
    }
    next.call(req).await
}

/// The span every request's log lines carry: its id, method and route
/// template. Never the path itself (it can hold a pairing token), the query,
/// headers or the forwarded-for address.
struct RequestSpan;

impl RootSpanBuilder for RequestSpan {
    fn on_request_start(request: &ServiceRequest) -> tracing::Span {
        let client = client_ip::ClientIp::of(request.request());
        let request_id = request
            .extensions()
            .get::<RequestId>()
            .map(ToString::to_string)
            .unwrap_or_default();
        let route = request
            .match_pattern()
            .unwrap_or_else(|| "(no route)".to_owned());
        tracing::info_span!(
            "request",
            request_id = %request_id,
            http.method = %request.method(),
            http.route = %route,
            client_ip = %client.0,
        )
    }

    fn on_request_end<B: MessageBody>(
        _span: tracing::Span,
        _outcome: &Result<ServiceResponse<B>, actix_web::Error>,
    ) {
        // `log_request` writes the one line per request, with its duration.
    }
}

/// One line per request at info (probes at debug): status and duration,
/// inside the request's span (id, method, route template).
async fn log_request(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let probe = is_probe(req.path());
    let started = std::time::Instant::now();
    let outcome = next.call(req).await;
    let status = match &outcome {
        Ok(response) => response.status(),
        Err(error) => error.as_response_error().status_code(),
    }
    .as_u16();
    // Tenths of a millisecond are enough to read.
    let duration_ms = (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
    if probe {
        tracing::debug!(status, duration_ms, "request");
    } else {
        tracing::info!(status, duration_ms, "request");
    }
    outcome
}

/// Echoes the request id the tracing span carries, so a user can quote it.
async fn request_id_header(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let request_id = req.extensions().get::<RequestId>().copied();
    let mut response = next.call(req).await?;
    if let Some(id) = request_id
        && let Ok(value) = HeaderValue::from_str(&id.to_string())
    {
        response
            .headers_mut()
            .insert(HeaderName::from_static("x-request-id"), value);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use actix_web::http::StatusCode;
    use actix_web::test::{TestRequest, init_service, try_call_service};

    use super::*;
    use crate::client_ip::{TrustedProxies, resolve_client_ip};
    use crate::rate_limit::EdgeLimiter;

    /// The edge limit with the client middleware alone around it (no log
    /// span): each client behind the trusted proxy has its own allowance of
    /// two, and an untrusted peer's forwarding header changes nothing.
    #[actix_web::test]
    async fn the_edge_limit_counts_the_client_the_middleware_resolves() {
        let app = init_service(
            App::new()
                .app_data(Data::new(TrustedProxies::new(vec![
                    "10.0.0.0/8".parse().unwrap(),
                ])))
                .app_data(Data::new(EdgeLimiter::per_minute(
                    NonZeroU32::new(2).unwrap(),
                )))
                .route("/plans", web::get().to(HttpResponse::Ok))
                .wrap(from_fn(limit_by_ip))
                .wrap(from_fn(resolve_client_ip)),
        )
        .await;
        let status = async |peer: &str, forwarded: &str| {
            let request = TestRequest::get()
                .uri("/plans")
                .peer_addr(peer.parse().unwrap())
                .insert_header(("x-forwarded-for", forwarded))
                .to_request();
            match try_call_service(&app, request).await {
                Ok(response) => response.status(),
                Err(refused) => refused.as_response_error().status_code(),
            }
        };
        for _ in 0..2 {
            assert_eq!(
                status("10.0.0.1:4000", "198.51.100.1").await,
                StatusCode::OK
            );
        }
        assert_eq!(
            status("10.0.0.1:4000", "198.51.100.1").await,
            StatusCode::TOO_MANY_REQUESTS
        );
        assert_eq!(
            status("10.0.0.1:4000", "198.51.100.2").await,
            StatusCode::OK
        );

        for forwarded in ["203.0.113.1", "203.0.113.2"] {
            assert_eq!(status("192.0.2.9:4000", forwarded).await, StatusCode::OK);
        }
        assert_eq!(
            status("192.0.2.9:4000", "203.0.113.3").await,
            StatusCode::TOO_MANY_REQUESTS,
            "the untrusted peer's own allowance, whatever it claims"
        );
    }

    #[test]
    fn a_request_that_skipped_the_middleware_is_its_peer() {
        let request = TestRequest::get()
            .peer_addr("192.0.2.7:4000".parse().unwrap())
            .to_http_request();
        assert_eq!(
            client_ip::ClientIp::of(&request),
            client_ip::ClientIp("192.0.2.7".parse().unwrap())
        );
    }
}
