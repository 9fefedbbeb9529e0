//! Answers in flight, so a stopping server finishes them before it closes
//! its sockets, and takes no new question meanwhile.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

#[derive(Default)]
pub(crate) struct InFlight {
    draining: AtomicBool,
    count: AtomicUsize,
    idle: Notify,
}

/// One question being answered; ends when dropped.
pub(crate) struct Answering<'a>(&'a InFlight);

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl InFlight {
    /// Counts a question in, unless the server drains (then `None`: it is
    /// dropped unanswered, and the client asks another nameserver).
    pub(crate) fn begin(&self) -> Option<Answering<'_>> {
        // Counted before the check: a drain that starts between the two
        // still waits for this one.
        self.count.fetch_add(1, Ordering::AcqRel);
        let answering = Answering(self);
        (!self.draining.load(Ordering::Acquire)).then_some(answering)
    }

    /// Takes no new question from now on and waits, at most `within`, for
    /// those in flight; whether they all finished.
    pub(crate) async fn drain(&self, within: Duration) -> bool {
        self.draining.store(true, Ordering::Release);
        let finished = async {
            loop {
                let idle = self.idle.notified();
                let mut idle = std::pin::pin!(idle);
                idle.as_mut().enable();
                if self.count.load(Ordering::Acquire) == 0 {
                    return;
                }
                idle.await;
            }
        };
        tokio::time::timeout(within, finished).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_drain_waits_for_answers_in_flight_and_refuses_new_ones() {
        let in_flight = std::sync::Arc::new(InFlight::default());
        let answering = in_flight.begin().expect("taken before the drain");
        let draining = {
            let in_flight = in_flight.clone();
            tokio::spawn(async move { in_flight.drain(Duration::from_secs(60)).await })
        };
        tokio::task::yield_now().await;
        while !in_flight.draining.load(Ordering::Acquire) {
            tokio::task::yield_now().await;
        }
        assert!(
            in_flight.begin().is_none(),
            "no new question while draining"
        );
        assert!(!draining.is_finished(), "waits for the answer in flight");
        drop(answering);
        assert!(draining.await.unwrap(), "finished once it was answered");
        assert_eq!(in_flight.count.load(Ordering::Acquire), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_drain_gives_up_at_its_deadline() {
        let in_flight = InFlight::default();
        let _stuck = in_flight.begin().unwrap();
        assert!(!in_flight.drain(Duration::from_secs(5)).await);
    }
}
