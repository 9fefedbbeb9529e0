//! The API process, as `sealpost-api` runs it and the test kit starts it:
//! migrate, wire the services ([`sealpost_wiring::Services`]), serve HTTP over
//! them, and run the background jobs beside it, or only the jobs
//! (`sealpost-api --jobs-only`).

use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::Arc;

use anyhow::Context;
use sealpost_config::Config;
use sealpost_http_api::rate_limit::EdgeLimiter;
use sealpost_http_api::routes::health::{CachedHealth, READINESS_CACHE};
use sealpost_http_api::{AppState, HealthProbe};
use sealpost_jobs::{Jobs, SWEEP_EVERY};
use sealpost_kernel::{Clock, StoreError};
use sealpost_store_pg::{MailNotifier, PgStore};
use sealpost_wiring::Services;
use tokio::task::JoinHandle;

struct PgHealth(PgStore);

impl HealthProbe for PgHealth {
    fn ping(&self) -> Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + '_>> {
        Box::pin(self.0.ping())
    }
}

/// What this process runs.
/// Longest wait at stop for the background jobs to finish what they do: a
/// webhook or push attempt takes at most 10 seconds, its commit a moment.
pub const JOBS_STOP: std::time::Duration = std::time::Duration::from_secs(20);

#[derive(Clone, Copy, Debug)]
pub struct StartOptions {
    /// HTTP worker threads (when serving HTTP).
    pub http_threads: usize,
    /// Whether the background jobs (hourly sweeps, the webhook sender) run
    /// here. Tests drive the jobs themselves.
    pub background_jobs: bool,
}

/// The HTTP server of a running process.
struct Http {
    addr: SocketAddr,
    server: actix_web::dev::ServerHandle,
    serving: JoinHandle<std::io::Result<()>>,
    /// Forgets idle rate-limit keys now and then.
    forgetting: JoinHandle<()>,
}

/// A running API process: its address and the handles to stop it.
pub struct Running {
    services: Services,
    metrics: Option<sealpost_wiring::metrics::ProcessMetrics>,
    http: Option<Http>,
    jobs: Option<Jobs>,
}

impl Running {
    /// Where HTTP is served; `None` when this process runs only the jobs.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().map(|http| http.addr)
    }

    /// The services this process wired (tests run sweeps over them).
    pub fn services(&self) -> &Services {
        &self.services
    }

    /// Where `/metrics` answers, when `SEALPOST_METRICS_ADDR` is set.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(|metrics| metrics.addr())
    }

    /// Graceful stop: in-flight requests finish, then the jobs stop.
    /// Stops gracefully, the HTTP server and the jobs side by side: the
    /// listener closes, requests in progress are answered (actix gives them
    /// up to 30 seconds), and each job finishes what it is doing (a sweep
    /// pass, a round, the webhook attempts in flight and the commit of their
    /// results) within [`JOBS_STOP`] before the rest is aborted.
    pub async fn stop(self) {
        let http = async {
            if let Some(http) = self.http {
                http.server.stop(true).await;
                http.forgetting.abort();
                let _ = http.serving.await;
            }
        };
        let jobs = async {
            if let Some(jobs) = self.jobs
                && !jobs.stop(JOBS_STOP).await
            {
                tracing::warn!("background jobs cut at the stop deadline");
            }
        };
        tokio::join!(http, jobs);
    }
}

