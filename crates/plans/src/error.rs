/// A plan limit that refuses an action. Each maps to one API error code
/// (docs/api.md "Errors").
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error("the plan allows {limit} addresses; delete one or upgrade")]
    AllocationExhausted { limit: u32 },
    #[error("on the Free plan a device holds one address")]
    OneAddressPerDevice,
    #[error("the plan allows {limit} devices; remove one or upgrade")]
    DeviceLimitReached { limit: u32 },
    #[error("choosing the exact address needs the Scale plan or higher")]
    CustomAddressNeedsScale,
    #[error("own domains need the Scale plan or higher")]
    OwnDomainsNeedScale,
    #[error("the plan allows {limit} own domains; remove one or upgrade")]
    OwnDomainLimit { limit: u32 },
    #[error(
        "the plan no longer includes own domains: the domain still receives mail for a while but takes no new addresses"
    )]
    OwnDomainReceiveOnly,
    #[error("the plan's storage of {limit} bytes is full; delete mail or upgrade")]
    StorageFull { limit: u64 },
    #[error("API keys need the Operator plan or higher")]
    ApiKeysNeedOperator,
    #[error("agents need the Operator plan or higher; pair this machine as a device")]
    AgentsNeedOperator,
    #[error("the plan allows {limit} API keys; revoke one first")]
    ApiKeyLimit { limit: u32 },
}
