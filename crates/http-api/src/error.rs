//! The error body of docs/protocol.md "Errors" and the one table that maps
//! every error code to its HTTP status (docs/api.md "Errors").

use std::fmt;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use sealpost_accounts::AccountError;
use sealpost_addresses::AddressError;
use sealpost_billing::{BillingError, CheckoutRefusal};
use sealpost_devices::DeviceError;
use sealpost_kernel::page::PageError;
use sealpost_kernel::{InvalidId, StoreError};
use sealpost_messages::ingest::IngestError;
use sealpost_messages::mailbox::MailError;
use sealpost_messages::send::SendError;
use sealpost_notifications::NotificationError;
use sealpost_plans::LimitError;
use sealpost_seal::BoxShapeError;
use sealpost_subscriptions::{ChangeError, SubscriptionError};
use sealpost_support::{Refusal, StaffError, SupportError};
use sealpost_webhooks::WebhookError;
use sealpost_webhooks::endpoint::EndpointError;
use sealpost_wire::{ErrorBody, ErrorDetail};

/// Every machine-readable code the API answers with (docs/api.md "Errors").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidJson,
    InvalidField,
    InvalidUrl,
    InvalidBox,
    InvalidKey,
    InvalidId,
    Unauthenticated,
    SessionExpired,
    AllocationExhausted,
    DeviceLimitReached,
    PaymentRequired,
    PlanCapabilityRequired,
    PlanRequired,
    NotYourAddress,
    AccountSuspended,
    SessionRequired,
    /// A device-only endpoint called with a session or API key.
    DeviceRequired,
    /// A staff endpoint called with a token lacking its role.
    RoleRequired,
    NotFound,
    /// A path the API serves, asked with a method it does not serve there.
    MethodNotAllowed,
    DowngradeBlocked,
    AlreadyUsed,
    AddressTaken,
    LimitReached,
    WebhookDisabled,
    AlreadyMember,
    TeamLimitReached,
    EpochConflict,
    StaffKeyChanged,
    TooManyOpen,
    TooManyTickets,
    TicketClosed,
    TicketFull,
    SupportStorageFull,
    IdTaken,
    DomainInUse,
    /// A payment that cannot renew while a card subscription renews.
    RenewalActive,
    TooLarge,
    RateLimited,
    Internal,
    SendFailed,
    ProviderUnavailable,
    FeatureDisabled,
    SupportUnavailable,
    Unavailable,
}

impl ErrorCode {
    /// Every code, in the order of the enum: the OpenAPI document's enum of
    /// `ErrorDetail.code` is made from it (clients map each to words).
    pub const ALL: [ErrorCode; 45] = {
        use ErrorCode::*;
        [
            InvalidJson,
            InvalidField,
            InvalidUrl,
            InvalidBox,
            InvalidKey,
            InvalidId,
            Unauthenticated,
            SessionExpired,
            AllocationExhausted,
            DeviceLimitReached,
            PaymentRequired,
            PlanCapabilityRequired,
            PlanRequired,
            NotYourAddress,
            AccountSuspended,
            SessionRequired,
            DeviceRequired,
            RoleRequired,
            NotFound,
            MethodNotAllowed,
            DowngradeBlocked,
            AlreadyUsed,
            AddressTaken,
            LimitReached,
            WebhookDisabled,
            AlreadyMember,
            TeamLimitReached,
            EpochConflict,
            StaffKeyChanged,
            TooManyOpen,
            TooManyTickets,
            TicketClosed,
            TicketFull,
            SupportStorageFull,
            IdTaken,
            DomainInUse,
            RenewalActive,
            TooLarge,
            RateLimited,
            Internal,
            SendFailed,
            ProviderUnavailable,
            FeatureDisabled,
            SupportUnavailable,
            Unavailable,
        ]
    };

