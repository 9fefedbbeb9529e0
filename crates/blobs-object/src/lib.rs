//! Sealed attachment bytes in object storage (`SEALPOST_BLOB_URL`,
//! `s3://bucket[/prefix]`), so several machines share one store.
//!
//! Each blob is one object, `<prefix>/blobs/<key>`. A PUT is atomic (the
//! object is whole or absent) and durable once the store answers it, so
//! there are no temporary objects to clear after a crash; the blobs of a
//! delivery that died before committing are found through their pending
//! rows in PostgreSQL and deleted by `BlobRecovery`, as with the directory.
//! Only ciphertext ever reaches this store.
//!
//! The S3 client signs with *ring* and talks HTTP through the workspace's
//! reqwest on rustls with *ring* ([`sealpost_outbound_http`]): nothing here
//! brings in aws-lc-rs.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::client::{HttpClient, HttpConnector};
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig};
use sealpost_messages::store::{BlobError, BlobStore};

/// A whole request to the store, retries included, is given up after this:
/// a delivery waiting on a put holds its SMTP client.
const RETRY_TIMEOUT: Duration = Duration::from_secs(30);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the blobs are: an S3 bucket and the settings to reach it.
/// No `Debug`: it holds the secret key.
#[derive(Clone, Default)]
pub struct S3Location {
    pub bucket: String,
    /// Key prefix inside the bucket, without slashes at either end; empty
    /// for the bucket's root.
    pub prefix: String,
    /// `AWS_ENDPOINT_URL`: a self-hosted store (path-style requests); none
    /// for AWS itself.
    pub endpoint: Option<String>,
    /// `AWS_REGION`; none for `us-east-1`.
    pub region: Option<String>,
    /// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`; none to take the
    /// instance's or web identity's credentials.
    pub credentials: Option<(String, String)>,
}

pub struct ObjectBlobStore {
    store: Arc<dyn ObjectStore>,
    /// `<prefix>/blobs`: every key lives under it.
    root: Path,
}

fn store_error(error: object_store::Error) -> BlobError {
    BlobError(error.to_string())
}

impl ObjectBlobStore {
    /// Over any object store (tests use the in-memory one), blobs under
    /// `<prefix>/blobs/`.
    pub fn new(store: Arc<dyn ObjectStore>, prefix: &str) -> Self {
        let root = Path::from(prefix).join("blobs");
        Self { store, root }
    }

    /// The S3 bucket of `location`. Nothing is contacted yet: see
    /// [`ObjectBlobStore::check`].
    pub fn s3(location: &S3Location) -> Result<Self, BlobError> {
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&location.bucket)
            .with_region(location.region.as_deref().unwrap_or("us-east-1"))
            .with_http_connector(RingConnector)
            .with_retry(RetryConfig {
                retry_timeout: RETRY_TIMEOUT,
                ..RetryConfig::default()
            });
        if let Some(endpoint) = &location.endpoint {
            // Self-hosted stores are addressed path-style (`endpoint/bucket/key`);
            // plain HTTP only when the operator wrote an http:// endpoint.
            builder = builder
                .with_endpoint(endpoint)
                .with_virtual_hosted_style_request(false)
                .with_allow_http(endpoint.starts_with("http://"));
        }
        if let Some((id, secret)) = &location.credentials {
            builder = builder
                .with_access_key_id(id)
                .with_secret_access_key(secret);
        }
        let store = builder.build().map_err(store_error)?;
        Ok(Self::new(Arc::new(store), &location.prefix))
    }

    /// Lists the blobs' prefix once: fails when the bucket cannot be
    /// reached or read with these credentials, so a process stops at
    /// start-up rather than at its first delivery.
    pub async fn check(&self) -> Result<(), BlobError> {
        self.store
            .list_with_delimiter(Some(&self.root))
            .await
            .map(drop)
            .map_err(store_error)
    }

    /// Every blob key in the store, sorted (checks and tests compare them
    /// with the rows).
    pub async fn keys(&self) -> Result<Vec<String>, BlobError> {
        let mut keys: Vec<String> = self
            .store
            .list(Some(&self.root))
            .map_ok(|meta| {
                meta.location
                    .prefix_match(&self.root)
                    .map(|parts| {
                        parts
                            .map(|part| part.as_ref().to_owned())
                            .collect::<Vec<_>>()
                            .join("/")
                    })
                    .unwrap_or_default()
            })
            .try_collect()
            .await
            .map_err(store_error)?;
        keys.sort_unstable();
        Ok(keys)
    }

    /// Keys are `<message id>/<index>`: letters, digits, `_` and one `/`.
    fn path(&self, key: &str) -> Result<Path, BlobError> {
        let valid = !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'/')
            && !key.starts_with('/')
            && !key.ends_with('/')
            && !key.contains("//");
        if !valid {
            return Err(BlobError(format!("malformed blob key {key:?}")));
        }
        Ok(key
            .split('/')
            .fold(self.root.clone(), |path, part| path.join(part)))
    }
}

