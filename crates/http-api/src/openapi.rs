//! The OpenAPI document, generated from the handlers' annotations and served
//! at `/openapi.json`. `docs/openapi.json` is a copy kept equal by a test.

use sealpost_webhooks::events::EventType;
use sealpost_webhooks::url::{MAX_URL_LEN, URL_PATTERN};
use utoipa::openapi::header::Header;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::response::Response;
use utoipa::openapi::schema::{ArrayBuilder, Object, ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, Ref, RefOr};
use utoipa::{Modify, OpenApi};

use crate::routes::{
    abuse, accounts, activity, addresses, api_keys, billing, devices, domains, events, folders,
    health, messages, notifications, plans, sending, staff, support, teams, webhooks,
};

#[derive(OpenApi)]
#[openapi(
    info(title = "Sealpost API", description = "End-to-end encrypted disposable email. The choices behind this document are in docs/api.md; what clients must do to seal and open data is in docs/protocol.md."),
    paths(
        health::healthz,
        health::readyz,
        accounts::register,
        accounts::challenge,
        accounts::verify,
        accounts::me,
        accounts::sign_out,
        accounts::sessions,
        accounts::revoke_other_sessions,
        accounts::revoke_session,
        accounts::erase,
        activity::list,
        events::stream,
        api_keys::list,
        api_keys::create,
        api_keys::revoke,
        plans::list,
        plans::usage,
        plans::overview,
        plans::get_subscription,
        plans::change_plan,
        billing::providers,
        billing::checkout,
        billing::portal,
        billing::list_payments,
        billing::get_payment,
        billing::notice,
        devices::open_pairing,
        devices::poll_pairing,
        devices::cancel_pairing,
        devices::lookup,
        devices::claim,
        devices::heartbeat,
        devices::list,
        devices::get_one,
        devices::update,
        devices::remove,
        devices::set_keys,
        devices::get_keys,
        addresses::domains,
        domains::add,
        domains::list,
        domains::check,
        domains::remove,
        addresses::allocation,
        addresses::list,
        addresses::create,
        addresses::update,
        addresses::remove,
        addresses::assign,
        addresses::unassign,
        messages::list,
        messages::wait,
        messages::get_one,
        messages::attachment,
        messages::mark_read,
        messages::device_messages,
        messages::inbound,
        folders::list,
        folders::folder_counts,
        folders::star,
        folders::move_to,
        folders::remove,
        folders::empty_trash,
        sending::send,
        webhooks::list,
        webhooks::create,
        webhooks::update,
        webhooks::remove,
        webhooks::rotate_secret,
        webhooks::test,
        webhooks::deliveries,
        webhooks::redeliver,
        notifications::get_preferences,
        notifications::update_preferences,
        notifications::mute_address,
        notifications::register_device,
        notifications::remove_device,
        teams::show,
        teams::add_member,
        teams::remove_member,
        teams::grant,
        teams::revoke,
        teams::rotate,
        teams::memberships,
        teams::leave,
        support::overview,
        support::create,
        support::get_one,
        support::add_message,
        support::close,
        support::reopen,
        support::bind_key,
        abuse::report,
        staff::tickets,
        staff::get_ticket,
        staff::reply,
        staff::resolve,
        staff::rotation_challenge,
        staff::rotate_key,
        staff::get_switches,
        staff::update_switches,
        staff::suspend,
        staff::unsuspend,
        staff::abuse_reports,
        staff::resolve_report,
        staff::audit,
    ),
    modifiers(&BearerAuth, &SharedResponses, &WebhookRules, &SupportRules, &ErrorCodes),
)]
struct ApiDoc;

/// Who may call an operation, one security scheme each (all are a bearer
/// token in `Authorization`): `bearer` takes any of a session, a device
/// credential or an API key; `session` an operator session only (an API
/// key or a device credential gets 403 `session_required`); `device` a
/// device credential only (403 `device_required`); `staff` a staff token.
struct BearerAuth;

