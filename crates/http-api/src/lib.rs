//! The HTTP layer (actix-web): thin handlers that parse, call a domain
//! service, and answer. Errors leave through one mapping ([`error`]).

pub mod auth;
pub mod client_ip;
pub mod error;
pub mod json;
pub mod rate_limit;
pub mod routes;
pub mod state;
pub mod web_app;

mod fallback;
mod openapi;

use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::{ErrorHandlers, Next, from_fn};
use actix_web::web::{self, Data, PayloadConfig};
use actix_web::{App, HttpMessage, HttpResponse, HttpServer};
use tracing_actix_web::{RequestId, RootSpanBuilder, TracingLogger};

pub use error::{ApiError, ErrorCode};
pub use openapi::openapi_json;
pub use state::{AppState, HealthProbe};

/// Starts serving on an already bound listener (port 0 in tests): HTTPS
/// only when `tls` is given (`SEALPOST_TLS_CERT` / `SEALPOST_TLS_KEY`),
/// else plain HTTP for a TLS-terminating proxy in front. `on_thread_start`
/// runs on each HTTP thread as it builds its application.
pub fn serve(
    listener: std::net::TcpListener,
    state: AppState,
    http_threads: usize,
    tls: Option<rustls::ServerConfig>,
    on_thread_start: impl Fn() + Clone + Send + 'static,
) -> std::io::Result<Server> {
    // The middlewares read these alone, not the whole state.
    let trusted_proxies = Data::new(state.trusted_proxies.clone());
    let limiter = Data::from(state.limiter.clone());
    let state = Data::new(state);
    let server = HttpServer::new(move || {
        on_thread_start();
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
            .wrap(
                ErrorHandlers::new().handler(StatusCode::METHOD_NOT_ALLOWED, fallback::explain_405),
            )
            .wrap(from_fn(limit_by_ip))
            .wrap(from_fn(request_id_header))
            .wrap(from_fn(log_request))
            .wrap(TracingLogger::<RequestSpan>::new())
            .wrap(from_fn(client_ip::resolve_client_ip))
    })
    .workers(http_threads);
    let server = match tls {
        Some(tls) => server.listen_rustls_0_23(listener, tls)?,
        None => server.listen(listener)?,
    };
    let server = server.disable_signals().run();
    Ok(server)
}

