//! The service's own secrets at rest: values the service must read back
//! (webhook signing secrets, DKIM private keys) are stored sealed under a
//! server key held outside the database, and values it only needs to
//! re-create (the sign-in challenge's secret) are derived from a public input
//! under that key. Read access to the database alone then opens nothing.
//!
//! Sealed layout: `version (1) || key id (4) || nonce (12) || AES-256-GCM
//! ciphertext and tag`, with the purpose (for example `webhook-secret`) as
//! associated data so a value sealed for one use cannot be replayed as
//! another. The key id lets an operator rotate: the new key becomes current,
//! the old ones stay readable until everything is sealed again.

use crate::primitives::random_bytes;
use ring::{aead, hmac};
use zeroize::Zeroizing;

const VERSION: u8 = 1;
const KEY_ID_LEN: usize = 4;
const HEADER_LEN: usize = 1 + KEY_ID_LEN + aead::NONCE_LEN;

/// Why a sealed value could not be opened.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AtRestError {
    #[error("the sealed value is malformed")]
    Malformed,
    #[error("no configured server key has id {0}")]
    UnknownKey(String),
    #[error("the sealed value does not open under its server key")]
    Tampered,
}

/// One 32-byte server key and its public id.
#[derive(Clone)]
struct ServerKey {
    id: [u8; KEY_ID_LEN],
    key: Zeroizing<[u8; 32]>,
}

impl ServerKey {
    fn new(key: [u8; 32]) -> Self {
        let tag = hmac::sign(
            &hmac::Key::new(hmac::HMAC_SHA256, &key),
            b"sealpost server key id",
        );
        let mut id = [0u8; KEY_ID_LEN];
        id.copy_from_slice(&tag.as_ref()[..KEY_ID_LEN]);
        Self {
            id,
            key: Zeroizing::new(key),
        }
    }

    fn aead_key(&self) -> aead::LessSafeKey {
        // A 32-byte key is exactly what AES-256-GCM takes.
        let unbound = aead::UnboundKey::new(&aead::AES_256_GCM, self.key.as_slice())
            .unwrap_or_else(|_| unreachable!("AES-256-GCM takes a 32-byte key"));
        aead::LessSafeKey::new(unbound)
    }
}

/// The current server key, used for everything new, and older keys still
/// accepted for reading (`SEALPOST_SERVER_KEY`, `SEALPOST_SERVER_KEYS_OLD`).
#[derive(Clone)]
pub struct ServerKeys {
    current: ServerKey,
    old: Vec<ServerKey>,
}

impl ServerKeys {
    /// Keys from raw bytes: the current one first.
    #[must_use]
    pub fn new(current: [u8; 32], old: impl IntoIterator<Item = [u8; 32]>) -> Self {
        Self {
            current: ServerKey::new(current),
            old: old.into_iter().map(ServerKey::new).collect(),
        }
    }

