//! The recovery phrase and the account keys derived from it (docs/protocol.md
//! "Keys from the recovery phrase").

use std::fmt;

use bip39::{Language, Mnemonic};
use data_encoding::BASE32_NOPAD;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::SealError;
use crate::primitives::{hkdf32, random_bytes};

/// Number of words in a recovery phrase.
const PHRASE_WORDS: usize = 12;
/// HKDF salt of every account key.
const DERIVE_SALT: &[u8] = b"service/v1";

/// A 12-word BIP-39 English recovery phrase. `Debug` never shows the words;
/// the words are wiped from memory when it is dropped.
#[derive(Clone)]
pub struct RecoveryPhrase {
    mnemonic: Mnemonic,
}

impl RecoveryPhrase {
    /// A new phrase from 16 bytes (128 bits) of system randomness.
    ///
    /// # Panics
    /// If the system random number generator fails.
    #[must_use]
    pub fn generate() -> Self {
        let entropy = random_bytes::<16>();
        match Mnemonic::from_entropy(&entropy) {
            Ok(mnemonic) => Self { mnemonic },
            Err(_) => unreachable!("16 bytes is a valid BIP-39 entropy length"),
        }
    }

    /// Parses a phrase typed by a person: whitespace and case are normalised,
    /// it must be exactly 12 words of the English list with a valid checksum.
    pub fn parse(text: &str) -> Result<Self, SealError> {
        let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
        if words.len() != PHRASE_WORDS {
            return Err(SealError::InvalidPhrase(format!(
                "expected {PHRASE_WORDS} words, got {}",
                words.len()
            )));
        }
        let normalised = words.join(" ");
        let mnemonic = Mnemonic::parse_in(Language::English, normalised).map_err(|e| match e {
            bip39::Error::UnknownWord(i) => {
                SealError::InvalidPhrase(format!("word {} is not in the word list", i + 1))
            }
            bip39::Error::InvalidChecksum => {
                SealError::InvalidPhrase("the checksum does not match".to_owned())
            }
            _ => SealError::InvalidPhrase("not a valid phrase".to_owned()),
        })?;
        Ok(Self { mnemonic })
    }

    /// The phrase as 12 lowercase words separated by single spaces, for
    /// showing to the person once; wiped from memory when dropped.
    #[must_use]
    pub fn words(&self) -> Zeroizing<String> {
        Zeroizing::new(self.mnemonic.to_string())
    }

    /// The account keys: the BIP-39 seed (PBKDF2-HMAC-SHA512, 2048 rounds,
    /// empty passphrase). Deliberately slow; call once and keep the result.
    #[must_use]
    pub fn keys(&self) -> AccountKeys {
        let mut seed = self.mnemonic.to_seed("");
        let keys = AccountKeys::from_seed(seed);
        seed.zeroize();
        keys
    }
}

impl fmt::Debug for RecoveryPhrase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RecoveryPhrase(..)")
    }
}

/// The 64-byte seed of an account and everything derived from it.
/// `Debug` never shows the seed; it is wiped from memory when dropped (the
/// X25519 secrets derived from it wipe themselves too).
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct AccountKeys {
    seed: [u8; 64],
}

impl fmt::Debug for AccountKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccountKeys(..)")
    }
}

/// `label` at epoch 0, `label:epoch` from epoch 1 on.
fn epoch_label(prefix: &str, address_id: &str, epoch: u32) -> String {
    if epoch == 0 {
        format!("{prefix}:{address_id}")
    } else {
        format!("{prefix}:{address_id}:{epoch}")
    }
}

impl AccountKeys {
    /// Keys from a BIP-39 seed.
    #[must_use]
    pub fn from_seed(seed: [u8; 64]) -> Self {
        Self { seed }
    }

    /// HKDF-SHA256(ikm = seed, salt = `service/v1`, info = `label`), 32 bytes.
    #[must_use]
    pub fn derive(&self, label: &str) -> [u8; 32] {
        hkdf32(&self.seed, DERIVE_SALT, label.as_bytes())
    }

