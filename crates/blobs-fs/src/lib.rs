//! Sealed attachment bytes on the local filesystem, under `SEALPOST_BLOB_DIR`.
//!
//! Writes go to a temporary file in the same directory tree, are synced, then
//! renamed into place and the directory synced: a blob is either whole or
//! absent after a crash. A directory created on the way (the blob root,
//! `blobs/`, a message's own directory) has its parent synced too, up to
//! the first that already existed, so the path to a synced blob survives a
//! crash as well. Only ciphertext ever reaches this store.
//!
//! Several processes share the directory. Each open store writes its
//! temporary files in a directory of its own, `tmp/<random>/`, whose `lock`
//! file it holds locked (`flock`) while it lives; the kernel releases that
//! lock when the process dies, however it dies. Opening a store removes the
//! temporary directories whose lock is free (their writer is gone), and
//! loose files in `tmp/` older than [`LOOSE_TEMP_GRACE`].

use std::fs::{File, TryLockError};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use sealpost_messages::store::{BlobError, BlobStore};
use tokio::io::AsyncWriteExt;

/// Loose files in `tmp/` (not in a store's own directory) are removed once
/// this old: no write takes that long.
pub const LOOSE_TEMP_GRACE: Duration = Duration::from_secs(10 * 60);

/// The file each store holds locked in its own temporary directory.
const LOCK_FILE: &str = "lock";

pub struct FsBlobStore {
    root: PathBuf,
    /// `tmp/<random>/`: this store's temporary files.
    scratch: PathBuf,
    /// Held locked while the store lives: its scratch directory is in use.
    _lock: File,
}

fn io_error(error: std::io::Error) -> BlobError {
    BlobError(error.to_string())
}

impl FsBlobStore {
    pub async fn open(root: impl Into<PathBuf>) -> Result<Self, BlobError> {
        let root = root.into();
        let tmp = root.join("tmp");
        let (scratch, lock) = tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&tmp)?;
            clear_abandoned(&tmp)?;
            claim_scratch(&tmp)
        })
        .await
        .map_err(|error| BlobError(error.to_string()))?
        .map_err(io_error)?;
        create_dir_durably(&root.join("blobs")).await?;
        Ok(Self {
            root,
            scratch,
            _lock: lock,
        })
    }

    /// Keys are `<message id>/<index>`: letters, digits, `_` and one `/`.
    fn path(&self, key: &str) -> Result<PathBuf, BlobError> {
        let valid = !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'/')
            && !key.starts_with('/')
            && !key.contains("//");
        if !valid {
            return Err(BlobError(format!("malformed blob key {key:?}")));
        }
        Ok(self.root.join("blobs").join(key))
    }
}

