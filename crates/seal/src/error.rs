/// Everything that can go wrong in this crate. Messages never contain key
/// material or phrase words.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum SealError {
    /// The recovery phrase was refused; the reason names no words.
    #[error("invalid recovery phrase: {0}")]
    InvalidPhrase(String),
    /// A value was not base64url without padding.
    #[error("invalid base64url")]
    InvalidBase64,
    /// A decoded value had the wrong length.
    #[error("wrong length: expected {expected} bytes, got {actual}")]
    WrongLength { expected: usize, actual: usize },
    /// A key was malformed (wrong length, or a low-order X25519 point).
    #[error("invalid key")]
    InvalidKey,
    /// A sealed box was malformed (field lengths, binary layout).
    #[error("invalid box: {0}")]
    InvalidBox(String),
    /// A sealed box of a version this crate does not read or write here.
    #[error("unsupported box version {0}")]
    UnsupportedVersion(u8),
    /// Authentication failed: wrong key, wrong context or tampered box.
    #[error("box could not be opened")]
    OpenFailed,
}
