//! Own domains: an account on Scale or above brings a domain, proves it owns
//! it with a TXT record, delegates it to the service's nameservers and, once
//! its MX record shows, creates addresses on it and receives mail there.
//!
//! Until the TXT check passes a claim reserves nothing: several accounts may
//! claim a name; the first to prove it wins and the others' claims move to
//! `attention`. The DNS is reached through [`DnsLookup`] (an adapter on a
//! real resolver) and the records through [`DomainRepository`].

mod error;
mod model;
mod name;
mod repository;
mod service;
mod steps;

pub use error::DomainError;
pub use model::{
    Added, DKIM_KEY_PURPOSE, DkimKeyPair, DomainSettings, OwnDomain, StoredDkim, dkim_key_row,
};
pub use name::{DomainName, NameError, VERIFY_LABEL, VERIFY_PREFIX};
pub use repository::{
    AddOutcome, DkimKeyMaker, DnsLookup, DomainRepository, LookupError, ProveOutcome,
    RemoveOutcome, StepChange,
};
#[cfg(any(test, feature = "mock"))]
pub use repository::{MockDnsLookup, MockDomainRepository};
pub use service::Domains;
pub use steps::{
    Decision, LIVE_INTERVAL, Observed, SETUP_INTERVAL_MAX, Step, next_check, next_step,
};

#[cfg(test)]
mod tests;