#[async_trait]
impl BlobStore for ObjectBlobStore {
    /// Returns once the store has answered the PUT: the object is stored.
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError> {
        let path = self.path(key)?;
        self.store
            .put(&path, PutPayload::from(bytes))
            .await
            .map(drop)
            .map_err(store_error)
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError> {
        let path = self.path(key)?;
        match self.store.get(&path).await {
            Ok(found) => Ok(Some(found.bytes().await.map_err(store_error)?.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(error) => Err(store_error(error)),
        }
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let path = self.path(key)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(store_error(error)),
        }
    }
}

/// The HTTP client of the S3 store: the workspace's outbound client (rustls
/// with *ring*, set on the client itself, so no process-wide provider is
/// needed), not object_store's own.
#[derive(Debug)]
struct RingConnector;

impl HttpConnector for RingConnector {
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        let generic =
            |source: Box<dyn std::error::Error + Send + Sync>| object_store::Error::Generic {
                store: "S3",
                source,
            };
        let client = sealpost_outbound_http::client_builder(None, REQUEST_TIMEOUT, CONNECT_TIMEOUT)
            .map_err(|error| generic(Box::new(error)))?
            .build()
            .map_err(|error| generic(Box::new(error)))?;
        Ok(HttpClient::new(client))
    }
}

#[cfg(test)]
mod tests {
    use object_store::memory::InMemory;

    use super::*;

    fn store(prefix: &str) -> (Arc<InMemory>, ObjectBlobStore) {
        let memory = Arc::new(InMemory::new());
        let blobs = ObjectBlobStore::new(memory.clone(), prefix);
        (memory, blobs)
    }

    #[tokio::test]
    async fn put_get_delete_round_trip() {
        let (_, blobs) = store("");
        blobs.put("msg_abc/0", b"sealed".to_vec()).await.unwrap();
        assert_eq!(blobs.get("msg_abc/0").await.unwrap().unwrap(), b"sealed");
        blobs.delete("msg_abc/0").await.unwrap();
        blobs.delete("msg_abc/0").await.unwrap();
        assert_eq!(blobs.get("msg_abc/0").await.unwrap(), None);
        assert_eq!(blobs.keys().await.unwrap(), Vec::<String>::new());
    }

    #[tokio::test]
    async fn blobs_live_under_the_prefix_and_are_listed_by_key() {
        let (memory, blobs) = store("site-a");
        blobs.put("msg_b/1", b"b1".to_vec()).await.unwrap();
        blobs.put("msg_a/0", b"a0".to_vec()).await.unwrap();
        // Another deployment's object in the same bucket is not one of ours.
        memory
            .put(
                &Path::from("site-b/blobs/msg_c/0"),
                PutPayload::from_static(b"c"),
            )
            .await
            .unwrap();
        assert_eq!(blobs.keys().await.unwrap(), ["msg_a/0", "msg_b/1"]);
        let stored = memory
            .get(&Path::from("site-a/blobs/msg_a/0"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(&stored[..], b"a0");
        blobs.check().await.unwrap();
    }

    #[tokio::test]
    async fn malformed_keys_are_refused() {
        let (memory, blobs) = store("");
        for key in [
            "",
            "../escape",
            "/msg_a/0",
            "msg_a//0",
            "msg_a/0/",
            "msg a/0",
        ] {
            assert!(blobs.put(key, vec![1]).await.is_err(), "{key:?}");
            assert!(blobs.get(key).await.is_err(), "{key:?}");
            assert!(blobs.delete(key).await.is_err(), "{key:?}");
        }
        assert_eq!(
            memory
                .list(None)
                .try_collect::<Vec<_>>()
                .await
                .unwrap()
                .len(),
            0
        );
    }

    #[test]
    fn an_s3_location_builds_without_contacting_anything() {
        let location = S3Location {
            bucket: "sealpost".into(),
            prefix: "prod".into(),
            endpoint: Some("http://127.0.0.1:9".into()),
            region: Some("eu-central-1".into()),
            credentials: Some(("id".into(), "secret".into())),
        };
        let blobs = ObjectBlobStore::s3(&location).unwrap();
        assert_eq!(blobs.root.as_ref(), "prod/blobs");
    }
}
