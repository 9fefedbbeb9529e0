//! [`Secret`]: a configured value that must not outlive its use or reach a
//! log (a database URL with its password, a relay URL with its credentials).

use zeroize::{Zeroize, Zeroizing};

/// A secret text: its bytes are overwritten when the last copy is dropped
/// (`zeroize`), and `Debug` never shows it. Read it with [`Secret::expose`]
/// only where it is handed on.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    pub fn new(text: impl Into<String>) -> Self {
        Self(Zeroizing::new(text.into()))
    }

    /// The text itself, for the one call that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl Zeroize for Secret {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

impl From<String> for Secret {
    fn from(text: String) -> Self {
        Self::new(text)
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let secret = Secret::new("postgres://app:hunter2@db.example/sealpost");
        let shown = format!("{secret:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(
            secret.expose(),
            "postgres://app:hunter2@db.example/sealpost"
        );
    }

    #[test]
    fn wiping_clears_the_value() {
        // What dropping does (`Zeroizing`'s `Drop` runs the same wipe),
        // done in place so the result can be looked at.
        let mut secret = Secret::new("hunter2");
        secret.zeroize();
        assert_eq!(secret.expose(), "");
    }
}
