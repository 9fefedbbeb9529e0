//! What keeps answers cheap to send and hard to abuse: the largest UDP
//! answer (larger ones are truncated, TC=1, and the client comes back over
//! TCP), and response rate limiting per client network over UDP, where a
//! source address can be forged.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// The largest UDP answer by default: what fits one unfragmented datagram on
/// nearly every path (the DNS community's 2020 recommendation).
pub const UDP_MAX_DEFAULT: u16 = 1232;

/// How the server bounds what it sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest UDP answer in bytes, whatever larger buffer a client
    /// offers (a client offering no EDNS buffer gets 512).
    pub udp_max: u16,
    /// `None`: every UDP question is answered.
    pub rate: Option<RateLimit>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            udp_max: UDP_MAX_DEFAULT,
            rate: None,
        }
    }
}

/// Response rate limiting over UDP: answers a second per client network
/// (a token bucket holding one second's worth).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimit {
    pub per_second: NonZeroU32,
    /// Every `slip`-th answer over the rate is sent empty with TC=1, so a
    /// real resolver asks again over TCP (not limited); the others are
    /// dropped. 0: all dropped.
    pub slip: u32,
    /// The networks counted as one client: IPv4 /24 and IPv6 /56 usually.
    pub ipv4_prefix: u8,
    pub ipv6_prefix: u8,
}

/// What to do with one UDP answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Answer,
    /// Send it empty, truncated.
    Slip,
    Drop,
}

pub(crate) struct ResponseLimiter {
    buckets: DefaultKeyedRateLimiter<IpAddr>,
    rate: RateLimit,
    over: AtomicU64,
}

impl ResponseLimiter {
    pub(crate) fn new(rate: RateLimit) -> Self {
        Self {
            buckets: RateLimiter::keyed(Quota::per_second(rate.per_second)),
            rate,
            over: AtomicU64::new(0),
        }
    }

    pub(crate) fn verdict(&self, source: IpAddr) -> Verdict {
        if self.buckets.check_key(&self.network(source)).is_ok() {
            return Verdict::Answer;
        }
        let over = self.over.fetch_add(1, Ordering::Relaxed) + 1;
        match u64::from(self.rate.slip) {
            0 => Verdict::Drop,
            slip if over.is_multiple_of(slip) => Verdict::Slip,
            _ => Verdict::Drop,
        }
    }

    /// The client network `source` counts in.
    fn network(&self, source: IpAddr) -> IpAddr {
        match source.to_canonical() {
            IpAddr::V4(v4) => {
                let bits = u32::from(v4);
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.rate.ipv4_prefix.min(32)))
                    .unwrap_or(0);
                IpAddr::V4((bits & mask).into())
            }
            IpAddr::V6(v6) => {
                let bits = u128::from(v6);
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.rate.ipv6_prefix.min(128)))
                    .unwrap_or(0);
                IpAddr::V6((bits & mask).into())
            }
        }
    }

    /// Drops the buckets back at full allowance, so memory follows the
    /// networks asking now, not every source ever seen (forged ones too).
    pub(crate) fn forget_idle(&self) {
        self.buckets.retain_recent();
        self.buckets.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(per_second: u32, slip: u32) -> ResponseLimiter {
        ResponseLimiter::new(RateLimit {
            per_second: NonZeroU32::new(per_second).unwrap_or(NonZeroU32::MIN),
            slip,
            ipv4_prefix: 24,
            ipv6_prefix: 56,
        })
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap_or(IpAddr::V4(0.into()))
    }

    #[test]
    fn a_network_shares_one_bucket_and_others_keep_theirs() {
        let limiter = limiter(3, 2);
        let verdicts: Vec<Verdict> = ["192.0.2.1", "192.0.2.200", "192.0.2.7", "192.0.2.9"]
            .iter()
            .map(|source| limiter.verdict(ip(source)))
            .collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Answer,
                Verdict::Answer,
                Verdict::Answer,
                Verdict::Drop
            ]
        );
        assert_eq!(limiter.verdict(ip("192.0.2.10")), Verdict::Slip);
        assert_eq!(limiter.verdict(ip("::ffff:192.0.2.11")), Verdict::Drop);
        assert_eq!(limiter.verdict(ip("192.0.3.1")), Verdict::Answer);
        for _ in 0..3 {
            assert_eq!(limiter.verdict(ip("2001:db8:0:ff::1")), Verdict::Answer);
        }
        assert_ne!(limiter.verdict(ip("2001:db8:0:1::2")), Verdict::Answer);
        assert_eq!(limiter.verdict(ip("2001:db8:0:100::1")), Verdict::Answer);
    }

    #[test]
    fn slip_zero_drops_every_answer_over_the_rate() {
        let limiter = limiter(1, 0);
        assert_eq!(limiter.verdict(ip("198.51.100.1")), Verdict::Answer);
        for _ in 0..10 {
            assert_eq!(limiter.verdict(ip("198.51.100.1")), Verdict::Drop);
        }
    }
}
