//! Own domains (`/domains/custom`): the step a domain is at, the TXT
//! record proving ownership and, once proved, the nameservers to delegate to.
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `POST /domains/custom` | [`AddDomainRequest`] | [`AddDomainReply`] |
//! | `GET /domains/custom` | | [`OwnDomainList`] |
//! | `POST /domains/custom/{domain}/check` | | [`OwnDomainReply`] |
//! | `DELETE /domains/custom/{domain}` | | 204 |

use sealpost_kernel::Timestamp;
use serde::{Deserialize, Serialize};

use crate::encoding::wire_enum;

wire_enum!(
    /// An own domain's setup step.
    DomainStep {
        /// Publish the TXT record; nothing is reserved until it is seen.
        VerifyOwnership = "verify_ownership",
        /// Ownership proved; the nameserver check has not answered yet.
        AwaitingSetup = "awaiting_setup",
        /// Delegate the domain to the listed nameservers at the registrar.
        ChangeNameservers = "change_nameservers",
        /// Delegated; waiting for the service's MX record to show in DNS.
        SettingUp = "setting_up",
        /// Addresses can be created and mail is received.
        Live = "live",
        /// Delegation or MX went away, or another account proved the domain first.
        Attention = "attention",
    }
);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AddDomainRequest {
    /// The domain: IDN or ASCII, any case, a trailing dot allowed; a name
    /// one can register under a public suffix.
    #[cfg_attr(feature = "openapi", schema(min_length = 1))]
    pub domain: String,
}

impl AddDomainRequest {
    pub fn new(domain: impl Into<String>) -> Self {
        Self {
            domain: domain.into(),
        }
    }
}

/// A DNS record the owner publishes at their DNS provider.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DnsRecord {
    /// `TXT`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `_service-verify.<domain>`.
    pub name: String,
    /// `service-verify=<token>`.
    pub value: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct OwnDomain {
    /// The domain in ASCII (IDNA), lower case.
    pub domain: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub step: DomainStep,
    /// The ownership record.
    pub verification: DnsRecord,
    /// The service's two nameservers, once ownership is proved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nameservers: Option<Vec<String>>,
    pub created_at: Timestamp,
    pub verified_at: Option<Timestamp>,
    pub checked_at: Option<Timestamp>,
    /// After the plan lost own domains: mail is received until then, and
    /// refused after it, unless the plan includes own domains again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receives_until: Option<Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AddDomainReply {
    /// The TXT record to publish.
    pub record: DnsRecord,
    pub domain: OwnDomain,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OwnDomainReply {
    pub domain: OwnDomain,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OwnDomainList {
    pub domains: Vec<OwnDomain>,
}
