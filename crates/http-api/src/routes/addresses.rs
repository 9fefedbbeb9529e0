//! SPEC.md "Addresses and domains" endpoints.

use actix_web::web::{Data, Path};
use actix_web::{HttpResponse, delete, get, patch, post};
use sealpost_addresses::{Address, NewAddress};
use sealpost_kernel::{AccountId, InboxId, PlanId, Timestamp, WorkerId};
use sealpost_seal::{SealedBox, b64};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::auth::{Authenticated, SessionCaller};
use crate::error::{ApiError, ErrorBody, check_box_field};
use crate::json::Json;
use crate::state::AppState;

/// Sealed address label.
pub const META_LIMIT: usize = 4 * 1024;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboxBody {
    id: InboxId,
    operator_id: AccountId,
    email_address: String,
    /// `active` (assigned to a device) or `unassigned`.
    status: &'static str,
    created_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    assigned_worker_id: Option<WorkerId>,
    retention_days: u8,
    paused_at: Option<Timestamp>,
    #[schema(value_type = Option<Object>)]
    meta: Option<SealedBox>,
    key_epoch: u32,
    /// X25519 public key mail is sealed to; null means the address refuses mail.
    public_key: Option<String>,
}

impl From<Address> for InboxBody {
    fn from(address: Address) -> Self {
        Self {
            status: address.status(),
            id: address.id,
            operator_id: address.account,
            email_address: address.email_address,
            created_at: address.created_at,
            assigned_worker_id: address.worker,
            retention_days: address.retention_days,
            paused_at: address.paused_at,
            meta: address.meta,
            key_epoch: address.key_epoch,
            public_key: address.public_key.map(|key| b64::encode(&key)),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct InboxEnvelope {
    inbox: InboxBody,
}

fn inbox_reply(address: Address) -> InboxEnvelope {
    InboxEnvelope {
        inbox: address.into(),
    }
}

fn parse_inbox_path(text: &str) -> Result<InboxId, ApiError> {
    InboxId::parse(text).map_err(|_| ApiError::not_found())
}

async fn plan_of(state: &AppState, account: &AccountId) -> Result<PlanId, ApiError> {
    Ok(state.accounts.account(account).await?.plan)
}

#[derive(Serialize, ToSchema)]
pub struct DomainBody {
    domain: String,
    /// True for a domain belonging to this account alone.
    reserved: bool,
}

#[derive(Serialize, ToSchema)]
pub struct DomainsBody {
    domains: Vec<DomainBody>,
}

/// Domains addresses can be created on.
#[utoipa::path(get, path = "/domains", tag = "addresses", security(("bearer" = [])),
    responses((status = 200, body = DomainsBody)))]
#[get("/domains")]
pub async fn domains(state: Data<AppState>, _caller: Authenticated) -> HttpResponse {
    HttpResponse::Ok().json(DomainsBody {
        domains: state
            .addresses
            .domains()
            .iter()
            .map(|domain| DomainBody {
                domain: domain.clone(),
                reserved: false,
            })
            .collect(),
    })
}

#[derive(Serialize, ToSchema)]
pub struct InboxesBody {
    inboxes: Vec<InboxBody>,
}

/// Every address on the account, newest first. A device sees the addresses assigned to it.
#[utoipa::path(get, path = "/inboxes", tag = "addresses", security(("bearer" = [])),
    responses((status = 200, body = InboxesBody)))]
