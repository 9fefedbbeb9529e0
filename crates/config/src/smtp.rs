//! The SMTP ingest (`sealpost-smtp`): where it listens, its connection caps
//! and rate, the DATA memory budget and the encrypted spool, and STARTTLS.

use crate::variables::{Variable, Vars};
use crate::{ConfigError, TlsFiles};
use std::path::PathBuf;

pub(crate) const SMTP_ADDR: Variable = Variable {
    name: "SEALPOST_SMTP_ADDR",
    default: "127.0.0.1:2525",
    meaning: "Address the SMTP ingest (`sealpost-smtp`) listens on.",
};

pub(crate) const SMTP_MAX_SESSIONS: Variable = Variable {
    name: "SEALPOST_SMTP_MAX_SESSIONS",
    default: "1000",
    meaning: "SMTP sessions the ingest holds at once; a connection over it is answered 421 4.3.2 and closed.",
};

pub(crate) const SMTP_MAX_SESSIONS_PER_IP: Variable = Variable {
    name: "SEALPOST_SMTP_MAX_SESSIONS_PER_IP",
    default: "50",
    meaning: "SMTP sessions at once from one client (an IPv4 address or an IPv6 /64); over it: 421 4.7.0 and close.",
};

pub(crate) const SMTP_CONNECT_RATE: Variable = Variable {
    name: "SEALPOST_SMTP_CONNECT_RATE",
    default: "600",
    meaning: "New SMTP connections a minute from one client (a token bucket of that size, refilled evenly); over it: 421 4.7.0 and close. 0 turns the rate off (benchmarks).",
};

pub(crate) const SMTP_DATA_MEMORY: Variable = Variable {
    name: "SEALPOST_SMTP_DATA_MEMORY",
    default: "512",
    meaning: "MiB of message data all SMTP sessions hold at once (above 0); over it: 452 4.3.1 at DATA, or at the end of a message that outgrew it. Parsing and sealing take a few times a message's size on top, so leave the process about four times this.",
};

pub(crate) const SMTP_SPOOL_THRESHOLD: Variable = Variable {
    name: "SEALPOST_SMTP_SPOOL_THRESHOLD",
    default: "1024",
    meaning: "KiB (64 to 1048576) of one message's data the SMTP ingest keeps in memory while it arrives; beyond it the message goes on into an encrypted temporary file in `SEALPOST_SMTP_SPOOL_DIR` (ChaCha20-Poly1305 in 64 KiB chunks, a random key per message held only in memory, the file deleted once the delivery is answered), and is read back under `SEALPOST_SMTP_DATA_MEMORY` when it is delivered. Plaintext never reaches the disk.",
};

pub(crate) const SMTP_SPOOL_DIR: Variable = Variable {
    name: "SEALPOST_SMTP_SPOOL_DIR",
    default: "(the system's temporary directory)/sealpost-smtp-spool",
    meaning: "Directory of the SMTP ingest's encrypted spool files (created with mode 0700, files 0600). Files a crashed ingest left are unreadable without their keys and are deleted when the ingest starts.",
};

pub(crate) const SMTP_TLS_CERT: Variable = Variable {
    name: "SEALPOST_SMTP_TLS_CERT",
    default: "(none: no STARTTLS)",
    meaning: "PEM file of the SMTP ingest's certificate chain (leaf first). Set with `SEALPOST_SMTP_TLS_KEY`, EHLO offers STARTTLS; one without the other stops start-up. Both files are looked at again every 10 seconds and a changed pair is used for new sessions without a restart (sessions already running keep theirs); a pair that does not load is logged and the previous one kept.",
};

pub(crate) const SMTP_TLS_KEY: Variable = Variable {
    name: "SEALPOST_SMTP_TLS_KEY",
    default: "(none)",
    meaning: "PEM file of the private key of `SEALPOST_SMTP_TLS_CERT` (PKCS#8, PKCS#1 or SEC1).",
};

pub(crate) struct Smtp {
    pub(crate) smtp_addr: String,
    pub(crate) smtp_max_sessions: usize,
    pub(crate) smtp_max_sessions_per_ip: usize,
    pub(crate) smtp_connect_rate: u32,
    pub(crate) smtp_data_memory: usize,
    pub(crate) smtp_spool_threshold: usize,
    pub(crate) smtp_spool_dir: PathBuf,
    pub(crate) smtp_tls: Option<TlsFiles>,
}

