//! OpenAPI schemas for the kernel's wire types (behind the `openapi` feature).

use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::{PartialSchema, ToSchema};

use crate::*;

impl PartialSchema for Timestamp {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
            .description(Some("RFC 3339 UTC with Z and millisecond precision"))
            .into()
    }
}
impl ToSchema for Timestamp {}

/// A string schema listing the enum's names, with a description when given.
macro_rules! string_enum_schema {
    ($($name:ident => $description:expr),*) => {$(
        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description($description)
                    .enum_values(Some($name::ALL.map($name::as_str)))
                    .into()
            }
        }
        impl ToSchema for $name {}
    )*};
}

string_enum_schema!(
    PlanId => None::<&str>,
    Folder => Some("Where a message sits. Received mail lands in `inbox`, the copy of mail sent from the service in `sent`.")
);

macro_rules! id_schema {
    ($($name:ident),*) => {$(
        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some($name::PATTERN))
                    .into()
            }
        }
        impl ToSchema for $name {}
    )*};
}

id_schema!(
    AccountId,
    AddressId,
    DeviceId,
    ApiKeyId,
    WebhookId,
    TicketId,
    TicketMessageId,
    MessageId,
    EventId,
    DeliveryId,
    ActivityId,
    SessionId,
    PaymentId,
    PairingSessionId
);
