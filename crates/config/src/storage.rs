//! Storage: the PostgreSQL database (`DATABASE_URL`) and where the sealed
//! blobs go: a directory (`SEALPOST_BLOB_DIR`, the default) or an S3 bucket
//! (`SEALPOST_BLOB_URL` and the usual `AWS_*` variables), never both.

use crate::ConfigError;
use crate::variables::{Variable, Vars};
use std::path::PathBuf;

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/sealpost_dev";

pub(crate) const DATABASE_URL: Variable = Variable {
    name: "DATABASE_URL",
    default: DEFAULT_DATABASE_URL,
    meaning: "PostgreSQL connection URL. TLS per libpq's `sslmode` (`disable`, `prefer` (default), `require`, `verify-ca`, `verify-full`) and `sslrootcert` (a PEM file, or `system`) in its query; see the notes below. `cargo xtask dev` finds or starts a server and sets it.",
};

pub(crate) const BLOB_DIR: Variable = Variable {
    name: "SEALPOST_BLOB_DIR",
    default: "target/dev/blobs",
    meaning: "Directory of sealed message bodies and attachments (ciphertext only). One machine only: see `docs/operations.md`. Not together with `SEALPOST_BLOB_URL`.",
};

pub(crate) const BLOB_URL: Variable = Variable {
    name: "SEALPOST_BLOB_URL",
    default: "(unset: blobs in `SEALPOST_BLOB_DIR`)",
    meaning: "`s3://bucket` or `s3://bucket/prefix`: sealed blobs in S3-compatible object storage instead of a directory, so several machines can run the service (`docs/operations.md`). Endpoint, region and credentials from the `AWS_*` variables below. Not together with `SEALPOST_BLOB_DIR`.",
};

pub(crate) const AWS_ENDPOINT_URL: Variable = Variable {
    name: "AWS_ENDPOINT_URL",
    default: "(unset: AWS itself)",
    meaning: "With `SEALPOST_BLOB_URL`: the object store's URL for a self-hosted S3-compatible store (MinIO, Garage, Ceph...), addressed path-style; an `http://` endpoint allows plain HTTP.",
};

pub(crate) const AWS_REGION: Variable = Variable {
    name: "AWS_REGION",
    default: "(unset: `us-east-1`)",
    meaning: "With `SEALPOST_BLOB_URL`: the bucket's region.",
};

pub(crate) const AWS_ACCESS_KEY_ID: Variable = Variable {
    name: "AWS_ACCESS_KEY_ID",
    default: "(unset: the instance's credentials)",
    meaning: "With `SEALPOST_BLOB_URL`: the access key, together with `AWS_SECRET_ACCESS_KEY`; unset, the credentials of the instance role or web identity are used.",
};

pub(crate) const AWS_SECRET_ACCESS_KEY: Variable = Variable {
    name: "AWS_SECRET_ACCESS_KEY",
    default: "(unset)",
    meaning: "With `SEALPOST_BLOB_URL`: the secret of `AWS_ACCESS_KEY_ID`.",
};

/// `SEALPOST_BLOB_URL` and the `AWS_*` settings that go with it.
#[derive(Clone, PartialEq, Eq)]
pub struct BlobBucket {
    pub bucket: String,
    /// Key prefix inside the bucket, without slashes at either end.
    pub prefix: String,
    pub endpoint: Option<String>,
    pub region: Option<String>,
    /// Access key id and its secret.
    pub credentials: Option<(String, crate::Secret)>,
}

impl std::fmt::Debug for BlobBucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobBucket")
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Storage {
    pub(crate) database_url: crate::Secret,
    pub(crate) blob_dir: PathBuf,
    pub(crate) blob_bucket: Option<BlobBucket>,
}

pub(crate) fn read(vars: Vars<'_>) -> Result<Storage, ConfigError> {
    let blob_bucket = match vars.get(&BLOB_URL) {
        None => None,
        Some(_) if vars.get(&BLOB_DIR).is_some() => {
            return Err(ConfigError::Invalid {
                name: BLOB_URL.name,
                reason: "set only one of SEALPOST_BLOB_DIR (a local directory) and \
                         SEALPOST_BLOB_URL (object storage)"
                    .into(),
            });
        }
        Some(url) => Some(bucket(vars, url)?),
    };
    Ok(Storage {
        database_url: crate::Secret::new(vars.text(&DATABASE_URL)),
        blob_dir: PathBuf::from(vars.text(&BLOB_DIR)),
        blob_bucket,
    })
}