    /// The one status table. A code never changes its status.
    pub fn status(self) -> StatusCode {
        use ErrorCode::*;
        match self {
            InvalidJson | InvalidField | InvalidUrl | InvalidBox | InvalidKey | InvalidId => {
                StatusCode::BAD_REQUEST
            }
            Unauthenticated | SessionExpired => StatusCode::UNAUTHORIZED,
            AllocationExhausted | DeviceLimitReached | PaymentRequired | PlanCapabilityRequired => {
                StatusCode::PAYMENT_REQUIRED
            }
            PlanRequired | NotYourAddress | AccountSuspended | SessionRequired | DeviceRequired
            | RoleRequired => StatusCode::FORBIDDEN,
            NotFound => StatusCode::NOT_FOUND,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            DowngradeBlocked | AlreadyUsed | AddressTaken | LimitReached | WebhookDisabled
            | AlreadyMember | TeamLimitReached | EpochConflict | StaffKeyChanged | TooManyOpen
            | TooManyTickets | TicketClosed | TicketFull | SupportStorageFull | IdTaken
            | DomainInUse | RenewalActive => StatusCode::CONFLICT,
            TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Internal => StatusCode::INTERNAL_SERVER_ERROR,
            SendFailed => StatusCode::BAD_GATEWAY,
            ProviderUnavailable | FeatureDisabled | SupportUnavailable | Unavailable => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }

    pub fn as_str(self) -> &'static str {
        use ErrorCode::*;
        match self {
            InvalidJson => "invalid_json",
            InvalidField => "invalid_field",
            InvalidUrl => "invalid_url",
            InvalidBox => "invalid_box",
            InvalidKey => "invalid_key",
            InvalidId => "invalid_id",
            Unauthenticated => "unauthenticated",
            SessionExpired => "session_expired",
            AllocationExhausted => "allocation_exhausted",
            DeviceLimitReached => "worker_limit_reached",
            PaymentRequired => "payment_required",
            PlanCapabilityRequired => "plan_capability_required",
            PlanRequired => "plan_required",
            NotYourAddress => "not_your_address",
            AccountSuspended => "account_suspended",
            SessionRequired => "session_required",
            DeviceRequired => "device_required",
            RoleRequired => "role_required",
            NotFound => "not_found",
            MethodNotAllowed => "method_not_allowed",
            DowngradeBlocked => "downgrade_blocked",
            AlreadyUsed => "already_used",
            AddressTaken => "address_taken",
            LimitReached => "limit_reached",
            WebhookDisabled => "webhook_disabled",
            AlreadyMember => "already_member",
            TeamLimitReached => "team_limit_reached",
            EpochConflict => "epoch_conflict",
            StaffKeyChanged => "staff_key_changed",
            TooManyOpen => "too_many_open",
            TooManyTickets => "too_many_tickets",
            TicketClosed => "ticket_closed",
            TicketFull => "ticket_full",
            SupportStorageFull => "support_storage_full",
            IdTaken => "id_taken",
            DomainInUse => "domain_in_use",
            RenewalActive => "renewal_active",
            TooLarge => "too_large",
            RateLimited => "rate_limited",
            Internal => "internal",
            SendFailed => "send_failed",
            ProviderUnavailable => "provider_unavailable",
            FeatureDisabled => "feature_disabled",
            SupportUnavailable => "support_unavailable",
            Unavailable => "unavailable",
        }
    }
}

