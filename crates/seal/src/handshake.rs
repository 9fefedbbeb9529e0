//! The sign-in handshake (docs/protocol.md "Signing in").

use std::fmt;

use ring::hmac;
use x25519_dalek::{PublicKey, StaticSecret};

use crate::primitives::random_bytes;

/// The service's ephemeral X25519 key for one challenge. `Debug` hides the
/// secret; it is wiped from memory when dropped.
#[derive(Clone, zeroize::Zeroize, zeroize::ZeroizeOnDrop)]
pub struct ChallengeKeypair {
    /// Kept by the service until the nonce is used or expires.
    pub secret: [u8; 32],
    /// Sent to the client as `challengeKey`.
    pub public: [u8; 32],
}

impl ChallengeKeypair {
    /// A fresh random keypair.
    ///
    /// # Panics
    /// If the system random number generator fails.
    #[must_use]
    pub fn generate() -> Self {
        Self::from_secret(random_bytes::<32>())
    }

    /// The keypair of a given secret (tests, vectors).
    #[must_use]
    pub fn from_secret(secret: [u8; 32]) -> Self {
        let public = PublicKey::from(&StaticSecret::from(secret)).to_bytes();
        Self { secret, public }
    }
}

impl fmt::Debug for ChallengeKeypair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChallengeKeypair")
            .field("public", &crate::b64::encode(&self.public))
            .finish_non_exhaustive()
    }
}

fn proof_message(nonce_b64: &str, account_id: &str) -> String {
    format!("service/v1/auth:{nonce_b64}:{account_id}")
}

/// HMAC-SHA256(key = `shared`, `service/v1/auth:<nonce>:<accountId>`), with
/// the nonce as the base64url text it was sent as.
#[must_use]
pub fn handshake_proof(shared: &[u8; 32], nonce_b64: &str, account_id: &str) -> [u8; 32] {
    let key = hmac::Key::new(hmac::HMAC_SHA256, shared);
    let tag = hmac::sign(&key, proof_message(nonce_b64, account_id).as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(tag.as_ref());
    out
}

/// Service side: whether `proof` is the right proof for this challenge and
/// account. Compared in constant time; false for a low-order auth key (an
/// all-zero shared secret) and for a proof of the wrong length.
#[must_use]
pub fn verify_handshake_proof(
    challenge_secret: &[u8; 32],
    auth_public_key: &[u8; 32],
    nonce_b64: &str,
    account_id: &str,
    proof: &[u8],
) -> bool {
    let shared =
        StaticSecret::from(*challenge_secret).diffie_hellman(&PublicKey::from(*auth_public_key));
    if !shared.was_contributory() {
        return false;
    }
    let key = hmac::Key::new(hmac::HMAC_SHA256, shared.as_bytes());
    hmac::verify(&key, proof_message(nonce_b64, account_id).as_bytes(), proof).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AccountKeys;

    #[test]
    fn fresh_challenge_verifies() {
        let keys = AccountKeys::from_seed([9u8; 64]);
        let challenge = ChallengeKeypair::generate();
        let nonce = crate::random_token();
        let id = keys.account_id();
        let proof = keys.handshake_proof(&challenge.public, &nonce, &id);
        assert!(verify_handshake_proof(
            &challenge.secret,
            &keys.auth_public_key(),
            &nonce,
            &id,
            &proof
        ));
        let other = ChallengeKeypair::generate();
        assert!(!verify_handshake_proof(
            &other.secret,
            &keys.auth_public_key(),
            &nonce,
            &id,
            &proof
        ));
        assert!(!format!("{challenge:?}").contains(&crate::b64::encode(&challenge.secret)));
    }

    #[test]
    fn low_order_key_is_refused() {
        let challenge = ChallengeKeypair::generate();
        let zero_shared_proof = handshake_proof(&[0u8; 32], "nonce", "acct_x");
        // The all-zero point (and 1, another low-order point) give an all-zero
        // shared secret, so anyone could compute the proof.
        let mut one = [0u8; 32];
        one[0] = 1;
        for low in [[0u8; 32], one] {
            assert!(!verify_handshake_proof(
                &challenge.secret,
                &low,
                "nonce",
                "acct_x",
                &zero_shared_proof
            ));
        }
    }
}
