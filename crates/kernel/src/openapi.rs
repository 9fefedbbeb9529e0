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

impl PartialSchema for PlanId {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(PlanId::ALL.map(PlanId::as_str)))
            .into()
    }
}
impl ToSchema for PlanId {}

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
