//! The address and domain endpoints (docs/api.md, "Addresses" and
//! "Own domains").

use actix_web::HttpResponse;
use actix_web::web::{Data, Path};
use sealpost_addresses::{Address, NewAddress};
use sealpost_kernel::{AccountId, AddressId, DeviceId, PlanId};
use sealpost_wire as wire;

use crate::auth::{Authenticated, SessionCaller};
use crate::error::{ApiError, check_box_field, path_id};
use crate::json::Json;
use crate::state::AppState;

/// Sealed address label.
pub const META_LIMIT: usize = 4 * 1024;

fn address_body(address: Address) -> wire::Address {
    wire::Address {
        status: address.status().into(),
        id: address.id,
        operator_id: address.account,
        email_address: address.email_address,
        created_at: address.created_at,
        assigned_device_id: address.device,
        retention_days: address.retention_days,
        paused_at: address.paused_at,
        meta: address.meta,
        key_epoch: address.key_epoch,
        public_key: address.public_key,
    }
}

fn address_reply(address: Address) -> wire::AddressReply {
    wire::AddressReply {
        address: address_body(address),
    }
}

async fn plan_of(state: &AppState, account: &AccountId) -> Result<PlanId, ApiError> {
    Ok(state.accounts.account(account).await?.plan)
}

/// Domains addresses can be created on: the shared ones, then the account's live own domains (`reserved: true`).
#[utoipa::path(get, path = "/domains", operation_id = "list_domains", tag = "addresses", security(("bearer" = [])),
    responses((status = 200, body = wire::DomainList)))]
pub async fn domains(
    state: Data<AppState>,
    caller: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let shared = state.addresses.domains().iter().map(|domain| wire::Domain {
        domain: domain.clone(),
        reserved: false,
    });
    let own = state
        .domains
        .list(caller.account())
        .await?
        .into_iter()
        .filter(|domain| domain.step == sealpost_domains::Step::Live)
        .map(|domain| wire::Domain {
            domain: domain.name.as_str().to_owned(),
            reserved: true,
        });
    Ok(HttpResponse::Ok().json(wire::DomainList {
        domains: shared.chain(own).collect(),
    }))
}

/// Every address on the account, newest first. A device sees the addresses assigned to it.
#[utoipa::path(get, path = "/inboxes", operation_id = "list_inboxes", tag = "addresses", security(("bearer" = [])),
    responses((status = 200, body = wire::AddressList)))]
pub async fn list(state: Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let addresses = state
        .addresses
        .list(caller.account(), caller.own_device().cloned())
        .await?;
    Ok(HttpResponse::Ok().json(wire::AddressList {
        addresses: addresses.into_iter().map(address_body).collect(),
    }))
}

/// Creates an address.
#[utoipa::path(post, path = "/inboxes", operation_id = "create_inbox", tag = "addresses", security(("session" = [])), request_body = wire::CreateAddressRequest,
    responses((status = 201, body = wire::AddressReply), (status = 400, body = wire::ErrorBody),
        (status = 402, body = wire::ErrorBody, description = "allocation_exhausted"),
        (status = 403, body = wire::ErrorBody, description = "plan_required (localPart, emailAddress below Scale), session_required"),
        (status = 409, body = wire::ErrorBody, description = "address_taken, id_taken")))]
pub async fn create(
    state: Data<AppState>,
    caller: SessionCaller,
    Json(body): Json<wire::CreateAddressRequest>,
) -> Result<HttpResponse, ApiError> {
    let id = AddressId::parse(&body.id).map_err(|error| ApiError::invalid_id("id", error))?;
    let meta = body
        .meta
        .as_ref()
        .map(|value| check_box_field("meta", value, META_LIMIT))
        .transpose()?;
    let public_key = body
        .public_key
        .as_deref()
        .map(|key| {
            sealpost_seal::parse_public_key(key).map_err(|_| ApiError::invalid_key("publicKey"))
        })
        .transpose()?;
    let plan = plan_of(&state, &caller.account).await?;
    let address = state
        .addresses
        .create(
            &caller.account,
            plan,
            NewAddress {
                id: Some(id),
                domain: body.domain,
                prefix: body.prefix,
                local_part: body.local_part,
                email_address: body.email_address,
                retention_days: body.retention_days,
                meta,
                public_key,
            },
        )
        .await?;
    Ok(HttpResponse::Created().json(address_reply(address)))
}

