//! The own-domain checks in the background: every half minute, each domain
//! whose next check is due is looked up in DNS and moved (minutes apart
//! while it is being set up, hourly once live; see docs/domains.md). Two
//! processes checking one domain at once do no harm: a step change applies
//! only from the step it was decided on.

use std::time::Duration;

use sealpost_domains::Domains;

pub const CHECK_EVERY: Duration = Duration::from_secs(30);
/// Domains checked per round at most; the rest wait for the next round.
const PER_ROUND: i64 = 200;

pub async fn check_domains_forever(domains: Domains) {
    let mut tick = tokio::time::interval(CHECK_EVERY);
    loop {
        tick.tick().await;
        match domains.check_due(PER_ROUND).await {
            Ok(0) => {}
            Ok(checked) => tracing::info!(checked, "checked own domains in DNS"),
            Err(error) => tracing::warn!(%error, "own-domain checks failed"),
        }
    }
}
