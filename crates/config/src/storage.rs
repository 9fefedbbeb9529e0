//! Storage: the PostgreSQL database (`DATABASE_URL`) and the directory of
//! sealed blobs (`SEALPOST_BLOB_DIR`).

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
    meaning: "Directory of sealed message bodies and attachments (ciphertext only).",
};

pub(crate) struct Storage {
    pub(crate) database_url: crate::Secret,
    pub(crate) blob_dir: PathBuf,
}

pub(crate) fn read(vars: Vars<'_>) -> Storage {
    Storage {
        database_url: crate::Secret::new(vars.text(&DATABASE_URL)),
        blob_dir: PathBuf::from(vars.text(&BLOB_DIR)),
    }
}