#[get("/inboxes")]
pub async fn list(state: Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let addresses = state
        .addresses
        .list(caller.account(), caller.worker().cloned())
        .await?;
    Ok(HttpResponse::Ok().json(InboxesBody {
        inboxes: addresses.into_iter().map(InboxBody::from).collect(),
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateInboxRequest {
    /// `ibx_` + 4 to 48 letters and digits, chosen by the client.
    id: String,
    domain: Option<String>,
    prefix: Option<String>,
    local_part: Option<String>,
    email_address: Option<String>,
    retention_days: Option<i64>,
    #[schema(value_type = Option<Object>)]
    meta: Option<Value>,
    public_key: Option<String>,
}

/// Creates an address.
#[utoipa::path(post, path = "/inboxes", tag = "addresses", security(("bearer" = [])), request_body = CreateInboxRequest,
    responses((status = 201, body = InboxEnvelope), (status = 400, body = ErrorBody),
        (status = 402, body = ErrorBody, description = "allocation_exhausted"),
        (status = 403, body = ErrorBody, description = "plan_required (localPart, emailAddress below Scale), session_required"),
        (status = 409, body = ErrorBody, description = "address_taken, id_taken")))]
#[post("/inboxes")]
pub async fn create(
    state: Data<AppState>,
    caller: SessionCaller,
    Json(body): Json<CreateInboxRequest>,
) -> Result<HttpResponse, ApiError> {
    let id = InboxId::parse(&body.id).map_err(|error| ApiError::invalid_id("id", error))?;
    let meta = body
        .meta
        .as_ref()
        .map(|value| check_box_field("meta", value, META_LIMIT))
        .transpose()?;
    let public_key = body
        .public_key
        .as_deref()
        .map(|key| b64::decode_32(key).map_err(|_| ApiError::invalid_key("publicKey")))
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
    Ok(HttpResponse::Created().json(inbox_reply(address)))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AllocationBody {
    plan_id: PlanId,
    /// Addresses the plan allows.
    limit: u64,
    /// Addresses on the account, assigned or not.
    used: u64,
    assigned: u64,
    /// How many more can be created.
    remaining: u64,
}

/// The plan's address allowance and how much of it is used.
#[utoipa::path(get, path = "/inboxes/allocation", tag = "addresses", security(("bearer" = [])),
    responses((status = 200, body = AllocationBody)))]
#[get("/inboxes/allocation")]
pub async fn allocation(
    state: Data<AppState>,
    caller: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let plan = plan_of(&state, caller.account()).await?;
    let allocation = state.addresses.allocation(caller.account(), plan).await?;
    Ok(HttpResponse::Ok().json(AllocationBody {
        plan_id: plan,
        limit: allocation.limit,
        used: allocation.used,
        assigned: allocation.assigned,
        remaining: allocation.remaining,
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateInboxRequest {
    #[schema(value_type = Option<Object>)]
    meta: Option<Value>,
    retention_days: Option<i64>,
}

/// Changes the label or the retention; a shorter retention applies to mail already stored.
#[utoipa::path(patch, path = "/inboxes/{id}", tag = "addresses", security(("bearer" = [])),
    params(("id" = String, Path)), request_body = UpdateInboxRequest,
    responses((status = 200, body = InboxEnvelope), (status = 404, body = ErrorBody)))]
#[patch("/inboxes/{id}")]
pub async fn update(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
    Json(body): Json<UpdateInboxRequest>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_inbox_path(&id)?;
    let meta = body
        .meta
        .as_ref()
        .map(|value| check_box_field("meta", value, META_LIMIT))
        .transpose()?;
    let address = state
        .addresses
        .update(&caller.account, &id, meta, body.retention_days)
        .await?;
    Ok(HttpResponse::Ok().json(inbox_reply(address)))
}

/// Deletes the address with its mail; the address is retired for everyone, forever.
#[utoipa::path(delete, path = "/inboxes/{id}", tag = "addresses", security(("bearer" = [])),
    params(("id" = String, Path)), responses((status = 204), (status = 404, body = ErrorBody)))]
#[delete("/inboxes/{id}")]
pub async fn remove(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_inbox_path(&id)?;
    state.addresses.delete(&caller.account, &id).await?;
    // The rows are gone; their sealed blobs follow now (the hourly sweep retries failures).
    if let Err(error) = state.mailbox.collect_garbage().await {
        tracing::warn!(%error, "blob clean-up deferred to the sweep");
    }
    Ok(HttpResponse::NoContent().finish())
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssignRequest {
    inbox_id: String,
}

/// Assigns an address to a device (moving it from another device if needed). On Free a device holds one.
#[utoipa::path(post, path = "/workers/{id}/inboxes", tag = "addresses", security(("bearer" = [])),
    params(("id" = String, Path)), request_body = AssignRequest,
    responses((status = 200, body = InboxEnvelope), (status = 402, body = ErrorBody, description = "allocation_exhausted: Free device already holds one"),
        (status = 404, body = ErrorBody)))]
#[post("/workers/{id}/inboxes")]
pub async fn assign(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
    Json(body): Json<AssignRequest>,
) -> Result<HttpResponse, ApiError> {
    let worker = WorkerId::parse(&id).map_err(|_| ApiError::not_found())?;
    let inbox =
        InboxId::parse(&body.inbox_id).map_err(|error| ApiError::invalid_id("inboxId", error))?;
    let plan = plan_of(&state, &caller.account).await?;
    state
        .addresses
        .assign(&caller.account, plan, &inbox, &worker)
        .await?;
    let address = state.addresses.get(&caller.account, &inbox).await?;
    Ok(HttpResponse::Ok().json(inbox_reply(address)))
}

/// Takes an address off a device; it stays on the account.
#[utoipa::path(delete, path = "/workers/{id}/inboxes/{inboxId}", tag = "addresses", security(("bearer" = [])),
    params(("id" = String, Path), ("inboxId" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
#[delete("/workers/{id}/inboxes/{inbox_id}")]
pub async fn unassign(
    state: Data<AppState>,
    caller: SessionCaller,
    path: Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (worker, inbox) = path.into_inner();
    let worker = WorkerId::parse(&worker).map_err(|_| ApiError::not_found())?;
    let inbox = parse_inbox_path(&inbox)?;
    state
        .addresses
        .unassign(&caller.account, &inbox, &worker)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}
