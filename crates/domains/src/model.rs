//! An own domain as stored, its DKIM key, and what the service publishes.

use sealpost_kernel::{AccountId, Timestamp};

use crate::name::{DomainName, VERIFY_PREFIX};
use crate::steps::Step;

/// The at-rest purpose a domain's DKIM private key is sealed under.
pub const DKIM_KEY_PURPOSE: &str = "dkim-key";

/// The row a domain's DKIM private key is sealed for, beside
/// [`DKIM_KEY_PURPOSE`]: the account that proved it and the name, so a key
/// copied onto another domain's row does not open.
#[must_use]
pub fn dkim_key_row(account: &AccountId, name: &str) -> String {
    format!("{account}/{name}")
}

/// An own domain as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnDomain {
    pub account: AccountId,
    pub name: DomainName,
    /// The random token of `service-verify=<token>`.
    pub token: String,
    pub step: Step,
    /// When ownership was proved; `None` before (or for a lost claim).
    pub proved_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub checked_at: Option<Timestamp>,
    pub next_check_at: Timestamp,
    /// Checks made since the step last changed (the back-off counts them).
    pub checks_in_step: u32,
    /// When the account's plan was first seen without own domains; `None`
    /// while it has them.
    pub plan_lost_at: Option<Timestamp>,
}

impl OwnDomain {
    /// The value of the ownership TXT record.
    pub fn verification_value(&self) -> String {
        format!("{VERIFY_PREFIX}{}", self.token)
    }

    pub fn proved(&self) -> bool {
        self.proved_at.is_some()
    }
}

/// A new DKIM key pair for a domain.
pub struct DkimKeyPair {
    /// PKCS#8 DER of the private key (sealed before it is stored).
    pub private_pkcs8_der: Vec<u8>,
    /// SubjectPublicKeyInfo DER of the public key (the `p=` of the record).
    pub public_spki_der: Vec<u8>,
    /// `k=` of the record: `rsa`.
    pub algorithm: &'static str,
}

/// The DKIM key stored with a proved domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredDkim {
    pub selector: String,
    pub algorithm: String,
    pub public_spki_der: Vec<u8>,
    /// `ServerKeys::seal(DKIM_KEY_PURPOSE, dkim_key_row(..), pkcs8)`.
    pub sealed_private_key: Vec<u8>,
}

/// Names the service publishes for every own domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainSettings {
    /// Names the service itself uses (shared domains, nameservers, MX
    /// host, the API's host): none can be brought.
    pub service_domains: Vec<String>,
    /// The service's two nameservers, as listed to the owner.
    pub nameservers: Vec<String>,
    /// The host own domains' MX records must name.
    pub mx_host: String,
    /// The DKIM selector new keys are published under.
    pub dkim_selector: String,
}

/// The result of `POST /domains/custom`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Added {
    pub domain: OwnDomain,
    /// False when the account had claimed it before (same record answered).
    pub created: bool,
}
