//! A recipient key sealed to many times, with its multiples precomputed.
//!
//! Every box needs X25519 of a fresh ephemeral secret with the recipient's
//! key. X25519's Montgomery ladder runs 255 doubling-and-adding steps for
//! any point; when the point is the same for many boxes, a table of its
//! multiples (the fixed-base method every library uses for the curve's own
//! base point) turns each into 64 table additions: about a third of the
//! ladder's time on the development machine (docs/benchmarks.md). The table
//! costs about as much as twenty ladders to build and 30 KB to keep, so it
//! pays only for keys that get many boxes: the ingest keeps tables for the
//! keys it seals to most (sealpost-messages' `SealingKeys`).
//!
//! The result is X25519's, byte for byte: the key's u-coordinate is mapped
//! to a point of the Edwards form of the same curve, multiplied there by
//! the clamped secret (exactly, not reduced modulo the group's order, so a
//! key with a small-order component gives what the ladder gives), and
//! mapped back; either sign of the point gives the same u. A u-coordinate
//! of a point on the curve's twist has no Edwards point: such a key keeps
//! the ladder (test `the_table_gives_x25519_s_secret_for_every_kind_of_key`).

use curve25519_dalek::edwards::{EdwardsBasepointTable, EdwardsPoint};
use curve25519_dalek::montgomery::MontgomeryPoint;
use curve25519_dalek::traits::BasepointTable;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::{Zeroize, Zeroizing};

/// A recipient's X25519 public key as sealing uses it.
pub struct SealingKey {
    public: [u8; 32],
    /// The key's multiples; `None`: the ladder.
    multiples: Option<Box<EdwardsBasepointTable>>,
}

impl SealingKey {
    /// The key alone: each seal runs the ladder.
    #[must_use]
    pub fn plain(public: [u8; 32]) -> Self {
        Self {
            public,
            multiples: None,
        }
    }

    /// The key with its table of multiples (about a millisecond to build),
    /// or alone when it is not a point of the curve.
    #[must_use]
    pub fn precomputed(public: [u8; 32]) -> Self {
        let multiples = MontgomeryPoint(public)
            .to_edwards(0)
            .map(|point| Box::new(EdwardsBasepointTable::create(&point)));
        Self { public, multiples }
    }

    /// Whether seals to this key use the table.
    #[must_use]
    pub fn is_precomputed(&self) -> bool {
        self.multiples.is_some()
    }

    /// The public key's bytes.
    #[must_use]
    pub fn public(&self) -> &[u8; 32] {
        &self.public
    }

    /// The ephemeral public key of `ephemeral_secret` and X25519 of it with
    /// this key: with a table, both as Edwards points first, mapped back
    /// together (one field inversion for the two).
    pub(crate) fn ephemeral_and_shared(
        &self,
        ephemeral_secret: [u8; 32],
    ) -> ([u8; 32], Zeroizing<[u8; 32]>) {
        match &self.multiples {
            Some(multiples) => {
                let mut points = [
                    EdwardsPoint::mul_base_clamped(ephemeral_secret),
                    multiples.mul_base_clamped(ephemeral_secret),
                ];
                let mut us = EdwardsPoint::to_montgomery_batch(&points);
                let pair = match us.as_slice() {
                    [ephemeral, shared] => {
                        (ephemeral.to_bytes(), Zeroizing::new(shared.to_bytes()))
                    }
                    _ => unreachable!("two points in, two out"),
                };
                points.zeroize();
                us.zeroize();
                pair
            }
            None => {
                let secret = StaticSecret::from(ephemeral_secret);
                let shared = secret.diffie_hellman(&PublicKey::from(self.public));
                (
                    PublicKey::from(&secret).to_bytes(),
                    Zeroizing::new(shared.to_bytes()),
                )
            }
        }
    }
}

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealingKey")
            .field("public", &crate::b64::encode(&self.public))
            .field("precomputed", &self.is_precomputed())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::primitives::random_bytes;
    use curve25519_dalek::constants::EIGHT_TORSION;

    fn ladder(secret: [u8; 32], public: [u8; 32]) -> [u8; 32] {
        x25519_dalek::x25519(secret, public)
    }

    /// Keys as clients make them, keys with a small-order part added,
    /// small-order keys alone, u-coordinates at random (about half of them
    /// on the twist), with the unused top bit set, and not reduced modulo
    /// the field's prime: the table gives the ladder's secret for every one
    /// that is on the curve, and every other keeps the ladder.
    #[test]
    fn the_table_gives_x25519_s_secret_for_every_kind_of_key() {
        let mut keys: Vec<[u8; 32]> = Vec::new();
        for _ in 0..8 {
            keys.push(PublicKey::from(&StaticSecret::from(random_bytes::<32>())).to_bytes());
        }
        for torsion in EIGHT_TORSION {
            let point = MontgomeryPoint(keys[0]).to_edwards(0).unwrap() + torsion;
            keys.push(point.to_montgomery().to_bytes());
            keys.push(torsion.to_montgomery().to_bytes());
        }
        for _ in 0..16 {
            keys.push(random_bytes::<32>());
        }
        let mut top_bit = keys[1];
        top_bit[31] |= 0x80;
        keys.push(top_bit);
        // 2^255 - 19 + 9: the base point's u, not reduced.
        let mut unreduced = [0xff_u8; 32];
        unreduced[0] = 0xed + 9;
        unreduced[31] = 0x7f;
        keys.push(unreduced);

        let (mut tabled, mut twist) = (0, 0);
        for public in keys {
            let key = SealingKey::precomputed(public);
            if key.is_precomputed() {
                tabled += 1;
            } else {
                twist += 1;
            }
            for _ in 0..4 {
                let secret = random_bytes::<32>();
                let (ephemeral, shared) = key.ephemeral_and_shared(secret);
                let public_text = crate::b64::encode(&public);
                assert_eq!(*shared, ladder(secret, public), "key {public_text}");
                assert_eq!(
                    ephemeral,
                    ladder(secret, x25519_dalek::X25519_BASEPOINT_BYTES),
                    "key {public_text}"
                );
                assert_eq!(
                    (ephemeral, shared),
                    SealingKey::plain(public).ephemeral_and_shared(secret)
                );
            }
        }
        // Both paths were taken.
        assert!(tabled >= 8 + 16 + 2, "{tabled} keys had a table");
        assert!(twist >= 1, "no key was on the twist");
    }

    #[test]
    fn a_small_order_key_gives_the_all_zero_secret_through_the_table() {
        for torsion in EIGHT_TORSION {
            let key = SealingKey::precomputed(torsion.to_montgomery().to_bytes());
            let secret = random_bytes::<32>();
            let (ephemeral, shared) = key.ephemeral_and_shared(secret);
            assert_eq!(*shared, [0u8; 32]);
            // The batch's inversion of the zero leaves the other right.
            assert_eq!(
                ephemeral,
                x25519_dalek::x25519(secret, x25519_dalek::X25519_BASEPOINT_BYTES)
            );
        }
    }
}
