//! Base64url without padding, the encoding of every binary value on the wire.

use data_encoding::BASE64URL_NOPAD;

use crate::SealError;

/// Encodes `bytes` as base64url without padding.
#[must_use]
pub fn encode(bytes: &[u8]) -> String {
    BASE64URL_NOPAD.encode(bytes)
}

/// Decodes base64url without padding; padding, other alphabets and
/// non-canonical trailing bits are refused.
pub fn decode(text: &str) -> Result<Vec<u8>, SealError> {
    BASE64URL_NOPAD
        .decode(text.as_bytes())
        .map_err(|_| SealError::InvalidBase64)
}

/// Decodes base64url that must hold exactly 32 bytes (keys, proofs).
pub fn decode_32(text: &str) -> Result<[u8; 32], SealError> {
    let bytes = decode(text)?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| SealError::WrongLength {
        expected: 32,
        actual: bytes.len(),
    })
}

/// Serde `with` module: `Vec<u8>` as a base64url string.
pub mod serde_vec {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serialises bytes as a base64url string.
    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&super::encode(bytes))
    }

    /// Deserialises a base64url string into bytes.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        super::decode(&text).map_err(serde::de::Error::custom)
    }
}

/// Serde `with` module: `[u8; 32]` as a base64url string.
pub mod serde_32 {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serialises 32 bytes as a base64url string.
    pub fn serialize<S: Serializer>(bytes: &[u8; 32], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&super::encode(bytes))
    }

    /// Deserialises a base64url string that must hold exactly 32 bytes.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<[u8; 32], D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        super::decode_32(&text).map_err(serde::de::Error::custom)
    }
}