    /// `acct_` + lowercase unpadded base32 of the first 15 bytes of
    /// `derive("account-id")`: 24 characters after the prefix.
    #[must_use]
    pub fn account_id(&self) -> String {
        let d = self.derive("account-id");
        format!(
            "acct_{}",
            BASE32_NOPAD.encode(&d[..15]).to_ascii_lowercase()
        )
    }

    /// The X25519 secret the account signs in with.
    #[must_use]
    pub fn auth_secret(&self) -> StaticSecret {
        StaticSecret::from(self.derive("auth-key"))
    }

    /// `authPublicKey`.
    #[must_use]
    pub fn auth_public_key(&self) -> [u8; 32] {
        PublicKey::from(&self.auth_secret()).to_bytes()
    }

    /// `authVerifier` (the service stores only its SHA-256).
    #[must_use]
    pub fn auth_verifier(&self) -> [u8; 32] {
        self.derive("auth-verifier")
    }

    /// The vault key: seals the account's own labels.
    #[must_use]
    pub fn vault_secret(&self) -> StaticSecret {
        StaticSecret::from(self.derive("vault-key"))
    }

    /// Public half of the vault key.
    #[must_use]
    pub fn vault_public_key(&self) -> [u8; 32] {
        PublicKey::from(&self.vault_secret()).to_bytes()
    }

    /// `inboxKey` of an address at a key epoch.
    #[must_use]
    pub fn address_secret(&self, address_id: &str, epoch: u32) -> StaticSecret {
        StaticSecret::from(self.derive(&epoch_label("inbox-key", address_id, epoch)))
    }

    /// Public half of [`Self::address_secret`].
    #[must_use]
    pub fn address_public_key(&self, address_id: &str, epoch: u32) -> [u8; 32] {
        PublicKey::from(&self.address_secret(address_id, epoch)).to_bytes()
    }

    /// `sealingKey` of an address at a key epoch.
    #[must_use]
    pub fn address_sealing_key(&self, address_id: &str, epoch: u32) -> [u8; 32] {
        self.derive(&epoch_label("inbox-sealing", address_id, epoch))
    }

    /// The sign-in proof for a challenge: HMAC-SHA256 keyed with
    /// X25519(auth secret, `challenge_key`) over
    /// `service/v1/auth:<nonce as sent>:<accountId>`.
    #[must_use]
    pub fn handshake_proof(
        &self,
        challenge_key: &[u8; 32],
        nonce_b64: &str,
        account_id: &str,
    ) -> [u8; 32] {
        let shared = self
            .auth_secret()
            .diffie_hellman(&PublicKey::from(*challenge_key));
        crate::handshake_proof(shared.as_bytes(), nonce_b64, account_id)
    }
}

/// A peer's X25519 public key from base64url, as the service accepts one to
/// seal to or to sign in with: 32 bytes that are not a low-order point.
/// X25519 with a low-order point gives the same all-zero secret whatever the
/// other side's key, so a box sealed to it would open for anyone.
///
/// # Errors
/// [`SealError::InvalidBase64`] or [`SealError::WrongLength`] for text that
/// is not 32 bytes; [`SealError::InvalidKey`] for a low-order point.
pub fn parse_public_key(text: &str) -> Result<[u8; 32], SealError> {
    let key = crate::b64::decode_32(text)?;
    // Any clamped scalar is a multiple of the cofactor 8, so its product
    // with a point of order dividing 8 is the identity, which X25519 writes
    // as all zeros; every other point gives a contributory result.
    let probe = StaticSecret::from([0x5a; 32]);
    if probe
        .diffie_hellman(&PublicKey::from(key))
        .was_contributory()
    {
        Ok(key)
    } else {
        Err(SealError::InvalidKey)
    }
}