pub(crate) fn read(vars: Vars<'_>) -> Result<Smtp, ConfigError> {
    Ok(Smtp {
        smtp_addr: vars.text(&SMTP_ADDR).to_owned(),
        smtp_max_sessions: vars.whole(&SMTP_MAX_SESSIONS, 1, 1_000_000)? as usize,
        smtp_max_sessions_per_ip: vars.whole(&SMTP_MAX_SESSIONS_PER_IP, 1, 1_000_000)? as usize,
        smtp_connect_rate: vars.whole(&SMTP_CONNECT_RATE, 0, 1_000_000)? as u32,
        smtp_data_memory: vars.whole(&SMTP_DATA_MEMORY, 1, 1024 * 1024)? as usize * 1024 * 1024,
        smtp_spool_threshold: vars.whole(&SMTP_SPOOL_THRESHOLD, 64, 1024 * 1024)? as usize * 1024,
        smtp_spool_dir: vars.path(&SMTP_SPOOL_DIR).unwrap_or_else(default_spool_dir),
        smtp_tls: TlsFiles::read(vars, &SMTP_TLS_CERT, &SMTP_TLS_KEY)?,
    })
}

/// The spool's default: the folder its entry names, in the system's
/// temporary directory.
fn default_spool_dir() -> PathBuf {
    let folder = SMTP_SPOOL_DIR
        .default
        .rsplit_once('/')
        .map_or(SMTP_SPOOL_DIR.default, |(_, folder)| folder);
    std::env::temp_dir().join(folder)
}

#[cfg(test)]
mod tests {
    use crate::variables::vars;
    use crate::{Config, ConfigError, TlsFiles};
    use std::path::PathBuf;

    #[test]
    fn smtp_limits_are_read_and_bounded() {
        let config = Config::from_vars(&vars(&[
            ("SEALPOST_SMTP_MAX_SESSIONS", "20"),
            ("SEALPOST_SMTP_MAX_SESSIONS_PER_IP", "3"),
            ("SEALPOST_SMTP_CONNECT_RATE", "0"),
            ("SEALPOST_SMTP_DATA_MEMORY", "64"),
            ("SEALPOST_SMTP_SPOOL_THRESHOLD", "256"),
            ("SEALPOST_SMTP_SPOOL_DIR", "/var/spool/sealpost"),
            ("SEALPOST_SMTP_TLS_CERT", "/etc/smtp/cert.pem"),
            ("SEALPOST_SMTP_TLS_KEY", "/etc/smtp/key.pem"),
        ]))
        .unwrap();
        assert_eq!(config.smtp_spool_threshold, 256 * 1024);
        assert_eq!(config.smtp_spool_dir, PathBuf::from("/var/spool/sealpost"));
        assert_eq!(
            config.smtp_tls,
            Some(TlsFiles {
                cert: PathBuf::from("/etc/smtp/cert.pem"),
                key: PathBuf::from("/etc/smtp/key.pem"),
            })
        );
        assert_eq!(config.smtp_max_sessions, 20);
        assert_eq!(config.smtp_max_sessions_per_ip, 3);
        assert_eq!(config.smtp_connect_rate, 0);
        assert_eq!(config.smtp_data_memory, 64 * 1024 * 1024);
        for (name, bad) in [
            ("SEALPOST_SMTP_MAX_SESSIONS", "0"),
            ("SEALPOST_SMTP_MAX_SESSIONS_PER_IP", "many"),
            ("SEALPOST_SMTP_CONNECT_RATE", "-1"),
            ("SEALPOST_SMTP_DATA_MEMORY", "0"),
            ("SEALPOST_SMTP_SPOOL_THRESHOLD", "63"),
        ] {
            let error = Config::from_vars(&vars(&[(name, bad)])).unwrap_err();
            assert!(
                matches!(error, ConfigError::Invalid { name: got, .. } if got == name),
                "{name}={bad}: {error}"
            );
        }
    }

    #[test]
    fn the_smtp_certificate_needs_its_key() {
        let error = Config::from_vars(&vars(&[("SEALPOST_SMTP_TLS_CERT", "/etc/smtp/cert.pem")]))
            .unwrap_err();
        assert!(
            matches!(
                error,
                ConfigError::Invalid {
                    name: "SEALPOST_SMTP_TLS_KEY",
                    ..
                }
            ),
            "{error}"
        );
    }
}
