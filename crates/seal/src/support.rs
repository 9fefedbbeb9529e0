//! The support key binding: a MAC only the account and the support team can
//! compute, over the account id, the request it comes with and the support
//! key vouched for. The service stores it and cannot check it; the staff
//! side verifies it.

use ring::hmac;
use x25519_dalek::{PublicKey, StaticSecret};

use crate::b64;

/// The request id of a binding sent with `POST /support/key` (a ticket's
/// binding uses the ticket id).
pub const KEY_REQUEST: &str = "key";

fn binding_message(account_id: &str, request_id: &str, staff_key: &[u8; 32]) -> String {
    format!(
        "service/v1/support-binding:{account_id}:{request_id}:{}",
        b64::encode(staff_key)
    )
}

/// HMAC-SHA256 keyed with X25519(`own_secret`, `their_public`) over
/// `service/v1/support-binding:<accountId>:<requestId>:<staffKey base64url>`.
/// The account computes it with its key's secret and the support key; staff
/// with the support secret and the account's key: the same shared secret.
#[must_use]
pub fn support_binding(
    own_secret: &StaticSecret,
    their_public: &[u8; 32],
    account_id: &str,
    request_id: &str,
    staff_key: &[u8; 32],
) -> [u8; 32] {
    let shared = own_secret.diffie_hellman(&PublicKey::from(*their_public));
    let key = hmac::Key::new(hmac::HMAC_SHA256, shared.as_bytes());
    let tag = hmac::sign(
        &key,
        binding_message(account_id, request_id, staff_key).as_bytes(),
    );
    let mut out = [0u8; 32];
    out.copy_from_slice(tag.as_ref());
    out
}

/// Staff side: whether `mac` binds `account_key` to `staff_key` for this
/// account and request, in constant time.
#[must_use]
pub fn verify_support_binding(
    support_secret: &StaticSecret,
    account_key: &[u8; 32],
    account_id: &str,
    request_id: &str,
    mac: &[u8],
) -> bool {
    let staff_key = PublicKey::from(support_secret).to_bytes();
    let shared = support_secret.diffie_hellman(&PublicKey::from(*account_key));
    if !shared.was_contributory() {
        return false;
    }
    let key = hmac::Key::new(hmac::HMAC_SHA256, shared.as_bytes());
    hmac::verify(
        &key,
        binding_message(account_id, request_id, &staff_key).as_bytes(),
        mac,
    )
    .is_ok()
}

fn rotation_message(nonce: &str, new_key: &str) -> String {
    format!("service/v1/support-key-rotation:{nonce}:{new_key}")
}

/// The service's challenge key for a rotation: the X25519 public key of
/// `challenge_secret` (which the service re-derives from the nonce).
#[must_use]
pub fn support_key_challenge(challenge_secret: &[u8; 32]) -> [u8; 32] {
    PublicKey::from(&StaticSecret::from(*challenge_secret)).to_bytes()
}

/// The proof that the holder of the current support key asks for `new_key`
/// (base64url) to replace it: HMAC-SHA256 keyed with X25519(current secret,
/// `challenge_key`) over `service/v1/support-key-rotation:<nonce>:<newKey>`,
/// the nonce as the text it was sent as.
#[must_use]
pub fn support_key_proof(
    current_secret: &StaticSecret,
    challenge_key: &[u8; 32],
    nonce: &str,
    new_key: &str,
) -> [u8; 32] {
    let shared = current_secret.diffie_hellman(&PublicKey::from(*challenge_key));
    let key = hmac::Key::new(hmac::HMAC_SHA256, shared.as_bytes());
    let tag = hmac::sign(&key, rotation_message(nonce, new_key).as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(tag.as_ref());
    out
}

/// Service side: whether `proof` is [`support_key_proof`] by the secret of
/// `current_key` for this challenge and new key, in constant time; false for
/// a low-order current key.
#[must_use]
pub fn verify_support_key_proof(
    challenge_secret: &[u8; 32],
    current_key: &[u8; 32],
    nonce: &str,
    new_key: &str,
    proof: &[u8],
) -> bool {
    let shared =
        StaticSecret::from(*challenge_secret).diffie_hellman(&PublicKey::from(*current_key));
    if !shared.was_contributory() {
        return false;
    }
    let key = hmac::Key::new(hmac::HMAC_SHA256, shared.as_bytes());
    hmac::verify(&key, rotation_message(nonce, new_key).as_bytes(), proof).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random_bytes;

    #[test]
    fn only_the_current_secret_proves_a_rotation() {
        let current = StaticSecret::from(random_bytes::<32>());
        let current_public = PublicKey::from(&current).to_bytes();
        let challenge_secret = random_bytes::<32>();
        let challenge = support_key_challenge(&challenge_secret);
        let proof = support_key_proof(&current, &challenge, "n1", "NEW");
        assert!(verify_support_key_proof(
            &challenge_secret,
            &current_public,
            "n1",
            "NEW",
            &proof
        ));
        for (nonce, new_key) in [("n2", "NEW"), ("n1", "OTHER")] {
            assert!(!verify_support_key_proof(
                &challenge_secret,
                &current_public,
                nonce,
                new_key,
                &proof
            ));
        }
        let stranger = StaticSecret::from(random_bytes::<32>());
        let forged = support_key_proof(&stranger, &challenge, "n1", "NEW");
        assert!(!verify_support_key_proof(
            &challenge_secret,
            &current_public,
            "n1",
            "NEW",
            &forged
        ));
        assert!(!verify_support_key_proof(
            &challenge_secret,
            &[0; 32],
            "n1",
            "NEW",
            &support_key_proof(&current, &[0; 32], "n1", "NEW")
        ));
    }

    #[test]
    fn both_sides_compute_the_same_binding() {
        let account = StaticSecret::from(random_bytes::<32>());
        let support = StaticSecret::from(random_bytes::<32>());
        let account_public = PublicKey::from(&account).to_bytes();
        let support_public = PublicKey::from(&support).to_bytes();
        let mac = support_binding(
            &account,
            &support_public,
            "acct_a",
            "tkt_1",
            &support_public,
        );
        assert!(verify_support_binding(
            &support,
            &account_public,
            "acct_a",
            "tkt_1",
            &mac
        ));
        assert!(!verify_support_binding(
            &support,
            &account_public,
            "acct_b",
            "tkt_1",
            &mac
        ));
        let other = StaticSecret::from(random_bytes::<32>());
        assert!(!verify_support_binding(
            &other,
            &account_public,
            "acct_a",
            "tkt_1",
            &mac
        ));
    }
}
