//! The service's own keys: the server key (and the earlier ones a rotation
//! still accepts), the support team's public key, and how long the staff
//! tokens that act for that team live.

use crate::ConfigError;
use crate::variables::{Variable, Vars};

pub(crate) const SERVER_KEY: Variable = Variable {
    name: "SEALPOST_SERVER_KEY",
    default: "(unset: the API and the jobs refuse to start)",
    meaning: "32 random bytes as base64url without padding (43 characters): seals webhook signing secrets at rest and derives sign-in challenge secrets. Keep it outside the database and give every API and jobs process the same one (the SMTP ingest needs none); `cargo xtask dev` generates one.",
};

pub(crate) const SERVER_KEYS_OLD: Variable = Variable {
    name: "SEALPOST_SERVER_KEYS_OLD",
    default: "(none)",
    meaning: "Comma list of earlier server keys, still accepted for opening what they sealed while a rotation is under way; each API or jobs start seals such rows again under the current key.",
};

pub(crate) const SUPPORT_KEY: Variable = Variable {
    name: "SEALPOST_SUPPORT_KEY",
    default: "(unset: in-app support is off)",
    meaning: "The support team's X25519 public key (base64url).",
};

pub(crate) const STAFF_TOKEN_DAYS: Variable = Variable {
    name: "SEALPOST_STAFF_TOKEN_DAYS",
    default: "90",
    meaning: "Days a staff token lives when `sealpost-api staff-token create` is given no `--days` (1 to 366); past it the token gets 401 `session_expired`.",
};

pub(crate) struct Keys {
    pub(crate) server_keys: Option<sealpost_seal::ServerKeys>,
    pub(crate) support_key: Option<String>,
    pub(crate) staff_token_days: u32,
}

pub(crate) fn read(vars: Vars<'_>) -> Result<Keys, ConfigError> {
    let server_keys = vars
        .get(&SERVER_KEY)
        .map(|current| {
            let old: Vec<&str> = vars.list(&SERVER_KEYS_OLD).collect();
            sealpost_seal::ServerKeys::from_text(current, &old).map_err(|_| ConfigError::Invalid {
                name: SERVER_KEY.name,
                reason: format!(
                    "expected 32 bytes as base64url (43 characters), here and in {}",
                    SERVER_KEYS_OLD.name
                ),
            })
        })
        .transpose()?;
    let staff_token_days = match vars.text(&STAFF_TOKEN_DAYS).parse::<u32>() {
        Ok(days) if (1..=366).contains(&days) => days,
        _ => {
            return Err(ConfigError::Invalid {
                name: STAFF_TOKEN_DAYS.name,
                reason: "expected a whole number of days from 1 to 366".into(),
            });
        }
    };
    Ok(Keys {
        server_keys,
        support_key: vars.get(&SUPPORT_KEY).map(str::to_owned),
        staff_token_days,
    })
}
