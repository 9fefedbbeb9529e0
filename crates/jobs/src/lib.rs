//! The background work of a process, over the services `sealpost-wiring`
//! builds: [`Jobs`] runs the hourly [`Sweeps`], the webhook sender loop
//! ([`send_forever`]), the push sender and the own-domain checks.
//!
//! Several processes may run the jobs at once: a sweep pass holds a
//! PostgreSQL advisory lock (another process's pass is skipped meanwhile),
//! and the sender's fan-out and attempts lock or lease the rows they take.

mod domain_checks;
mod sender;
mod stop;
mod sweeps;

pub use domain_checks::{CHECK_EVERY, check_domains_forever, check_domains_until};
use sealpost_config::Config;
use sealpost_store_pg::MailNotifier;
use sealpost_wiring::Services;
pub use sender::{
    EventWake, push_forever, push_sender, push_until, send_forever, send_until,
    spawn_webhook_sender, webhook_sender,
};
pub use stop::Stop;
pub use sweeps::{Pass, SWEEP_EVERY, Sweeps, sweep_forever, sweep_until};
use tokio::task::JoinHandle;

/// Aborts its task when dropped, so a task lives exactly as long as its owner.
pub(crate) struct AbortOnDrop<T>(pub(crate) JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How often the outbox backlog gauges are read.
pub const BACKLOG_EVERY: std::time::Duration = std::time::Duration::from_secs(15);

/// Sets `sealpost_outbox_backlog` for each consumer every [`BACKLOG_EVERY`]
/// until `stop`.
pub async fn outbox_backlog_until(store: sealpost_store_pg::PgStore, mut stop: Stop) {
    let mut tick = tokio::time::interval(BACKLOG_EVERY);
    loop {
        tokio::select! {
            biased;
            () = stop.requested() => return,
            _ = tick.tick() => {}
        }
        match store.outbox_backlog().await {
            Ok((webhooks, push)) => {
                let name = sealpost_metrics::names::OUTBOX_BACKLOG;
                metrics::gauge!(name, "consumer" => "webhooks").set(webhooks as f64);
                metrics::gauge!(name, "consumer" => "push").set(push as f64);
            }
            Err(error) => tracing::warn!(%error, "reading the outbox backlog failed"),
        }
    }
}

/// The background jobs of one process: the hourly sweep pass, the webhook
/// sender, the push sender and the own-domain checks. They run until
/// [`Jobs::stop`], or until this value is dropped (then they are aborted
/// wherever they are).
pub struct Jobs {
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<(&'static str, AbortOnDrop<()>)>,
}

impl Jobs {
    /// Starts the jobs over `services`; the sender's HTTPS client comes from
    /// `config` (`SEALPOST_WEBHOOK_*`).
    pub fn start(services: &Services, config: &Config) -> anyhow::Result<Jobs> {
        let sender = webhook_sender(&services.store, config, services.clock.clone())?;
        let push = push_sender(&services.store, config, services.clock.clone())?;
        let (stop, asked) = Stop::channel();
        // New events wake the webhook sender at their COMMIT.
        let events = MailNotifier::start(config.database_url.expose().to_owned())
            .event_sender()
            .subscribe();
        let tasks = vec![
            (
                "push sender",
                AbortOnDrop(tokio::spawn(push_until(push, asked.clone()))),
            ),
            (
                "domain checks",
                AbortOnDrop(tokio::spawn(check_domains_until(
                    services.domains.clone(),
                    asked.clone(),
                ))),
            ),
            (
                "sweeps",
                AbortOnDrop(tokio::spawn(sweep_until(
                    Sweeps::new(services),
                    asked.clone(),
                ))),
            ),
            (
                "outbox backlog",
                AbortOnDrop(tokio::spawn(outbox_backlog_until(
                    services.store.clone(),
                    asked.clone(),
                ))),
            ),
            (
                "webhook sender",
                AbortOnDrop(tokio::spawn(send_until(sender, asked, Some(events)))),
            ),
        ];
        Ok(Jobs { stop, tasks })
    }

    /// Asks every job to stop after what it is doing and waits for them, at
    /// most `within` in all; jobs still running then are aborted (a webhook
    /// attempt cut so is sent again once its lease runs out). Whether all
    /// stopped by themselves.
    pub async fn stop(mut self, within: std::time::Duration) -> bool {
        let _ = self.stop.send(true);
        let deadline = tokio::time::Instant::now() + within;
        let mut all = true;
        for (name, task) in &mut self.tasks {
            if tokio::time::timeout_at(deadline, &mut task.0)
                .await
                .is_err()
            {
                tracing::warn!(
                    job = *name,
                    "job still running at the stop deadline; aborted"
                );
                all = false;
            }
        }
        all
    }
}
