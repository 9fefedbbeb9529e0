//! The background work of a process, over the services `sealpost-wiring`
//! builds: [`Jobs`] runs the hourly [`Sweeps`], the webhook sender loop
//! ([`send_forever`]), the push sender and the own-domain checks.
//!
//! Several processes may run the jobs at once: a sweep pass holds a
//! PostgreSQL advisory lock (another process's pass is skipped meanwhile),
//! and the sender's fan-out and attempts lock or lease the rows they take.

mod domain_checks;
mod sender;
mod sweeps;

pub use domain_checks::{CHECK_EVERY, check_domains_forever};
use sealpost_config::Config;
use sealpost_wiring::Services;
pub use sender::{push_forever, push_sender, send_forever, spawn_webhook_sender, webhook_sender};
pub use sweeps::{Pass, SWEEP_EVERY, Sweeps, sweep_forever};
use tokio::task::JoinHandle;

/// Aborts its task when dropped, so a task lives exactly as long as its owner.
pub(crate) struct AbortOnDrop<T>(pub(crate) JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The background jobs of one process: the hourly sweep pass, the webhook
/// sender and the push sender. They run until this value is dropped.
pub struct Jobs {
    _sweeps: AbortOnDrop<()>,
    _sender: AbortOnDrop<()>,
    _push: AbortOnDrop<()>,
    _domains: AbortOnDrop<()>,
}

impl Jobs {
    /// Starts the jobs over `services`; the sender's HTTPS client comes from
    /// `config` (`SEALPOST_WEBHOOK_*`).
    pub fn start(services: &Services, config: &Config) -> anyhow::Result<Jobs> {
        let sender = webhook_sender(&services.store, config, services.clock.clone())?;
        let push = push_sender(&services.store, config, services.clock.clone())?;
        Ok(Jobs {
            _push: AbortOnDrop(tokio::spawn(push_forever(push))),
            _domains: AbortOnDrop(tokio::spawn(check_domains_forever(
                services.domains.clone(),
            ))),
            _sweeps: AbortOnDrop(tokio::spawn(sweep_forever(Sweeps::new(services)))),
            _sender: AbortOnDrop(spawn_webhook_sender(sender)),
        })
    }
}
