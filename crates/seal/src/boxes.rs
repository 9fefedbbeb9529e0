//! Sealed boxes (docs/protocol.md "Sealed boxes"): JSON and binary forms, and
//! the service's shape check.

use ring::aead::{AES_256_GCM, Aad, Algorithm, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use serde::{Deserialize, Serialize};
use x25519_dalek::{PublicKey, StaticSecret};

use crate::primitives::{hkdf32, random_bytes};
use crate::sealing_key::SealingKey;
use crate::{SealError, b64};

const EPK_LEN: usize = 32;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
/// version || epk || n || t
/// What sealing adds to binary plaintext: version, ephemeral key, nonce, tag.
pub const BINARY_HEADER_LEN: usize = 1 + EPK_LEN + NONCE_LEN + TAG_LEN;

/// A box sealed to an X25519 public key. In JSON the byte fields are
/// base64url strings: `{"v": 2, "epk", "n", "c", "t"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedBox {
    /// Version: 2 is written, 1 (AES-256-GCM) is only read.
    pub v: u8,
    /// Ephemeral X25519 public key, 32 bytes.
    #[serde(with = "b64::serde_vec")]
    pub epk: Vec<u8>,
    /// AEAD nonce, 12 bytes.
    #[serde(with = "b64::serde_vec")]
    pub n: Vec<u8>,
    /// Ciphertext without the tag.
    #[serde(with = "b64::serde_vec")]
    pub c: Vec<u8>,
    /// AEAD tag, 16 bytes.
    #[serde(with = "b64::serde_vec")]
    pub t: Vec<u8>,
}

/// The AEAD and its key for a box version.
fn box_key(
    version: u8,
    shared: &[u8; 32],
    epk: &[u8; 32],
    recipient_public: &[u8; 32],
) -> Result<LessSafeKey, SealError> {
    let (algorithm, key): (&'static Algorithm, [u8; 32]) = match version {
        1 => (&AES_256_GCM, hkdf32(shared, &[], b"service/v1/box")),
        2 => {
            let mut salt = [0u8; 64];
            salt[..32].copy_from_slice(epk);
            salt[32..].copy_from_slice(recipient_public);
            (&CHACHA20_POLY1305, hkdf32(shared, &salt, b"service/v2/box"))
        }
        other => return Err(SealError::UnsupportedVersion(other)),
    };
    let key = UnboundKey::new(algorithm, &key).map_err(|_| SealError::InvalidKey)?;
    Ok(LessSafeKey::new(key))
}

fn fixed<const N: usize>(bytes: &[u8], field: &str) -> Result<[u8; N], SealError> {
    <[u8; N]>::try_from(bytes)
        .map_err(|_| SealError::InvalidBox(format!("{field} must be {N} bytes")))
}

impl SealedBox {
    /// Seals `plaintext` to `recipient_public` as a version 2 box with a
    /// fresh ephemeral key and nonce; `context` is the associated data.
    ///
    /// # Panics
    /// If the system random number generator fails, or the plaintext exceeds
    /// ChaCha20-Poly1305's limit (about 256 GiB).
    #[must_use]
    pub fn seal(recipient_public: &[u8; 32], context: &str, plaintext: &[u8]) -> SealedBox {
        Self::seal_fresh(&SealingKey::plain(*recipient_public), context, plaintext).0
    }

    /// [`Self::seal`], refusing a recipient key of low order: X25519 with
    /// one gives an all-zero secret whatever the ephemeral key, so the box
    /// would open for anyone. It costs nothing more: the check reads the
    /// shared secret the seal computes anyway.
    ///
    /// # Errors
    /// [`SealError::InvalidKey`] for a low-order recipient key.
    ///
    /// # Panics
    /// As [`Self::seal`].
    pub fn try_seal(
        recipient_public: &[u8; 32],
        context: &str,
        plaintext: &[u8],
    ) -> Result<SealedBox, SealError> {
        Self::try_seal_to(&SealingKey::plain(*recipient_public), context, plaintext)
    }