/// One `web::resource` per path with every method it serves, so that
/// actix answers a method the path does not serve with 405 and `Allow`
/// (`fallback::explain_405` adds the error body); no per-method route
/// macros, whose resources let other methods fall through to a template
/// path (`PATCH /inboxes/allocation` to `PATCH /inboxes/{id}`). A resource
/// takes every method of its path, so a literal path comes before a
/// template that would match it. An area's paths (a first segment with
/// several) are in one scope, and the docs' and the web client's catch-all
/// templates come last: actix tries resources in order, and every template
/// it tries is a regex run (twice a request: routing, and the route
/// template the log span and the metrics label share); a scope's fixed
/// prefix skips the other areas' templates at once.
fn routes(config: &mut web::ServiceConfig) {
    use routes::{
        abuse, accounts, activity, addresses, api_keys, billing, devices, domains, events, folders,
        health, messages, notifications, plans, sending, staff, support, teams, webhooks,
    };
    config
        .service(web::resource("/").get(index))
        .service(web::resource("/healthz").get(health::healthz))
        .service(web::resource("/readyz").get(health::readyz))
        .service(web::resource("/openapi.json").get(|| async {
            HttpResponse::Ok()
                .content_type("application/json")
                .body(openapi_json())
        }))
        .service(
            web::scope("/accounts")
                .service(web::resource("").post(accounts::register))
                .service(web::resource("/challenge").post(accounts::challenge))
                .service(web::resource("/verify").post(accounts::verify))
                .service(
                    web::resource("/me")
                        .get(accounts::me)
                        .delete(accounts::erase),
                )
                .service(web::resource("/signout").post(accounts::sign_out))
                .service(
                    web::resource("/sessions")
                        .get(accounts::sessions)
                        .delete(accounts::revoke_other_sessions),
                )
                .service(web::resource("/sessions/{id}").delete(accounts::revoke_session)),
        )
        .service(
            web::scope("/api-keys")
                .service(web::resource("").get(api_keys::list).post(api_keys::create))
                .service(web::resource("/{id}").delete(api_keys::revoke)),
        )
        .service(web::resource("/activity").get(activity::list))
        .service(web::resource("/events/stream").get(events::stream))
        .service(web::resource("/plans").get(plans::list))
        .service(web::resource("/usage").get(plans::usage))
        .service(web::resource("/overview").get(plans::overview))
        .service(
            web::scope("/subscription")
                .service(web::resource("").get(plans::get_subscription))
                .service(web::resource("/plan").post(plans::change_plan)),
        )
        .service(
            web::scope("/billing")
                .service(web::resource("/providers").get(billing::providers))
                .service(web::resource("/checkout").post(billing::checkout))
                .service(web::resource("/portal").post(billing::portal))
                .service(web::resource("/payments").get(billing::list_payments))
                .service(web::resource("/payments/{id}").get(billing::get_payment))
                .service(web::resource("/notices/{provider}").post(billing::notice))
                .service(
                    web::resource("/sandbox/{id}")
                        .get(billing::sandbox_page)
                        .post(billing::sandbox_settle),
                )
                .service(web::resource("/return").get(billing::returned)),
        )
        .service(
            web::scope("/workers")
                // Fixed paths before `/{id}`.
                .service(web::resource("/pairing-session").post(devices::open_pairing))
                .service(
                    web::resource("/pairing-session/{token}")
                        .get(devices::poll_pairing)
                        .delete(devices::cancel_pairing),
                )
                .service(web::resource("/pair/lookup").post(devices::lookup))
                .service(web::resource("/pair").post(devices::claim))
                .service(web::resource("/heartbeat").post(devices::heartbeat))
                .service(web::resource("/messages").get(messages::device_messages))
                .service(web::resource("").get(devices::list))
                .service(
                    web::resource("/{id}")
                        .get(devices::get_one)
                        .patch(devices::update)
                        .delete(devices::remove),
                )
                .service(
                    web::resource("/{id}/keys")
                        .get(devices::get_keys)
                        .post(devices::set_keys),
                )
                .service(web::resource("/{id}/inboxes").post(addresses::assign))
                .service(web::resource("/{id}/inboxes/{inbox_id}").delete(addresses::unassign)),
        )
        .service(
            web::scope("/domains")
                .service(web::resource("").get(addresses::domains))
                .service(
                    web::resource("/custom")
                        .get(domains::list)
                        .post(domains::add),
                )
                .service(web::resource("/custom/{domain}/check").post(domains::check))
                .service(web::resource("/custom/{domain}").delete(domains::remove)),
        )
        .service(
            web::scope("/inboxes")
                // A fixed path before `/{id}`.
                .service(web::resource("/allocation").get(addresses::allocation))
                .service(
                    web::resource("")
                        .get(addresses::list)
                        .post(addresses::create),
                )
                .service(
                    web::resource("/{id}")
                        .patch(addresses::update)
                        .delete(addresses::remove),
                )
                .service(web::resource("/{id}/messages").get(messages::list))
                .service(web::resource("/{id}/messages/wait").get(messages::wait))
                .service(web::resource("/{id}/rotate").post(teams::rotate)),
        )
        .service(
            web::scope("/messages")
                // Fixed paths before `/{id}`.
                .service(
                    web::resource("/send")
                        .app_data(PayloadConfig::new(sending::SEND_BODY_LIMIT))
                        .route(web::post().to(sending::send)),
                )
                .service(
                    web::resource("")
                        .app_data(PayloadConfig::new(messages::INBOUND_BODY_LIMIT))
                        .get(folders::list)
                        .post(messages::inbound),
                )
                .service(web::resource("/folders").get(folders::folder_counts))
                .service(web::resource("/trash/empty").post(folders::empty_trash))
                .service(
                    web::resource("/{id}")
                        .get(messages::get_one)
                        .delete(folders::remove),
                )
                .service(web::resource("/{id}/star").post(folders::star))
                .service(web::resource("/{id}/move").post(folders::move_to))
                .service(web::resource("/{id}/attachments/{index}").get(messages::attachment))
                .service(web::resource("/{id}/read").post(messages::mark_read)),
        )
        .service(
            web::scope("/webhook-endpoints")
                .service(web::resource("").get(webhooks::list).post(webhooks::create))
                .service(
                    web::resource("/{id}")
                        .patch(webhooks::update)
                        .delete(webhooks::remove),
                )
                .service(web::resource("/{id}/rotate-secret").post(webhooks::rotate_secret))
                .service(web::resource("/{id}/test").post(webhooks::test))
                .service(web::resource("/{id}/deliveries").get(webhooks::deliveries))
                .service(
                    web::resource("/{id}/deliveries/{delivery_id}/redeliver")
                        .post(webhooks::redeliver),
                ),
        )
        .service(
            web::scope("/notifications")
                .service(
                    web::resource("/preferences")
                        .get(notifications::get_preferences)
                        .patch(notifications::update_preferences),
                )
                .service(web::resource("/inboxes/{id}").patch(notifications::mute_address))
                .service(web::resource("/devices").post(notifications::register_device))
                .service(web::resource("/devices/{token}").delete(notifications::remove_device)),
        )
        .service(
            web::scope("/team")
                .service(web::resource("").get(teams::show))
                .service(web::resource("/members").post(teams::add_member))
                .service(web::resource("/members/{member_id}").delete(teams::remove_member))
                .service(
                    web::resource("/members/{member_id}/grants")
                        .app_data(PayloadConfig::new(teams::GRANTS_BODY_LIMIT))
                        .route(web::post().to(teams::grant)),
                )
                .service(
                    web::resource("/members/{member_id}/grants/{inbox_id}").delete(teams::revoke),
                ),
        )
        .service(
            web::scope("/memberships")
                .service(web::resource("").get(teams::memberships))
                .service(web::resource("/{owner_id}").delete(teams::leave)),
        )
        .service(
            web::scope("/support")
                .service(web::resource("").get(support::overview))
                .service(web::resource("/tickets").post(support::create))
                .service(web::resource("/tickets/{id}").get(support::get_one))
                .service(web::resource("/tickets/{id}/messages").post(support::add_message))
                .service(web::resource("/tickets/{id}/close").post(support::close))
                .service(web::resource("/tickets/{id}/reopen").post(support::reopen))
                .service(web::resource("/key").post(support::bind_key)),
        )
        .service(web::resource("/abuse/reports").post(abuse::report))
        .service(
            web::scope("/staff")
                .service(web::resource("/tickets").get(staff::tickets))
                .service(web::resource("/tickets/{id}").get(staff::get_ticket))
                .service(web::resource("/tickets/{id}/messages").post(staff::reply))
                .service(web::resource("/tickets/{id}/resolve").post(staff::resolve))
                .service(web::resource("/support-key").post(staff::rotate_key))
                .service(web::resource("/support-key/challenge").post(staff::rotation_challenge))
                .service(
                    web::resource("/switches")
                        .get(staff::get_switches)
                        .patch(staff::update_switches),
                )
                .service(web::resource("/accounts/{id}/suspend").post(staff::suspend))
                .service(web::resource("/accounts/{id}/unsuspend").post(staff::unsuspend))
                .service(web::resource("/abuse-reports").get(staff::abuse_reports))
                .service(web::resource("/abuse-reports/{id}/resolve").post(staff::resolve_report))
                .service(web::resource("/audit").get(staff::audit)),
        )
        // Last: their templates (`{_:.*}`, `{path:.*}`) take any path under
        // their prefix, and are regex runs for every request tried on them.
        .service(web::resource("/docs").get(|| async {
            HttpResponse::PermanentRedirect()
                .insert_header((actix_web::http::header::LOCATION, "/docs/"))
                .finish()
        }))
        .service(
            utoipa_swagger_ui::SwaggerUi::new("/docs/{_:.*}")
                .config(utoipa_swagger_ui::Config::from("/openapi.json")),
        )
        // The Swagger UI's service takes GET only and lets other methods by.
        .service(web::resource("/docs/{_:.*}").default_service(web::to(fallback::get_only)))
        .configure(web_app::routes);
}