/// The security schemes, by name, with what each accepts.
pub const SECURITY_SCHEMES: [(&str, &str); 4] = [
    (
        "bearer",
        "Any token: an operator session, a device credential (only its own device's records) or an API key (`spk_...`).",
    ),
    (
        "session",
        "An operator session only. An API key or a device credential gets 403 session_required.",
    ),
    (
        "device",
        "A device credential only. A session or an API key gets 403 device_required.",
    ),
    ("staff", "A staff token (`sealpost-api staff-token`)."),
];

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        for (name, description) in SECURITY_SCHEMES {
            components.add_security_scheme(
                name,
                SecurityScheme::Http(
                    HttpBuilder::new()
                        .scheme(HttpAuthScheme::Bearer)
                        .description(Some(description))
                        .build(),
                ),
            );
        }
    }
}

/// The answers any operation can give besides its own, added here once
/// rather than on every route: 429 (the edge limits, per IP and, once the
/// bearer is known, per account; with `Retry-After`) on every operation; 401
/// on every operation with a bearer; 400 (`invalid_json`, `invalid_field`)
/// and 413 (`too_large`) on every operation with a request body; 400
/// (`invalid_field`) on every operation with query parameters. They are
/// `components.responses` that each operation refers to; an operation that
/// declares one of these statuses itself keeps its own description (a 429
/// gains the `Retry-After` header, a 400 the body's codes).
struct SharedResponses;

const UNAUTHORIZED: &str = "Unauthorized";
const RATE_LIMITED: &str = "RateLimited";
const BAD_BODY: &str = "BadBody";
const TOO_LARGE: &str = "TooLarge";
const BAD_QUERY: &str = "BadQuery";

fn error_response(description: &str) -> Response {
    let mut response = Response::new(description);
    response.content.insert(
        "application/json".to_owned(),
        RefOr::T(Content::new(Some(Ref::from_schema_name("ErrorBody")))),
    );
    response
}

fn retry_after() -> Header {
    let mut header = Header::new(Object::with_type(Type::Integer));
    header.description = Some("Seconds until a request may succeed again.".to_owned());
    header
}

fn response_ref(name: &str) -> RefOr<Response> {
    RefOr::Ref(Ref::from_response_name(name))
}

impl SharedResponses {
    fn add(operation: &mut Operation) {
        let authenticated = operation
            .security
            .as_ref()
            .is_some_and(|requirements| !requirements.is_empty());
        let has_body = operation.request_body.is_some();
        let has_query = operation.parameters.iter().flatten().any(|parameter| {
            matches!(parameter, RefOr::T(parameter) if parameter.parameter_in == ParameterIn::Query)
        });
        let responses = &mut operation.responses.responses;
        if has_query {
            responses
                .entry("400".to_owned())
                .or_insert_with(|| response_ref(BAD_QUERY));
        }
        match responses.get_mut("429") {
            Some(RefOr::T(own)) => {
                own.headers
                    .entry("Retry-After".to_owned())
                    .or_insert_with(|| RefOr::T(retry_after()));
            }
            Some(RefOr::Ref(_)) => {}
            None => {
                responses.insert("429".to_owned(), response_ref(RATE_LIMITED));
            }
        }
        if authenticated {
            responses
                .entry("401".to_owned())
                .or_insert_with(|| response_ref(UNAUTHORIZED));
        }
        if has_body {
            responses
                .entry("413".to_owned())
                .or_insert_with(|| response_ref(TOO_LARGE));
            match responses.get_mut("400") {
                Some(RefOr::T(own)) => {
                    if !own.description.contains("invalid_json") {
                        own.description = format!(
                            "invalid_json or invalid_field: the body is not JSON or a field has the wrong type; {}",
                            own.description
                        );
                    }
                }
                Some(RefOr::Ref(_)) => {}
                None => {
                    responses.insert("400".to_owned(), response_ref(BAD_BODY));
                }
            }
        }
    }
}

