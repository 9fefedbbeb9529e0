//! `cargo xtask bench api`: a bounded loopback load on a few API endpoints.
//!
//! The API runs in this process as the test kit starts it (the production
//! wiring, two workers, a database of its own, the edge limit out of the
//! way), on the release build. One account on Enterprise holds one address
//! with 50 sealed messages. Each endpoint gets `REQUESTS` requests from
//! `CONCURRENCY` keep-alive clients (bounded by `RUN_LIMIT` too), and the
//! run prints requests per second and p50/p99 latency, each also as a ratio
//! to `GET /plans` measured in the same run: a static answer with no
//! database, so the ratio shows what an endpoint costs beyond HTTP itself,
//! whatever the machine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use diesel_async::RunQueryDsl;
use sealpost_seal::b64;
use sealpost_testkit::TestApp;
use serde_json::json;

use crate::bench::register_enterprise;

const CONCURRENCY: usize = 32;
const REQUESTS: usize = 4_000;
/// An endpoint still running then is reported as incomplete, never hidden.
const RUN_LIMIT: Duration = Duration::from_secs(60);
const INBOX: &str = "ibx_benchapi";
const MESSAGES: usize = 50;

/// What one endpoint did.
struct Figures {
    label: String,
    done: usize,
    errors: usize,
    seconds: f64,
    p50_ms: f64,
    p99_ms: f64,
}

impl Figures {
    fn rate(&self) -> f64 {
        self.done as f64 / self.seconds
    }
}

/// The request each endpoint's `n`-th call sends.
type MakeRequest = Arc<dyn Fn(&reqwest::Client, usize) -> reqwest::RequestBuilder + Send + Sync>;

pub async fn run() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let app = TestApp::spawn_with(|config| config.edge_rate_per_minute = u32::MAX).await;
    let result = measure(&app).await;
    app.stop().await;
    result
}

async fn measure(app: &TestApp) -> Result<()> {
    let base = app.base_url.clone();
    let (keys, token) = register_enterprise(&base, &app.db.url).await?;
    let http = reqwest::Client::new();
    http.post(format!("{base}/inboxes"))
        .bearer_auth(&token)
        .json(
            &json!({ "id": INBOX, "domain": "mail.localhost", "prefix": "bench",
                       "publicKey": b64::encode(&keys.inbox_public_key(INBOX, 0)) }),
        )
        .send()
        .await?
        .error_for_status()
        .context("creating the bench address")?;
    for n in 0..MESSAGES {
        let raw = format!("From: a@example.com\r\nSubject: bench {n}\r\n\r\nmessage {n}\r\n");
        http.post(format!("{base}/messages"))
            .bearer_auth(&token)
            .json(&json!({ "inboxId": INBOX, "raw": b64::encode(raw.as_bytes()) }))
            .send()
            .await?
            .error_for_status()
            .context("storing a bench message")?;
    }
    let one_message = first_message(app).await?;

    println!(
        "API benchmark: {REQUESTS} requests per endpoint from {CONCURRENCY} keep-alive clients on loopback \
         (at most {} s each), the API in this process with 2 workers; one address with {MESSAGES} messages",
        RUN_LIMIT.as_secs()
    );
    let bearer = format!("Bearer {token}");
    let get = |path: String| -> MakeRequest {
        let url = format!("{base}{path}");
        let bearer = bearer.clone();
        Arc::new(move |client: &reqwest::Client, _| {
            client.get(&url).header("authorization", &bearer)
        })
    };
    let create_inbox: MakeRequest = {
        let url = format!("{base}/inboxes");
        let bearer = bearer.clone();
        Arc::new(move |client: &reqwest::Client, n| {
            client
                .post(&url)
                .header("authorization", &bearer)
                .json(&json!({ "id": format!("ibx_b{n:07}"), "domain": "mail.localhost", "prefix": "bench" }))
        })
    };
    let endpoints: Vec<(&str, MakeRequest)> = vec![
        ("GET /plans (reference)", get("/plans".into())),
        ("GET /inboxes", get("/inboxes".into())),
        (
            "GET /inboxes/:id/messages?limit=50",
            get(format!("/inboxes/{INBOX}/messages?limit=50")),
        ),
        ("GET /messages/:id", get(format!("/messages/{one_message}"))),
        ("GET /usage", get("/usage".into())),
        ("POST /inboxes", create_inbox),
    ];
    let mut all = Vec::new();
    for (label, make) in endpoints {
        all.push(drive(label, make).await?);
    }
    print_table(&all);
    Ok(())
}

async fn first_message(app: &TestApp) -> Result<String> {
    #[derive(diesel::QueryableByName)]
    struct Id {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
    }
    let mut conn = app.db.connect().await;
    let row: Id = diesel::sql_query("SELECT id FROM messages ORDER BY received_at LIMIT 1")
        .get_result(&mut conn)
        .await
        .context("reading a bench message id")?;
    Ok(row.id)
}

/// `REQUESTS` calls of `make` from `CONCURRENCY` clients, each client on its
/// own keep-alive connection; any answer but 2xx counts as an error.
async fn drive(label: &str, make: MakeRequest) -> Result<Figures> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::with_capacity(CONCURRENCY);
    for _ in 0..CONCURRENCY {
        let next = next.clone();
        let make = make.clone();
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .build()?;
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0;
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n >= REQUESTS || started.elapsed() > RUN_LIMIT {
                    break;
                }
                let sent = Instant::now();
                match make(&client, n).send().await {
                    Ok(response) if response.status().is_success() => {
                        // Read the whole body: the answer is the work.
                        if response.bytes().await.is_err() {
                            errors += 1;
                        }
                    }
                    _ => errors += 1,
                }
                latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
            }
            (latencies, errors)
        }));
    }
    let mut latencies = Vec::with_capacity(REQUESTS);
    let mut errors = 0;
    for worker in workers {
        let (mut own, own_errors) = worker.await?;
        latencies.append(&mut own);
        errors += own_errors;
    }
    let seconds = started.elapsed().as_secs_f64();
    if latencies.is_empty() {
        bail!("{label}: no request finished");
    }
    latencies.sort_by(f64::total_cmp);
    let percentile = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize];
    Ok(Figures {
        label: label.to_owned(),
        done: latencies.len(),
        errors,
        seconds,
        p50_ms: percentile(0.50),
        p99_ms: percentile(0.99),
    })
}

fn print_table(all: &[Figures]) {
    let Some(reference) = all.first() else {
        return;
    };
    println!(
        "| endpoint | requests | errors | req/s | p50 ms | p99 ms | req/s vs reference | p50 vs reference | p99 vs reference |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for figures in all {
        println!(
            "| {} | {}{} | {} | {:.0} | {:.1} | {:.1} | {:.2} | {:.1}x | {:.1}x |",
            figures.label,
            figures.done,
            if figures.done < REQUESTS {
                " (INCOMPLETE: run limit)"
            } else {
                ""
            },
            figures.errors,
            figures.rate(),
            figures.p50_ms,
            figures.p99_ms,
            figures.rate() / reference.rate(),
            figures.p50_ms / reference.p50_ms,
            figures.p99_ms / reference.p99_ms,
        );
    }
}