/// An error as the API answers it.
#[derive(Debug)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    /// Seconds, sent as `Retry-After` with 429.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn invalid_json(detail: impl fmt::Display) -> Self {
        Self::new(
            ErrorCode::InvalidJson,
            format!("request body is not valid JSON: {detail}"),
        )
    }

    /// A field of the wrong type, length or range; the message names the field.
    pub fn invalid_field(field: &str, reason: impl fmt::Display) -> Self {
        Self::new(ErrorCode::InvalidField, format!("{field}: {reason}"))
    }

    pub fn invalid_id(field: &str, error: InvalidId) -> Self {
        Self::new(ErrorCode::InvalidId, format!("{field}: {error}"))
    }

    pub fn invalid_key(field: &str) -> Self {
        Self::new(
            ErrorCode::InvalidKey,
            format!("{field}: expected a 32-byte X25519 public key in base64url"),
        )
    }

    pub fn not_found() -> Self {
        Self::new(ErrorCode::NotFound, "no such record")
    }

    pub fn too_large(limit_bytes: usize) -> Self {
        Self::new(
            ErrorCode::TooLarge,
            format!("request body is over the {limit_bytes}-byte limit"),
        )
    }

    pub fn rate_limited(retry_after_seconds: u64) -> Self {
        Self::rate_limited_because(retry_after_seconds, "too many requests; retry later")
    }

    /// 429 with the limit's own words; `Retry-After` is never under a second.
    pub fn rate_limited_because(retry_after_seconds: u64, message: impl Into<String>) -> Self {
        Self {
            retry_after: Some(retry_after_seconds.max(1)),
            ..Self::new(ErrorCode::RateLimited, message)
        }
    }

    /// A failure on our side. The cause is logged once here; the client sees no detail.
    pub fn internal(cause: &(dyn std::error::Error + 'static)) -> Self {
        tracing::error!(error = %error_chain(cause), "request failed");
        Self::new(ErrorCode::Internal, "internal error; retry with backoff")
    }
}

/// An id from the request path. One of the wrong shape names no record, so
/// it is 404 like an unknown one (never 400: a path is not a field).
pub(crate) fn path_id<Id: std::str::FromStr>(text: &str) -> Result<Id, ApiError> {
    text.parse().map_err(|_| ApiError::not_found())
}

/// `error: cause: cause` on one line.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.code.status()
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status_code());
        if let Some(seconds) = self.retry_after {
            response.insert_header((header::RETRY_AFTER, HeaderValue::from(seconds)));
        }
        response.json(ErrorBody {
            error: ErrorDetail {
                code: self.code.as_str().to_owned(),
                message: self.message.clone(),
            },
        })
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(reason) => {
                tracing::warn!(%reason, "store unavailable");
                Self::new(
                    ErrorCode::Unavailable,
                    "service temporarily unavailable; retry with backoff",
                )
            }
            failed => Self::internal(&failed),
        }
    }
}

impl From<PageError> for ApiError {
    fn from(error: PageError) -> Self {
        Self::invalid_field(error.field(), &error)
    }
}

impl From<AccountError> for ApiError {
    fn from(error: AccountError) -> Self {
        match error {
            AccountError::IdTaken => Self::new(ErrorCode::IdTaken, error.to_string()),
            AccountError::Unauthenticated => {
                Self::new(ErrorCode::Unauthenticated, error.to_string())
            }
            AccountError::SessionExpired => Self::new(ErrorCode::SessionExpired, error.to_string()),
            AccountError::SessionRequired => {
                Self::new(ErrorCode::SessionRequired, error.to_string())
            }
            AccountError::TooManyRegistrations {
                retry_after_seconds,
            } => Self::rate_limited_because(retry_after_seconds, error.to_string()),
            AccountError::ApiKeyPaused => Self::new(ErrorCode::PaymentRequired, error.to_string()),
            AccountError::ApiKeyIdTaken => Self::new(ErrorCode::IdTaken, error.to_string()),
            AccountError::Limit(limit) => limit.into(),
            AccountError::NotFound => Self::not_found(),
            AccountError::Store(store) => store.into(),
        }
    }
}

impl From<LimitError> for ApiError {
    fn from(error: LimitError) -> Self {
        let code = match error {
            LimitError::AllocationExhausted { .. } | LimitError::OneAddressPerDevice => {
                ErrorCode::AllocationExhausted
            }
            LimitError::DeviceLimitReached { .. } => ErrorCode::DeviceLimitReached,
            LimitError::CustomAddressNeedsScale
            | LimitError::ApiKeysNeedOperator
            | LimitError::AgentsNeedOperator
            | LimitError::OwnDomainsNeedScale
            | LimitError::OwnDomainReceiveOnly => ErrorCode::PlanRequired,
            LimitError::OwnDomainLimit { .. }
            | LimitError::StorageFull { .. }
            | LimitError::ApiKeyLimit { .. } => ErrorCode::LimitReached,
        };
        Self::new(code, error.to_string())
    }
}