/// The canonical encodings of the low-order points (u = 0, 1, p - 1 and
/// the two of order 8), for the crate's tests.
#[cfg(test)]
pub(crate) fn low_order_points() -> [[u8; 32]; 5] {
    [
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
        "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
    ]
    .map(|hex| {
        let bytes = data_encoding::HEXLOWER.decode(hex.as_bytes()).unwrap();
        <[u8; 32]>::try_from(bytes).unwrap()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const VECTOR: &str = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";

    #[test]
    fn generated_phrase_round_trips() {
        let phrase = RecoveryPhrase::generate();
        let words = phrase.words();
        assert_eq!(words.split(' ').count(), 12);
        let parsed = RecoveryPhrase::parse(&words).unwrap();
        assert_eq!(parsed.words(), words);
        assert_eq!(parsed.keys().account_id(), phrase.keys().account_id());
        assert_ne!(RecoveryPhrase::generate().words(), words);
    }

    #[test]
    fn parse_normalises_whitespace_and_case() {
        let messy = format!("  {}\n", VECTOR.to_uppercase().replace(' ', " \t "));
        assert_eq!(
            RecoveryPhrase::parse(&messy).unwrap().words().as_str(),
            VECTOR
        );
    }

    #[test]
    fn bad_phrases_are_refused() {
        // Valid words, wrong checksum word.
        let bad_checksum = VECTOR.replace("about", "abandon");
        assert_eq!(
            RecoveryPhrase::parse(&bad_checksum).unwrap_err(),
            SealError::InvalidPhrase("the checksum does not match".to_owned())
        );
        let unknown = VECTOR.replacen("abandon", "abandonx", 1);
        assert!(matches!(
            RecoveryPhrase::parse(&unknown),
            Err(SealError::InvalidPhrase(why)) if why.contains("word 1") && !why.contains("abandonx")
        ));
        let eleven = VECTOR.replacen("abandon ", "", 1);
        assert!(matches!(
            RecoveryPhrase::parse(&eleven),
            Err(SealError::InvalidPhrase(_))
        ));
        // 24 words with a valid BIP-39 checksum are still refused.
        let twenty_four = "abandon ".repeat(23) + "art";
        assert!(matches!(
            RecoveryPhrase::parse(&twenty_four),
            Err(SealError::InvalidPhrase(why)) if why.contains("12")
        ));
        assert!(RecoveryPhrase::parse("").is_err());
    }

    #[test]
    fn debug_hides_secrets() {
        let phrase = RecoveryPhrase::parse(VECTOR).unwrap();
        assert_eq!(format!("{phrase:?}"), "RecoveryPhrase(..)");
        let keys = AccountKeys::from_seed([7u8; 64]);
        assert_eq!(format!("{keys:?}"), "AccountKeys(..)");
    }

    #[test]
    fn epochs_use_distinct_labels() {
        let keys = AccountKeys::from_seed([7u8; 64]);
        assert_eq!(
            keys.address_sealing_key("ibx_x", 0),
            keys.derive("inbox-sealing:ibx_x")
        );
        assert_eq!(
            keys.address_sealing_key("ibx_x", 2),
            keys.derive("inbox-sealing:ibx_x:2")
        );
        assert_eq!(
            keys.address_secret("ibx_x", 3).to_bytes(),
            keys.derive("inbox-key:ibx_x:3")
        );
        assert_ne!(
            keys.address_public_key("ibx_x", 0),
            keys.address_public_key("ibx_x", 1)
        );
        let id = keys.account_id();
        assert!(id.starts_with("acct_") && id.len() == 29);
        assert!(
            id[5..]
                .chars()
                .all(|c| c.is_ascii_lowercase() || ('2'..='7').contains(&c))
        );
    }

    #[test]
    fn a_public_key_is_refused_when_it_is_a_low_order_point() {
        for key in low_order_points() {
            assert_eq!(
                parse_public_key(&crate::b64::encode(&key)),
                Err(SealError::InvalidKey),
                "{key:02x?}"
            );
        }
        let account = RecoveryPhrase::parse(VECTOR).unwrap().keys();
        let real = account.auth_public_key();
        assert_eq!(parse_public_key(&crate::b64::encode(&real)), Ok(real));
        assert_eq!(
            parse_public_key("AAAA"),
            Err(SealError::WrongLength {
                expected: 32,
                actual: 3
            })
        );
    }
}
