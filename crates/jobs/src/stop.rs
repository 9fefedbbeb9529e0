//! Asking the job loops to stop: each finishes what it is doing (a sweep
//! pass, a round of pushes or domain checks, the webhook attempts in flight
//! and the commit of their results, which gives their leases back) and
//! starts nothing new.

use tokio::sync::watch;

/// The receiving side of a stop request; [`Stop::never`] never comes.
#[derive(Clone, Debug)]
pub struct Stop(Option<watch::Receiver<bool>>);

impl Stop {
    /// A request and the loops' side of it.
    pub fn channel() -> (watch::Sender<bool>, Stop) {
        let (ask, asked) = watch::channel(false);
        (ask, Stop(Some(asked)))
    }

    /// For loops that run until their task is aborted.
    pub fn never() -> Stop {
        Stop(None)
    }

    pub fn is_requested(&self) -> bool {
        self.0.as_ref().is_some_and(|asked| *asked.borrow())
    }

    /// Completes once stopping is asked (never for [`Stop::never`] or when
    /// the asking side is gone without asking).
    pub async fn requested(&mut self) {
        match &mut self.0 {
            Some(asked) => {
                if asked.wait_for(|stop| *stop).await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending::<()>().await,
        }
    }
}
