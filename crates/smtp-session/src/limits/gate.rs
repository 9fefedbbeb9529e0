//! Admission of new connections: a cap on sessions at once in total, per
//! client (an IPv4 address or an IPv6 /64) and per network (an IPv4 /24 or
//! an IPv6 /48), a per-client token bucket of new connections per minute,
//! and a share of the total kept for networks that delivered mail lately.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::{Delivery, DeliveryOutcome, Envelope, RecipientDecision, SmtpConfig};

/// How long the 421 to a refused connection may take to go out.
pub(crate) const REFUSAL_WRITE: Duration = Duration::from_secs(2);

/// Above this many remembered clients, idle ones with a full bucket are forgotten.
const FORGET_ABOVE: usize = 4096;

/// Why a connection was turned away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// As many sessions as the process takes (from this sender: the rest
    /// is kept for known senders).
    Busy,
    /// As many sessions as one client may hold.
    PerClient,
    /// As many sessions as one network (IPv4 /24, IPv6 /48) may hold.
    PerNetwork,
    /// The client opened connections faster than its rate.
    Rate,
}

impl Refusal {
    /// The `reason` label of the refusal.
    pub(crate) fn reason(self) -> &'static str {
        use sealpost_metrics::smtp_reason::{CAPACITY, CLIENT_LIMIT};
        match self {
            Refusal::Busy => CAPACITY,
            Refusal::PerClient | Refusal::PerNetwork | Refusal::Rate => CLIENT_LIMIT,
        }
    }

    /// The 421 line sent before closing.
    pub(crate) fn reply(self, hostname: &str) -> String {
        match self {
            Refusal::Busy => {
                format!("421 4.3.2 {hostname} Too many connections, try again later\r\n")
            }
            Refusal::PerClient => format!(
                "421 4.7.0 {hostname} Too many connections from your address, try again later\r\n"
            ),
            Refusal::PerNetwork => format!(
                "421 4.7.0 {hostname} Too many connections from your network, try again later\r\n"
            ),
            Refusal::Rate => {
                format!("421 4.7.0 {hostname} Connecting too fast from your address, slow down\r\n")
            }
        }
    }
}

/// The numbers a [`Gate`] admits by (see [`SmtpConfig`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct GateLimits {
    pub(crate) max_sessions: usize,
    pub(crate) per_client: usize,
    pub(crate) per_ipv4_24: usize,
    pub(crate) per_ipv6_48: usize,
    /// New connections a minute per client; 0 for no limit.
    pub(crate) per_minute: u32,
    /// Percent of `max_sessions` only known senders may take.
    pub(crate) reserved_percent: u8,
    /// Networks remembered as known senders at most.
    pub(crate) known_senders: usize,
    /// How long a network stays known after its last accepted message.
    pub(crate) known_for: Duration,
}

impl GateLimits {
    pub(crate) fn of(config: &SmtpConfig) -> Self {
        Self {
            max_sessions: config.max_sessions,
            per_client: config.max_sessions_per_ip,
            per_ipv4_24: config.max_sessions_per_ipv4_24,
            per_ipv6_48: config.max_sessions_per_ipv6_48,
            per_minute: config.connections_per_ip_per_minute,
            reserved_percent: config.reserved_percent,
            known_senders: config.known_senders,
            known_for: config.known_sender_for,
        }
    }
}

/// Admits connections (see the module's documentation).
pub(crate) struct Gate {
    limits: GateLimits,
    /// Sessions anyone may hold: `max_sessions` less the reserved share.
    open_to_all: usize,
    state: Mutex<GateState>,
}

#[derive(Default)]
struct GateState {
    sessions: usize,
    clients: HashMap<IpAddr, Client>,
    /// Sessions per network key; a network with none has no entry.
    networks: HashMap<IpAddr, usize>,
    known: KnownSenders,
}

struct Client {
    sessions: usize,
    tokens: f64,
    refilled: Instant,
}

impl Gate {
    pub(crate) fn new(limits: GateLimits) -> Arc<Self> {
        let limits = GateLimits {
            max_sessions: limits.max_sessions.max(1),
            per_client: limits.per_client.max(1),
            per_ipv4_24: limits.per_ipv4_24.max(1),
            per_ipv6_48: limits.per_ipv6_48.max(1),
            reserved_percent: limits.reserved_percent.min(100),
            ..limits
        };
        let reserved = limits.max_sessions * usize::from(limits.reserved_percent) / 100;
        Arc::new(Self {
            limits,
            open_to_all: limits.max_sessions.saturating_sub(reserved).max(1),
            state: Mutex::new(GateState::default()),
        })
    }

