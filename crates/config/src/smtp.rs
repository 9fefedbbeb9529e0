//! The SMTP ingest (`sealpost-smtp`): where it listens, its connection caps
//! (per client, per network, the share kept for known senders) and rate,
//! the deadline for the first MAIL, the DATA memory budget, the encrypted
//! spool and its budget, and STARTTLS.

use crate::variables::{Variable, Vars};
use crate::{ConfigError, TlsFiles};
use std::path::PathBuf;
use std::time::Duration;

pub(crate) const SMTP_ADDR: Variable = Variable {
    name: "SEALPOST_SMTP_ADDR",
    default: "127.0.0.1:2525",
    meaning: "Address the SMTP ingest (`sealpost-smtp`) listens on.",
};

pub(crate) const SMTP_MAX_SESSIONS: Variable = Variable {
    name: "SEALPOST_SMTP_MAX_SESSIONS",
    default: "1000",
    meaning: "SMTP sessions the ingest holds at once, `SEALPOST_SMTP_RESERVED_SHARE` of them for known senders only; a connection over it is answered 421 4.3.2 and closed.",
};

pub(crate) const SMTP_MAX_SESSIONS_PER_IP: Variable = Variable {
    name: "SEALPOST_SMTP_MAX_SESSIONS_PER_IP",
    default: "50",
    meaning: "SMTP sessions at once from one client (an IPv4 address or an IPv6 /64); over it: 421 4.7.0 and close.",
};

pub(crate) const SMTP_MAX_SESSIONS_PER_IPV4_24: Variable = Variable {
    name: "SEALPOST_SMTP_MAX_SESSIONS_PER_IPV4_24",
    default: "100",
    meaning: "SMTP sessions at once from one IPv4 /24, all its addresses together; over it: 421 4.7.0 and close.",
};

pub(crate) const SMTP_MAX_SESSIONS_PER_IPV6_48: Variable = Variable {
    name: "SEALPOST_SMTP_MAX_SESSIONS_PER_IPV6_48",
    default: "100",
    meaning: "SMTP sessions at once from one IPv6 /48, all its /64s together (a /56 holds 256 of them); over it: 421 4.7.0 and close.",
};

pub(crate) const SMTP_RESERVED_SHARE: Variable = Variable {
    name: "SEALPOST_SMTP_RESERVED_SHARE",
    default: "10",
    meaning: "Percent (0 to 90) of `SEALPOST_SMTP_MAX_SESSIONS`, rounded down, that only known senders may take: networks (IPv4 /24, IPv6 /48) a message was accepted from within `SEALPOST_SMTP_KNOWN_SENDER_HOURS`. Others are answered 421 4.3.2 once the rest is taken.",
};

pub(crate) const SMTP_KNOWN_SENDERS: Variable = Variable {
    name: "SEALPOST_SMTP_KNOWN_SENDERS",
    default: "10000",
    meaning: "Networks the SMTP ingest remembers as known senders, in memory (0 to 1000000; the longest unseen is forgotten first). 0 remembers none, so the reserved share stays unused.",
};

pub(crate) const SMTP_KNOWN_SENDER_HOURS: Variable = Variable {
    name: "SEALPOST_SMTP_KNOWN_SENDER_HOURS",
    default: "168",
    meaning: "Hours (1 to 8760) a network stays a known sender after a message from it was accepted.",
};

