//! The service's own secrets at rest: values the service must read back
//! (webhook signing secrets, DKIM private keys) are stored sealed under a
//! server key held outside the database, and values it only needs to
//! re-create (the sign-in challenge's secret) are derived from a public input
//! under that key. Read access to the database alone then opens nothing.
//!
//! Sealed layout: `version (1) || key id (4) || nonce (12) || AES-256-GCM
//! ciphertext and tag`, with the purpose (for example `webhook-secret`) and
//! the row it belongs to (a webhook's id) as associated data, so a value
//! sealed for one use or one row cannot be replayed as another: someone who
//! can write the database but holds no server key cannot copy one webhook's
//! secret onto another. The key id lets an operator rotate: the new key
//! becomes current, the old ones stay readable until everything is sealed
//! again.
//!
//! Version 1 values were bound to the purpose alone. They open only through
//! [`ServerKeys::open_for_reseal`], which the start-up passes use to seal
//! them again in version 2; everything else refuses them.

use crate::primitives::random_bytes;
use ring::{aead, hmac};
use zeroize::Zeroizing;

/// Bound to the purpose and the row.
const VERSION: u8 = 2;
/// Bound to the purpose alone: read once, to be sealed again.
const VERSION_PURPOSE_ONLY: u8 = 1;
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
    #[error("the sealed value is of the old form, bound to no row; it must be sealed again")]
    NotBound,
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

    /// Seals `plaintext` for `purpose` and the row `row` (its id) under the
    /// current key.
    #[must_use]
    pub fn seal(&self, purpose: &str, row: &str, plaintext: &[u8]) -> Vec<u8> {
        self.seal_with(VERSION, &bound_data(purpose, row), plaintext)
    }

    fn seal_with(&self, version: u8, aad: &[u8], plaintext: &[u8]) -> Vec<u8> {
        let nonce_bytes = random_bytes::<{ aead::NONCE_LEN }>();
        let mut out = Vec::with_capacity(HEADER_LEN + plaintext.len() + aead::MAX_TAG_LEN);
        out.push(version);
        out.extend_from_slice(&self.current.id);
        out.extend_from_slice(&nonce_bytes);
        let mut body = plaintext.to_vec();
        let tag = self
            .current
            .aead_key()
            .seal_in_place_separate_tag(
                aead::Nonce::assume_unique_for_key(nonce_bytes),
                aead::Aad::from(aad),
                &mut body,
            )
            .unwrap_or_else(|_| unreachable!("sealing fails only above 64 GB"));
        out.extend_from_slice(&body);
        out.extend_from_slice(tag.as_ref());
        out
    }

    /// Opens a value [`seal`](Self::seal) made for the same `purpose` and
    /// `row`, under whichever configured key sealed it.
    ///
    /// # Errors
    /// When the value is malformed, was sealed under a key that is no longer
    /// configured, was changed or sealed for another purpose or row, or is
    /// of the old form bound to no row ([`AtRestError::NotBound`]).
    pub fn open(
        &self,
        purpose: &str,
        row: &str,
        sealed: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, AtRestError> {
        match sealed.first() {
            Some(&VERSION) => self.open_with(&bound_data(purpose, row), sealed),
            Some(&VERSION_PURPOSE_ONLY) => Err(AtRestError::NotBound),
            _ => Err(AtRestError::Malformed),
        }
    }

    /// Like [`open`](Self::open), and also opens the old form bound to the
    /// purpose alone: for the passes that seal such values again, never for
    /// serving them.
    ///
    /// # Errors
    /// As [`open`](Self::open), less [`AtRestError::NotBound`].
    pub fn open_for_reseal(
        &self,
        purpose: &str,
        row: &str,
        sealed: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, AtRestError> {
        match sealed.first() {
            Some(&VERSION_PURPOSE_ONLY) => self.open_with(purpose.as_bytes(), sealed),
            _ => self.open(purpose, row, sealed),
        }
    }

    fn open_with(&self, aad: &[u8], sealed: &[u8]) -> Result<Zeroizing<Vec<u8>>, AtRestError> {
        if sealed.len() < HEADER_LEN + aead::MAX_TAG_LEN {
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
                aead::Aad::from(aad),
                &mut body,
            )
            .map_err(|_| AtRestError::Tampered)?
            .len();
        body.truncate(plaintext_len);
        Ok(body)
    }

    /// Whether `sealed` was made under an older key, or in the old form
    /// bound to no row, and should be sealed again.
    #[must_use]
    pub fn needs_reseal(&self, sealed: &[u8]) -> bool {
        sealed.first() != Some(&VERSION) || sealed.get(1..=KEY_ID_LEN) != Some(&self.current.id[..])
    }

    /// The version byte of the current form, for stores that select values
    /// still to seal again.
    #[must_use]
    pub fn current_version() -> u8 {
        VERSION
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

/// The associated data of a version 2 value: the purpose, a zero byte (no
/// purpose holds one) and the row's id.
fn bound_data(purpose: &str, row: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(purpose.len() + 1 + row.len());
    aad.extend_from_slice(purpose.as_bytes());
    aad.push(0);
    aad.extend_from_slice(row.as_bytes());
    aad
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
        let sealed = old.seal("webhook-secret", "whk_a", b"whsec_abc");
        assert_eq!(
            old.open("webhook-secret", "whk_a", &sealed)
                .unwrap()
                .as_slice(),
            b"whsec_abc"
        );
        assert_eq!(
            old.open("dkim-key", "whk_a", &sealed),
            Err(AtRestError::Tampered),
            "the purpose is bound"
        );
        let mut changed = sealed.clone();
        *changed.last_mut().unwrap() ^= 1;
        assert_eq!(
            old.open("webhook-secret", "whk_a", &changed),
            Err(AtRestError::Tampered)
        );
        assert_eq!(
            old.open("webhook-secret", "whk_a", &[2, 2]),
            Err(AtRestError::Malformed)
        );

        let rotated = ServerKeys::new([2; 32], [[1; 32]]);
        assert!(rotated.needs_reseal(&sealed));
        assert_eq!(
            rotated
                .open("webhook-secret", "whk_a", &sealed)
                .unwrap()
                .as_slice(),
            b"whsec_abc",
            "old keys stay readable"
        );
        let resealed = rotated.seal("webhook-secret", "whk_a", b"whsec_abc");
        assert!(!rotated.needs_reseal(&resealed));
        assert!(matches!(
            old.open("webhook-secret", "whk_a", &resealed),
            Err(AtRestError::UnknownKey(_))
        ));
    }

    #[test]
    fn the_row_is_bound() {
        let keys = ServerKeys::new([4; 32], []);
        let sealed = keys.seal("webhook-secret", "whk_a", b"whsec_abc");
        for other in ["whk_b", "whk_a ", "", "whk"] {
            assert_eq!(
                keys.open("webhook-secret", other, &sealed),
                Err(AtRestError::Tampered),
                "opened for row {other:?}"
            );
            assert_eq!(
                keys.open_for_reseal("webhook-secret", other, &sealed),
                Err(AtRestError::Tampered)
            );
        }
    }

    #[test]
    fn the_old_form_opens_only_to_be_sealed_again() {
        let keys = ServerKeys::new([5; 32], []);
        // Version 1, as values were sealed before rows were bound.
        let old_form = keys.seal_with(VERSION_PURPOSE_ONLY, b"webhook-secret", b"whsec_abc");
        assert_eq!(
            keys.open("webhook-secret", "whk_a", &old_form),
            Err(AtRestError::NotBound)
        );
        assert!(
            keys.needs_reseal(&old_form),
            "under the current key, yet old"
        );
        assert_eq!(
            keys.open_for_reseal("webhook-secret", "whk_a", &old_form)
                .unwrap()
                .as_slice(),
            b"whsec_abc"
        );
        assert_eq!(
            keys.open_for_reseal("dkim-key", "whk_a", &old_form),
            Err(AtRestError::Tampered),
            "its purpose still holds"
        );
        let mut unknown = old_form.clone();
        unknown[0] = 3;
        assert_eq!(
            keys.open_for_reseal("webhook-secret", "whk_a", &unknown),
            Err(AtRestError::Malformed)
        );
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