    /// Admits one connection from `ip` (a session slot held until the
    /// returned guard drops), or says why not.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Admitted, Refusal> {
        self.admit_at(ip, Instant::now())
    }

    pub(crate) fn admit_at(
        self: &Arc<Self>,
        ip: IpAddr,
        now: Instant,
    ) -> Result<Admitted, Refusal> {
        let key = client_key(ip);
        let network = network_key(ip);
        let rate = f64::from(self.limits.per_minute);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.clients.len() > FORGET_ABOVE {
            state.clients.retain(|_, client| {
                client.sessions > 0
                    || (rate > 0.0 && refill(client.tokens, client.refilled, now, rate) < rate)
            });
        }
        let client = state.clients.entry(key).or_insert(Client {
            sessions: 0,
            tokens: rate,
            refilled: now,
        });
        // An attempt within the rate spends its token even when a cap then
        // refuses it: a client hammering a full server still runs dry.
        if rate > 0.0 {
            client.tokens = refill(client.tokens, client.refilled, now, rate);
            client.refilled = now;
            if client.tokens < 1.0 {
                return Err(Refusal::Rate);
            }
            client.tokens -= 1.0;
        }
        if client.sessions >= self.limits.per_client {
            return Err(Refusal::PerClient);
        }
        let network_cap = match network {
            IpAddr::V4(_) => self.limits.per_ipv4_24,
            IpAddr::V6(_) => self.limits.per_ipv6_48,
        };
        if state.networks.get(&network).copied().unwrap_or(0) >= network_cap {
            return Err(Refusal::PerNetwork);
        }
        let cap = if state.known.contains(network, now, self.limits.known_for) {
            self.limits.max_sessions
        } else {
            self.open_to_all
        };
        if state.sessions >= cap {
            return Err(Refusal::Busy);
        }
        state.sessions += 1;
        *state.networks.entry(network).or_insert(0) += 1;
        if let Some(client) = state.clients.get_mut(&key) {
            client.sessions += 1;
        }
        Ok(Admitted {
            gate: Arc::clone(self),
            key,
            network,
        })
    }

    /// Remembers `ip`'s network as a sender whose mail was accepted.
    pub(crate) fn remember_sender(&self, ip: IpAddr) {
        self.remember_sender_at(ip, Instant::now());
    }

    pub(crate) fn remember_sender_at(&self, ip: IpAddr, now: Instant) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.known.remember(
            network_key(ip),
            now,
            self.limits.known_senders,
            self.limits.known_for,
        );
    }

    fn release(&self, key: IpAddr, network: IpAddr) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.sessions = state.sessions.saturating_sub(1);
        if let Some(client) = state.clients.get_mut(&key) {
            client.sessions = client.sessions.saturating_sub(1);
        }
        if let Some(sessions) = state.networks.get_mut(&network) {
            *sessions = sessions.saturating_sub(1);
            if *sessions == 0 {
                state.networks.remove(&network);
            }
        }
    }
}

fn refill(tokens: f64, since: Instant, now: Instant, per_minute: f64) -> f64 {
    let elapsed = now.saturating_duration_since(since).as_secs_f64();
    (tokens + elapsed * per_minute / 60.0).min(per_minute)
}

/// IPv4 as it is, IPv6 by its /64 (one host's usual share).
fn client_key(ip: IpAddr) -> IpAddr {
    prefix(ip, 32, 64)
}

/// IPv4 by its /24, IPv6 by its /48 (one site's usual allocation).
fn network_key(ip: IpAddr) -> IpAddr {
    prefix(ip, 24, 48)
}

/// The first `v4` or `v6` bits of `ip`, the rest zero.
fn prefix(ip: IpAddr, v4: u32, v6: u32) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(address) => {
            let mask = u32::MAX.checked_shl(32 - v4).unwrap_or(0);
            IpAddr::V4((u32::from(address) & mask).into())
        }
        IpAddr::V6(address) => {
            let mask = u128::MAX.checked_shl(128 - v6).unwrap_or(0);
            IpAddr::V6((u128::from(address) & mask).into())
        }
    }
}