    /// [`Self::try_seal`] to a [`SealingKey`] (one with its multiples
    /// precomputed seals quicker; the box is the same either way).
    ///
    /// # Errors
    /// [`SealError::InvalidKey`] for a low-order recipient key.
    ///
    /// # Panics
    /// As [`Self::seal`].
    pub fn try_seal_to(
        recipient: &SealingKey,
        context: &str,
        plaintext: &[u8],
    ) -> Result<SealedBox, SealError> {
        let (sealed, contributory) = Self::seal_fresh(recipient, context, plaintext);
        if contributory {
            Ok(sealed)
        } else {
            Err(SealError::InvalidKey)
        }
    }

    /// [`Self::seal`] with a given ephemeral secret and nonce: deterministic,
    /// for test vectors only. Never reuse an ephemeral secret.
    ///
    /// # Panics
    /// If the plaintext exceeds ChaCha20-Poly1305's limit (about 256 GiB).
    #[must_use]
    pub fn seal_with(
        ephemeral_secret: [u8; 32],
        nonce: [u8; 12],
        recipient_public: &[u8; 32],
        context: &str,
        plaintext: &[u8],
    ) -> SealedBox {
        Self::seal_reporting(
            ephemeral_secret,
            nonce,
            &SealingKey::plain(*recipient_public),
            context,
            plaintext,
        )
        .0
    }

    /// [`Self::seal_reporting`] with a fresh ephemeral secret and nonce.
    fn seal_fresh(recipient: &SealingKey, context: &str, plaintext: &[u8]) -> (SealedBox, bool) {
        Self::seal_reporting(
            random_bytes::<32>(),
            random_bytes::<NONCE_LEN>(),
            recipient,
            context,
            plaintext,
        )
    }

