//! The own-domain checks in the background: every half minute, each domain
//! whose next check is due is looked up in DNS and moved (minutes apart
//! while it is being set up, hourly once live; see docs/domains.md). Two
//! processes checking one domain at once do no harm: a step change applies
//! only from the step it was decided on.

use std::time::Duration;

use sealpost_domains::Domains;

use crate::Stop;

pub const CHECK_EVERY: Duration = Duration::from_secs(30);
/// Domains checked per round at most; the rest wait for the next round.
const PER_ROUND: i64 = 200;

pub async fn check_domains_forever(domains: Domains) {
    check_domains_until(domains, Stop::never()).await;
}

/// [`check_domains_forever`] until `stop`; a round under way is finished.
pub async fn check_domains_until(domains: Domains, mut stop: Stop) {
    let mut tick = tokio::time::interval(CHECK_EVERY);
    loop {
        tokio::select! {
            biased;
            () = stop.requested() => return,
            _ = tick.tick() => {}
        }
        match domains.check_due(PER_ROUND).await {
            Ok(0) => {}
            Ok(checked) => tracing::info!(checked, "checked own domains in DNS"),
            Err(error) => tracing::warn!(%error, "own-domain checks failed"),
        }
    }
}
