//! SPEC.md "Webhooks" endpoints.

use actix_web::web::{Data, Path, Query};
use actix_web::{HttpResponse, delete, get, patch, post};
use sealpost_kernel::{AccountId, DeliveryId, EventId, PageLimits, PlanId, Timestamp, WebhookId};
use sealpost_seal::SealedBox;
use sealpost_webhooks::delivery::{Delivery, DeliveryStatus};
use sealpost_webhooks::endpoint::{META_MAX_LEN, check_plan};
use sealpost_webhooks::events::{EventFilter, EventType};
use sealpost_webhooks::service::{Endpoint, EndpointPatch};
use sealpost_webhooks::url::validate_url;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::auth::{Authenticated, SessionCaller};
use crate::error::{ApiError, ErrorBody, ErrorCode, check_box_field};
use crate::json::Json;
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookBody {
    id: WebhookId,
    url: String,
    /// Event types, or `["*"]` for all.
    events: Vec<String>,
    #[schema(value_type = Option<Object>)]
    meta: Option<SealedBox>,
    /// `active` or `disabled`.
    status: &'static str,
    /// `manual` or `failing`; null while active.
    disabled_reason: Option<&'static str>,
    failing_since: Option<Timestamp>,
    last_success_at: Option<Timestamp>,
    created_at: Timestamp,
}

impl From<Endpoint> for WebhookBody {
    fn from(endpoint: Endpoint) -> Self {
        Self {
            id: endpoint.id,
            url: endpoint.url,
            events: endpoint.events.to_strings(),
            meta: endpoint.meta,
            status: endpoint.status.as_str(),
            disabled_reason: endpoint
                .status
                .disabled_reason()
                .map(|reason| reason.as_str()),
            failing_since: endpoint.health.failing_since,
            last_success_at: endpoint.health.last_success_at,
            created_at: endpoint.created_at,
        }
    }
}

async fn plan_of(state: &AppState, account: &AccountId) -> Result<PlanId, ApiError> {
    Ok(state.accounts.account(account).await?.plan)
}

/// Every webhook endpoint needs a plan with webhooks (Operator and up): 403 `plan_required`.
async fn webhook_plan(state: &AppState, account: &AccountId) -> Result<PlanId, ApiError> {
    let plan = plan_of(state, account).await?;
    check_plan(sealpost_plans::plan(plan))
        .map_err(sealpost_webhooks::service::WebhookError::from)?;
    Ok(plan)
}

fn webhook_path(text: &str) -> Result<WebhookId, ApiError> {
    WebhookId::parse(text).map_err(|_| ApiError::not_found())
}

fn filter(events: &[String]) -> Result<EventFilter, ApiError> {
    EventFilter::parse(events).map_err(|error| ApiError::invalid_field("events", error))
}

fn url(state: &AppState, text: &str) -> Result<sealpost_webhooks::url::WebhookUrl, ApiError> {
    validate_url(text, &state.service_domains)
        .map_err(|error| ApiError::new(ErrorCode::InvalidUrl, format!("url: {error}")))
}

fn meta(value: Option<&Value>) -> Result<Option<SealedBox>, ApiError> {
    value
        .map(|value| check_box_field("meta", value, META_MAX_LEN))
        .transpose()
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhooksBody {
    webhooks: Vec<WebhookBody>,
    /// The subscribable event types.
    event_types: Vec<&'static str>,
}

/// The account's webhooks and the event types they can subscribe to.
#[utoipa::path(get, path = "/webhook-endpoints", tag = "webhooks", security(("bearer" = [])),
    responses((status = 200, body = WebhooksBody), (status = 403, body = ErrorBody, description = "plan_required")))]
#[get("/webhook-endpoints")]
pub async fn list(state: Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    webhook_plan(&state, caller.account()).await?;
    let webhooks = state.webhooks.list(caller.account()).await?;
    Ok(HttpResponse::Ok().json(WebhooksBody {
        webhooks: webhooks.into_iter().map(WebhookBody::from).collect(),
        event_types: EventType::ALL.iter().map(|t| t.as_str()).collect(),
    }))
}

#[derive(Deserialize, ToSchema)]
pub struct CreateWebhookRequest {
    /// `whk_` + 4 to 48 letters and digits, chosen by the client.
    id: String,
    url: String,
    events: Vec<String>,
    #[schema(value_type = Option<Object>)]
    meta: Option<Value>,
}

#[derive(Serialize, ToSchema)]
pub struct CreatedWebhookBody {
    webhook: WebhookBody,
    /// `whsec_...`: shown here and on rotation only.
    secret: String,
}

