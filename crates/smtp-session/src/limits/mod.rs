//! What one process lets all its sessions hold together: connections (in
//! total, per client and per network, `gate`) and bytes (the DATA in
//! memory and the spool on disk, each a [`ByteBudget`]).

mod gate;

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub(crate) use gate::{Gate, GateLimits, KnownSenderDelivery, REFUSAL_WRITE};

/// Bytes all sessions sharing it may hold at once: a session reserves as
/// its message grows and gives the reservation back once the message is
/// delivered or refused. Never waits: what does not fit now is refused.
/// Cheap to clone; clones share the budget.
#[derive(Clone, Debug)]
pub struct ByteBudget {
    budget: Arc<Semaphore>,
    limit: usize,
}

/// The DATA bytes held in memory by every session sharing it.
pub type DataMemory = ByteBudget;

impl ByteBudget {
    /// A budget of `limit` bytes (at least 1).
    pub fn new(limit: usize) -> Self {
        let limit = limit.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            budget: Arc::new(Semaphore::new(limit)),
            limit,
        }
    }

    /// The configured total.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes not reserved right now.
    pub fn available(&self) -> usize {
        self.budget.available_permits()
    }

    /// Bytes reserved right now.
    pub fn in_use(&self) -> usize {
        self.limit.saturating_sub(self.budget.available_permits())
    }

    /// An empty reservation, grown with [`Reservation::grow_to`].
    pub(crate) fn reservation(&self) -> Reservation {
        Reservation {
            budget: Arc::clone(&self.budget),
            held: None,
            bytes: 0,
        }
    }
}

/// Bytes one message holds of a [`ByteBudget`]; given back on drop.
pub(crate) struct Reservation {
    budget: Arc<Semaphore>,
    held: Option<OwnedSemaphorePermit>,
    bytes: usize,
}

impl Reservation {
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Gives back what is held beyond `bytes`.
    pub(crate) fn shrink_to(&mut self, bytes: usize) {
        let Some(extra) = self.bytes.checked_sub(bytes).filter(|extra| *extra > 0) else {
            return;
        };
        if let Some(held) = self.held.as_mut()
            && let Some(given_back) = held.split(extra)
        {
            drop(given_back);
            self.bytes = bytes;
        }
    }

    /// Reserves up to `bytes` in all, without waiting: false when the
    /// budget does not have them now (the reservation is unchanged then).
    pub(crate) fn grow_to(&mut self, bytes: usize) -> bool {
        let Some(more) = bytes.checked_sub(self.bytes).filter(|more| *more > 0) else {
            return true;
        };
        let Ok(more_u32) = u32::try_from(more) else {
            return false;
        };
        match Arc::clone(&self.budget).try_acquire_many_owned(more_u32) {
            Ok(permit) => {
                match self.held.as_mut() {
                    Some(held) => held.merge(permit),
                    None => self.held = Some(permit),
                }
                self.bytes = bytes;
                true
            }
            Err(_) => false,
        }
    }
}

/// Takes one off a gauge when dropped (a session that ended, however).
pub(crate) struct Decrements(pub(crate) metrics::Gauge);

impl Drop for Decrements {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_grows_without_waiting_and_gives_back_what_it_shrinks() {
        let memory = DataMemory::new(1000);
        let mut reservation = memory.reservation();
        assert!(reservation.grow_to(800));
        assert!(!reservation.grow_to(1001));
        assert_eq!(memory.in_use(), 800);
        reservation.shrink_to(100);
        assert_eq!((reservation.bytes(), memory.in_use()), (100, 100));
        reservation.shrink_to(200);
        assert_eq!(reservation.bytes(), 100, "shrinking never grows");
        assert!(reservation.grow_to(1000));
        drop(reservation);
        assert_eq!(memory.in_use(), 0);
    }

    #[test]
    fn data_memory_is_reserved_and_given_back() {
        let memory = DataMemory::new(1000);
        let mut one = memory.reservation();
        assert!(one.grow_to(600));
        let mut two = memory.reservation();
        assert!(!two.grow_to(600));
        assert!(two.grow_to(400));
        assert_eq!(memory.in_use(), 1000);
        assert!(!one.grow_to(601));
        assert_eq!(one.bytes(), 600);
        drop(one);
        assert_eq!(memory.in_use(), 400);
        assert!(two.grow_to(1000));
    }
}
