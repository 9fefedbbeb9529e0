//! SPEC.md "Billing" endpoints that need no payment provider: the plan list,
//! the subscription and plan changes; and the account's usage and overview.

use actix_web::web::Data;
use actix_web::{HttpResponse, get, post};
use sealpost_kernel::PlanId;
use sealpost_plans::{PLANS, Plan};
use sealpost_subscriptions::{Overview, Subscription, Usage};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::{Authenticated, SessionCaller};
use crate::error::{ApiError, ErrorBody};
use crate::json::Json;
use crate::state::AppState;

/// A plan's limits, straight from the one plan table. `null` means unlimited.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanLimitsBody {
    addresses: u32,
    /// Devices and agents together; null is unlimited.
    devices: Option<u32>,
    received_per_30_days: u64,
    sends_per_hour: u32,
    sends_per_day: u32,
    object_reads_per_hour: u32,
    own_domains: u32,
    /// Webhook endpoints; 0 means the plan has no webhooks.
    webhooks: u32,
    /// Team members; 0 means the plan has no teams.
    team_members: u32,
    api_keys: bool,
    agents: bool,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanBody {
    id: PlanId,
    name: &'static str,
    /// USD cents per 30 days; null for Enterprise (by contract).
    price_cents: Option<u32>,
    currency: &'static str,
    period: &'static str,
    /// Whether checkout sells it (not Free, not Enterprise).
    purchasable: bool,
    limits: PlanLimitsBody,
}

impl From<&Plan> for PlanBody {
    fn from(plan: &Plan) -> Self {
        Self {
            id: plan.id,
            name: plan.id.display_name(),
            price_cents: plan.price_cents,
            currency: "USD",
            period: "30 days",
            purchasable: plan.sold_through_checkout(),
            limits: PlanLimitsBody {
                addresses: plan.addresses,
                devices: plan.devices,
                received_per_30_days: plan.received_per_30_days,
                sends_per_hour: plan.sends_per_hour,
                sends_per_day: plan.sends_per_day,
                object_reads_per_hour: plan.object_reads_per_hour,
                own_domains: plan.own_domains,
                webhooks: plan.webhooks,
                team_members: plan.team_members,
                api_keys: plan.api_keys_and_agents,
                agents: plan.api_keys_and_agents,
            },
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct PlansBody {
    plans: Vec<PlanBody>,
}

/// Every plan with its price and limits, cheapest first.
#[utoipa::path(get, path = "/plans", tag = "billing",
    responses((status = 200, body = PlansBody)))]
#[get("/plans")]
pub async fn list() -> HttpResponse {
    HttpResponse::Ok().json(PlansBody {
        plans: PLANS.iter().map(PlanBody::from).collect(),
    })
}

/// What the account has used of its plan. Reading it spends nothing.
#[utoipa::path(get, path = "/usage", tag = "billing", security(("bearer" = [])),
    responses((status = 200, body = Usage), (status = 401, body = ErrorBody)))]
#[get("/usage")]
pub async fn usage(state: Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let usage = state.subscriptions.usage(caller.account()).await?;
    Ok(HttpResponse::Ok().json(usage))
}

/// The dashboard's counters.
#[utoipa::path(get, path = "/overview", tag = "billing", security(("bearer" = [])),
    responses((status = 200, body = Overview), (status = 401, body = ErrorBody)))]
#[get("/overview")]
pub async fn overview(
    state: Data<AppState>,
    caller: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let overview = state.subscriptions.overview(caller.account()).await?;
    Ok(HttpResponse::Ok().json(overview))
}

#[derive(Serialize, ToSchema)]
pub struct SubscriptionEnvelope {
    subscription: Subscription,
}

/// The account's plan, balance and pause. Billing fills balance, pause and renewsAt.
#[utoipa::path(get, path = "/subscription", tag = "billing", security(("bearer" = [])),
    responses((status = 200, body = SubscriptionEnvelope), (status = 401, body = ErrorBody)))]
#[get("/subscription")]
pub async fn get_subscription(
    state: Data<AppState>,
    caller: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let subscription = state.subscriptions.subscription(caller.account()).await?;
    Ok(HttpResponse::Ok().json(SubscriptionEnvelope { subscription }))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangePlanRequest {
    /// `free`, `operator`, `scale`, `fleet` or `enterprise`.
    plan_id: String,
}

/// Moves to a plan priced the same or lower. A dearer plan goes through checkout.
#[utoipa::path(post, path = "/subscription/plan", tag = "billing", security(("bearer" = [])),
    request_body = ChangePlanRequest,
    responses((status = 200, body = SubscriptionEnvelope),
        (status = 400, body = ErrorBody, description = "invalid_field: unknown planId"),
        (status = 402, body = ErrorBody, description = "payment_required: a dearer plan (use checkout) or Enterprise (by contract)"),
        (status = 409, body = ErrorBody, description = "downgrade_blocked: addresses or devices do not fit the plan")))]
#[post("/subscription/plan")]
pub async fn change_plan(
    state: Data<AppState>,
    caller: SessionCaller,
    Json(body): Json<ChangePlanRequest>,
) -> Result<HttpResponse, ApiError> {
    let target = body.plan_id.parse::<PlanId>().map_err(|_| {
        ApiError::invalid_field(
            "planId",
            "unknown plan; one of free, operator, scale, fleet, enterprise",
        )
    })?;
    let subscription = state
        .subscriptions
        .change_plan(&caller.account, target)
        .await?;
    Ok(HttpResponse::Ok().json(SubscriptionEnvelope { subscription }))
}
