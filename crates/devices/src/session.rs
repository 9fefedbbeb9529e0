use chrono::TimeDelta;
use sealpost_kernel::{AccountId, DeviceId, PairingSessionId, Timestamp, string_enum};
use sealpost_seal::{PublicKey, SealedBox, StaticSecret, sha256};

use crate::DeviceKind;

/// Sessions nobody claims are removed after 14 days (docs/api.md "Limits").
pub const UNCLAIMED_LIFETIME: TimeDelta = TimeDelta::days(14);
/// After ten failed lookups in five minutes, further lookups get 429
/// (docs/api.md "Limits").
pub const FAILED_LOOKUP_LIMIT: usize = 10;
pub const LOOKUP_WINDOW: TimeDelta = TimeDelta::minutes(5);
/// An unclaimed session whose device stopped polling is gone this long after
/// its last poll (or its creation): codes of abandoned screens stop working.
pub const UNPOLLED_LIFETIME: TimeDelta = TimeDelta::minutes(10);
/// Live unclaimed sessions one client address may hold at once.
pub const MAX_OPEN_PER_IP: u32 = 20;

string_enum! {
    pub enum PairingState: "pairing state" {
        /// Created by the device.
        Waiting => "waiting",
        /// Looked up by an operator.
        OperatorDetected => "operator_detected",
        /// Claimed: the device exists and its credential is minted.
        AwaitingAddress => "awaiting_inbox",
        /// The new device got its first address.
        AddressAssigned => "inbox_assigned",
    }
}

impl PairingState {
    pub fn is_claimed(self) -> bool {
        matches!(
            self,
            PairingState::AwaitingAddress | PairingState::AddressAssigned
        )
    }
}

string_enum! {
    pub enum Platform: "platform" {
        Ios => "ios",
        Android => "android",
        Web => "web",
        Unknown => "unknown",
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct PairingSession {
    pub id: PairingSessionId,
    pub token_hash: [u8; 32],
    pub code: String,
    pub state: PairingState,
    /// What the claim makes: a device, or an agent (a machine such as a CI
    /// runner or a server; only on plans that allow agents).
    pub kind: DeviceKind,
    pub platform: Platform,
    pub device_name: String,
    /// The device's X25519 key; its key bundle is sealed to it.
    pub public_key: [u8; 32],
    /// Public key derived from the token; the claim seals the credential to it.
    pub handoff_key: HandoffKey,
    pub created_at: Timestamp,
    /// The account that looked the code up.
    pub detected_by: Option<AccountId>,
    pub claimed_by: Option<AccountId>,
    pub device_id: Option<DeviceId>,
    /// The credential sealed to the token-derived key, until the first poll after the claim.
    pub handoff: Option<SealedBox>,
}

/// A fresh 8-digit code, uniformly drawn.
pub fn generate_code() -> String {
    let bytes = sealpost_seal::random_bytes::<8>();
    // 2^64 mod 10^8 bias is below 1e-10: negligible for a lookup key.
    format!("{:08}", u64::from_le_bytes(bytes) % 100_000_000)
}

pub fn is_code(text: &str) -> bool {
    text.len() == 8 && text.bytes().all(|b| b.is_ascii_digit())
}

/// The X25519 key the credential waits under: derived from the pairing token.
fn handoff_secret(token: &str) -> StaticSecret {
    StaticSecret::from(sha256(
        format!("service/v1/pairing-handoff:{token}").as_bytes(),
    ))
}

fn handoff_context(session: &PairingSessionId) -> String {
    format!("service/v1/pairing-credential:{session}")
}

/// Seals the new credential so only the holder of the pairing token can open it.
pub fn seal_handoff(
    token_for_key: &HandoffKey,
    session: &PairingSessionId,
    credential: &str,
) -> SealedBox {
    SealedBox::seal(
        &token_for_key.0,
        &handoff_context(session),
        credential.as_bytes(),
    )
}

/// Opens the waiting credential with the token the device presented.
pub fn open_handoff(
    token: &str,
    session: &PairingSessionId,
    handoff: &SealedBox,
) -> Option<String> {
    let bytes = handoff
        .open(&handoff_secret(token), &handoff_context(session))
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// The public half of the handoff key, kept with the session from creation
/// so the claim (which never sees the token) can seal to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandoffKey(pub [u8; 32]);

impl HandoffKey {
    pub fn for_token(token: &str) -> Self {
        Self(PublicKey::from(&handoff_secret(token)).to_bytes())
    }
}

/// How long until another lookup is allowed, given the failures inside the window.
pub fn lookup_retry_after(failures: &[Timestamp], now: Timestamp) -> Option<u64> {
    let mut recent: Vec<Timestamp> = failures
        .iter()
        .copied()
        .filter(|at| *at > now - LOOKUP_WINDOW)
        .collect();
    if recent.len() < FAILED_LOOKUP_LIMIT {
        return None;
    }
    recent.sort();
    // Allowed again once enough failures have left the window.
    let frees_at = recent[recent.len() - FAILED_LOOKUP_LIMIT] + LOOKUP_WINDOW;
    let wait = (frees_at - now).num_milliseconds().max(0) as u64;
    Some(wait.div_ceil(1000).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_eight_digits() {
        for _ in 0..100 {
            let code = generate_code();
            assert!(is_code(&code), "{code}");
        }
        assert!(!is_code("1234567"));
        assert!(!is_code("1234567a"));
    }

    #[test]
    fn the_handoff_opens_only_with_the_token() {
        let session = PairingSessionId::generate();
        let key = HandoffKey::for_token("device-token");
        let sealed = seal_handoff(&key, &session, "the-credential");
        assert_eq!(
            open_handoff("device-token", &session, &sealed).as_deref(),
            Some("the-credential")
        );
        assert_eq!(open_handoff("other-token", &session, &sealed), None);
        assert_eq!(
            open_handoff("device-token", &PairingSessionId::generate(), &sealed),
            None
        );
    }

    #[test]
    fn ten_failures_in_five_minutes_block_until_the_oldest_leaves() {
        let now = Timestamp::parse("2026-11-22T12:00:00Z").unwrap();
        let failures: Vec<Timestamp> = (0..10).map(|i| now - TimeDelta::seconds(200 - i)).collect();
        assert_eq!(lookup_retry_after(&failures[..9], now), None);
        // Oldest failure was 200 s ago; it leaves the window in 100 s.
        assert_eq!(lookup_retry_after(&failures, now), Some(100));
        let old: Vec<Timestamp> = (0..20)
            .map(|i| now - TimeDelta::minutes(6) - TimeDelta::seconds(i))
            .collect();
        assert_eq!(lookup_retry_after(&old, now), None);
    }

    #[test]
    fn states_round_trip() {
        for state in [
            "waiting",
            "operator_detected",
            "awaiting_inbox",
            "inbox_assigned",
        ] {
            assert_eq!(state.parse::<PairingState>().unwrap().as_str(), state);
        }
    }
}