impl Modify for SharedResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            for operation in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
                &mut item.head,
                &mut item.options,
                &mut item.trace,
            ]
            .into_iter()
            .flatten()
            {
                Self::add(operation);
            }
        }
        let components = openapi.components.get_or_insert_with(Default::default);
        components.responses.insert(
            UNAUTHORIZED.to_owned(),
            RefOr::T(error_response(
                "unauthenticated (no bearer, or an unknown, revoked or malformed one) or session_expired",
            )),
        );
        let mut rate_limited = error_response(
            "rate_limited: the edge limit (per IP; per account once the bearer is known) or a plan quota. An unauthenticated request over the per-IP limit gets this before any 401.",
        );
        rate_limited
            .headers
            .insert("Retry-After".to_owned(), RefOr::T(retry_after()));
        components
            .responses
            .insert(RATE_LIMITED.to_owned(), RefOr::T(rate_limited));
        components.responses.insert(
            BAD_BODY.to_owned(),
            RefOr::T(error_response(
                "invalid_json (the body is not JSON) or invalid_field (a field is missing or has the wrong type; the message names it)",
            )),
        );
        components.responses.insert(
            BAD_QUERY.to_owned(),
            RefOr::T(error_response(
                "invalid_field: a query parameter out of range, of the wrong type, given twice, or a cursor this service did not hand out",
            )),
        );
        components.responses.insert(
            TOO_LARGE.to_owned(),
            RefOr::T(error_response(
                "too_large: the body is over this endpoint's limit",
            )),
        );
    }
}

/// The webhook request rules the service checks, from their one
/// definition: the event types (`EventType::ALL`, plus `*`) and the URL's
/// shape and length (`URL_PATTERN`, `MAX_URL_LEN`).
struct WebhookRules;

/// `events` as `EventFilter::parse` takes it: exactly `["*"]`, or one or
/// more distinct event types; `null` too where the field may be left out.
fn event_filter_schema(nullable: bool) -> Schema {
    let names = |values: Vec<&str>| {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(values))
    };
    let all = ArrayBuilder::new()
        .items(names(vec!["*"]))
        .min_items(Some(1))
        .max_items(Some(1));
    let types = ArrayBuilder::new()
        .items(names(
            EventType::ALL.iter().map(|event| event.as_str()).collect(),
        ))
        .min_items(Some(1))
        .unique_items(true);
    let filter = OneOfBuilder::new()
        .description(Some(
            "Event types (`eventTypes` of the list), each once, or `[\"*\"]` for all.",
        ))
        .item(all)
        .item(types);
    if nullable {
        filter
            .item(ObjectBuilder::new().schema_type(Type::Null))
            .into()
    } else {
        filter.into()
    }
}

impl Modify for WebhookRules {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        for body in ["CreateWebhookRequest", "UpdateWebhookRequest"] {
            let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(body) else {
                continue;
            };
            if let Some(events) = object.properties.get_mut("events") {
                *events = RefOr::T(event_filter_schema(body == "UpdateWebhookRequest"));
            }
            if let Some(RefOr::T(Schema::Object(url))) = object.properties.get_mut("url") {
                url.max_length = Some(MAX_URL_LEN);
                url.pattern = Some(URL_PATTERN.into());
            }
        }
    }
}

/// The abuse report's and staff notes' rules, from the constants the
/// support crate checks them with.
struct SupportRules;