/// The plan's address allowance and how much of it is used.
#[utoipa::path(get, path = "/inboxes/allocation", operation_id = "get_inbox_allocation", tag = "addresses", security(("bearer" = [])),
    responses((status = 200, body = wire::Allocation)))]
pub async fn allocation(
    state: Data<AppState>,
    caller: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let plan = plan_of(&state, caller.account()).await?;
    let allocation = state.addresses.allocation(caller.account(), plan).await?;
    Ok(HttpResponse::Ok().json(wire::Allocation {
        plan_id: plan,
        limit: allocation.limit,
        used: allocation.used,
        assigned: allocation.assigned,
        remaining: allocation.remaining,
    }))
}

/// Changes the label or the retention; a shorter retention applies to mail already stored.
#[utoipa::path(patch, path = "/inboxes/{id}", operation_id = "update_inbox", tag = "addresses", security(("session" = [])),
    params(("id" = sealpost_kernel::AddressId, Path)), request_body = wire::UpdateAddressRequest,
    responses((status = 200, body = wire::AddressReply), (status = 404, body = wire::ErrorBody)))]
pub async fn update(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
    Json(body): Json<wire::UpdateAddressRequest>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<AddressId>(&id)?;
    let meta = body
        .meta
        .as_ref()
        .map(|value| check_box_field("meta", value, META_LIMIT))
        .transpose()?;
    let address = state
        .addresses
        .update(&caller.account, &id, meta, body.retention_days)
        .await?;
    Ok(HttpResponse::Ok().json(address_reply(address)))
}

/// Deletes the address with its mail; the address is retired for everyone, forever.
#[utoipa::path(delete, path = "/inboxes/{id}", operation_id = "delete_inbox", tag = "addresses", security(("session" = [])),
    params(("id" = sealpost_kernel::AddressId, Path)), responses((status = 204), (status = 404, body = wire::ErrorBody)))]
pub async fn remove(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = path_id::<AddressId>(&id)?;
    state.addresses.delete(&caller.account, &id).await?;
    // The rows are gone; their sealed blobs follow now (the hourly sweep retries failures).
    if let Err(error) = state.mailbox.collect_garbage().await {
        tracing::warn!(%error, "blob clean-up deferred to the sweep");
    }
    Ok(HttpResponse::NoContent().finish())
}

/// Assigns an address to a device (moving it from another device if needed). On Free a device holds one.
#[utoipa::path(post, path = "/workers/{id}/inboxes", operation_id = "assign_inbox", tag = "addresses", security(("session" = [])),
    params(("id" = sealpost_kernel::DeviceId, Path)), request_body = wire::AssignRequest,
    responses((status = 200, body = wire::AddressReply), (status = 402, body = wire::ErrorBody, description = "allocation_exhausted: Free device already holds one"),
        (status = 404, body = wire::ErrorBody)))]
pub async fn assign(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
    Json(body): Json<wire::AssignRequest>,
) -> Result<HttpResponse, ApiError> {
    let device = DeviceId::parse(&id).map_err(|_| ApiError::not_found())?;
    let address = AddressId::parse(&body.address_id)
        .map_err(|error| ApiError::invalid_id("inboxId", error))?;
    let plan = plan_of(&state, &caller.account).await?;
    state
        .addresses
        .assign(&caller.account, plan, &address, &device)
        .await?;
    let address = state.addresses.get(&caller.account, &address).await?;
    Ok(HttpResponse::Ok().json(address_reply(address)))
}

/// Takes an address off a device; it stays on the account.
#[utoipa::path(delete, path = "/workers/{id}/inboxes/{inboxId}", operation_id = "unassign_inbox", tag = "addresses", security(("session" = [])),
    params(("id" = sealpost_kernel::DeviceId, Path), ("inboxId" = sealpost_kernel::AddressId, Path)),
    responses((status = 204), (status = 404, body = wire::ErrorBody)))]
pub async fn unassign(
    state: Data<AppState>,
    caller: SessionCaller,
    path: Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (device, address) = path.into_inner();
    let device = DeviceId::parse(&device).map_err(|_| ApiError::not_found())?;
    let address = path_id::<AddressId>(&address)?;
    state
        .addresses
        .unassign(&caller.account, &address, &device)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}