/// Migrates the database, wires the services, serves HTTP on `listener`
/// (none: only the jobs run) and starts the background jobs when asked to.
pub async fn start(
    config: &Config,
    clock: Arc<dyn Clock>,
    listener: Option<TcpListener>,
    options: StartOptions,
) -> anyhow::Result<Running> {
    // Refused before anything else: without the key no one can sign in.
    sealpost_wiring::server_keys(config)?;
    let applied = sealpost_store_pg::migrate(config.database_url.expose())
        .await
        .context("migrating the database")?;
    tracing::info!(applied, "database migrated");
    let http_threads = if listener.is_some() {
        options.http_threads
    } else {
        0
    };
    let services = Services::with_http_threads(config, clock, http_threads).await?;
    list_addresses_under_reserved_names(&services, config).await;
    // Webhook secrets still in the clear (rows from before they were sealed)
    // or sealed under an older server key are sealed under the current one.
    let (sealed, unreadable) = services
        .webhooks
        .seal_secrets()
        .await
        .context("sealing webhook secrets under the server key")?;
    if sealed > 0 {
        tracing::info!(
            sealed,
            "webhook secrets sealed under the current server key"
        );
    }
    if unreadable > 0 {
        tracing::warn!(
            unreadable,
            "webhook secrets sealed under a server key no longer configured: their endpoints need a rotate-secret"
        );
    }
    let metrics =
        sealpost_wiring::metrics::start(config.operations.metrics_addr, &services.store).await?;
    let http = match listener {
        Some(listener) => Some(serve_http(
            &services,
            config,
            listener,
            options.http_threads,
        )?),
        None => None,
    };
    let jobs = if options.background_jobs {
        tracing::info!("running the background jobs");
        Some(Jobs::start(&services, config)?)
    } else {
        None
    };
    Ok(Running {
        services,
        metrics,
        http,
        jobs,
    })
}

fn serve_http(
    services: &Services,
    config: &Config,
    listener: TcpListener,
    http_threads: usize,
) -> anyhow::Result<Http> {
    let rate = NonZeroU32::new(config.edge_rate_per_minute)
        .context("SEALPOST_EDGE_RATE must be above 0")?;
    let limiter = Arc::new(EdgeLimiter::per_minute(rate));
    let notifier = MailNotifier::start(config.database_url.expose().to_owned());
    let abuse_limiter = Arc::new(sealpost_http_api::rate_limit::AbuseLimiter::new());
    let state = AppState {
        accounts: services.accounts.clone(),
        devices: services.devices.clone(),
        addresses: services.addresses.clone(),
        activity: services.activity.clone(),
        events: services.events.clone(),
        new_events: notifier.event_sender(),
        event_streams: Arc::new(sealpost_http_api::routes::events::StreamSlots::new(
            sealpost_http_api::routes::events::STREAMS_PER_ACCOUNT,
        )),
        mailbox: services.mailbox.clone(),
        ingest: services.ingest.clone(),
        new_mail: notifier.sender(),
        webhooks: services.webhooks.clone(),
        subscriptions: services.subscriptions.clone(),
        billing: services.billing.clone(),
        outbox: services.outbox.clone(),
        notifications: services.notifications.clone(),
        teams: services.teams.clone(),
        domains: services.domains.clone(),
        service_domains: service_domains(config),
        trusted_proxies: sealpost_http_api::client_ip::TrustedProxies::new(
            config.trusted_proxies.clone(),
        )
        .reading(match config.forwarded_header {
            sealpost_config::ForwardedHeader::XForwardedFor => {
                sealpost_http_api::client_ip::ForwardedHeader::XForwardedFor
            }
            sealpost_config::ForwardedHeader::Forwarded => {
                sealpost_http_api::client_ip::ForwardedHeader::Forwarded
            }
        }),
        health: Arc::new(CachedHealth::new(
            Arc::new(PgHealth(services.store.clone())),
            READINESS_CACHE,
        )),
        limiter: limiter.clone(),
        clock: services.clock.clone(),
        support_key: config.support_key.clone(),
        support: services.support.clone(),
        staff: services.staff.clone(),
        abuse_limiter: abuse_limiter.clone(),
    };
    let addr = listener.local_addr().context("reading the bound address")?;
    let tls = config.tls.as_ref().map(server_tls).transpose()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let server = sealpost_http_api::serve(listener, state, http_threads, tls, {
        let store = services.store.clone();
        move || store.bind_this_thread()
    })?;
    let handle = server.handle();
    let serving = tokio::spawn(server);
    // Per process, whoever runs the sweeps: the limiter lives in memory.
    let forgetting = tokio::spawn(async move {
        let mut tick = tokio::time::interval(SWEEP_EVERY);
        loop {
            tick.tick().await;
            limiter.forget_idle();
            abuse_limiter.forget_idle();
        }
    });
    tracing::info!(%addr, scheme, "serving the API");
    Ok(Http {
        addr,
        server: handle,
        serving,
        forgetting,
    })
}