impl Modify for SupportRules {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use sealpost_support::staff::{
            AbuseReason, CONTACT_MAX_CHARS, DETAILS_MAX_CHARS, EMAIL_ADDRESS_MAX_CHARS,
            MESSAGE_ID_MAX_CHARS, NOTE_MAX_CHARS,
        };
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        let mut property = |body: &str, name: &str, edit: &dyn Fn(&mut Object)| {
            if let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(body)
                && let Some(RefOr::T(Schema::Object(field))) = object.properties.get_mut(name)
            {
                edit(field);
            }
        };
        property("AbuseReportRequest", "reason", &|field| {
            field.enum_values = Some(AbuseReason::ALL.iter().map(|r| r.as_str().into()).collect());
        });
        property("AbuseReportRequest", "emailAddress", &|field| {
            field.pattern = Some("@".into());
            field.max_length = Some(EMAIL_ADDRESS_MAX_CHARS);
        });
        property("AbuseReportRequest", "messageId", &|field| {
            field.min_length = Some(1);
            field.max_length = Some(MESSAGE_ID_MAX_CHARS);
        });
        property("AbuseReportRequest", "details", &|field| {
            field.max_length = Some(DETAILS_MAX_CHARS);
        });
        property("AbuseReportRequest", "contact", &|field| {
            field.max_length = Some(CONTACT_MAX_CHARS);
        });
        for (body, name) in [
            ("SuspendRequest", "reason"),
            ("ResolveReportRequest", "resolution"),
        ] {
            property(body, name, &|field| {
                // Trimmed before counting: at least one character that is not a space.
                field.pattern = Some("\\S".into());
                field.max_length = Some(NOTE_MAX_CHARS);
            });
        }
    }
}

/// `ErrorDetail.code` lists every code of the one error table
/// (`ErrorCode::ALL`), so clients can map each to words and know when one is new.
struct ErrorCodes;

impl Modify for ErrorCodes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        if let Some(components) = openapi.components.as_mut()
            && let Some(RefOr::T(Schema::Object(object))) =
                components.schemas.get_mut("ErrorDetail")
            && let Some(RefOr::T(Schema::Object(field))) = object.properties.get_mut("code")
        {
            field.enum_values = Some(
                crate::error::ErrorCode::ALL
                    .iter()
                    .map(|code| code.as_str().into())
                    .collect(),
            );
        }
    }
}

/// The document as pretty JSON.
pub fn openapi_json() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"))
}

#[cfg(test)]
mod tests {
    use sealpost_kernel::{AddressId, PageLimits};
    use serde_json::Value;

    use super::*;

    fn document() -> Value {
        serde_json::from_str(&openapi_json()).unwrap()
    }

