//! Own domains (`/domains/custom`): claim, list, check now, remove.

use actix_web::HttpResponse;
use actix_web::web::{Data, Path};
use sealpost_domains::{DomainName, OwnDomain};
use sealpost_plans::PLAN_LOSS_GRACE;
use sealpost_wire as wire;

use crate::auth::{Authenticated, SessionCaller};
use crate::error::ApiError;
use crate::json::Json;
use crate::state::AppState;

fn verification(domain: &OwnDomain) -> wire::DnsRecord {
    wire::DnsRecord {
        kind: "TXT".into(),
        name: domain.name.verification_name(),
        value: domain.verification_value(),
    }
}

fn body(state: &AppState, domain: OwnDomain) -> wire::OwnDomain {
    wire::OwnDomain {
        step: domain.step.as_str().into(),
        verification: verification(&domain),
        nameservers: domain
            .proved()
            .then(|| state.domains.settings().nameservers.clone()),
        created_at: domain.created_at,
        verified_at: domain.proved_at,
        checked_at: domain.checked_at,
        receives_until: domain.plan_lost_at.map(|lost| lost + PLAN_LOSS_GRACE),
        domain: domain.name.as_str().to_owned(),
    }
}

fn path_name(state: &AppState, text: &str) -> Result<DomainName, ApiError> {
    Ok(state.domains.path_name(text)?)
}

/// Claims an own domain (Scale and up) and answers the TXT record that proves ownership. Claiming a domain the account already claimed answers the same record (200).
#[utoipa::path(post, path = "/domains/custom", operation_id = "add_custom_domain", tag = "domains", security(("session" = [])),
    request_body = wire::AddDomainRequest,
    responses((status = 201, body = wire::AddDomainReply), (status = 200, body = wire::AddDomainReply, description = "already claimed by this account"),
        (status = 400, body = wire::ErrorBody, description = "invalid_field: not a registrable domain name, an IP address, or one of the service's own domains"),
        (status = 403, body = wire::ErrorBody, description = "plan_required (below Scale), session_required"),
        (status = 409, body = wire::ErrorBody, description = "already_used (another account proved it), limit_reached (10 on Scale, 50 on Fleet)")))]
pub async fn add(
    state: Data<AppState>,
    caller: SessionCaller,
    Json(request): Json<wire::AddDomainRequest>,
) -> Result<HttpResponse, ApiError> {
    let plan = state.accounts.account(&caller.account).await?.plan;
    let added = state
        .domains
        .add(&caller.account, plan, &request.domain)
        .await?;
    let reply = wire::AddDomainReply {
        record: verification(&added.domain),
        domain: body(&state, added.domain),
    };
    Ok(if added.created {
        HttpResponse::Created().json(reply)
    } else {
        HttpResponse::Ok().json(reply)
    })
}

/// The account's own domains with their setup step; the nameservers once ownership is proved.
#[utoipa::path(get, path = "/domains/custom", operation_id = "list_custom_domains", tag = "domains", security(("bearer" = [])),
    responses((status = 200, body = wire::OwnDomainList)))]
pub async fn list(state: Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let domains = state.domains.list(caller.account()).await?;
    Ok(HttpResponse::Ok().json(wire::OwnDomainList {
        domains: domains
            .into_iter()
            .map(|domain| body(&state, domain))
            .collect(),
    }))
}

/// Looks up the TXT record, the delegation and the MX record now and moves the step.
#[utoipa::path(post, path = "/domains/custom/{domain}/check", operation_id = "check_custom_domain", tag = "domains", security(("session" = [])),
    params(("domain" = String, Path)),
    responses((status = 200, body = wire::OwnDomainReply), (status = 403, body = wire::ErrorBody, description = "session_required"),
        (status = 404, body = wire::ErrorBody)))]
pub async fn check(
    state: Data<AppState>,
    caller: SessionCaller,
    domain: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = path_name(&state, &domain)?;
    let checked = state.domains.check(&caller.account, &name).await?;
    Ok(HttpResponse::Ok().json(wire::OwnDomainReply {
        domain: body(&state, checked),
    }))
}

/// Removes an own domain; refused while addresses exist on it.
#[utoipa::path(delete, path = "/domains/custom/{domain}", operation_id = "remove_custom_domain", tag = "domains", security(("session" = [])),
    params(("domain" = String, Path)),
    responses((status = 204), (status = 403, body = wire::ErrorBody, description = "session_required"),
        (status = 404, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody, description = "domain_in_use: addresses exist on it")))]
pub async fn remove(
    state: Data<AppState>,
    caller: SessionCaller,
    domain: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = path_name(&state, &domain)?;
    state.domains.remove(&caller.account, &name).await?;
    Ok(HttpResponse::NoContent().finish())
}
