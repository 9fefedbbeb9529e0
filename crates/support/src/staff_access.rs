//! Who may do what on the staff side: a staff token's roles and lifetime,
//! and the proof a support key rotation needs (docs/api.md "Staff API").

use chrono::TimeDelta;
use sealpost_kernel::{Timestamp, string_enum};
use sealpost_seal::{
    ServerKeys, b64, random_bytes, support_key_challenge, verify_support_key_proof,
};

use crate::model::PublicKey;
use crate::staff::StaffError;

string_enum! {
    /// What a staff token allows; each staff endpoint needs one.
    pub enum Role: "staff role" {
        /// Ticket lists, a ticket, abuse reports, switches, the audit log.
        Read => "read",
        /// Replies to and resolves tickets.
        Reply => "reply",
        /// Suspends and lifts, resolves abuse reports, sets the switches.
        Moderate => "moderate",
        /// Rotates the support key (with the current key's proof).
        Rotate => "rotate",
    }
}

/// A set of roles, in [`Role::ALL`]'s order, each once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Roles(Vec<Role>);

impl Roles {
    #[must_use]
    pub fn all() -> Self {
        Self(Role::ALL.to_vec())
    }

    #[must_use]
    pub fn of(roles: &[Role]) -> Self {
        Self(
            Role::ALL
                .into_iter()
                .filter(|role| roles.contains(role))
                .collect(),
        )
    }

    /// A comma list (`read,reply`); at least one role, each known.
    ///
    /// # Errors
    /// [`StaffError::Invalid`] for an empty list or an unknown role.
    pub fn parse(text: &str) -> Result<Self, StaffError> {
        let roles = text
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(|name| name.parse::<Role>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                StaffError::Invalid("roles: a comma list of read, reply, moderate, rotate")
            })?;
        if roles.is_empty() {
            return Err(StaffError::Invalid(
                "roles: at least one of read, reply, moderate, rotate",
            ));
        }
        Ok(Self::of(&roles))
    }

    #[must_use]
    pub fn contains(&self, role: Role) -> bool {
        self.0.contains(&role)
    }

    #[must_use]
    pub fn as_slice(&self) -> &[Role] {
        &self.0
    }

    /// The comma list, as `parse` takes it.
    #[must_use]
    pub fn to_text(&self) -> String {
        self.0
            .iter()
            .map(|role| role.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A token's lifetime when its creator names none (`SEALPOST_STAFF_TOKEN_DAYS`).
pub const DEFAULT_TOKEN_DAYS: u32 = 90;
/// The longest lifetime a token can be given.
pub const MAX_TOKEN_DAYS: u32 = 366;

/// A token lifetime of `days`, 1 to [`MAX_TOKEN_DAYS`].
///
/// # Errors
/// [`StaffError::Invalid`] outside that range.
pub fn token_lifetime(days: u32) -> Result<TimeDelta, StaffError> {
    if !(1..=MAX_TOKEN_DAYS).contains(&days) {
        return Err(StaffError::Invalid("days: 1 to 366"));
    }
    Ok(TimeDelta::days(i64::from(days)))
}

/// How long a rotation challenge stays good.
pub const CHALLENGE_LIFETIME: TimeDelta = TimeDelta::minutes(5);
/// The purpose rotation challenges are derived for under the server key.
const CHALLENGE_PURPOSE: &str = "support-key rotation challenge";

/// A challenge for proving the current support key: `nonce` names it (its
/// time and 16 random bytes), `challenge_key` is the public half of an
/// X25519 key the service re-derives from the nonce under its server key,
/// so nothing is stored between the two requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RotationChallenge {
    pub nonce: String,
    pub challenge_key: [u8; 32],
    pub expires_at: Timestamp,
}

/// Issues and checks rotation challenges.
#[derive(Clone)]
pub struct RotationProofs {
    keys: ServerKeys,
}

impl RotationProofs {
    #[must_use]
    pub fn new(keys: ServerKeys) -> Self {
        Self { keys }
    }

    /// A fresh challenge issued at `now`.
    #[must_use]
    pub fn challenge(&self, now: Timestamp) -> RotationChallenge {
        let mut raw = now.unix_seconds().to_be_bytes().to_vec();
        raw.extend_from_slice(&random_bytes::<16>());
        let nonce = b64::encode(&raw);
        let secret = self.keys.derive(CHALLENGE_PURPOSE, nonce.as_bytes());
        RotationChallenge {
            challenge_key: support_key_challenge(&secret),
            expires_at: now + CHALLENGE_LIFETIME,
            nonce,
        }
    }

    /// Whether `proof` shows the holder of `current`'s secret asked, under
    /// the challenge `nonce` issued in the last [`CHALLENGE_LIFETIME`], for
    /// `new` to become the support key.
    ///
    /// # Errors
    /// [`StaffError::ProofRefused`] when the nonce is not one this service
    /// issued, has expired, or the proof does not verify.
    pub fn check(
        &self,
        now: Timestamp,
        current: &PublicKey,
        new: &PublicKey,
        nonce: &str,
        proof: &[u8],
    ) -> Result<(), StaffError> {
        let raw = b64::decode(nonce).map_err(|_| StaffError::ProofRefused)?;
        let issued: [u8; 8] = raw
            .get(..8)
            .filter(|_| raw.len() == 24)
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or(StaffError::ProofRefused)?;
        let issued = i64::from_be_bytes(issued);
        let age = now.unix_seconds() - issued;
        if !(0..=CHALLENGE_LIFETIME.num_seconds()).contains(&age) {
            return Err(StaffError::ProofRefused);
        }
        let secret = self.keys.derive(CHALLENGE_PURPOSE, nonce.as_bytes());
        if verify_support_key_proof(&secret, &current.0, nonce, &new.to_text(), proof) {
            Ok(())
        } else {
            Err(StaffError::ProofRefused)
        }
    }
}
