//! Sealed attachment bytes on the local filesystem, under `SEALPOST_BLOB_DIR`.
//!
//! Writes go to a temporary file in the same directory tree, are synced, then
//! renamed into place and the directory synced: a blob is either whole or
//! absent after a crash. Only ciphertext ever reaches this store.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use sealpost_messages::store::{BlobError, BlobStore};
use tokio::io::AsyncWriteExt;

pub struct FsBlobStore {
    root: PathBuf,
}

fn io_error(error: std::io::Error) -> BlobError {
    BlobError(error.to_string())
}

impl FsBlobStore {
    pub async fn open(root: impl Into<PathBuf>) -> Result<Self, BlobError> {
        let root = root.into();
        tokio::fs::create_dir_all(root.join("tmp"))
            .await
            .map_err(io_error)?;
        Ok(Self { root })
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
        tokio::fs::create_dir_all(parent).await.map_err(io_error)?;
        let temporary = self
            .root
            .join("tmp")
            .join(uuid::Uuid::new_v4().simple().to_string());
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
        let leftovers = std::fs::read_dir(root.join("tmp")).unwrap().count();
        assert_eq!(leftovers, 0);
        std::fs::remove_dir_all(root).unwrap();
    }
}
