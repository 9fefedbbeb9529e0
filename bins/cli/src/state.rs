//! The CLI's state directory and the files in it, readable by the owner
//! only (0600, in a 0700 directory):
//!
//! - `session.json`, `{apiUrl, accountId, token, expiresAt}`: the bearer
//!   token of one operator session;
//! - `device.json`, `{apiUrl, workerId, credential, secretKey}`: this machine
//!   as a paired device, with its credential and the X25519 secret its key
//!   bundle is sealed to.
//! - `staff-keys.json` (or the file `--key-file` / `SEALPOST_STAFF_KEY_FILE`
//!   names), `{keys: [{publicKey, secretKey, createdAt}]}`: the support
//!   team's X25519 key pairs for `sealpost staff`, oldest first; the last is
//!   the newest. Old pairs stay so that tickets sealed to them stay readable.
//!
//! The recovery phrase is never written anywhere.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow};
use sealpost_kernel::{AccountId, DeviceId, Timestamp};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

const SESSION_FILE: &str = "session.json";
const DEVICE_FILE: &str = "device.json";
const STAFF_KEYS_FILE: &str = "staff-keys.json";

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

/// This machine as a paired device. `Debug` shows neither the credential
/// nor the secret key.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceState {
    pub api_url: String,
    #[serde(rename = "workerId")]
    pub device_id: DeviceId,
    /// The device's bearer token.
    pub credential: String,
    /// The X25519 secret generated for pairing, base64url: opens the key
    /// bundle.
    pub secret_key: String,
}

impl std::fmt::Debug for DeviceState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceState")
            .field("api_url", &self.api_url)
            .field("worker_id", &self.device_id)
            .field("credential", &"<redacted>")
            .field("secret_key", &"<redacted>")
            .finish()
    }
}

/// One support key pair (base64url), as `sealpost staff key` made it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StaffKeyPair {
    pub public_key: String,
    pub secret_key: String,
    pub created_at: Timestamp,
}

/// The support team's key pairs, oldest first. `Debug` shows no secret.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaffKeyring {
    pub keys: Vec<StaffKeyPair>,
}

impl std::fmt::Debug for StaffKeyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|pair| &pair.public_key))
            .finish()
    }
}

/// Where the support keyring is kept: a JSON file written like the other
/// state files (0600, atomically).
#[derive(Clone, Debug)]
pub struct StaffKeyFile {
    dir: StateDir,
    name: String,
}

impl StaffKeyFile {
    /// The file at `path`.
    pub fn at(path: &Path) -> Result<Self> {
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .ok_or_else(|| anyhow!("{} is not a file name", path.display()))?;
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
            _ => PathBuf::from("."),
        };
        Ok(Self {
            dir: StateDir::new(dir),
            name: name.to_owned(),
        })
    }

    pub fn path(&self) -> PathBuf {
        self.dir.dir.join(&self.name)
    }

    /// The keyring, `None` when the file does not exist.
    pub fn load(&self) -> Result<Option<StaffKeyring>> {
        self.dir.load(
            &self.name,
            "restore it from your backup (without it old tickets cannot be read)",
        )
    }

    pub fn save(&self, keyring: &StaffKeyring) -> Result<()> {
        self.dir.save(&self.name, keyring)
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

    pub fn device_path(&self) -> PathBuf {
        self.dir.join(DEVICE_FILE)
    }

    /// The support keyring's default place.
    pub fn staff_key_file(&self) -> StaffKeyFile {
        StaffKeyFile {
            dir: self.clone(),
            name: STAFF_KEYS_FILE.to_owned(),
        }
    }

    /// The stored session, `None` when there is none.
    pub fn load_session(&self) -> Result<Option<StoredSession>> {
        self.load(SESSION_FILE, "run `sealpost login`")
    }

    /// Stores `session`, replacing any stored one.
    pub fn save_session(&self, session: &StoredSession) -> Result<()> {
        self.save(SESSION_FILE, session)
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

    /// This machine as a paired device, `None` when it is not one.
    pub fn load_device(&self) -> Result<Option<DeviceState>> {
        self.load(DEVICE_FILE, "run `sealpost agent pair --force`")
    }

    /// Stores the device state, replacing any stored one (callers check
    /// first: `agent pair` replaces it only with `--force`).
    pub fn save_device(&self, device: &DeviceState) -> Result<()> {
        self.save(DEVICE_FILE, device)
    }

    /// The JSON file `name`, `None` when it does not exist. `fix` tells
    /// what to do when it is damaged.
    fn load<T: DeserializeOwned>(&self, name: &str, fix: &str) -> Result<Option<T>> {
        let path = self.dir.join(name);
        let text = match fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let value = serde_json::from_slice(&text)
            .with_context(|| format!("{} is damaged; delete it and {fix}", path.display()))?;
        Ok(Some(value))
    }

    /// Stores `value` as the JSON file `name` atomically: written to a 0600
    /// temporary file in the same directory, flushed, then renamed over it.
    fn save<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        let body = serde_json::to_vec_pretty(value)?;
        let path = self.dir.join(name);
        let tmp = self.dir.join(temp_name(name));
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
}

/// A temporary file name no other process uses at the same time.
fn temp_name(name: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(".{name}.{}.{nanos}.tmp", std::process::id())
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

    fn device() -> DeviceState {
        DeviceState {
            api_url: "http://127.0.0.1:8080".to_owned(),
            device_id: DeviceId::parse("wkr_abcdefghijklmnop").unwrap(),
            credential: "credential-value".to_owned(),
            secret_key: "secret-value".to_owned(),
        }
    }

    #[test]
    fn device_file_is_private_camel_case_and_separate() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::new(tmp.path().join("sealpost"));
        assert_eq!(state.load_device().unwrap(), None);
        state.save_device(&device()).unwrap();
        state.save_session(&session()).unwrap();
        assert_eq!(state.load_device().unwrap(), Some(device()));
        assert_eq!(mode(&state.device_path()), 0o600);
        let json: serde_json::Value =
            serde_json::from_slice(&fs::read(state.device_path()).unwrap()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "apiUrl": "http://127.0.0.1:8080",
                "workerId": "wkr_abcdefghijklmnop",
                "credential": "credential-value",
                "secretKey": "secret-value",
            })
        );
        // Signing out leaves the device alone.
        assert!(state.delete_session().unwrap());
        assert_eq!(state.load_device().unwrap(), Some(device()));
        let shown = format!("{:?}", device());
        assert!(!shown.contains("credential-value") && !shown.contains("secret-value"));

        fs::write(state.device_path(), b"[").unwrap();
        let err = state.load_device().unwrap_err();
        assert!(format!("{err}").contains("agent pair"), "{err}");
    }
}