    /// The box, and whether the shared secret was contributory (false for
    /// a low-order recipient key).
    fn seal_reporting(
        ephemeral_secret: [u8; 32],
        nonce: [u8; 12],
        recipient: &SealingKey,
        context: &str,
        plaintext: &[u8],
    ) -> (SealedBox, bool) {
        let (epk, shared) = recipient.ephemeral_and_shared(ephemeral_secret);
        let mut c = plaintext.to_vec();
        let sealed = box_key(2, &shared, &epk, recipient.public()).and_then(|key| {
            key.seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(context.as_bytes()),
                &mut c,
            )
            .map_err(|_| SealError::InvalidBox("plaintext too long".to_owned()))
        });
        let tag = match sealed {
            Ok(tag) => tag,
            Err(e) => panic!("sealing failed: {e}"),
        };
        let sealed = SealedBox {
            v: 2,
            epk: epk.to_vec(),
            n: nonce.to_vec(),
            c,
            t: tag.as_ref().to_vec(),
        };
        // What x25519-dalek's `was_contributory` checks: a low-order key
        // gives the all-zero secret whatever the ephemeral key.
        (sealed, *shared != [0u8; 32])
    }

    /// Opens a version 1 or 2 box with the recipient's secret; `context`
    /// must be the associated data it was sealed with.
    pub fn open(
        &self,
        recipient_secret: &StaticSecret,
        context: &str,
    ) -> Result<Vec<u8>, SealError> {
        let epk: [u8; EPK_LEN] = fixed(&self.epk, "epk")?;
        let nonce: [u8; NONCE_LEN] = fixed(&self.n, "n")?;
        let tag: [u8; TAG_LEN] = fixed(&self.t, "t")?;
        let recipient_public = PublicKey::from(recipient_secret).to_bytes();
        let shared = recipient_secret.diffie_hellman(&PublicKey::from(epk));
        let key = box_key(self.v, shared.as_bytes(), &epk, &recipient_public)?;
        let mut buf = Vec::with_capacity(self.c.len() + TAG_LEN);
        buf.extend_from_slice(&self.c);
        buf.extend_from_slice(&tag);
        let len = key
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(context.as_bytes()),
                &mut buf,
            )
            .map_err(|_| SealError::OpenFailed)?
            .len();
        buf.truncate(len);
        Ok(buf)
    }

    /// The binary layout: version (2) || epk (32) || n (12) || t (16) || c.
    /// Only version 2 boxes have a binary form.
    pub fn to_binary(&self) -> Result<Vec<u8>, SealError> {
        if self.v != 2 {
            return Err(SealError::UnsupportedVersion(self.v));
        }
        self.to_binary_any_version()
    }

    /// The binary layout for a box of any version: version 1 boxes (read
    /// only) have the same field lengths. For storing boxes at rest, where
    /// old boxes stay readable; the protocol's binary box is
    /// [`Self::to_binary`], version 2 only.
    pub fn to_binary_any_version(&self) -> Result<Vec<u8>, SealError> {
        let epk: [u8; EPK_LEN] = fixed(&self.epk, "epk")?;
        let nonce: [u8; NONCE_LEN] = fixed(&self.n, "n")?;
        let tag: [u8; TAG_LEN] = fixed(&self.t, "t")?;
        let mut out = Vec::with_capacity(BINARY_HEADER_LEN + self.c.len());
        out.push(self.v);
        out.extend_from_slice(&epk);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&tag);
        out.extend_from_slice(&self.c);
        Ok(out)
    }

    /// Parses the binary layout; the version byte must be 2.
    pub fn from_binary(bytes: &[u8]) -> Result<SealedBox, SealError> {
        match bytes.first() {
            Some(&version) if version != 2 => Err(SealError::UnsupportedVersion(version)),
            _ => Self::from_binary_any_version(bytes),
        }
    }

    /// Parses what [`Self::to_binary_any_version`] wrote, whatever its
    /// version byte.
    pub fn from_binary_any_version(bytes: &[u8]) -> Result<SealedBox, SealError> {
        let Some((&version, rest)) = bytes.split_first() else {
            return Err(SealError::InvalidBox("empty binary box".to_owned()));
        };
        if bytes.len() < BINARY_HEADER_LEN {
            return Err(SealError::InvalidBox(format!(
                "binary box shorter than {BINARY_HEADER_LEN} bytes"
            )));
        }
        let (epk, rest) = rest.split_at(EPK_LEN);
        let (n, rest) = rest.split_at(NONCE_LEN);
        let (t, c) = rest.split_at(TAG_LEN);
        Ok(SealedBox {
            v: version,
            epk: epk.to_vec(),
            n: n.to_vec(),
            c: c.to_vec(),
            t: t.to_vec(),
        })
    }
}

/// Seals to the binary layout (attachments).
///
/// # Panics
/// As [`SealedBox::seal`].
#[must_use]
pub fn seal_binary(recipient_public: &[u8; 32], context: &str, plaintext: &[u8]) -> Vec<u8> {
    seal_binary_to(&SealingKey::plain(*recipient_public), context, plaintext)
}

/// [`seal_binary`] to a [`SealingKey`].
///
/// # Panics
/// As [`SealedBox::seal`].
#[must_use]
pub fn seal_binary_to(recipient: &SealingKey, context: &str, plaintext: &[u8]) -> Vec<u8> {
    let (sealed, _) = SealedBox::seal_fresh(recipient, context, plaintext);
    match sealed.to_binary() {
        Ok(binary) => binary,
        Err(e) => panic!("a freshly sealed box is version 2 with fields of the right lengths: {e}"),
    }
}

/// Opens a box in the binary layout.
pub fn open_binary(
    recipient_secret: &StaticSecret,
    context: &str,
    bytes: &[u8],
) -> Result<Vec<u8>, SealError> {
    SealedBox::from_binary(bytes)?.open(recipient_secret, context)
}

/// Why the service refuses a client's box.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum BoxShapeError {
    /// 400 `invalid_box`; the text says what is wrong.
    #[error("invalid box: {0}")]
    Invalid(String),
    /// 413 `too_large`: the JSON-encoded box is over the field's limit.
    #[error("box too large")]
    TooLarge,
}

