//! Team fingerprint (docs/protocol.md "Teams").

use bip39::Language;

use crate::sha256;

/// Six words both people compare before joining a team: SHA-256 over
/// `service/v1/team-fingerprint:` followed by the raw public key, its first
/// 66 bits read most significant first, 11 bits per word of the BIP-39
/// English list.
#[must_use]
pub fn team_fingerprint(public_key: &[u8; 32]) -> [&'static str; 6] {
    let mut input = b"service/v1/team-fingerprint:".to_vec();
    input.extend_from_slice(public_key);
    let digest = sha256(&input);
    let mut first = [0u8; 16];
    first.copy_from_slice(&digest[..16]);
    let bits = u128::from_be_bytes(first);
    let list = Language::English.word_list();
    std::array::from_fn(|i| {
        let shift = 128 - 11 * (i + 1);
        // Masked to 11 bits, so always below 2048.
        let index = ((bits >> shift) & 0x7ff) as usize;
        list[index]
    })
}
