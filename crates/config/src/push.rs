//! Push notifications: the keys that enable APNs and FCM, the endpoints
//! test doubles replace, and extra trusted roots for both.

use crate::ConfigError;
use crate::variables::{Variable, Vars};
use std::path::PathBuf;

pub(crate) const APNS_KEY_FILE: Variable = Variable {
    name: "SEALPOST_APNS_KEY_FILE",
    default: "(unset: no pushes to iOS)",
    meaning: "Apple's token-signing key (`AuthKey_<id>.p8`, PKCS#8 PEM, ES256); set together with the three variables below.",
};

pub(crate) const APNS_KEY_ID: Variable = Variable {
    name: "SEALPOST_APNS_KEY_ID",
    default: "(unset)",
    meaning: "The key's id (10 characters), sent as the JWT `kid`.",
};

pub(crate) const APNS_TEAM_ID: Variable = Variable {
    name: "SEALPOST_APNS_TEAM_ID",
    default: "(unset)",
    meaning: "The Apple developer team id, sent as the JWT `iss`.",
};

pub(crate) const APNS_TOPIC: Variable = Variable {
    name: "SEALPOST_APNS_TOPIC",
    default: "(unset)",
    meaning: "The iOS app's bundle id, sent as `apns-topic`.",
};

pub(crate) const APNS_URL: Variable = Variable {
    name: "SEALPOST_APNS_URL",
    default: "https://api.push.apple.com",
    meaning: "APNs base URL; `https://api.sandbox.push.apple.com` for development builds of the app, or a test double.",
};

pub(crate) const FCM_CREDENTIALS_FILE: Variable = Variable {
    name: "SEALPOST_FCM_CREDENTIALS_FILE",
    default: "(unset: no pushes to Android)",
    meaning: "A Firebase service-account JSON key file (`project_id`, `client_email`, `private_key`, `token_uri`).",
};

pub(crate) const FCM_PROJECT_ID: Variable = Variable {
    name: "SEALPOST_FCM_PROJECT_ID",
    default: "(the file's `project_id`)",
    meaning: "The Firebase project messages are sent through.",
};

pub(crate) const FCM_URL: Variable = Variable {
    name: "SEALPOST_FCM_URL",
    default: "https://fcm.googleapis.com",
    meaning: "FCM base URL; changed only to point at a test double.",
};

pub(crate) const FCM_TOKEN_URL: Variable = Variable {
    name: "SEALPOST_FCM_TOKEN_URL",
    default: "(the file's `token_uri`)",
    meaning: "OAuth 2.0 token endpoint the service-account assertion is exchanged at; changed only to point at a test double.",
};

pub(crate) const PUSH_CA_FILE: Variable = Variable {
    name: "SEALPOST_PUSH_CA_FILE",
    default: "(unset)",
    meaning: "PEM file of extra trusted roots for APNs and FCM (tests).",
};

/// `SEALPOST_APNS_KEY_FILE`, `_KEY_ID`, `_TEAM_ID` and `_TOPIC` (all or none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApnsKeys {
    pub key_file: PathBuf,
    pub key_id: String,
    pub team_id: String,
    pub topic: String,
    pub url: String,
}

/// `SEALPOST_FCM_CREDENTIALS_FILE` and what overrides the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FcmKeys {
    pub credentials_file: PathBuf,
    pub project_id: Option<String>,
    pub url: String,
    pub token_url: Option<String>,
}

pub(crate) struct Push {
    pub(crate) apns: Option<ApnsKeys>,
    pub(crate) fcm: Option<FcmKeys>,
    pub(crate) push_ca_file: Option<PathBuf>,
}

pub(crate) fn read(vars: Vars<'_>) -> Result<Push, ConfigError> {
    let apns = vars
        .all_or_none([&APNS_KEY_FILE, &APNS_KEY_ID, &APNS_TEAM_ID, &APNS_TOPIC])?
        .map(|[key_file, key_id, team_id, topic]| ApnsKeys {
            key_file: PathBuf::from(key_file),
            key_id,
            team_id,
            topic,
            url: vars.text(&APNS_URL).trim_end_matches('/').to_owned(),
        });
    let fcm = vars.get(&FCM_CREDENTIALS_FILE).map(|file| FcmKeys {
        credentials_file: PathBuf::from(file),
        project_id: vars.get(&FCM_PROJECT_ID).map(str::to_owned),
        url: vars.text(&FCM_URL).trim_end_matches('/').to_owned(),
        token_url: vars.get(&FCM_TOKEN_URL).map(str::to_owned),
    });
    Ok(Push {
        apns,
        fcm,
        push_ca_file: vars.path(&PUSH_CA_FILE),
    })
}

#[cfg(test)]
mod tests {
    use crate::variables::vars;
    use crate::{Config, ConfigError};
    use std::collections::HashMap;
    use std::path::PathBuf;

    #[test]
    fn push_providers_are_enabled_by_their_keys() {
        let config = Config::from_vars(&HashMap::new()).unwrap();
        assert_eq!(
            (config.apns, config.fcm, config.push_ca_file),
            (None, None, None)
        );

        let config = Config::from_vars(&vars(&[
            ("SEALPOST_APNS_KEY_FILE", "/keys/AuthKey_ABC.p8"),
            ("SEALPOST_APNS_KEY_ID", "ABC"),
            ("SEALPOST_APNS_TEAM_ID", "TEAM"),
            ("SEALPOST_APNS_TOPIC", "net.example.app"),
            ("SEALPOST_FCM_CREDENTIALS_FILE", "/keys/firebase.json"),
            ("SEALPOST_FCM_URL", "https://fcm.example/"),
        ]))
        .unwrap();
        let apns = config.apns.unwrap();
        assert_eq!(apns.url, "https://api.push.apple.com");
        assert_eq!(apns.key_file, PathBuf::from("/keys/AuthKey_ABC.p8"));
        assert_eq!(
            (apns.key_id.as_str(), apns.team_id.as_str()),
            ("ABC", "TEAM")
        );
        let fcm = config.fcm.unwrap();
        assert_eq!(fcm.url, "https://fcm.example");
        assert_eq!((fcm.project_id, fcm.token_url), (None, None));

        let half = Config::from_vars(&vars(&[("SEALPOST_APNS_KEY_FILE", "/k.p8")]));
        assert!(matches!(
            half,
            Err(ConfigError::Invalid {
                name: "SEALPOST_APNS_KEY_ID",
                ..
            })
        ));
    }
}