/// Health probes and the web client's static files (`/app/`): exempt from
/// the edge limit, logged at debug only.
fn is_probe(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz") || web_app::is_app_path(path)
}

/// `GET /`: where to go from here, for a person who opened the API's
/// address; `webBuild` names the web client's build compiled in (null
/// without one), the same id the client's page shows.
async fn index() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({
        "service": "Sealpost API",
        "docs": "/docs/",
        "openapi": "/openapi.json",
        "health": "/healthz",
        "app": web_app::PREFIX,
        "webBuild": web_app::build_id(),
    }))
}

/// Per-IP edge limit, before any handler work; a refusal is held
/// ([`rate_limit::REFUSAL_HOLD`]). Probes and `/app/` are exempt.
async fn limit_by_ip(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if !is_probe(req.path())
        && let Some(limiter) = req.app_data::<Data<rate_limit::EdgeLimiter>>()
    {
        let client = client_ip::ClientIp::of(req.request());
        rate_limit::held(limiter.check_ip(client_ip::limit_key(client.0))).await?;
    }
    next.call(req).await
}

/// The span every request's log lines carry: its id, method and route
/// template. Never the path itself (it can hold a pairing token), the query,
/// headers or the forwarded-for address.
struct RequestSpan;

/// The request's route template, matched once (actix tries the templates
/// again on every call) as the span starts, for `log_request`'s labels.
struct RouteTemplate(Option<String>);

