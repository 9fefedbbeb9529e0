//! Own domains (docs/api.md "Own domains"; `docs/domains.md`): claim a domain,
//! prove it with a TXT record, delegate it to the service's nameservers, check,
//! and remove it.

use reqwest::Method;

pub use sealpost_wire::{
    AddDomainReply, AddDomainRequest, DnsRecord, DomainStep, OwnDomain, OwnDomainList,
    OwnDomainReply,
};

use crate::types::percent_encode;
use crate::{Client, Result};

/// The path of one own domain; the name is percent-encoded, so a Unicode
/// name travels as typed and the service normalises it.
fn domain_path(domain: &str, rest: &str) -> String {
    format!("/domains/custom/{}{rest}", percent_encode(domain))
}

impl Client {
    /// `POST /domains/custom` (session, Scale and up): claims `domain` and
    /// answers the TXT record that proves ownership. Claiming a domain the
    /// account already claimed answers the same record. `plan_required`
    /// below Scale, `limit_reached` past the plan's count, `already_used`
    /// when another account proved it, `invalid_field` for a name that
    /// cannot be an own domain.
    pub async fn add_domain(&self, domain: &str) -> Result<AddDomainReply> {
        let body = AddDomainRequest::new(domain);
        self.json(self.authed(Method::POST, "/domains/custom").json(&body))
            .await
    }

    /// `GET /domains/custom`: the account's own domains and their steps.
    pub async fn own_domains(&self) -> Result<Vec<OwnDomain>> {
        let list: OwnDomainList = self
            .json(self.authed(Method::GET, "/domains/custom"))
            .await?;
        Ok(list.domains)
    }

    /// `POST /domains/custom/{domain}/check`: checks the domain's DNS now
    /// and answers its step afterwards.
    pub async fn check_domain(&self, domain: &str) -> Result<OwnDomain> {
        let reply: OwnDomainReply = self
            .json(self.authed(Method::POST, &domain_path(domain, "/check")))
            .await?;
        Ok(reply.domain)
    }

    /// `DELETE /domains/custom/{domain}`: `domain_in_use` while an address
    /// exists on it.
    pub async fn remove_domain(&self, domain: &str) -> Result<()> {
        self.empty(self.authed(Method::DELETE, &domain_path(domain, "")))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_paths_are_encoded() {
        assert_eq!(
            domain_path("example.com", "/check"),
            "/domains/custom/example.com/check"
        );
        assert_eq!(
            domain_path("bücher.de", ""),
            "/domains/custom/b%C3%BCcher.de"
        );
    }
}
