//! The CLI's state directory and the session file in it.
//!
//! `session.json` holds `{apiUrl, accountId, token, expiresAt}`: the bearer
//! token of one operator session, readable by the owner only (0600, in a
//! 0700 directory). The recovery phrase is never written anywhere.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow};
use sealpost_kernel::{AccountId, Timestamp};
use serde::{Deserialize, Serialize};

const SESSION_FILE: &str = "session.json";

/// The stored operator session. `Debug` does not show the token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredSession {
    pub api_url: String,
    pub account_id: AccountId,
    pub token: String,
    pub expires_at: Timestamp,
}

impl std::fmt::Debug for StoredSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredSession")
            .field("api_url", &self.api_url)
            .field("account_id", &self.account_id)
            .field("token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// The directory the CLI keeps its state in.
#[derive(Clone, Debug)]
pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// `explicit` (from `SEALPOST_CONFIG_DIR` or `--config-dir`), else the
    /// platform's configuration directory + `sealpost`.
    pub fn locate(explicit: Option<PathBuf>) -> Result<Self> {
        match explicit {
            Some(dir) => Ok(Self::new(dir)),
            None => dirs::config_dir()
                .map(|base| Self::new(base.join("sealpost")))
                .ok_or_else(|| {
                    anyhow!("no configuration directory found; set SEALPOST_CONFIG_DIR")
                }),
        }
    }

    pub fn session_path(&self) -> PathBuf {
        self.dir.join(SESSION_FILE)
    }

    /// The stored session, `None` when there is none.
    pub fn load_session(&self) -> Result<Option<StoredSession>> {
        let path = self.session_path();
        let text = match fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let session = serde_json::from_slice(&text).with_context(|| {
            format!(
                "{} is damaged; delete it and run `sealpost login`",
                path.display()
            )
        })?;
        Ok(Some(session))
    }

    /// Stores `session` atomically: written to a 0600 temporary file in the
    /// same directory, flushed, then renamed over `session.json`.
    pub fn save_session(&self, session: &StoredSession) -> Result<()> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        let body = serde_json::to_vec_pretty(session)?;
        let path = self.session_path();
        let tmp = self.dir.join(temp_name());
        write_private(&tmp, &body)
            .and_then(|()| fs::rename(&tmp, &path))
            .inspect_err(|_| {
                let _ = fs::remove_file(&tmp);
            })
            .with_context(|| format!("cannot write {}", path.display()))?;
        // Make the rename durable; not every filesystem allows syncing a
        // directory, and the file is already in place either way.
        if let Ok(dir) = fs::File::open(&self.dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    /// Deletes the stored session; whether there was one.
    pub fn delete_session(&self) -> Result<bool> {
        let path = self.session_path();
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e).with_context(|| format!("cannot delete {}", path.display())),
        }
    }
}

/// A temporary file name no other process uses at the same time.
fn temp_name() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(".{SESSION_FILE}.{}.{nanos}.tmp", std::process::id())
}

/// Creates `path` (which must not exist) with mode 0600 and writes `body`.
fn write_private(path: &Path, body: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(body)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn session() -> StoredSession {
        StoredSession {
            api_url: "http://127.0.0.1:8080".to_owned(),
            account_id: AccountId::parse("acct_abcdefghijklmnopqrstuvwx").unwrap(),
            token: "token-value".to_owned(),
            expires_at: Timestamp::parse("2026-03-04T05:06:07.890Z").unwrap(),
        }
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn round_trip_with_private_modes() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::new(tmp.path().join("nested").join("sealpost"));
        assert_eq!(state.load_session().unwrap(), None);

        state.save_session(&session()).unwrap();
        assert_eq!(state.load_session().unwrap(), Some(session()));
        assert_eq!(mode(&state.session_path()), 0o600);
        assert_eq!(mode(&tmp.path().join("nested").join("sealpost")), 0o700);

        // Overwriting keeps the mode and leaves no temporary files behind.
        let mut other = session();
        other.token = "second".to_owned();
        state.save_session(&other).unwrap();
        assert_eq!(state.load_session().unwrap(), Some(other));
        assert_eq!(mode(&state.session_path()), 0o600);
        let names: Vec<_> = fs::read_dir(&state.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(SESSION_FILE)]);

        assert!(state.delete_session().unwrap());
        assert!(!state.delete_session().unwrap());
        assert_eq!(state.load_session().unwrap(), None);
    }

    #[test]
    fn file_format_is_camel_case() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::new(tmp.path());
        state.save_session(&session()).unwrap();
        let json: serde_json::Value =
            serde_json::from_slice(&fs::read(state.session_path()).unwrap()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "apiUrl": "http://127.0.0.1:8080",
                "accountId": "acct_abcdefghijklmnopqrstuvwx",
                "token": "token-value",
                "expiresAt": "2026-03-04T05:06:07.890Z",
            })
        );
    }

    #[test]
    fn damaged_file_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::new(tmp.path());
        fs::write(state.session_path(), b"{not json").unwrap();
        let err = state.load_session().unwrap_err();
        assert!(format!("{err}").contains("sealpost login"), "{err}");
    }

    #[test]
    fn debug_hides_token() {
        assert!(!format!("{:?}", session()).contains("token-value"));
    }
}
