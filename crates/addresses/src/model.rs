//! Addresses and the pure rules over their names and retention.

use sealpost_kernel::{AccountId, AddressId, DeviceId, Timestamp};
use sealpost_seal::SealedBox;

use crate::error::{AddressError, invalid};

pub const DEFAULT_RETENTION_DAYS: u8 = 7;
pub const MAX_RETENTION_DAYS: u8 = 90;
const RANDOM_ENDING_LEN: usize = 6;
const RANDOM_NAME_LEN: usize = 10;
const MAX_PREFIX_LEN: usize = 40;

#[derive(Clone, Debug, PartialEq)]
pub struct Address {
    pub id: AddressId,
    pub account: AccountId,
    pub email_address: String,
    pub domain: String,
    pub device: Option<DeviceId>,
    pub retention_days: u8,
    pub paused_at: Option<Timestamp>,
    pub meta: Option<SealedBox>,
    pub public_key: Option<[u8; 32]>,
    pub key_epoch: u32,
    pub created_at: Timestamp,
}

impl Address {
    /// `active` when assigned to a device, else `unassigned` (docs/api.md
    /// "Addresses").
    pub fn status(&self) -> &'static str {
        if self.device.is_some() {
            "active"
        } else {
            "unassigned"
        }
    }
}

/// `POST /inboxes` input after field decoding at the edge.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewAddress {
    pub id: Option<AddressId>,
    pub domain: Option<String>,
    pub prefix: Option<String>,
    pub local_part: Option<String>,
    pub email_address: Option<String>,
    pub retention_days: Option<i64>,
    pub meta: Option<SealedBox>,
    pub public_key: Option<[u8; 32]>,
}

/// `GET /inboxes/allocation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub limit: u64,
    pub used: u64,
    pub assigned: u64,
    pub remaining: u64,
}

/// An own domain of the account, proved, as address creation sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnDomainState {
    /// At step `live`: addresses can be created on it.
    pub live: bool,
    /// When the plan was first seen without own domains.
    pub plan_lost_at: Option<Timestamp>,
}

pub(crate) enum Name {
    Exact {
        local_part: String,
        domain: String,
    },
    Generated {
        prefix: Option<String>,
        domain: String,
    },
}

pub(crate) fn retention(days: Option<i64>) -> Result<u8, AddressError> {
    match days {
        None => Ok(DEFAULT_RETENTION_DAYS),
        Some(days) if (1..=i64::from(MAX_RETENTION_DAYS)).contains(&days) => Ok(days as u8),
        Some(_) => Err(invalid("retentionDays", "a whole number from 1 to 90")),
    }
}

fn allowed_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-' | '_' | '+')
}

/// A chosen local part: lowercase letters, digits and `.-_+`, 1 to 64, no leading,
/// trailing or doubled dot.
pub fn local_part(text: &str, field: &'static str) -> Result<String, AddressError> {
    let local = text.trim().to_ascii_lowercase();
    let valid = (1..=64).contains(&local.len())
        && local.chars().all(allowed_char)
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..");
    if valid {
        Ok(local)
    } else {
        Err(invalid(
            field,
            "letters, digits and . - _ + only, 1 to 64 characters, no leading, trailing or doubled dot",
        ))
    }
}

pub(crate) fn clean_prefix(prefix: &str) -> Result<String, AddressError> {
    let prefix = prefix.trim().to_ascii_lowercase();
    let valid = (1..=MAX_PREFIX_LEN).contains(&prefix.len())
        && prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && !prefix.starts_with('.')
        && !prefix.contains("..");
    if valid {
        Ok(prefix)
    } else {
        Err(invalid(
            "prefix",
            "letters, digits, - and . only, up to 40 characters",
        ))
    }
}

fn random_chars(len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyz23456789";
    sealpost_seal::random_bytes::<16>()
        .iter()
        .take(len)
        .map(|byte| ALPHABET[usize::from(*byte) % ALPHABET.len()] as char)
        .collect()
}

/// `prefix` + `.` + a random ending, or a random name when there is no prefix.
pub fn generated_local_part(prefix: Option<&str>) -> String {
    match prefix {
        Some(prefix) => format!(
            "{}.{}",
            prefix.trim_end_matches(['.', '-']),
            random_chars(RANDOM_ENDING_LEN)
        ),
        None => random_chars(RANDOM_NAME_LEN),
    }
}

/// The form a retired address is remembered in: SHA-256 of the lowercased address.
pub fn address_hash(email_address: &str) -> [u8; 32] {
    sealpost_seal::sha256(email_address.to_ascii_lowercase().as_bytes())
}