/// A session slot; freed on drop.
pub(crate) struct Admitted {
    gate: Arc<Gate>,
    key: IpAddr,
    network: IpAddr,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.gate.release(self.key, self.network);
    }
}

/// Networks whose mail was accepted lately, each with when it last was:
/// bounded, the oldest forgotten first when full.
#[derive(Default)]
struct KnownSenders {
    last_accepted: HashMap<IpAddr, Instant>,
}

impl KnownSenders {
    fn contains(&self, network: IpAddr, now: Instant, known_for: Duration) -> bool {
        self.last_accepted
            .get(&network)
            .is_some_and(|at| now.saturating_duration_since(*at) < known_for)
    }

    fn remember(&mut self, network: IpAddr, now: Instant, capacity: usize, known_for: Duration) {
        if capacity == 0 {
            return;
        }
        if !self.last_accepted.contains_key(&network) && self.last_accepted.len() >= capacity {
            self.last_accepted
                .retain(|_, at| now.saturating_duration_since(*at) < known_for);
            if self.last_accepted.len() >= capacity
                && let Some(oldest) = self
                    .last_accepted
                    .iter()
                    .min_by_key(|(_, at)| **at)
                    .map(|(network, _)| *network)
            {
                self.last_accepted.remove(&oldest);
            }
        }
        self.last_accepted.insert(network, now);
    }
}

/// The delivery as [`crate::serve`] hands it to sessions: the network of a
/// client whose message was accepted becomes a known sender.
pub(crate) struct KnownSenderDelivery {
    pub(crate) delivery: Arc<dyn Delivery>,
    pub(crate) gate: Arc<Gate>,
}

#[async_trait]
impl Delivery for KnownSenderDelivery {
    async fn check_recipient(&self, address: &str) -> RecipientDecision {
        self.delivery.check_recipient(address).await
    }

