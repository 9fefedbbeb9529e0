//! What one process lets all its sessions hold together: connections (in
//! total and per client) and the bytes of DATA in memory.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The bytes of DATA all sessions sharing it may hold at once: a session
/// reserves as its message grows and gives the reservation back once the
/// message is delivered or refused. Cheap to clone; clones share the budget.
#[derive(Clone, Debug)]
pub struct DataMemory {
    budget: Arc<Semaphore>,
    limit: usize,
}

impl DataMemory {
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

/// Bytes one message holds of a [`DataMemory`]; given back on drop.
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

/// Why a connection was turned away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// As many sessions as the process takes.
    Busy,
    /// As many sessions as one client may hold.
    PerClient,
    /// The client opened connections faster than its rate.
    Rate,
}

impl Refusal {
    /// The 421 line sent before closing.
    pub(crate) fn reply(self, hostname: &str) -> String {
        match self {
            Refusal::Busy => {
                format!("421 4.3.2 {hostname} Too many connections, try again later\r\n")
            }
            Refusal::PerClient => format!(
                "421 4.7.0 {hostname} Too many connections from your address, try again later\r\n"
            ),
            Refusal::Rate => {
                format!("421 4.7.0 {hostname} Connecting too fast from your address, slow down\r\n")
            }
        }
    }
}

/// Admission of new connections: a global and a per-client cap on sessions
/// at once, and a per-client token bucket of new connections per minute.
/// A client is its IPv4 address or its IPv6 /64.
pub(crate) struct Gate {
    max_sessions: usize,
    per_client: usize,
    per_minute: u32,
    state: Mutex<GateState>,
}

#[derive(Default)]
struct GateState {
    sessions: usize,
    clients: HashMap<IpAddr, Client>,
}

struct Client {
    sessions: usize,
    tokens: f64,
    refilled: Instant,
}

/// Above this many remembered clients, idle ones with a full bucket are forgotten.
const FORGET_ABOVE: usize = 4096;

impl Gate {
    pub(crate) fn new(max_sessions: usize, per_client: usize, per_minute: u32) -> Arc<Self> {
        Arc::new(Self {
            max_sessions: max_sessions.max(1),
            per_client: per_client.max(1),
            per_minute,
            state: Mutex::new(GateState::default()),
        })
    }

    /// Admits one connection from `ip` (a session slot held until the
    /// returned guard drops), or says why not.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Admitted, Refusal> {
        self.admit_at(ip, Instant::now())
    }

    fn admit_at(self: &Arc<Self>, ip: IpAddr, now: Instant) -> Result<Admitted, Refusal> {
        let key = client_key(ip);
        let rate = f64::from(self.per_minute);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.clients.len() > FORGET_ABOVE {
            state.clients.retain(|_, client| {
                client.sessions > 0
                    || (rate > 0.0 && refill(client.tokens, client.refilled, now, rate) < rate)
            });
        }
        let over_total = state.sessions >= self.max_sessions;
        let client = state.clients.entry(key).or_insert(Client {
            sessions: 0,
            tokens: rate,
            refilled: now,
        });
        // An attempt within the rate spends its token even when a cap then
        // refuses it: a client hammering a full server still runs dry.
        let rate_ok = if rate > 0.0 {
            client.tokens = refill(client.tokens, client.refilled, now, rate);
            client.refilled = now;
            if client.tokens >= 1.0 {
                client.tokens -= 1.0;
                true
            } else {
                false
            }
        } else {
            true
        };
        if !rate_ok {
            return Err(Refusal::Rate);
        }
        if client.sessions >= self.per_client {
            return Err(Refusal::PerClient);
        }
        if over_total {
            return Err(Refusal::Busy);
        }
        client.sessions += 1;
        state.sessions += 1;
        Ok(Admitted {
            gate: Arc::clone(self),
            key,
        })
    }

    fn release(&self, key: IpAddr) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.sessions = state.sessions.saturating_sub(1);
        if let Some(client) = state.clients.get_mut(&key) {
            client.sessions = client.sessions.saturating_sub(1);
        }
    }
}

fn refill(tokens: f64, since: Instant, now: Instant, per_minute: f64) -> f64 {
    let elapsed = now.saturating_duration_since(since).as_secs_f64();
    (tokens + elapsed * per_minute / 60.0).min(per_minute)
}

/// IPv4 as it is, IPv6 by its /64 (one host's usual share).
fn client_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
        v4 => v4,
    }
}

/// A session slot; freed on drop.
pub(crate) struct Admitted {
    gate: Arc<Gate>,
    key: IpAddr,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.gate.release(self.key);
    }
}

/// How long the 421 to a refused connection may take to go out.
pub(crate) const REFUSAL_WRITE: Duration = Duration::from_secs(2);

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
    fn sessions_are_capped_in_total_and_per_client() {
        let gate = Gate::new(3, 2, 0);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let first = gate.admit(a).unwrap();
        let _second = gate.admit(a).unwrap();
        assert_eq!(gate.admit(a).err(), Some(Refusal::PerClient));
        let _third = gate.admit(b).unwrap();
        assert_eq!(gate.admit(b).err(), Some(Refusal::Busy));
        drop(first);
        assert!(gate.admit(b).is_ok());
    }

    #[test]
    fn new_connections_per_client_follow_a_token_bucket() {
        let gate = Gate::new(100, 100, 60);
        let ip: IpAddr = "2001:db8::1".parse().unwrap();
        let same_64: IpAddr = "2001:db8::ffff".parse().unwrap();
        let start = Instant::now();
        for _ in 0..60 {
            drop(gate.admit_at(ip, start).unwrap());
        }
        assert_eq!(gate.admit_at(same_64, start).err(), Some(Refusal::Rate));
        // One a second comes back.
        let later = start + Duration::from_millis(1500);
        assert!(gate.admit_at(ip, later).is_ok());
        assert_eq!(gate.admit_at(ip, later).err(), Some(Refusal::Rate));
        let other: IpAddr = "2001:db8:0:1::1".parse().unwrap();
        assert!(gate.admit_at(other, later).is_ok());
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