impl From<DeviceError> for ApiError {
    fn from(error: DeviceError) -> Self {
        match error {
            DeviceError::NotFound => Self::not_found(),
            DeviceError::AlreadyUsed => Self::new(ErrorCode::AlreadyUsed, error.to_string()),
            DeviceError::IdTaken => Self::new(ErrorCode::IdTaken, error.to_string()),
            DeviceError::TooManyLookups {
                retry_after_seconds,
            }
            | DeviceError::TooManyPairings {
                retry_after_seconds,
            } => Self::rate_limited_because(retry_after_seconds, error.to_string()),
            DeviceError::Limit(limit) => limit.into(),
            DeviceError::InvalidField { field, reason } => Self::invalid_field(field, reason),
            DeviceError::Store(store) => store.into(),
        }
    }
}

impl From<AddressError> for ApiError {
    fn from(error: AddressError) -> Self {
        match error {
            AddressError::InvalidField { field, reason } => Self::invalid_field(field, reason),
            AddressError::AddressTaken => Self::new(ErrorCode::AddressTaken, error.to_string()),
            AddressError::IdTaken => Self::new(ErrorCode::IdTaken, error.to_string()),
            AddressError::Limit(limit) => limit.into(),
            AddressError::NotFound => Self::not_found(),
            AddressError::Store(store) => store.into(),
        }
    }
}

impl From<sealpost_domains::DomainError> for ApiError {
    fn from(error: sealpost_domains::DomainError) -> Self {
        use sealpost_domains::DomainError;
        match error {
            DomainError::InvalidName(reason) => Self::invalid_field("domain", reason),
            DomainError::TakenByOther => Self::new(ErrorCode::AlreadyUsed, error.to_string()),
            DomainError::Limit(limit) => limit.into(),
            DomainError::NotFound => Self::not_found(),
            DomainError::InUse => Self::new(ErrorCode::DomainInUse, error.to_string()),
            DomainError::Store(store) => store.into(),
        }
    }
}

impl From<MailError> for ApiError {
    fn from(error: MailError) -> Self {
        match error {
            MailError::NotFound => Self::not_found(),
            MailError::ReadsExhausted {
                retry_after_seconds,
            } => Self::rate_limited_because(retry_after_seconds, error.to_string()),
            MailError::Move(refusal) => Self::invalid_field("folder", refusal),
            MailError::Store(store) => store.into(),
            MailError::Blob(blob) => Self::internal(&blob),
        }
    }
}

impl From<IngestError> for ApiError {
    fn from(error: IngestError) -> Self {
        match error {
            IngestError::Unknown => Self::not_found(),
            IngestError::DomainRefused => Self::new(ErrorCode::PlanRequired, error.to_string()),
            IngestError::NoKey => Self::new(
                ErrorCode::InvalidKey,
                "the address has no usable publicKey, so it refuses mail",
            ),
            IngestError::Suspended => Self::new(ErrorCode::AccountSuspended, error.to_string()),
            // Changed twice while it was delivered: nothing stored, try again.
            IngestError::RecipientChanged => Self::new(ErrorCode::Unavailable, error.to_string()),
            IngestError::OverAllowance {
                retry_after_seconds,
            } => Self::rate_limited_because(retry_after_seconds, error.to_string()),
            IngestError::StorageFull(limit) => limit.into(),
            IngestError::Structure(limit) => Self::invalid_field("raw", limit),
            IngestError::Store(store) => store.into(),
            IngestError::Blob(blob) => Self::internal(&blob),
        }
    }
}