/// The API's TLS: the certificate chain and private key of
/// `SEALPOST_TLS_CERT` / `SEALPOST_TLS_KEY` (PEM), rustls with *ring*,
/// TLS 1.2 and 1.3.
fn server_tls(files: &sealpost_config::TlsFiles) -> anyhow::Result<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .with_context(|| format!("reading SEALPOST_TLS_CERT {}", files.cert.display()))?;
    anyhow::ensure!(
        !chain.is_empty(),
        "SEALPOST_TLS_CERT {} holds no PEM certificate",
        files.cert.display()
    );
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .with_context(|| format!("reading SEALPOST_TLS_KEY {}", files.key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("SEALPOST_TLS_KEY does not match SEALPOST_TLS_CERT")
}

/// The shared mail domains and the API's own public host: a webhook URL
/// pointing at either would call the service itself.
fn service_domains(config: &Config) -> Vec<String> {
    config
        .domains
        .iter()
        .cloned()
        .chain(config.public_host())
        .collect()
}

/// What `sealpost-api staff-token ...` does.
pub enum StaffTokenCommand {
    /// A new token for a named staff member, printed once, with a comma list
    /// of roles and a lifetime in days (`SEALPOST_STAFF_TOKEN_DAYS` when
    /// `None`).
    Create {
        name: String,
        roles: String,
        days: Option<u32>,
    },
    /// Revokes a token by id or name.
    Revoke(String),
    List,
}

/// Operator command: manages staff tokens on the configured database
/// (migrated first). Returns the lines to print.
pub async fn staff_token(
    config: &Config,
    command: StaffTokenCommand,
) -> anyhow::Result<Vec<String>> {
    sealpost_store_pg::migrate(config.database_url.expose())
        .await
        .context("migrating the database")?;
    let store =
        PgStore::connect(config.database_url.expose(), 2).context("connecting to the database")?;
    let lifetime = sealpost_support::staff_access::token_lifetime(config.staff_token_days)?;
    let staff =
        sealpost_support::Staff::new(Arc::new(store), Arc::new(sealpost_kernel::SystemClock))
            .with_token_lifetime(lifetime);
    Ok(match command {
        StaffTokenCommand::Create { name, roles, days } => {
            let roles = sealpost_support::Roles::parse(&roles)?;
            let lifetime = days
                .map(sealpost_support::staff_access::token_lifetime)
                .transpose()?;
            let (info, token) = staff.create_token(&name, roles, lifetime).await?;
            vec![
                format!("staff member {} ({})", info.name, info.id),
                format!(
                    "roles {}, expires {}",
                    info.roles.to_text(),
                    info.expires_at
                ),
                format!("token (shown once): {token}"),
            ]
        }
        StaffTokenCommand::Revoke(who) => {
            staff.revoke_token(&who).await?;
            vec![format!("revoked {who}")]
        }
        StaffTokenCommand::List => staff
            .tokens()
            .await?
            .into_iter()
            .map(|token| {
                let state = token
                    .revoked_at
                    .map_or_else(|| "live".to_owned(), |at| format!("revoked {at}"));
                format!(
                    "{}\t{}\t{}\t{}\texpires {}\t{state}",
                    token.id,
                    token.name,
                    token.roles.to_text(),
                    token.created_at,
                    token.expires_at
                )
            })
            .collect(),
    })
}

/// Addresses on the shared domains under a name reserved after they were
/// issued stay with their owners; the operator is told which (ids only).
async fn list_addresses_under_reserved_names(services: &Services, config: &Config) {
    let names: Vec<String> = sealpost_addresses::ReservedNames::new(config.reserved_names.clone())
        .names()
        .map(str::to_owned)
        .collect();
    match services
        .store
        .addresses_under_names(&config.domains, &names)
        .await
    {
        Ok(ids) if ids.is_empty() => {}
        Ok(ids) => {
            let ids: Vec<&str> = ids.iter().map(|id| id.as_str()).collect();
            tracing::warn!(
                count = ids.len(),
                ids = %ids.join(","),
                "addresses on shared domains under reserved names (issued before they were reserved; they stay with their owners)"
            );
        }
        Err(error) => tracing::warn!(%error, "could not list addresses under reserved names"),
    }
}
