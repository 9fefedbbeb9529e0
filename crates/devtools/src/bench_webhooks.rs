//! `cargo xtask bench webhooks`: 10,000 events fanned out to 10 local HTTPS
//! receivers (pinned hosts, a test CA), delivered by the API's own sender
//! loop. Prints deliveries per second and event-to-delivery latency; then
//! the same with one receiver answering 500 and one never answering, to show
//! the healthy receivers keep their pace.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, bail};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::{AccountId, Clock, PlanId, SystemClock, WebhookId};
use sealpost_store_pg::PgStore;
use sealpost_testkit::receiver::{NEVER_ANSWER, Receiver};
use sealpost_webhooks::Webhooks;
use sealpost_webhooks::events::EventFilter;
use sealpost_webhooks::url::validate_url;

const EVENTS: usize = 10_000;
const RECEIVERS: usize = 10;
const ACCOUNT: &str = "acct_benchbenchbenchbenchben";
/// A run that has not finished by then is reported as such, never hidden.
const RUN_LIMIT: Duration = Duration::from_secs(300);

pub struct Figures {
    /// False when the run limit stopped it before every delivery arrived.
    pub complete: bool,
    pub healthy_deliveries: usize,
    pub seconds: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl Figures {
    pub fn rate(&self) -> f64 {
        self.healthy_deliveries as f64 / self.seconds
    }
}

pub async fn run(server: &str) -> Result<()> {
    println!(
        "webhook benchmark: {EVENTS} events x {RECEIVERS} HTTPS receivers on 127.0.0.1, pinned hosts, test CA"
    );
    let healthy = scenario(server, &[200; RECEIVERS]).await?;
    report("all 10 receivers answer 200", &healthy);
    let mut statuses = [200; RECEIVERS];
    statuses[RECEIVERS - 2] = 500;
    statuses[RECEIVERS - 1] = NEVER_ANSWER;
    let mixed = scenario(server, &statuses).await?;
    report("8 answer 200, one 500, one never answers", &mixed);
    let ratio = mixed.rate() / (healthy.rate() * (RECEIVERS - 2) as f64 / RECEIVERS as f64);
    println!(
        "healthy receivers' rate with two failing ones: {:.0}% of their share in the all-healthy run (target: at least 80%)",
        ratio * 100.0
    );
    println!(
        "target: at least 2,000 deliveries/s; met: {}",
        if healthy.rate() >= 2000.0 {
            "yes"
        } else {
            "no"
        }
    );
    Ok(())
}

fn report(label: &str, figures: &Figures) {
    println!(
        "  {label}{}: {} deliveries in {:.2} s = {:.0} deliveries/s; event-to-delivery latency p50 {:.0} ms, p99 {:.0} ms \
         (all events are created up front, so latency includes time queued)",
        if figures.complete {
            ""
        } else {
            " (INCOMPLETE: stopped at the run limit)"
        },
        figures.healthy_deliveries,
        figures.seconds,
        figures.rate(),
        figures.p50_ms,
        figures.p99_ms
    );
}

const DB_PREFIX: &str = "sealpost_bench_webhooks_";

async fn scenario(server: &str, statuses: &[u16]) -> Result<Figures> {
    // Those of runs that were killed first.
    sealpost_testkit::databases::drop_run_leftovers(server, DB_PREFIX).await;
    let name = format!("{DB_PREFIX}{}", std::process::id());
    let url = format!("{server}/{name}");
    let drop = || async {
        sealpost_testkit::databases::drop_database(server, &name)
            .await
            .map_err(|error| anyhow::anyhow!(error))
            .context("dropping the bench database")
    };
    drop().await?;
    sealpost_store_pg::create_database_if_missing(&url)
        .await
        .context("creating the bench database")?;
    sealpost_store_pg::migrate(&url)
        .await
        .context("migrating the bench database")?;
    let result = run_scenario(&url, statuses).await;
    drop().await?;
    result
}

async fn run_scenario(url: &str, statuses: &[u16]) -> Result<Figures> {
    let mut receivers = Vec::new();
    for status in statuses {
        receivers.push(Receiver::start(*status).await);
    }
    let ca_file =
        std::env::temp_dir().join(format!("sealpost-bench-ca-{}.pem", std::process::id()));
    std::fs::write(
        &ca_file,
        receivers
            .iter()
            .map(|r| r.ca_pem.clone())
            .collect::<Vec<_>>()
            .join("\n"),
    )?;
    let resolve = receivers
        .iter()
        .enumerate()
        .map(|(i, r)| format!("r{i}.hooks.test={}", r.addr))
        .collect::<Vec<_>>()
        .join(",");

    let mut conn = AsyncPgConnection::establish(url).await?;
    diesel::sql_query(
        "INSERT INTO accounts (id, plan_id, auth_public_key, auth_verifier_hash, created_at) \
         VALUES ($1, 'operator', decode(repeat('00', 32), 'hex'), decode(repeat('00', 32), 'hex'), now())",
    )
    .bind::<diesel::sql_types::Text, _>(ACCOUNT)
    .execute(&mut conn)
    .await?;
    let store = PgStore::connect(url, 16)?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let account = AccountId::from_trusted(ACCOUNT.to_owned());
    // One server key for the endpoints' sealed secrets and the sender.
    let keys = sealpost_seal::ServerKeys::new(sealpost_seal::random_bytes::<32>(), []);
    let webhooks = Webhooks::new(Arc::new(store.clone()), clock.clone(), keys.clone());
    for (i, receiver) in receivers.iter().enumerate() {
        let url = validate_url(
            &format!("https://r{i}.hooks.test:{}/hook", receiver.addr.port()),
            &["mail.localhost".to_owned()],
        )
        .map_err(|error| anyhow::anyhow!("{error}"))?;
        let filter = EventFilter::parse(&["*"]).map_err(|error| anyhow::anyhow!("{error}"))?;
        webhooks
            .create(
                &account,
                PlanId::Operator,
                WebhookId::from_trusted(format!("whk_bench{i:02}")),
                url,
                filter,
                None,
            )
            .await
            .map_err(|error| anyhow::anyhow!("{error}"))?;
    }
    diesel::sql_query(format!(
        "INSERT INTO events (id, account_id, type, payload, created_at) \
         SELECT 'evt_' || lpad(g::text, 26, '0'), $1, 'inbox.created', jsonb_build_object('inboxId', 'ibx_bench'), now() \
         FROM generate_series(1, {EVENTS}) g"
    ))
    .bind::<diesel::sql_types::Text, _>(ACCOUNT)
    .execute(&mut conn)
    .await?;

    let mut config = sealpost_config::Config::from_vars(&Default::default())?;
    config.webhook_resolve = Some(resolve);
    config.webhook_ca_file = Some(ca_file);
    config.server_keys = Some(keys);
    let sender = sealpost_jobs::webhook_sender(&store, &config, clock)?;
    let started = Instant::now();
    let running = sealpost_jobs::spawn_webhook_sender(sender);
    let healthy: Vec<&Receiver> = receivers
        .iter()
        .zip(statuses)
        .filter(|(_, status)| **status == 200)
        .map(|(receiver, _)| receiver)
        .collect();
    let goal = healthy.len() * EVENTS;
    let complete = loop {
        let done: usize = healthy.iter().map(|r| r.count()).sum();
        if done >= goal {
            break true;
        }
        if started.elapsed() > RUN_LIMIT {
            eprintln!(
                "xtask: only {done} of {goal} deliveries arrived within {} s",
                RUN_LIMIT.as_secs()
            );
            break false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    running.abort();
    let mut latencies = Vec::with_capacity(goal);
    let mut last = SystemTime::UNIX_EPOCH;
    for receiver in &healthy {
        for request in receiver.requests() {
            let body: serde_json::Value = serde_json::from_slice(&request.body)?;
            let created = body["createdAt"]
                .as_str()
                .and_then(sealpost_kernel::Timestamp::parse)
                .context("createdAt")?;
            let created =
                SystemTime::UNIX_EPOCH + Duration::from_millis(created.unix_millis() as u64);
            latencies.push(
                request
                    .at
                    .duration_since(created)
                    .unwrap_or_default()
                    .as_secs_f64()
                    * 1000.0,
            );
            last = last.max(request.at);
        }
    }
    let first_created = SystemTime::now() - started.elapsed();
    let seconds = last
        .duration_since(first_created)
        .unwrap_or_default()
        .as_secs_f64()
        .max(0.001);
    latencies.sort_by(|a, b| a.total_cmp(b));
    let percentile = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize];
    if latencies.is_empty() {
        bail!("no delivery arrived");
    }
    Ok(Figures {
        complete,
        healthy_deliveries: latencies.len(),
        seconds,
        p50_ms: percentile(0.50),
        p99_ms: percentile(0.99),
    })
}
