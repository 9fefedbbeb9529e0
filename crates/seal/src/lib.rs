//! Sealpost's client-side cryptography, shared by the service, the CLI, the
//! SDK and the tests.
//!
//! This crate implements docs/protocol.md's keys, sign-in and sealed boxes
//! exactly (see `tests/data/vectors.json`, which every implementation
//! reproduces):
//!
//! - [`RecoveryPhrase`] and [`AccountKeys`]: the 12-word BIP-39 phrase, its
//!   64-byte seed and every key derived from it with HKDF-SHA256
//!   (salt `service/v1`, info = label).
//! - The sign-in handshake: [`AccountKeys::handshake_proof`] on the client,
//!   [`ChallengeKeypair`] and [`verify_handshake_proof`] on the service.
//! - [`SealedBox`]: X25519 + HKDF-SHA256 + ChaCha20-Poly1305 (version 2,
//!   written) or AES-256-GCM (version 1, read only), as JSON or as the binary
//!   attachment layout, plus the service's shape check [`check_box`].
//! - [`team_fingerprint`] and the associated-data strings in [`context`].
//! - [`ServerKeys`]: the service's own secrets sealed at rest or derived
//!   under a key held outside the database.
//!
//! All binary values on the wire are base64url without padding ([`b64`]).
//! The crate does no I/O and holds no state; every primitive comes from
//! `ring`, `x25519-dalek` or `bip39`.

mod at_rest;
pub mod b64;
mod boxes;
pub mod context;
mod error;
mod fingerprint;
mod handshake;
mod keys;
mod primitives;
mod sealing_key;
mod support;

pub use at_rest::{AtRestError, ServerKeys};
pub use boxes::{
    BINARY_HEADER_LEN, BoxShapeError, SealedBox, check_box, open_binary, seal_binary,
    seal_binary_to,
};
pub use error::SealError;
pub use fingerprint::team_fingerprint;
pub use handshake::{ChallengeKeypair, handshake_proof, verify_handshake_proof};
pub use keys::{AccountKeys, RecoveryPhrase, parse_public_key};
pub use primitives::{random_bytes, random_token, sha256};
pub use sealing_key::SealingKey;
pub use support::{
    KEY_REQUEST, support_binding, support_key_challenge, support_key_proof, verify_support_binding,
    verify_support_key_proof,
};
/// Re-exported so that callers need no direct dependency on `x25519-dalek`.
pub use x25519_dalek::{PublicKey, StaticSecret};