    /// Every operation has an operationId of its own: code generators
    /// (openapi-typescript, the SDKs') name operations by it and refuse a
    /// document that repeats one.
    #[test]
    fn operation_ids_are_unique() {
        let doc = document();
        let mut seen = std::collections::BTreeMap::new();
        let mut operations = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                operations += 1;
                let id = operation["operationId"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
                if let Some(first) = seen.insert(id.to_owned(), format!("{method} {path}")) {
                    panic!("operationId {id} names both {first} and {method} {path}");
                }
            }
        }
        assert!(operations > 90, "every operation was read ({operations})");
    }

    /// The error body's `code` is an enum of exactly the codes the API answers with.
    #[test]
    fn error_codes_are_the_error_table() {
        let doc = document();
        let listed: Vec<&str> =
            doc["components"]["schemas"]["ErrorDetail"]["properties"]["code"]["enum"]
                .as_array()
                .expect("ErrorDetail.code has an enum")
                .iter()
                .map(|code| code.as_str().unwrap())
                .collect();
        let table: Vec<&str> = crate::error::ErrorCode::ALL
            .iter()
            .map(|code| code.as_str())
            .collect();
        assert_eq!(listed, table);
    }

    /// The numbers in the document are literals (the derive takes no
    /// constants); this keeps them equal to the ones the validators use.
    #[test]
    fn constraints_match_the_validators() {
        let doc = document();
        let schemas = &doc["components"]["schemas"];
        for body in ["CreateAddressRequest", "UpdateAddressRequest"] {
            let days = &schemas[body]["properties"]["retentionDays"];
            assert_eq!(days["minimum"], 1, "{body}");
            assert_eq!(
                days["maximum"],
                u64::from(sealpost_addresses::MAX_RETENTION_DAYS),
                "{body}"
            );
        }
        let mut limits = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            // The staff lists of tickets and reports page by up to 500;
            // every other list (the staff audit log too) by up to 200.
            let max = match path.as_str() {
                "/staff/tickets" | "/staff/abuse-reports" => PageLimits::STAFF_LISTS.max,
                _ => PageLimits::STANDARD.max,
            };
            for operation in item.as_object().unwrap().values() {
                for parameter in operation["parameters"].as_array().into_iter().flatten() {
                    if parameter["name"] == "limit" {
                        limits += 1;
                        assert_eq!(parameter["schema"]["minimum"], 1, "{path}");
                        assert_eq!(parameter["schema"]["maximum"], max, "{path}");
                    }
                }
            }
        }
        assert_eq!(PageLimits::STANDARD.max, PageLimits::ACTIVITY.max);
        assert_eq!(PageLimits::STANDARD.max, PageLimits::STAFF_AUDIT.max);
        assert!(limits >= 4, "every paged list documents its limit");
        let event_types: Vec<&str> = EventType::ALL.iter().map(|t| t.as_str()).collect();
        for body in ["CreateWebhookRequest", "UpdateWebhookRequest"] {
            let properties = &schemas[body]["properties"];
            assert_eq!(properties["url"]["maxLength"], MAX_URL_LEN, "{body}");
            assert_eq!(properties["url"]["pattern"], URL_PATTERN, "{body}");
            // `EventFilter::parse`: `["*"]` alone, or distinct known types.
            let [all, types, rest @ ..] =
                properties["events"]["oneOf"].as_array().unwrap().as_slice()
            else {
                panic!("{body}: events is one of two arrays");
            };
            let nullable = body == "UpdateWebhookRequest";
            assert_eq!(
                rest.len(),
                usize::from(nullable),
                "{body}: null where optional"
            );
            assert_eq!(all["items"]["enum"], serde_json::json!(["*"]), "{body}");
            assert_eq!((&all["minItems"], &all["maxItems"]), (&1.into(), &1.into()));
            assert_eq!(
                types["items"]["enum"],
                serde_json::json!(event_types),
                "{body}"
            );
            assert_eq!(types["uniqueItems"], true, "{body}");
            assert!(sealpost_webhooks::events::EventFilter::parse(&["*", "*"]).is_err());
            assert!(sealpost_webhooks::events::EventFilter::parse(&[event_types[0]; 2]).is_err());
        }
        assert_eq!(
            schemas["AddressId"]["pattern"],
            AddressId::PATTERN,
            "id schemas carry the kernel's pattern"
        );
    }

    /// Every `$ref` names a schema or response the document holds
    /// (a parameter's `value_type` is not collected on its own).
    #[test]
    fn every_reference_resolves() {
        fn walk(value: &Value, doc: &Value, path: &str) {
            match value {
                Value::Object(map) => {
                    if let Some(Value::String(target)) = map.get("$ref") {
                        let pointer = target.trim_start_matches('#');
                        assert!(
                            doc.pointer(pointer).is_some(),
                            "{path}: {target} is missing"
                        );
                    }
                    for (key, inner) in map {
                        walk(inner, doc, &format!("{path}/{key}"));
                    }
                }
                Value::Array(items) => {
                    for (n, inner) in items.iter().enumerate() {
                        walk(inner, doc, &format!("{path}/{n}"));
                    }
                }
                _ => {}
            }
        }
        let doc = document();
        walk(&doc, &doc, "");
    }

    #[test]
    fn every_operation_declares_the_shared_answers() {
        let doc = document();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let responses = operation["responses"].as_object().unwrap();
                let name = format!("{method} {path}");
                assert!(responses.contains_key("429"), "{name}: 429");
                if operation["security"]
                    .as_array()
                    .is_some_and(|s| !s.is_empty())
                {
                    assert!(responses.contains_key("401"), "{name}: 401");
                }
                if operation.get("requestBody").is_some() {
                    assert!(responses.contains_key("400"), "{name}: 400");
                    assert!(responses.contains_key("413"), "{name}: 413");
                }
            }
        }
        let limited = &doc["components"]["responses"][RATE_LIMITED];
        assert!(limited["headers"]["Retry-After"].is_object());
    }
}