    async fn deliver(&self, envelope: &Envelope, data: &[u8]) -> DeliveryOutcome {
        let outcome = self.delivery.deliver(envelope, data).await;
        if outcome == DeliveryOutcome::Accepted {
            self.gate.remember_sender(envelope.client_ip);
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_sessions: usize, per_client: usize, per_minute: u32) -> GateLimits {
        GateLimits {
            max_sessions,
            per_client,
            per_ipv4_24: 1000,
            per_ipv6_48: 1000,
            per_minute,
            reserved_percent: 0,
            known_senders: 100,
            known_for: Duration::from_secs(3600),
        }
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn sessions_are_capped_in_total_and_per_client() {
        let gate = Gate::new(limits(3, 2, 0));
        let a = ip("192.0.2.1");
        let b = ip("192.0.2.2");
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
        let gate = Gate::new(limits(100, 100, 60));
        let client = ip("2001:db8::1");
        let same_64 = ip("2001:db8::ffff");
        let start = Instant::now();
        for _ in 0..60 {
            drop(gate.admit_at(client, start).unwrap());
        }
        assert_eq!(gate.admit_at(same_64, start).err(), Some(Refusal::Rate));
        // One a second comes back.
        let later = start + Duration::from_millis(1500);
        assert!(gate.admit_at(client, later).is_ok());
        assert_eq!(gate.admit_at(client, later).err(), Some(Refusal::Rate));
        let other = ip("2001:db8:0:1::1");
        assert!(gate.admit_at(other, later).is_ok());
    }

    /// One /56 holds 256 /64s, each a client of its own: the /48's cap
    /// bounds them together, and another /48 is not affected.
    #[test]
    fn sessions_are_capped_per_ipv6_48_across_its_64s() {
        let gate = Gate::new(GateLimits {
            per_ipv6_48: 100,
            ..limits(1000, 50, 0)
        });
        let mut held = Vec::new();
        for subnet in 0..=255_u16 {
            let client = ip(&format!("2001:db8:1:{subnet:x}::1"));
            match gate.admit(client) {
                Ok(admitted) => held.push(admitted),
                Err(refusal) => {
                    assert_eq!(refusal, Refusal::PerNetwork);
                    assert_eq!(held.len(), 100, "refused at /64 number {subnet}");
                    break;
                }
            }
        }
        assert_eq!(held.len(), 100);
        assert_eq!(
            gate.admit(ip("2001:db8:1:ff00::7")).err(),
            Some(Refusal::PerNetwork),
            "anywhere in the /48"
        );
        assert!(gate.admit(ip("2001:db8:2::1")).is_ok(), "another /48");
        drop(held.pop());
        assert!(gate.admit(ip("2001:db8:1:ffff::1")).is_ok(), "a slot back");
    }

    #[test]
    fn sessions_are_capped_per_ipv4_24_across_its_addresses() {
        let gate = Gate::new(GateLimits {
            per_ipv4_24: 3,
            ..limits(1000, 2, 0)
        });
        let _a = gate.admit(ip("198.51.100.1")).unwrap();
        let _b = gate.admit(ip("198.51.100.1")).unwrap();
        let c = gate.admit(ip("198.51.100.200")).unwrap();
        assert_eq!(
            gate.admit(ip("198.51.100.77")).err(),
            Some(Refusal::PerNetwork)
        );
        // An IPv4-mapped IPv6 peer is the same IPv4 client.
        assert_eq!(
            gate.admit(ip("::ffff:198.51.100.9")).err(),
            Some(Refusal::PerNetwork)
        );
        assert!(gate.admit(ip("198.51.101.1")).is_ok(), "the next /24");
        drop(c);
        assert!(gate.admit(ip("198.51.100.77")).is_ok());
    }

    #[test]
    fn a_reserved_share_admits_only_networks_that_delivered() {
        let gate = Gate::new(GateLimits {
            reserved_percent: 25,
            ..limits(8, 50, 0)
        });
        let start = Instant::now();
        let good = ip("203.0.113.5");
        gate.remember_sender_at(ip("203.0.113.200"), start);
        let mut held: Vec<_> = (1..=6)
            .map(|host| {
                gate.admit_at(ip(&format!("192.0.2.{host}")), start)
                    .unwrap()
            })
            .collect();
        // Six of eight taken: the rest is kept for known networks.
        assert_eq!(
            gate.admit_at(ip("192.0.2.99"), start).err(),
            Some(Refusal::Busy)
        );
        held.push(gate.admit_at(good, start).unwrap());
        held.push(gate.admit_at(good, start).unwrap());
        assert_eq!(gate.admit_at(good, start).err(), Some(Refusal::Busy));
        drop(held.drain(..3));
        // Forgotten after its time.
        let later = start + Duration::from_secs(3600);
        gate.admit_at(ip("192.0.2.1"), later)
            .map(|a| held.push(a))
            .unwrap();
        assert_eq!(gate.admit_at(good, later).err(), Some(Refusal::Busy));
    }

    #[test]
    fn known_senders_are_bounded_and_the_longest_unseen_goes_first() {
        let gate = Gate::new(GateLimits {
            reserved_percent: 50,
            known_senders: 2,
            ..limits(2, 50, 0)
        });
        let start = Instant::now();
        let (a, b, c) = (ip("192.0.2.1"), ip("198.51.100.1"), ip("203.0.113.1"));
        gate.remember_sender_at(a, start);
        gate.remember_sender_at(b, start + Duration::from_secs(1));
        gate.remember_sender_at(a, start + Duration::from_secs(2));
        gate.remember_sender_at(c, start + Duration::from_secs(3));
        let now = start + Duration::from_secs(4);
        let _open = gate.admit_at(ip("10.0.0.1"), now).unwrap();
        // One slot left, kept: a and c are known, b was pushed out.
        assert_eq!(gate.admit_at(b, now).err(), Some(Refusal::Busy));
        let known = gate.admit_at(c, now).unwrap();
        drop(known);
        assert!(gate.admit_at(a, now).is_ok());
    }

    #[test]
    fn network_keys_are_the_24_and_the_48() {
        assert_eq!(network_key(ip("192.0.2.77")), ip("192.0.2.0"));
        assert_eq!(network_key(ip("::ffff:192.0.2.77")), ip("192.0.2.0"));
        assert_eq!(network_key(ip("2001:db8:1:2:3::4")), ip("2001:db8:1::"));
        assert_eq!(client_key(ip("2001:db8:1:2:3::4")), ip("2001:db8:1:2::"));
        assert_eq!(client_key(ip("192.0.2.77")), ip("192.0.2.77"));
    }
}