pub(crate) const SMTP_MAIL_DEADLINE: Variable = Variable {
    name: "SEALPOST_SMTP_MAIL_DEADLINE",
    default: "60",
    meaning: "Seconds (1 to 3600) from an SMTP connection to its first accepted `MAIL FROM`; a session that has not started a transaction by then is answered 421 4.4.2 and closed.",
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

pub(crate) const SMTP_SPOOL_BUDGET: Variable = Variable {
    name: "SEALPOST_SMTP_SPOOL_BUDGET",
    default: "2048",
    meaning: "MiB (1 to 16777216) all spool files take at once (sealed size). A message that would pass it is answered 452 4.3.1 (at `MAIL ... SIZE=`, at DATA, or at its end), its file deleted; messages already spooled or accepted are untouched. The default holds 40 messages of the 50 MiB maximum: four times the default `SEALPOST_SMTP_DATA_MEMORY`, against the 50 GiB that 1,000 sessions of 50 MiB could otherwise write.",
};

pub(crate) const SMTP_SPOOL_DIR: Variable = Variable {
    name: "SEALPOST_SMTP_SPOOL_DIR",
    default: "(the system's temporary directory)/sealpost-smtp-spool",
    meaning: "Directory of the SMTP ingest's encrypted spool files (created with mode 0700, files 0600). Files a crashed ingest left are unreadable without their keys and are deleted when the ingest starts. The ingest refuses to start when another user owns the directory or its mode is wider than 0700, and warns when it is on tmpfs (the default's usual place), where the spool takes memory: `SEALPOST_SMTP_SPOOL_BUDGET` of it at most.",
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
    pub(crate) smtp_max_sessions_per_ipv4_24: usize,
    pub(crate) smtp_max_sessions_per_ipv6_48: usize,
    pub(crate) smtp_reserved_share: u8,
    pub(crate) smtp_known_senders: usize,
    pub(crate) smtp_known_sender_for: Duration,
    pub(crate) smtp_mail_deadline: Duration,
    pub(crate) smtp_connect_rate: u32,
    pub(crate) smtp_data_memory: usize,
    pub(crate) smtp_spool_threshold: usize,
    pub(crate) smtp_spool_budget: usize,
    pub(crate) smtp_spool_dir: PathBuf,
    pub(crate) smtp_tls: Option<TlsFiles>,
}

pub(crate) fn read(vars: Vars<'_>) -> Result<Smtp, ConfigError> {
    Ok(Smtp {
        smtp_addr: vars.text(&SMTP_ADDR).to_owned(),
        smtp_max_sessions: vars.whole(&SMTP_MAX_SESSIONS, 1, 1_000_000)? as usize,
        smtp_max_sessions_per_ip: vars.whole(&SMTP_MAX_SESSIONS_PER_IP, 1, 1_000_000)? as usize,
        smtp_max_sessions_per_ipv4_24: vars.whole(&SMTP_MAX_SESSIONS_PER_IPV4_24, 1, 1_000_000)?
            as usize,
        smtp_max_sessions_per_ipv6_48: vars.whole(&SMTP_MAX_SESSIONS_PER_IPV6_48, 1, 1_000_000)?
            as usize,
        smtp_reserved_share: vars.whole(&SMTP_RESERVED_SHARE, 0, 90)? as u8,
        smtp_known_senders: vars.whole(&SMTP_KNOWN_SENDERS, 0, 1_000_000)? as usize,
        smtp_known_sender_for: Duration::from_secs(
            vars.whole(&SMTP_KNOWN_SENDER_HOURS, 1, 8760)? * 3600,
        ),
        smtp_mail_deadline: Duration::from_secs(vars.whole(&SMTP_MAIL_DEADLINE, 1, 3600)?),
        smtp_connect_rate: vars.whole(&SMTP_CONNECT_RATE, 0, 1_000_000)? as u32,
        smtp_data_memory: vars.whole(&SMTP_DATA_MEMORY, 1, 1024 * 1024)? as usize * 1024 * 1024,
        smtp_spool_threshold: vars.whole(&SMTP_SPOOL_THRESHOLD, 64, 1024 * 1024)? as usize * 1024,
        smtp_spool_budget: vars.whole(&SMTP_SPOOL_BUDGET, 1, 16 * 1024 * 1024)? as usize
            * 1024
            * 1024,
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
    use std::time::Duration;

    #[test]
    fn smtp_limits_are_read_and_bounded() {
        let config = Config::from_vars(&vars(&[
            ("SEALPOST_SMTP_MAX_SESSIONS", "20"),
            ("SEALPOST_SMTP_MAX_SESSIONS_PER_IP", "3"),
            ("SEALPOST_SMTP_MAX_SESSIONS_PER_IPV4_24", "7"),
            ("SEALPOST_SMTP_MAX_SESSIONS_PER_IPV6_48", "9"),
            ("SEALPOST_SMTP_RESERVED_SHARE", "25"),
            ("SEALPOST_SMTP_KNOWN_SENDERS", "0"),
            ("SEALPOST_SMTP_KNOWN_SENDER_HOURS", "2"),
            ("SEALPOST_SMTP_MAIL_DEADLINE", "15"),
            ("SEALPOST_SMTP_CONNECT_RATE", "0"),
            ("SEALPOST_SMTP_DATA_MEMORY", "64"),
            ("SEALPOST_SMTP_SPOOL_THRESHOLD", "256"),
            ("SEALPOST_SMTP_SPOOL_BUDGET", "300"),
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
        assert_eq!(config.smtp_max_sessions_per_ipv4_24, 7);
        assert_eq!(config.smtp_max_sessions_per_ipv6_48, 9);
        assert_eq!(config.smtp_reserved_share, 25);
        assert_eq!(config.smtp_known_senders, 0);
        assert_eq!(config.smtp_known_sender_for, Duration::from_secs(2 * 3600));
        assert_eq!(config.smtp_mail_deadline, Duration::from_secs(15));
        assert_eq!(config.smtp_spool_budget, 300 * 1024 * 1024);
        for (name, bad) in [
            ("SEALPOST_SMTP_MAX_SESSIONS", "0"),
            ("SEALPOST_SMTP_MAX_SESSIONS_PER_IP", "many"),
            ("SEALPOST_SMTP_CONNECT_RATE", "-1"),
            ("SEALPOST_SMTP_DATA_MEMORY", "0"),
            ("SEALPOST_SMTP_SPOOL_THRESHOLD", "63"),
            ("SEALPOST_SMTP_MAX_SESSIONS_PER_IPV4_24", "0"),
            ("SEALPOST_SMTP_MAX_SESSIONS_PER_IPV6_48", "0"),
            ("SEALPOST_SMTP_RESERVED_SHARE", "91"),
            ("SEALPOST_SMTP_KNOWN_SENDER_HOURS", "0"),
            ("SEALPOST_SMTP_MAIL_DEADLINE", "0"),
            ("SEALPOST_SMTP_SPOOL_BUDGET", "0"),
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
