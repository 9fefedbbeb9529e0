//! The OpenAPI document, generated from the handlers' annotations and served
//! at `/openapi.json`. `docs/openapi.json` is a copy kept equal by a test.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{
    accounts, activity, addresses, billing, devices, domains, folders, health, messages,
    notifications, plans, sending, webhooks,
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
        plans::list,
        plans::usage,
        plans::overview,
        plans::get_subscription,
        plans::change_plan,
        billing::providers,
        billing::checkout,
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
        messages::worker_messages,
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
        notifications::mute_inbox,
        notifications::register_device,
        notifications::remove_device,
    ),
    modifiers(&BearerAuth),
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The document as pretty JSON.
pub fn openapi_json() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"))
}