/// Registers an https endpoint (10 per account); the secret is returned once.
#[utoipa::path(post, path = "/webhook-endpoints", tag = "webhooks", security(("bearer" = [])), request_body = CreateWebhookRequest,
    responses((status = 201, body = CreatedWebhookBody), (status = 400, body = ErrorBody, description = "invalid_url, invalid_field, invalid_id, invalid_box"),
        (status = 403, body = ErrorBody, description = "plan_required"), (status = 409, body = ErrorBody, description = "limit_reached, id_taken")))]
#[post("/webhook-endpoints")]
pub async fn create(
    state: Data<AppState>,
    caller: SessionCaller,
    Json(body): Json<CreateWebhookRequest>,
) -> Result<HttpResponse, ApiError> {
    let plan = webhook_plan(&state, &caller.account).await?;
    let id = WebhookId::parse(&body.id).map_err(|error| ApiError::invalid_id("id", error))?;
    let url = url(&state, &body.url)?;
    let events = filter(&body.events)?;
    let meta = meta(body.meta.as_ref())?;
    let endpoint = state
        .webhooks
        .create(&caller.account, plan, id, url, events, meta)
        .await?;
    let secret = endpoint.secret.clone();
    Ok(HttpResponse::Created().json(CreatedWebhookBody {
        webhook: endpoint.into(),
        secret,
    }))
}

#[derive(Deserialize, ToSchema)]
pub struct UpdateWebhookRequest {
    url: Option<String>,
    events: Option<Vec<String>>,
    #[schema(value_type = Option<Object>)]
    meta: Option<Value>,
    /// `active` (clears the failure record) or `disabled`.
    status: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct WebhookEnvelope {
    webhook: WebhookBody,
}

/// Changes url, events, meta or status.
#[utoipa::path(patch, path = "/webhook-endpoints/{id}", tag = "webhooks", security(("bearer" = [])),
    params(("id" = String, Path)), request_body = UpdateWebhookRequest,
    responses((status = 200, body = WebhookEnvelope), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
#[patch("/webhook-endpoints/{id}")]
pub async fn update(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
    Json(body): Json<UpdateWebhookRequest>,
) -> Result<HttpResponse, ApiError> {
    webhook_plan(&state, &caller.account).await?;
    let id = webhook_path(&id)?;
    let active = match body.status.as_deref() {
        None => None,
        Some("active") => Some(true),
        Some("disabled") => Some(false),
        Some(_) => return Err(ApiError::invalid_field("status", "active or disabled")),
    };
    let patch = EndpointPatch {
        url: body
            .url
            .as_deref()
            .map(|text| url(&state, text))
            .transpose()?,
        events: body.events.as_deref().map(filter).transpose()?,
        meta: meta(body.meta.as_ref())?,
        active,
    };
    let endpoint = state.webhooks.update(&caller.account, &id, patch).await?;
    Ok(HttpResponse::Ok().json(WebhookEnvelope {
        webhook: endpoint.into(),
    }))
}

/// Removes the endpoint and its delivery log.
#[utoipa::path(delete, path = "/webhook-endpoints/{id}", tag = "webhooks", security(("bearer" = [])),
    params(("id" = String, Path)), responses((status = 204), (status = 404, body = ErrorBody)))]
#[delete("/webhook-endpoints/{id}")]
pub async fn remove(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    webhook_plan(&state, &caller.account).await?;
    let id = webhook_path(&id)?;
    state.webhooks.delete(&caller.account, &id).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[derive(Serialize, ToSchema)]
pub struct SecretBody {
    /// The new `whsec_...`; the old one stopped working.
    secret: String,
}

/// A new signing secret, shown once; the old one stops at once.
#[utoipa::path(post, path = "/webhook-endpoints/{id}/rotate-secret", tag = "webhooks", security(("bearer" = [])),
    params(("id" = String, Path)), responses((status = 200, body = SecretBody), (status = 404, body = ErrorBody)))]
#[post("/webhook-endpoints/{id}/rotate-secret")]
pub async fn rotate_secret(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    webhook_plan(&state, &caller.account).await?;
    let id = webhook_path(&id)?;
    let endpoint = state.webhooks.rotate_secret(&caller.account, &id).await?;
    Ok(HttpResponse::Ok().json(SecretBody {
        secret: endpoint.secret,
    }))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SentBody {
    delivery_id: DeliveryId,
    event_id: EventId,
}

/// Sends a `webhook.test` event. Tests plus redeliveries: 60 an hour.
#[utoipa::path(post, path = "/webhook-endpoints/{id}/test", tag = "webhooks", security(("bearer" = [])),
    params(("id" = String, Path)),
    responses((status = 202, body = SentBody), (status = 409, body = ErrorBody, description = "webhook_disabled"), (status = 429, body = ErrorBody)))]