fn shape_field(
    object: &serde_json::Map<String, serde_json::Value>,
    name: &str,
    len: Option<usize>,
) -> Result<Vec<u8>, BoxShapeError> {
    let text = object
        .get(name)
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| BoxShapeError::Invalid(format!("{name} must be a base64url string")))?;
    let bytes = b64::decode(text)
        .map_err(|_| BoxShapeError::Invalid(format!("{name} is not valid base64url")))?;
    match len {
        Some(len) if bytes.len() != len => Err(BoxShapeError::Invalid(format!(
            "{name} must be {len} bytes"
        ))),
        _ => Ok(bytes),
    }
}

/// The service's shape check of a client box: `v` 1 or 2, `epk` 32 bytes,
/// `n` 12, `t` 16, `c` present (possibly empty), all base64url. A box whose
/// JSON encoding is longer than `max_encoded_len` bytes is
/// [`BoxShapeError::TooLarge`] (checked first). Unknown fields are ignored.
pub fn check_box(
    value: &serde_json::Value,
    max_encoded_len: usize,
) -> Result<SealedBox, BoxShapeError> {
    let encoded_len = serde_json::to_vec(value)
        .map_err(|_| BoxShapeError::Invalid("box is not encodable as JSON".to_owned()))?
        .len();
    if encoded_len > max_encoded_len {
        return Err(BoxShapeError::TooLarge);
    }
    let object = value
        .as_object()
        .ok_or_else(|| BoxShapeError::Invalid("box must be a JSON object".to_owned()))?;
    let v = match object.get("v").and_then(serde_json::Value::as_u64) {
        Some(1) => 1,
        Some(2) => 2,
        _ => return Err(BoxShapeError::Invalid("v must be 1 or 2".to_owned())),
    };
    Ok(SealedBox {
        v,
        epk: shape_field(object, "epk", Some(EPK_LEN))?,
        n: shape_field(object, "n", Some(NONCE_LEN))?,
        c: shape_field(object, "c", None)?,
        t: shape_field(object, "t", Some(TAG_LEN))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CONTEXT: &str = "service/v1/message:ibx_a:msg_b";

    #[test]
    fn try_seal_refuses_a_low_order_key_and_seals_to_any_other() {
        for key in crate::keys::low_order_points() {
            assert_eq!(
                SealedBox::try_seal(&key, CONTEXT, b"hello").map(|_| ()),
                Err(SealError::InvalidKey),
                "{key:02x?}"
            );
        }
        let (secret, public) = recipient();
        let sealed = SealedBox::try_seal(&public, CONTEXT, b"hello").unwrap();
        assert_eq!(sealed.open(&secret, CONTEXT).unwrap(), b"hello");
    }

    fn recipient() -> (StaticSecret, [u8; 32]) {
        let secret = StaticSecret::from(random_bytes::<32>());
        let public = PublicKey::from(&secret).to_bytes();
        (secret, public)
    }

    #[test]
    fn fresh_box_opens() {
        let (secret, public) = recipient();
        let sealed = SealedBox::seal(&public, CONTEXT, b"hello");
        assert_eq!(sealed.v, 2);
        assert_eq!(sealed.epk.len(), 32);
        assert_eq!(sealed.n.len(), 12);
        assert_eq!(sealed.t.len(), 16);
        assert_eq!(sealed.c.len(), 5);
        assert_eq!(sealed.open(&secret, CONTEXT).unwrap(), b"hello");
        // Two seals of the same plaintext differ (fresh key and nonce).
        assert_ne!(sealed, SealedBox::seal(&public, CONTEXT, b"hello"));
    }

    #[test]
    fn empty_plaintext_round_trips() {
        let (secret, public) = recipient();
        let sealed = SealedBox::seal(&public, "", b"");
        assert!(sealed.c.is_empty());
        assert_eq!(sealed.open(&secret, "").unwrap(), b"");
    }

    #[test]
    fn any_change_fails_to_open() {
        let (secret, public) = recipient();
        let sealed = SealedBox::seal(&public, CONTEXT, b"secret text");

        let mut b = sealed.clone();
        b.v = 1;
        assert_eq!(b.open(&secret, CONTEXT), Err(SealError::OpenFailed));
        b.v = 3;
        assert_eq!(
            b.open(&secret, CONTEXT),
            Err(SealError::UnsupportedVersion(3))
        );

        let mut b = sealed.clone();
        b.epk[0] ^= 1;
        assert!(b.open(&secret, CONTEXT).is_err());
        let mut b = sealed.clone();
        b.n[0] ^= 1;
        assert_eq!(b.open(&secret, CONTEXT), Err(SealError::OpenFailed));
        let mut b = sealed.clone();
        b.c[0] ^= 1;
        assert_eq!(b.open(&secret, CONTEXT), Err(SealError::OpenFailed));
        let mut b = sealed.clone();
        b.c.pop();
        assert_eq!(b.open(&secret, CONTEXT), Err(SealError::OpenFailed));
        let mut b = sealed.clone();
        b.t[15] ^= 1;
        assert_eq!(b.open(&secret, CONTEXT), Err(SealError::OpenFailed));

        // Wrong lengths are a malformed box, not a failed open.
        let mut b = sealed.clone();
        b.epk.pop();
        assert!(matches!(
            b.open(&secret, CONTEXT),
            Err(SealError::InvalidBox(_))
        ));
        let mut b = sealed.clone();
        b.n.push(0);
        assert!(matches!(
            b.open(&secret, CONTEXT),
            Err(SealError::InvalidBox(_))
        ));
        let mut b = sealed.clone();
        b.t.pop();
        assert!(matches!(
            b.open(&secret, CONTEXT),
            Err(SealError::InvalidBox(_))
        ));

        assert_eq!(
            sealed.open(&secret, "service/v1/message:ibx_a:msg_c"),
            Err(SealError::OpenFailed)
        );
        assert_eq!(sealed.open(&secret, ""), Err(SealError::OpenFailed));

        let (other, _) = recipient();
        assert_eq!(sealed.open(&other, CONTEXT), Err(SealError::OpenFailed));

        assert_eq!(sealed.open(&secret, CONTEXT).unwrap(), b"secret text");
    }

    #[test]
    fn json_form_round_trips() {
        let (secret, public) = recipient();
        let sealed = SealedBox::seal(&public, CONTEXT, b"json");
        let text = serde_json::to_string(&sealed).unwrap();
        assert!(!text.contains('=') && !text.contains('+') && !text.contains('/'));
        let back: SealedBox = serde_json::from_str(&text).unwrap();
        assert_eq!(back, sealed);
        assert_eq!(back.open(&secret, CONTEXT).unwrap(), b"json");
        // Padded or standard base64 is refused.
        let mut value = serde_json::to_value(&sealed).unwrap();
        value["n"] = json!("CQkJCQkJCQkJCQkJ==");
        assert!(serde_json::from_value::<SealedBox>(value).is_err());
    }

    #[test]
    fn binary_form_round_trips() {
        let (secret, public) = recipient();
        let bytes = seal_binary(&public, "service/v1/attachment:msg_b:3", b"file");
        assert_eq!(bytes.len(), BINARY_HEADER_LEN + 4);
        assert_eq!(bytes[0], 2);
        assert_eq!(
            open_binary(&secret, "service/v1/attachment:msg_b:3", &bytes).unwrap(),
            b"file"
        );
        assert_eq!(
            open_binary(&secret, "service/v1/attachment:msg_b:4", &bytes),
            Err(SealError::OpenFailed)
        );
        let parsed = SealedBox::from_binary(&bytes).unwrap();
        assert_eq!(parsed.to_binary().unwrap(), bytes);

        let mut v1 = bytes.clone();
        v1[0] = 1;
        assert_eq!(
            SealedBox::from_binary(&v1),
            Err(SealError::UnsupportedVersion(1))
        );
        assert!(matches!(
            SealedBox::from_binary(&bytes[..BINARY_HEADER_LEN - 1]),
            Err(SealError::InvalidBox(_))
        ));
        assert!(SealedBox::from_binary(&[]).is_err());
        // Header only: an empty plaintext.
        let empty = seal_binary(&public, "", b"");
        assert_eq!(empty.len(), BINARY_HEADER_LEN);
        assert_eq!(open_binary(&secret, "", &empty).unwrap(), b"");
    }

    fn good_box() -> serde_json::Value {
        json!({
            "v": 2,
            "epk": b64::encode(&[1u8; 32]),
            "n": b64::encode(&[2u8; 12]),
            "c": b64::encode(b"ciphertext"),
            "t": b64::encode(&[3u8; 16]),
            "extra": "ignored"
        })
    }

    fn invalid(value: &serde_json::Value) -> String {
        match check_box(value, 10_000) {
            Err(BoxShapeError::Invalid(why)) => why,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn check_box_accepts_good_shapes() {
        let sealed = check_box(&good_box(), 10_000).unwrap();
        assert_eq!(sealed.v, 2);
        assert_eq!(sealed.c, b"ciphertext");
        let mut v1 = good_box();
        v1["v"] = json!(1);
        assert_eq!(check_box(&v1, 10_000).unwrap().v, 1);
        let mut empty = good_box();
        empty["c"] = json!("");
        assert!(check_box(&empty, 10_000).unwrap().c.is_empty());
        let (_, public) = recipient();
        let real = serde_json::to_value(SealedBox::seal(&public, CONTEXT, b"x")).unwrap();
        assert!(check_box(&real, 10_000).is_ok());
    }

    #[test]
    fn check_box_refuses_each_malformed_field() {
        for v in [
            json!(0),
            json!(3),
            json!("2"),
            json!(2.5),
            json!(-1),
            json!(null),
        ] {
            let mut b = good_box();
            b["v"] = v;
            assert!(invalid(&b).contains('v'));
        }
        let cases = [
            ("epk", b64::encode(&[1u8; 31])),
            ("epk", b64::encode(&[1u8; 33])),
            ("n", b64::encode(&[2u8; 11])),
            ("n", b64::encode(&[2u8; 16])),
            ("t", b64::encode(&[3u8; 12])),
            ("t", b64::encode(&[3u8; 17])),
            (
                "epk",
                "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=".to_owned(),
            ),
            ("n", "AgICAgICAgICAgIC+/==".to_owned()),
            ("c", "not base64!".to_owned()),
            ("c", "a".to_owned()),
            ("t", "AwMDAwMDAwMDAwMDAwMDAw==".to_owned()),
        ];
        for (field, text) in cases {
            let mut b = good_box();
            b[field] = json!(text);
            assert!(invalid(&b).starts_with(field), "{field} = {text}");
        }
        for field in ["v", "epk", "n", "c", "t"] {
            let mut b = good_box();
            b.as_object_mut().unwrap().remove(field);
            assert!(invalid(&b).starts_with(field), "missing {field}");
            let mut b = good_box();
            b[field] = json!(null);
            assert!(invalid(&b).starts_with(field), "null {field}");
            if field != "v" {
                let mut b = good_box();
                b[field] = json!(12);
                assert!(invalid(&b).starts_with(field), "number {field}");
            }
        }
        for not_object in [json!([]), json!("box"), json!(null), json!(2)] {
            assert!(invalid(&not_object).contains("object"));
        }
    }

    #[test]
    fn check_box_refuses_oversize() {
        let value = good_box();
        let len = serde_json::to_vec(&value).unwrap().len();
        assert!(check_box(&value, len).is_ok());
        assert_eq!(check_box(&value, len - 1), Err(BoxShapeError::TooLarge));
        let mut big = good_box();
        big["c"] = json!(b64::encode(&vec![0u8; 100_000]));
        assert_eq!(check_box(&big, 65_536), Err(BoxShapeError::TooLarge));
    }
}