impl Drop for FsBlobStore {
    fn drop(&mut self) {
        // Best effort: a later open clears it anyway once the lock is free.
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// A fresh `tmp/<random>/` with its lock file created and held.
fn claim_scratch(tmp: &Path) -> std::io::Result<(PathBuf, File)> {
    loop {
        let scratch = tmp.join(uuid::Uuid::new_v4().simple().to_string());
        std::fs::create_dir(&scratch)?;
        let path = scratch.join(LOCK_FILE);
        let lock = File::create(&path)?;
        // Another store opening right now may take it for abandoned before we
        // lock it: it then holds the lock or has removed the directory. Only
        // a lock on the file still in place counts; else start over.
        if lock.try_lock().is_ok() && same_file(&lock, &path) {
            return Ok((scratch, lock));
        }
    }
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(held), Ok(named)) => held.dev() == named.dev() && held.ino() == named.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

/// Removes the temporary directories of stores that are gone (lock free) and
/// loose temporary files older than [`LOOSE_TEMP_GRACE`].
fn clear_abandoned(tmp: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(tmp)? {
        let entry = entry?;
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        // Gone meanwhile (another store cleared it): nothing to do.
        let result = if kind.is_dir() {
            clear_if_abandoned(&path)
        } else if older_than(&path, LOOSE_TEMP_GRACE) {
            std::fs::remove_file(&path)
        } else {
            Ok(())
        };
        if let Err(error) = result
            && error.kind() != ErrorKind::NotFound
        {
            return Err(error);
        }
    }
    Ok(())
}

fn clear_if_abandoned(dir: &Path) -> std::io::Result<()> {
    let lock = match File::open(dir.join(LOCK_FILE)) {
        Ok(lock) => lock,
        // Not a store's directory, or one being set up: only by age.
        Err(error) if error.kind() == ErrorKind::NotFound => {
            if older_than(dir, LOOSE_TEMP_GRACE) {
                std::fs::remove_dir_all(dir)?;
            }
            return Ok(());
        }
        Err(error) => return Err(error),
    };
    match lock.try_lock() {
        // Removed while holding the lock, so its store cannot be mid-open.
        Ok(()) => std::fs::remove_dir_all(dir),
        Err(TryLockError::WouldBlock) => Ok(()),
        Err(TryLockError::Error(error)) => Err(error),
    }
}

fn older_than(path: &Path, age: Duration) -> bool {
    std::fs::symlink_metadata(path)
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|modified| SystemTime::now().duration_since(modified).ok())
        .is_some_and(|elapsed| elapsed > age)
}

/// Creates `dir` and its missing parents, syncing the parent of each one
/// created (or found created by a racing writer), so their entries are on
/// disk before a blob inside them is called written.
async fn create_dir_durably(dir: &Path) -> Result<(), BlobError> {
    let mut missing = Vec::new();
    let mut current = Some(dir);
    while let Some(path) = current {
        if tokio::fs::try_exists(path).await.map_err(io_error)? {
            break;
        }
        missing.push(path.to_path_buf());
        current = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty());
    }
    for created in missing.iter().rev() {
        match tokio::fs::create_dir(created).await {
            Ok(()) => {}
            Err(error) if error.kind() == ErrorKind::AlreadyExists => {}
            Err(error) => return Err(io_error(error)),
        }
        let parent = created
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        sync_dir(parent).await?;
    }
    Ok(())
}

async fn sync_dir(dir: &Path) -> Result<(), BlobError> {
    tokio::fs::File::open(dir)
        .await
        .map_err(io_error)?
        .sync_all()
        .await
        .map_err(io_error)
}