impl From<SendError> for ApiError {
    fn from(error: SendError) -> Self {
        match error {
            SendError::FeatureDisabled => Self::new(ErrorCode::FeatureDisabled, error.to_string()),
            SendError::InvalidField { field, reason } => Self::invalid_field(&field, reason),
            SendError::NotYourAddress => Self::new(ErrorCode::NotYourAddress, error.to_string()),
            SendError::AddressPaused => Self::new(ErrorCode::PaymentRequired, error.to_string()),
            SendError::RateLimited {
                retry_after_seconds,
            } => Self::rate_limited_because(retry_after_seconds, error.to_string()),
            SendError::RelayFailed(reason) => {
                // The relay's words are for the operator; they may quote addresses (masked).
                tracing::warn!(%reason, "outgoing mail not accepted by the relay");
                Self::new(
                    ErrorCode::SendFailed,
                    "the mail relay did not accept the message; nothing was sent or counted, retry later",
                )
            }
            SendError::Store(store) => store.into(),
        }
    }
}

impl From<WebhookError> for ApiError {
    fn from(error: WebhookError) -> Self {
        match error {
            WebhookError::Rule(rule) => {
                let code = match rule {
                    EndpointError::PlanRequired => ErrorCode::PlanRequired,
                    EndpointError::LimitReached { .. } => ErrorCode::LimitReached,
                    EndpointError::Disabled => ErrorCode::WebhookDisabled,
                    EndpointError::RateLimited {
                        retry_after_seconds,
                    } => {
                        return Self::rate_limited_because(retry_after_seconds, rule.to_string());
                    }
                };
                Self::new(code, rule.to_string())
            }
            WebhookError::IdTaken => Self::new(ErrorCode::IdTaken, error.to_string()),
            WebhookError::NotFound => Self::not_found(),
            WebhookError::Store(store) => store.into(),
        }
    }
}

impl From<NotificationError> for ApiError {
    fn from(error: NotificationError) -> Self {
        match error {
            NotificationError::NotFound => Self::not_found(),
            NotificationError::TokenHeldByAnother => {
                Self::new(ErrorCode::AlreadyUsed, error.to_string())
            }
            NotificationError::Store(store) => store.into(),
        }
    }
}

impl From<SubscriptionError> for ApiError {
    fn from(error: SubscriptionError) -> Self {
        match error {
            SubscriptionError::Change(change) => {
                let code = match change {
                    ChangeError::PaymentRequired { .. } => ErrorCode::PaymentRequired,
                    ChangeError::DowngradeBlocked { .. } => ErrorCode::DowngradeBlocked,
                };
                Self::new(code, change.to_string())
            }
            SubscriptionError::NotFound => Self::not_found(),
            SubscriptionError::Store(store) => store.into(),
        }
    }
}

impl From<BillingError> for ApiError {
    fn from(error: BillingError) -> Self {
        match error {
            BillingError::ProviderUnavailable { .. } => {
                Self::new(ErrorCode::ProviderUnavailable, error.to_string())
            }
            BillingError::Refused(CheckoutRefusal::NotForSale(_)) => {
                Self::invalid_field("planId", &error)
            }
            BillingError::Refused(CheckoutRefusal::DoesNotFit(change)) => {
                SubscriptionError::Change(change).into()
            }
            BillingError::Refused(CheckoutRefusal::CardRenews(_)) => {
                Self::new(ErrorCode::RenewalActive, error.to_string())
            }
            BillingError::Notice(notice) => Self::invalid_field("signature", &notice),
            BillingError::NotFound => Self::not_found(),
            BillingError::NoCardSubscription => Self::new(ErrorCode::NotFound, error.to_string()),
            BillingError::Store(store) => store.into(),
        }
    }
}

impl From<SupportError> for ApiError {
    fn from(error: SupportError) -> Self {
        match error {
            SupportError::Unavailable => {
                Self::new(ErrorCode::SupportUnavailable, error.to_string())
            }
            SupportError::StaffKeyChanged => {
                Self::new(ErrorCode::StaffKeyChanged, error.to_string())
            }
            SupportError::Refused(refusal) => refusal.into(),
            SupportError::Store(store) => store.into(),
        }
    }
}

