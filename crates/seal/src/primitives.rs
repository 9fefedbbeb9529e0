//! Thin wrappers over `ring` used across the crate.

use ring::rand::{SecureRandom, SystemRandom};
use ring::{digest, hkdf};

/// SHA-256 of `data`.
#[must_use]
pub fn sha256(data: &[u8]) -> [u8; 32] {
    let d = digest::digest(&digest::SHA256, data);
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// `N` bytes from the operating system's secure random number generator.
///
/// # Panics
/// If the operating system's random number generator fails, which leaves no
/// safe way to continue.
#[must_use]
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    if SystemRandom::new().fill(&mut out).is_err() {
        panic!("the system random number generator failed");
    }
    out
}

/// 32 random bytes as base64url: session and device tokens.
#[must_use]
pub fn random_token() -> String {
    crate::b64::encode(&random_bytes::<32>())
}

/// HKDF-SHA256 with a 32-byte output.
pub(crate) fn hkdf32(ikm: &[u8], salt: &[u8], info: &[u8]) -> [u8; 32] {
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, salt).extract(ikm);
    let info = [info];
    let mut out = [0u8; 32];
    // HKDF-SHA256 can produce up to 255 * 32 bytes and the output buffer has
    // exactly the requested length, so neither step can fail.
    match prk
        .expand(&info, hkdf::HKDF_SHA256)
        .map(|okm| okm.fill(&mut out))
    {
        Ok(Ok(())) => out,
        _ => unreachable!("HKDF-SHA256 always yields 32 bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        let token = random_token();
        assert_eq!(crate::b64::decode(&token).unwrap().len(), 32);
        assert_ne!(token, random_token());
        assert_eq!(
            crate::b64::encode(&sha256(b"abc")),
            "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"
        );
        assert_eq!(
            crate::b64::decode_32("AAAA"),
            Err(crate::SealError::WrongLength {
                expected: 32,
                actual: 3
            })
        );
        assert_eq!(
            crate::b64::decode("AA=="),
            Err(crate::SealError::InvalidBase64)
        );
    }
}
