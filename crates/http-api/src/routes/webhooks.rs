//! The webhook endpoints (docs/api.md "Webhooks", docs/webhooks.md).

use actix_web::HttpResponse;
use actix_web::web::{Data, Path, Query};
use sealpost_kernel::{AccountId, DeliveryId, PageLimits, PlanId, WebhookId};
use sealpost_seal::SealedBox;
use sealpost_webhooks::delivery::{Delivery, DeliveryStatus};
use sealpost_webhooks::endpoint::{META_MAX_LEN, check_plan};
use sealpost_webhooks::events::{EventFilter, EventType};
use sealpost_webhooks::url::validate_url;
use sealpost_webhooks::{Endpoint, EndpointPatch};
use sealpost_wire as wire;
use serde::Deserialize;
use serde_json::Value;
use utoipa::IntoParams;

use crate::auth::{Authenticated, SessionCaller};
use crate::error::{ApiError, ErrorCode, check_box_field, path_id};
use crate::json::Json;
use crate::state::AppState;

fn webhook_body(endpoint: Endpoint) -> wire::Webhook {
    wire::Webhook {
        id: endpoint.id,
        url: endpoint.url,
        events: endpoint.events.to_strings(),
        meta: endpoint.meta,
        status: endpoint.status.as_str().into(),
        disabled_reason: endpoint
            .status
            .disabled_reason()
            .map(|reason| reason.as_str().into()),
        failing_since: endpoint.health.failing_since,
        last_success_at: endpoint.health.last_success_at,
        created_at: endpoint.created_at,
    }
}

async fn plan_of(state: &AppState, account: &AccountId) -> Result<PlanId, ApiError> {
    Ok(state.accounts.account(account).await?.plan)
}

/// Every webhook endpoint needs a plan with webhooks (Operator and up): 403 `plan_required`.
async fn webhook_plan(state: &AppState, account: &AccountId) -> Result<PlanId, ApiError> {
    let plan = plan_of(state, account).await?;
    check_plan(sealpost_plans::plan(plan)).map_err(sealpost_webhooks::WebhookError::from)?;
    Ok(plan)
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

/// The account's webhooks and the event types they can subscribe to.
#[utoipa::path(get, path = "/webhook-endpoints", operation_id = "list_webhook_endpoints", tag = "webhooks", security(("bearer" = [])),
    responses((status = 200, body = wire::WebhookList), (status = 403, body = wire::ErrorBody, description = "plan_required")))]
pub async fn list(state: Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    webhook_plan(&state, caller.account()).await?;
    let webhooks = state.webhooks.list(caller.account()).await?;
    Ok(HttpResponse::Ok().json(wire::WebhookList {
        webhooks: webhooks.into_iter().map(webhook_body).collect(),
        event_types: EventType::ALL
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect(),
    }))
}

/// Registers an https endpoint (10 per account); the secret is returned once.
#[utoipa::path(post, path = "/webhook-endpoints", operation_id = "create_webhook_endpoint", tag = "webhooks", security(("session" = [])), request_body = wire::CreateWebhookRequest,
    responses((status = 201, body = wire::CreatedWebhook), (status = 400, body = wire::ErrorBody, description = "invalid_url, invalid_field, invalid_id, invalid_box"),
        (status = 403, body = wire::ErrorBody, description = "plan_required"), (status = 409, body = wire::ErrorBody, description = "limit_reached, id_taken"),
        (status = 503, body = wire::ErrorBody, description = "feature_disabled: adding webhooks is paused")))]
pub async fn create(
    state: Data<AppState>,
    caller: SessionCaller,
    Json(body): Json<wire::CreateWebhookRequest>,
) -> Result<HttpResponse, ApiError> {
    let plan = webhook_plan(&state, &caller.account).await?;
    // Operators can pause webhooks: no new ones, and deliveries wait.
    if state.support.availability().await?.switches.webhooks_paused {
        return Err(ApiError::new(
            ErrorCode::FeatureDisabled,
            "adding webhooks is paused; try again later",
        ));
    }
    let id = WebhookId::parse(&body.id).map_err(|error| ApiError::invalid_id("id", error))?;
    let url = url(&state, &body.url)?;
    let events = filter(&body.events)?;
    let meta = meta(body.meta.as_ref())?;
    let created = state
        .webhooks
        .create(&caller.account, plan, id, url, events, meta)
        .await?;
    Ok(HttpResponse::Created().json(wire::CreatedWebhook {
        webhook: webhook_body(created.endpoint),
        secret: created.secret,
    }))
}

/// Changes url, events, meta or status.
#[utoipa::path(patch, path = "/webhook-endpoints/{id}", operation_id = "update_webhook_endpoint", tag = "webhooks", security(("session" = [])),
    params(("id" = sealpost_kernel::WebhookId, Path)), request_body = wire::UpdateWebhookRequest,
    responses((status = 403, body = wire::ErrorBody, description = "plan_required: the plan does not include webhooks"), (status = 200, body = wire::WebhookReply), (status = 400, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody)))]
pub async fn update(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
    Json(body): Json<wire::UpdateWebhookRequest>,
) -> Result<HttpResponse, ApiError> {
    webhook_plan(&state, &caller.account).await?;
    let id = path_id::<WebhookId>(&id)?;
    let active = match body.status {
        None => None,
        Some(wire::WebhookStatus::Active) => Some(true),
        Some(wire::WebhookStatus::Disabled) => Some(false),
        Some(wire::WebhookStatus::Other(_)) => {
            return Err(ApiError::invalid_field("status", "active or disabled"));
        }
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
    Ok(HttpResponse::Ok().json(wire::WebhookReply {
        webhook: webhook_body(endpoint),
    }))
}

/// Removes the endpoint and its delivery log.
#[utoipa::path(delete, path = "/webhook-endpoints/{id}", operation_id = "delete_webhook_endpoint", tag = "webhooks", security(("session" = [])),
    params(("id" = sealpost_kernel::WebhookId, Path)), responses((status = 403, body = wire::ErrorBody, description = "plan_required: the plan does not include webhooks"), (status = 204), (status = 404, body = wire::ErrorBody)))]