impl RootSpanBuilder for RequestSpan {
    fn on_request_start(request: &ServiceRequest) -> tracing::Span {
        let client = client_ip::ClientIp::of(request.request());
        let request_id = request
            .extensions()
            .get::<RequestId>()
            .map(ToString::to_string)
            .unwrap_or_default();
        let route = request.match_pattern();
        let span = tracing::info_span!(
            "request",
            request_id = %request_id,
            http.method = %request.method(),
            http.route = %route.as_deref().unwrap_or("(no route)"),
            client_ip = %client.0,
        );
        request.extensions_mut().insert(RouteTemplate(route));
        span
    }

    fn on_request_end<B: MessageBody>(
        _span: tracing::Span,
        _outcome: &Result<ServiceResponse<B>, actix_web::Error>,
    ) {
        // `log_request` writes the one line per request, with its duration.
    }
}

/// One line per request at info (probes and `/app/` at debug): status and duration,
/// inside the request's span (id, method, route template).
async fn log_request(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let probe = is_probe(req.path());
    // The route template, never the path: ids and names stay out of labels.
    // `RequestSpan` matched it (its middleware wraps this one).
    let route = req
        .extensions_mut()
        .remove::<RouteTemplate>()
        .and_then(|template| template.0)
        .unwrap_or_else(|| "unmatched".to_owned());
    let method = metric_method(req.method());
    let started = std::time::Instant::now();
    let outcome = next.call(req).await;
    let status = match &outcome {
        Ok(response) => response.status(),
        Err(error) => error.as_response_error().status_code(),
    }
    .as_u16();
    let elapsed = started.elapsed();
    metrics::counter!(
        sealpost_metrics::names::HTTP_REQUESTS,
        "method" => method,
        "route" => route.clone(),
        "status" => status.to_string(),
    )
    .increment(1);
    metrics::histogram!(
        sealpost_metrics::names::HTTP_REQUEST_SECONDS,
        "method" => method,
        "route" => route,
    )
    .record(elapsed.as_secs_f64());
    // Tenths of a millisecond are enough to read.
    let duration_ms = (elapsed.as_secs_f64() * 10_000.0).round() / 10.0;
    if probe {
        tracing::debug!(status, duration_ms, "request");
    } else {
        tracing::info!(status, duration_ms, "request");
    }
    outcome
}

/// The method as a label: the standard ones, else `other` (a client may
/// send any token as a method).
fn metric_method(method: &actix_web::http::Method) -> &'static str {
    use actix_web::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
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
