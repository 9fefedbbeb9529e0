//! DKIM key pairs for own domains: RSA 2048 (what every receiver verifies),
//! made at ownership proof. The private key leaves here as PKCS#8 DER and is
//! sealed by the caller before it is stored.
//!
//! The one use of the `rsa` crate: *ring* cannot generate RSA keys. Nothing
//! signs with it (RUSTSEC-2023-0071, timing of private-key operations):
//! mail is signed by *ring* through [`crate::DkimSettings::from_pkcs8_der`].

use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey};
use sealpost_domains::{DkimKeyMaker, DkimKeyPair};

/// Key size of own domains' DKIM keys.
pub const DKIM_RSA_BITS: usize = 2048;

/// Makes RSA key pairs from the operating system's random source.
pub struct RsaDkimKeyMaker;

/// `rand_core` 0.6 over the workspace's random source (ring's system RNG).
struct SystemRng;

impl rsa::rand_core::RngCore for SystemRng {
    fn next_u32(&mut self) -> u32 {
        u32::from_le_bytes(sealpost_seal::random_bytes::<4>())
    }

    fn next_u64(&mut self) -> u64 {
        u64::from_le_bytes(sealpost_seal::random_bytes::<8>())
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(32) {
            let bytes = sealpost_seal::random_bytes::<32>();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rsa::rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl rsa::rand_core::CryptoRng for SystemRng {}

impl DkimKeyMaker for RsaDkimKeyMaker {
    fn generate(&self) -> Result<DkimKeyPair, String> {
        let private = rsa::RsaPrivateKey::new(&mut SystemRng, DKIM_RSA_BITS)
            .map_err(|error| error.to_string())?;
        let pkcs8 = private.to_pkcs8_der().map_err(|error| error.to_string())?;
        let public = private
            .to_public_key()
            .to_public_key_der()
            .map_err(|error| error.to_string())?;
        Ok(DkimKeyPair {
            private_pkcs8_der: pkcs8.as_bytes().to_vec(),
            public_spki_der: public.as_bytes().to_vec(),
            algorithm: "rsa",
        })
    }
}

#[cfg(test)]
mod tests {
    use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};

    use super::*;

    #[test]
    fn a_key_pair_is_made_and_its_halves_match() {
        let pair = RsaDkimKeyMaker.generate().unwrap();
        let private = rsa::RsaPrivateKey::from_pkcs8_der(&pair.private_pkcs8_der).unwrap();
        let public = rsa::RsaPublicKey::from_public_key_der(&pair.public_spki_der).unwrap();
        assert_eq!(private.to_public_key(), public);
        assert_eq!(
            rsa::traits::PublicKeyParts::size(&public),
            DKIM_RSA_BITS / 8
        );
        let settings =
            crate::DkimSettings::from_pkcs8_der("sealpost", &pair.private_pkcs8_der).unwrap();
        assert_eq!(settings.selector, "sealpost", "ring takes it");
        assert!(crate::DkimSettings::from_pkcs8_der("sealpost", b"not a key").is_err());
    }
}