pub async fn remove(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    webhook_plan(&state, &caller.account).await?;
    let id = path_id::<WebhookId>(&id)?;
    state.webhooks.delete(&caller.account, &id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// A new signing secret, shown once; the old one stops at once.
#[utoipa::path(post, path = "/webhook-endpoints/{id}/rotate-secret", operation_id = "rotate_webhook_secret", tag = "webhooks", security(("session" = [])),
    params(("id" = sealpost_kernel::WebhookId, Path)), responses((status = 403, body = wire::ErrorBody, description = "plan_required: the plan does not include webhooks"), (status = 200, body = wire::Secret), (status = 404, body = wire::ErrorBody)))]
pub async fn rotate_secret(
    state: Data<AppState>,
    caller: SessionCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    webhook_plan(&state, &caller.account).await?;
    let id = path_id::<WebhookId>(&id)?;
    let rotated = state.webhooks.rotate_secret(&caller.account, &id).await?;
    Ok(HttpResponse::Ok().json(wire::Secret {
        secret: rotated.secret,
    }))
}

fn sent_body(delivery: Delivery) -> wire::Sent {
    wire::Sent {
        delivery_id: delivery.id,
        event_id: delivery.event_id,
    }
}

/// Sends a `webhook.test` event. Tests plus redeliveries: 60 an hour.
#[utoipa::path(post, path = "/webhook-endpoints/{id}/test", operation_id = "test_webhook_endpoint", tag = "webhooks", security(("bearer" = [])),
    params(("id" = sealpost_kernel::WebhookId, Path)),
    responses((status = 404, body = wire::ErrorBody), (status = 403, body = wire::ErrorBody, description = "plan_required: the plan does not include webhooks"), (status = 202, body = wire::Sent), (status = 409, body = wire::ErrorBody, description = "webhook_disabled"), (status = 429, body = wire::ErrorBody)))]
pub async fn test(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let plan = webhook_plan(&state, caller.account()).await?;
    let id = path_id::<WebhookId>(&id)?;
    let delivery = state
        .webhooks
        .send_test(caller.account(), plan, &id)
        .await?;
    Ok(HttpResponse::Accepted().json(sent_body(delivery)))
}

fn delivery_body(delivery: Delivery) -> wire::Delivery {
    wire::Delivery {
        event: serde_json::from_str(&delivery.body).unwrap_or(Value::Null),
        id: delivery.id,
        event_id: delivery.event_id,
        event_type: delivery.event_type.as_str().to_owned(),
        status: delivery.status.as_str().into(),
        attempts: delivery.attempts,
        response_status: delivery.response_status,
        error: delivery.error,
        created_at: delivery.created_at,
        last_attempt_at: delivery.last_attempt_at,
        next_attempt_at: delivery.next_attempt_at,
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesQuery {
    #[param(value_type = u32, required = false, minimum = 1, maximum = 200)]
    limit: Option<String>,
    cursor: Option<String>,
    /// pending, succeeded or failed.
    #[param(value_type = sealpost_wire::DeliveryStatus, required = false)]
    status: Option<String>,
}

/// The delivery log (kept 30 days), newest first.
#[utoipa::path(get, path = "/webhook-endpoints/{id}/deliveries", operation_id = "list_webhook_deliveries", tag = "webhooks", security(("bearer" = [])),
    params(("id" = sealpost_kernel::WebhookId, Path), DeliveriesQuery),
    responses((status = 403, body = wire::ErrorBody, description = "plan_required: the plan does not include webhooks"), (status = 200, body = wire::DeliveryPage), (status = 404, body = wire::ErrorBody)))]
pub async fn deliveries(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
    query: Query<DeliveriesQuery>,
) -> Result<HttpResponse, ApiError> {
    webhook_plan(&state, caller.account()).await?;
    let id = path_id::<WebhookId>(&id)?;
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
    Ok(HttpResponse::Ok().json(wire::DeliveryPage {
        deliveries: page.items.into_iter().map(delivery_body).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// Sends a delivery's event again: a new delivery id, the same event id.
#[utoipa::path(post, path = "/webhook-endpoints/{id}/deliveries/{deliveryId}/redeliver", operation_id = "redeliver_webhook_delivery", tag = "webhooks", security(("bearer" = [])),
    params(("id" = sealpost_kernel::WebhookId, Path), ("deliveryId" = sealpost_kernel::DeliveryId, Path)),
    responses((status = 403, body = wire::ErrorBody, description = "plan_required: the plan does not include webhooks"), (status = 202, body = wire::Sent), (status = 404, body = wire::ErrorBody), (status = 409, body = wire::ErrorBody), (status = 429, body = wire::ErrorBody)))]
pub async fn redeliver(
    state: Data<AppState>,
    caller: Authenticated,
    path: Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let plan = webhook_plan(&state, caller.account()).await?;
    let (id, delivery) = path.into_inner();
    let id = path_id::<WebhookId>(&id)?;
    let delivery = DeliveryId::parse(&delivery).map_err(|_| ApiError::not_found())?;
    let sent = state
        .webhooks
        .redeliver(caller.account(), plan, &id, &delivery)
        .await?;
    Ok(HttpResponse::Accepted().json(sent_body(sent)))
}