#[post("/webhook-endpoints/{id}/test")]
pub async fn test(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let plan = webhook_plan(&state, caller.account()).await?;
    let id = webhook_path(&id)?;
    let delivery = state
        .webhooks
        .send_test(caller.account(), plan, &id)
        .await?;
    Ok(HttpResponse::Accepted().json(SentBody {
        delivery_id: delivery.id,
        event_id: delivery.event_id,
    }))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryBody {
    id: DeliveryId,
    event_id: EventId,
    event_type: String,
    /// The event exactly as sent.
    #[schema(value_type = Object)]
    event: Value,
    /// pending, succeeded or failed.
    status: &'static str,
    attempts: u32,
    response_status: Option<u16>,
    error: Option<String>,
    created_at: Timestamp,
    last_attempt_at: Option<Timestamp>,
    next_attempt_at: Option<Timestamp>,
}

impl From<Delivery> for DeliveryBody {
    fn from(delivery: Delivery) -> Self {
        Self {
            event: serde_json::from_str(&delivery.body).unwrap_or(Value::Null),
            id: delivery.id,
            event_id: delivery.event_id,
            event_type: delivery.event_type.as_str().to_owned(),
            status: delivery.status.as_str(),
            attempts: delivery.attempts,
            response_status: delivery.response_status,
            error: delivery.error,
            created_at: delivery.created_at,
            last_attempt_at: delivery.last_attempt_at,
            next_attempt_at: delivery.next_attempt_at,
        }
    }
}

#[derive(Deserialize, IntoParams)]
pub struct DeliveriesQuery {
    limit: Option<String>,
    cursor: Option<String>,
    /// pending, succeeded or failed.
    status: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveriesPage {
    deliveries: Vec<DeliveryBody>,
    next_cursor: Option<String>,
}

/// The delivery log (kept 30 days), newest first.
#[utoipa::path(get, path = "/webhook-endpoints/{id}/deliveries", tag = "webhooks", security(("bearer" = [])),
    params(("id" = String, Path), DeliveriesQuery),
    responses((status = 200, body = DeliveriesPage), (status = 404, body = ErrorBody)))]
#[get("/webhook-endpoints/{id}/deliveries")]
pub async fn deliveries(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
    query: Query<DeliveriesQuery>,
) -> Result<HttpResponse, ApiError> {
    webhook_plan(&state, caller.account()).await?;
    let id = webhook_path(&id)?;
    let request = sealpost_kernel::PageRequest::parse(
        query.limit.as_deref(),
        query.cursor.as_deref(),
        PageLimits::STANDARD,
    )?;
    let status = query
        .status
        .as_deref()
        .map(|text| text.parse::<DeliveryStatus>())
        .transpose()
        .map_err(|_| ApiError::invalid_field("status", "pending, succeeded or failed"))?;
    let page = state
        .webhooks
        .deliveries(caller.account(), &id, status, &request)
        .await?;
    Ok(HttpResponse::Ok().json(DeliveriesPage {
        deliveries: page.items.into_iter().map(DeliveryBody::from).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// Sends a delivery's event again: a new delivery id, the same event id.
#[utoipa::path(post, path = "/webhook-endpoints/{id}/deliveries/{deliveryId}/redeliver", tag = "webhooks", security(("bearer" = [])),
    params(("id" = String, Path), ("deliveryId" = String, Path)),
    responses((status = 202, body = SentBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 429, body = ErrorBody)))]
#[post("/webhook-endpoints/{id}/deliveries/{delivery_id}/redeliver")]
pub async fn redeliver(
    state: Data<AppState>,
    caller: Authenticated,
    path: Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let plan = webhook_plan(&state, caller.account()).await?;
    let (id, delivery) = path.into_inner();
    let id = webhook_path(&id)?;
    let delivery = DeliveryId::parse(&delivery).map_err(|_| ApiError::not_found())?;
    let sent = state
        .webhooks
        .redeliver(caller.account(), plan, &id, &delivery)
        .await?;
    Ok(HttpResponse::Accepted().json(SentBody {
        delivery_id: sent.id,
        event_id: sent.event_id,
    }))
}
