//! OpenAPI schemas for the plain JSON that requests carry (see the crate
//! documentation): the shapes the service checks, so that a generated
//! client or tester knows them. Behind the `openapi` feature.

use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::{PartialSchema, ToSchema};

/// base64url without padding of any length, canonical (the unused low bits
/// of the last character are zero), as the service decodes it.
pub const BASE64URL: &str =
    "^(?:[A-Za-z0-9_-]{4})*(?:[A-Za-z0-9_-][AQgw]|[A-Za-z0-9_-]{2}[AEIMQUYcgkosw048])?$";
/// base64url of exactly 32 bytes (keys, verifiers, proofs).
pub const BASE64URL_32: &str = "^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$";
/// base64url of exactly 12 bytes (a box's nonce).
pub const BASE64URL_12: &str = "^[A-Za-z0-9_-]{16}$";
/// base64url of exactly 16 bytes (a box's tag).
pub const BASE64URL_16: &str = "^[A-Za-z0-9_-]{21}[AQgw]$";

fn string(pattern: &str, description: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(pattern))
        .description(Some(description))
}

/// 32 bytes in base64url.
pub struct Key32;

impl PartialSchema for Key32 {
    fn schema() -> RefOr<Schema> {
        string(BASE64URL_32, "32 bytes, base64url without padding").into()
    }
}
impl ToSchema for Key32 {}

/// Bytes in base64url.
pub struct Base64Url;

impl PartialSchema for Base64Url {
    fn schema() -> RefOr<Schema> {
        string(BASE64URL, "bytes, base64url without padding").into()
    }
}
impl ToSchema for Base64Url {}

/// A sealed box as a request carries it (`docs/protocol.md`): the service
/// checks this shape and ignores unknown fields.
pub struct SealedBoxJson;

impl PartialSchema for SealedBoxJson {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "A sealed box: version, ephemeral key, nonce, ciphertext, tag",
            ))
            .property(
                "v",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .enum_values(Some([1, 2])),
            )
            .property("epk", string(BASE64URL_32, "ephemeral X25519 public key"))
            .property("n", string(BASE64URL_12, "12-byte nonce"))
            .property("c", string(BASE64URL, "ciphertext"))
            .property("t", string(BASE64URL_16, "16-byte tag"))
            .required("v")
            .required("epk")
            .required("n")
            .required("c")
            .required("t")
            .into()
    }
}
impl ToSchema for SealedBoxJson {}

fn names(values: &[&str], description: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
        .description(Some(description))
        .into()
}

/// The plans checkout sells (`operator`, `scale`, `fleet`): Free costs
/// nothing and Enterprise is arranged by contract.
pub struct SoldPlan;

impl PartialSchema for SoldPlan {
    fn schema() -> RefOr<Schema> {
        names(&["operator", "scale", "fleet"], "a plan checkout sells")
    }
}
impl ToSchema for SoldPlan {}

/// The `status` filter of the staff's ticket and abuse report lists.
pub struct ReviewStatus;

impl PartialSchema for ReviewStatus {
    fn schema() -> RefOr<Schema> {
        names(&["open", "resolved"], "open or resolved; all when left out")
    }
}
impl ToSchema for ReviewStatus {}

/// What a grant lets a member do with a shared address.
pub struct GrantAccessName;

impl PartialSchema for GrantAccessName {
    fn schema() -> RefOr<Schema> {
        names(
            &["read", "send"],
            "read: list and read its mail; send: also send, move, star and delete",
        )
    }
}
impl ToSchema for GrantAccessName {}

/// The one status a client sets on a device: `disabled`.
pub struct DisableStatus;

impl PartialSchema for DisableStatus {
    fn schema() -> RefOr<Schema> {
        names(&["disabled"], "revokes the device credential at once")
    }
}
impl ToSchema for DisableStatus {}