#[async_trait]
impl BlobStore for FsBlobStore {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError> {
        let path = self.path(key)?;
        let parent = path
            .parent()
            .ok_or_else(|| BlobError("blob key has no parent".into()))?;
        create_dir_durably(parent).await?;
        let temporary = self.scratch.join(uuid::Uuid::new_v4().simple().to_string());
        let mut file = tokio::fs::File::create(&temporary)
            .await
            .map_err(io_error)?;
        file.write_all(&bytes).await.map_err(io_error)?;
        file.sync_all().await.map_err(io_error)?;
        drop(file);
        tokio::fs::rename(&temporary, &path)
            .await
            .map_err(io_error)?;
        sync_dir(parent).await
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError> {
        match tokio::fs::read(self.path(key)?).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == ErrorKind::NotFound => Ok(None),
            Err(error) => Err(io_error(error)),
        }
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let path = self.path(key)?;
        match tokio::fs::remove_file(&path).await {
            Ok(()) => {}
            Err(error) if error.kind() == ErrorKind::NotFound => {}
            Err(error) => return Err(io_error(error)),
        }
        // The per-message directory goes once empty; failing that is harmless.
        if let Some(parent) = path.parent() {
            let _ = tokio::fs::remove_dir(parent).await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn directories_are_created_under_a_root_that_did_not_exist() {
        let base = std::env::temp_dir().join(format!(
            "sealpost-blob-test-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let root = base.join("a").join("b");
        let store = FsBlobStore::open(&root).await.unwrap();
        assert!(root.join("blobs").is_dir());
        store.put("msg_new/0", b"sealed".to_vec()).await.unwrap();
        store.put("msg_new/1", b"more".to_vec()).await.unwrap();
        assert_eq!(store.get("msg_new/1").await.unwrap().unwrap(), b"more");
        drop(store);
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// Writers racing to create the same missing directories all succeed:
    /// a directory another writer made first counts as made (and is synced).
    #[tokio::test]
    async fn racing_writers_share_the_directories_they_create() {
        let base = std::env::temp_dir().join(format!(
            "sealpost-blob-test-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let deep = base.join("x").join("y").join("z");
        let racers: Vec<_> = (0..8)
            .map(|_| tokio::spawn(create_dir_durably_owned(deep.clone())))
            .collect();
        for racer in racers {
            racer.await.unwrap().unwrap();
        }
        assert!(deep.is_dir());

        let store = FsBlobStore::open(&base).await.unwrap();
        let store = std::sync::Arc::new(store);
        let puts: Vec<_> = (0..8)
            .map(|part| {
                let store = store.clone();
                tokio::spawn(async move {
                    store
                        .put(&format!("msg_race/{part}"), vec![part as u8])
                        .await
                })
            })
            .collect();
        for put in puts {
            put.await.unwrap().unwrap();
        }
        for part in 0..8u8 {
            let key = format!("msg_race/{part}");
            assert_eq!(store.get(&key).await.unwrap().unwrap(), vec![part]);
        }
        std::fs::remove_dir_all(&base).unwrap();
    }

    async fn create_dir_durably_owned(dir: std::path::PathBuf) -> Result<(), BlobError> {
        create_dir_durably(&dir).await
    }

    #[tokio::test]
    async fn put_get_delete_round_trip() {
        let root = std::env::temp_dir().join(format!(
            "sealpost-blob-test-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let store = FsBlobStore::open(&root).await.unwrap();
        store.put("msg_abc/0", b"sealed".to_vec()).await.unwrap();
        assert_eq!(store.get("msg_abc/0").await.unwrap().unwrap(), b"sealed");
        store.delete("msg_abc/0").await.unwrap();
        store.delete("msg_abc/0").await.unwrap();
        assert_eq!(store.get("msg_abc/0").await.unwrap(), None);
        assert!(
            !root.join("blobs/msg_abc").exists(),
            "empty message directory removed"
        );
        assert!(store.put("../escape", vec![]).await.is_err());
        let leftovers: Vec<_> = std::fs::read_dir(&store.scratch)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, [LOCK_FILE], "only the lock file stays");
        drop(store);
        assert_eq!(std::fs::read_dir(root.join("tmp")).unwrap().count(), 0);
        std::fs::remove_dir_all(root).unwrap();
    }

    fn temp_root() -> PathBuf {
        std::env::temp_dir().join(format!(
            "sealpost-blob-test-{}",
            uuid::Uuid::new_v4().simple()
        ))
    }

    fn write_aged(path: &Path, age: Duration) {
        let file = File::create(path).unwrap();
        file.set_modified(SystemTime::now() - age).unwrap();
    }

    #[tokio::test]
    async fn opening_clears_what_dead_writers_left_and_nothing_of_live_ones() {
        let root = temp_root();
        let tmp = root.join("tmp");
        // A writer that died mid-write: its lock file is there, unlocked.
        let dead = tmp.join("deadwriter");
        std::fs::create_dir_all(&dead).unwrap();
        File::create(dead.join(LOCK_FILE)).unwrap();
        std::fs::write(dead.join("half-written"), b"sealed").unwrap();
        // A live store (another process, as far as the lock goes) mid-write.
        let live = FsBlobStore::open(&root).await.unwrap();
        let writing = live.scratch.join("being-written");
        std::fs::write(&writing, b"sealed").unwrap();
        // Loose files from before per-store directories: by age only.
        let old_loose = tmp.join("old");
        let new_loose = tmp.join("new");
        write_aged(&old_loose, LOOSE_TEMP_GRACE + Duration::from_secs(60));
        write_aged(&new_loose, Duration::from_secs(60));

        assert!(
            !dead.exists(),
            "the first open already cleared the dead writer"
        );
        std::fs::create_dir_all(&dead).unwrap();
        File::create(dead.join(LOCK_FILE)).unwrap();
        let second = FsBlobStore::open(&root).await.unwrap();
        assert!(!dead.exists(), "a dead writer's directory goes at open");
        assert!(writing.exists(), "a live store's temporary file stays");
        assert!(!old_loose.exists(), "an old loose file goes");
        assert!(new_loose.exists(), "a recent loose file stays");

        // Both stores still write (their directories were left alone).
        live.put("msg_a/0", b"a".to_vec()).await.unwrap();
        second.put("msg_b/0", b"b".to_vec()).await.unwrap();
        drop((live, second));
        std::fs::remove_dir_all(root).unwrap();
    }
}