    /// Keys from their base64url text (43 characters, no padding).
    ///
    /// # Errors
    /// When one of them is not 32 bytes of base64url.
    pub fn from_text(current: &str, old: &[&str]) -> Result<Self, crate::SealError> {
        let current = crate::b64::decode_32(current.trim())?;
        let old = old
            .iter()
            .map(|text| crate::b64::decode_32(text.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::new(current, old))
    }

    /// A fresh random key as base64url, for `cargo xtask dev` and operators.
    #[must_use]
    pub fn generate_text() -> String {
        crate::random_token()
    }

    /// The current key's id, as lowercase hex (safe to log).
    #[must_use]
    pub fn current_id(&self) -> String {
        hex(&self.current.id)
    }

    /// Seals `plaintext` for `purpose` under the current key.
    #[must_use]
    pub fn seal(&self, purpose: &str, plaintext: &[u8]) -> Vec<u8> {
        let nonce_bytes = random_bytes::<{ aead::NONCE_LEN }>();
        let mut out = Vec::with_capacity(HEADER_LEN + plaintext.len() + aead::MAX_TAG_LEN);
        out.push(VERSION);
        out.extend_from_slice(&self.current.id);
        out.extend_from_slice(&nonce_bytes);
        let mut body = plaintext.to_vec();
        let tag = self
            .current
            .aead_key()
            .seal_in_place_separate_tag(
                aead::Nonce::assume_unique_for_key(nonce_bytes),
                aead::Aad::from(purpose.as_bytes()),
                &mut body,
            )
            .unwrap_or_else(|_| unreachable!("sealing fails only above 64 GB"));
        out.extend_from_slice(&body);
        out.extend_from_slice(tag.as_ref());
        out
    }

    /// Opens a value [`seal`](Self::seal) made for the same `purpose`, under
    /// whichever configured key sealed it.
    ///
    /// # Errors
    /// When the value is malformed, was sealed under a key that is no longer
    /// configured, or was changed or sealed for another purpose.
    pub fn open(&self, purpose: &str, sealed: &[u8]) -> Result<Zeroizing<Vec<u8>>, AtRestError> {
        if sealed.len() < HEADER_LEN + aead::MAX_TAG_LEN || sealed[0] != VERSION {
            return Err(AtRestError::Malformed);
        }
        let id = &sealed[1..=KEY_ID_LEN];
        let key = std::iter::once(&self.current)
            .chain(&self.old)
            .find(|key| key.id == id)
            .ok_or_else(|| AtRestError::UnknownKey(hex(id)))?;
        let mut nonce = [0u8; aead::NONCE_LEN];
        nonce.copy_from_slice(&sealed[1 + KEY_ID_LEN..HEADER_LEN]);
        let mut body = Zeroizing::new(sealed[HEADER_LEN..].to_vec());
        let plaintext_len = key
            .aead_key()
            .open_in_place(
                aead::Nonce::assume_unique_for_key(nonce),
                aead::Aad::from(purpose.as_bytes()),
                &mut body,
            )
            .map_err(|_| AtRestError::Tampered)?
            .len();
        body.truncate(plaintext_len);
        Ok(body)
    }

    /// Whether `sealed` was made under an older key and should be sealed
    /// again under the current one.
    #[must_use]
    pub fn needs_reseal(&self, sealed: &[u8]) -> bool {
        sealed.get(1..=KEY_ID_LEN) != Some(&self.current.id[..])
    }

    /// A 32-byte secret derived from a public `input` for `purpose` under the
    /// current key (HMAC-SHA256): re-created on demand, never stored.
    #[must_use]
    pub fn derive(&self, purpose: &str, input: &[u8]) -> Zeroizing<[u8; 32]> {
        let key = hmac::Key::new(hmac::HMAC_SHA256, self.current.key.as_slice());
        let mut context = hmac::Context::with_key(&key);
        context.update(purpose.as_bytes());
        context.update(&[0]);
        context.update(input);
        let mut out = Zeroizing::new([0u8; 32]);
        out.copy_from_slice(context.sign().as_ref());
        out
    }
}

// Keys compare and print by id only, so configuration can derive `PartialEq`
// and `Debug` without ever showing key material.
impl PartialEq for ServerKeys {
    fn eq(&self, other: &Self) -> bool {
        self.current.id == other.current.id
            && self.old.len() == other.old.len()
            && self.old.iter().zip(&other.old).all(|(a, b)| a.id == b.id)
    }
}

impl Eq for ServerKeys {}

impl std::fmt::Debug for ServerKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerKeys")
            .field("current", &hex(&self.current.id))
            .field(
                "old",
                &self.old.iter().map(|key| hex(&key.id)).collect::<Vec<_>>(),
            )
            .finish()
    }
}

fn hex(bytes: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_opens_and_rotates() {
        let old = ServerKeys::new([1; 32], []);
        let sealed = old.seal("webhook-secret", b"whsec_abc");
        assert_eq!(
            old.open("webhook-secret", &sealed).unwrap().as_slice(),
            b"whsec_abc"
        );
        assert_eq!(
            old.open("dkim-key", &sealed),
            Err(AtRestError::Tampered),
            "the purpose is bound"
        );
        let mut changed = sealed.clone();
        *changed.last_mut().unwrap() ^= 1;
        assert_eq!(
            old.open("webhook-secret", &changed),
            Err(AtRestError::Tampered)
        );
        assert_eq!(
            old.open("webhook-secret", &[1, 2]),
            Err(AtRestError::Malformed)
        );

        let rotated = ServerKeys::new([2; 32], [[1; 32]]);
        assert!(rotated.needs_reseal(&sealed));
        assert_eq!(
            rotated.open("webhook-secret", &sealed).unwrap().as_slice(),
            b"whsec_abc",
            "old keys stay readable"
        );
        let resealed = rotated.seal("webhook-secret", b"whsec_abc");
        assert!(!rotated.needs_reseal(&resealed));
        assert!(matches!(
            old.open("webhook-secret", &resealed),
            Err(AtRestError::UnknownKey(_))
        ));
    }

    #[test]
    fn derives_per_key_and_purpose_and_never_prints_keys() {
        let keys = ServerKeys::new([7; 32], []);
        assert_eq!(
            *keys.derive("challenge", b"nonce"),
            *keys.derive("challenge", b"nonce")
        );
        assert_ne!(
            *keys.derive("challenge", b"nonce"),
            *keys.derive("other", b"nonce")
        );
        assert_ne!(
            *keys.derive("challenge", b"nonce"),
            *ServerKeys::new([8; 32], []).derive("challenge", b"nonce")
        );
        let text = ServerKeys::generate_text();
        let parsed = ServerKeys::from_text(&text, &[]).unwrap();
        assert_eq!(format!("{parsed:?}").len(), format!("{keys:?}").len());
        assert!(!format!("{parsed:?}").contains(&text));
        assert!(ServerKeys::from_text("short", &[]).is_err());
    }
}