impl From<StaffError> for ApiError {
    fn from(error: StaffError) -> Self {
        match error {
            StaffError::Unauthenticated => Self::new(ErrorCode::Unauthenticated, error.to_string()),
            StaffError::Expired => Self::new(ErrorCode::SessionExpired, error.to_string()),
            StaffError::RoleRequired(_) => Self::new(ErrorCode::RoleRequired, error.to_string()),
            StaffError::ProofRefused => ApiError::invalid_field("proof", &error),
            StaffError::NotFound => Self::not_found(),
            StaffError::Invalid(reason) => Self::new(ErrorCode::InvalidField, reason),
            StaffError::Store(store) => store.into(),
        }
    }
}

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> Self {
        let code = match refusal {
            Refusal::NotFound => return Self::not_found(),
            Refusal::IdTaken => ErrorCode::IdTaken,
            Refusal::TooManyOpen => ErrorCode::TooManyOpen,
            Refusal::TooManyTickets => ErrorCode::TooManyTickets,
            Refusal::TicketClosed => ErrorCode::TicketClosed,
            Refusal::TicketFull => ErrorCode::TicketFull,
            Refusal::StorageFull => ErrorCode::SupportStorageFull,
            Refusal::TooManyNew {
                retry_after_seconds,
            }
            | Refusal::TooManyReplies {
                retry_after_seconds,
            } => {
                return Self::rate_limited_because(retry_after_seconds, refusal.to_string());
            }
        };
        Self::new(code, refusal.to_string())
    }
}

/// A client box field: shape checked (400 `invalid_box`), size capped (413 `too_large`).
pub fn check_box_field(
    field: &str,
    value: &serde_json::Value,
    max_encoded_len: usize,
) -> Result<sealpost_seal::SealedBox, ApiError> {
    sealpost_seal::check_box(value, max_encoded_len).map_err(|error| match error {
        BoxShapeError::TooLarge => ApiError::new(
            ErrorCode::TooLarge,
            format!("{field}: over the {max_encoded_len}-byte limit"),
        ),
        BoxShapeError::Invalid(reason) => {
            ApiError::new(ErrorCode::InvalidBox, format!("{field}: {reason}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_spec_table() {
        assert_eq!(ErrorCode::InvalidId.status(), StatusCode::BAD_REQUEST);
        assert_eq!(ErrorCode::SessionExpired.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            ErrorCode::DeviceLimitReached.status(),
            StatusCode::PAYMENT_REQUIRED
        );
        assert_eq!(ErrorCode::SessionRequired.status(), StatusCode::FORBIDDEN);
        assert_eq!(ErrorCode::IdTaken.status(), StatusCode::CONFLICT);
        assert_eq!(ErrorCode::TooLarge.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            ErrorCode::RateLimited.status(),
            StatusCode::TOO_MANY_REQUESTS
        );
        assert_eq!(
            ErrorCode::FeatureDisabled.status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }

    /// `ALL` lists every variant of the enum once, so the OpenAPI enum made
    /// from it (and the clients' messages checked against that) miss none.
    #[test]
    fn all_lists_every_code_once() {
        let source = include_str!("error.rs");
        let start = source.find("pub enum ErrorCode {").unwrap();
        let body = &source[start..];
        let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
        let variants: Vec<&str> = body
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with("///"))
            .map(|line| line.trim_end_matches(','))
            .collect();
        let listed: Vec<String> = ErrorCode::ALL.iter().map(|c| format!("{c:?}")).collect();
        assert_eq!(listed, variants);
        let mut codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(
            codes.len(),
            ErrorCode::ALL.len(),
            "every code is its own string"
        );
    }

    #[test]
    fn rate_limited_sends_retry_after() {
        let response = ApiError::rate_limited(0).error_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers().get(header::RETRY_AFTER).unwrap(), "1");
    }
}