fn bucket(vars: Vars<'_>, text: &str) -> Result<BlobBucket, ConfigError> {
    let invalid = |reason: &str| ConfigError::Invalid {
        name: BLOB_URL.name,
        reason: reason.to_owned(),
    };
    let url =
        url::Url::parse(text).map_err(|_| invalid("expected s3://bucket or s3://bucket/prefix"))?;
    if url.scheme() != "s3" {
        return Err(invalid(
            "only s3:// is supported (S3-compatible object storage)",
        ));
    }
    let bucket = url.host_str().unwrap_or_default().to_owned();
    if bucket.is_empty() {
        return Err(invalid("names no bucket (s3://bucket)"));
    }
    if !url.username().is_empty() || url.password().is_some() || url.port().is_some() {
        return Err(invalid(
            "holds credentials or a port: give the endpoint and keys in AWS_ENDPOINT_URL, \
             AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid("takes no query or fragment"));
    }
    let prefix = url.path().trim_matches('/').to_owned();
    if prefix
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
        && !prefix.is_empty()
    {
        return Err(invalid("has an empty or relative part in its prefix"));
    }
    let endpoint = match vars.get(&AWS_ENDPOINT_URL) {
        None => None,
        Some(endpoint) => match url::Url::parse(endpoint) {
            Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => {
                Some(endpoint.trim_end_matches('/').to_owned())
            }
            _ => {
                return Err(ConfigError::Invalid {
                    name: AWS_ENDPOINT_URL.name,
                    reason: "expected an http:// or https:// URL".into(),
                });
            }
        },
    };
    let credentials = vars
        .all_or_none([&AWS_ACCESS_KEY_ID, &AWS_SECRET_ACCESS_KEY])?
        .map(|[id, secret]| (id, crate::Secret::new(secret)));
    Ok(BlobBucket {
        bucket,
        prefix,
        endpoint,
        region: vars.get(&AWS_REGION).map(str::to_owned),
        credentials,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variables::vars;

    fn storage(pairs: &[(&str, &str)]) -> Result<Storage, ConfigError> {
        read(Vars::new(&vars(pairs)))
    }

    #[test]
    fn the_directory_is_the_default() {
        let storage = storage(&[]).unwrap();
        assert_eq!(storage.blob_dir, PathBuf::from("target/dev/blobs"));
        assert_eq!(storage.blob_bucket, None);
    }

    #[test]
    fn a_bucket_url_reads_its_prefix_and_the_aws_settings() {
        let storage = storage(&[
            ("SEALPOST_BLOB_URL", "s3://sealpost-mail/prod/eu/"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/"),
            ("AWS_REGION", "eu-central-1"),
            ("AWS_ACCESS_KEY_ID", "key-id"),
            ("AWS_SECRET_ACCESS_KEY", "key-secret"),
        ])
        .unwrap();
        let bucket = storage.blob_bucket.unwrap();
        assert_eq!(bucket.bucket, "sealpost-mail");
        assert_eq!(bucket.prefix, "prod/eu");
        assert_eq!(bucket.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(bucket.region.as_deref(), Some("eu-central-1"));
        let (id, secret) = bucket.credentials.clone().unwrap();
        assert_eq!((id.as_str(), secret.expose()), ("key-id", "key-secret"));
        assert!(!format!("{bucket:?}").contains("key-secret"));

        let bare = super::tests::storage(&[("SEALPOST_BLOB_URL", "s3://b")])
            .unwrap()
            .blob_bucket
            .unwrap();
        assert_eq!(
            (bare.prefix.as_str(), bare.endpoint, bare.credentials),
            ("", None, None)
        );
    }

    #[test]
    fn only_one_of_the_directory_and_the_bucket() {
        let error = storage(&[
            ("SEALPOST_BLOB_DIR", "/var/lib/sealpost/blobs"),
            ("SEALPOST_BLOB_URL", "s3://b"),
        ])
        .err()
        .unwrap();
        assert_eq!(
            error.to_string(),
            "SEALPOST_BLOB_URL is not valid: set only one of SEALPOST_BLOB_DIR (a local directory) and SEALPOST_BLOB_URL (object storage)"
        );
    }

    #[test]
    fn malformed_bucket_settings_are_refused_by_name() {
        for (pairs, name) in [
            (
                vec![("SEALPOST_BLOB_URL", "/var/blobs")],
                "SEALPOST_BLOB_URL",
            ),
            (vec![("SEALPOST_BLOB_URL", "gs://b")], "SEALPOST_BLOB_URL"),
            (
                vec![("SEALPOST_BLOB_URL", "s3:///prefix")],
                "SEALPOST_BLOB_URL",
            ),
            (
                vec![("SEALPOST_BLOB_URL", "s3://id:secret@b")],
                "SEALPOST_BLOB_URL",
            ),
            (
                vec![("SEALPOST_BLOB_URL", "s3://b/a//c")],
                "SEALPOST_BLOB_URL",
            ),
            (
                vec![("SEALPOST_BLOB_URL", "s3://b?x=1")],
                "SEALPOST_BLOB_URL",
            ),
            (
                vec![
                    ("SEALPOST_BLOB_URL", "s3://b"),
                    ("AWS_ENDPOINT_URL", "localhost:9000"),
                ],
                "AWS_ENDPOINT_URL",
            ),
            (
                vec![("SEALPOST_BLOB_URL", "s3://b"), ("AWS_ACCESS_KEY_ID", "id")],
                "AWS_SECRET_ACCESS_KEY",
            ),
        ] {
            match storage(&pairs) {
                Err(ConfigError::Invalid { name: got, .. }) => assert_eq!(got, name, "{pairs:?}"),
                Ok(_) => panic!("accepted {pairs:?}"),
            }
        }
    }
}
