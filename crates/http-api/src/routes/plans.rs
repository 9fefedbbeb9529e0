//! The endpoints of docs/api.md "Plans and usage", which need no payment
//! provider: the plan list, the subscription and plan changes; and the
//! account's usage and overview.

use actix_web::HttpResponse;
use actix_web::web::Data;
use sealpost_kernel::PlanId;
use sealpost_plans::{PLANS, Plan};
use sealpost_subscriptions::{CountUsage, GatedUsage, Overview, Subscription, Usage, WindowUsage};
use sealpost_wire as wire;

use crate::auth::{Authenticated, SessionCaller};
use crate::error::ApiError;
use crate::json::Json;
use crate::state::AppState;

fn plan_offer(plan: &Plan) -> wire::PlanOffer {
    wire::PlanOffer {
        id: plan.id,
        name: plan.id.display_name().to_owned(),
        price_cents: plan.price_cents,
        currency: "USD".to_owned(),
        period: "30 days".to_owned(),
        purchasable: plan.sold_through_checkout(),
        limits: wire::PlanLimits {
            addresses: plan.addresses,
            devices: plan.devices,
            received_per_30_days: plan.received_per_30_days,
            sends_per_hour: plan.sends_per_hour,
            sends_per_day: plan.sends_per_day,
            object_reads_per_hour: plan.object_reads_per_hour,
            stored_bytes: plan.stored_bytes,
            own_domains: plan.own_domains,
            webhooks: plan.webhooks,
            team_members: plan.team_members,
            api_keys: plan.api_keys,
            agents: plan.api_keys_and_agents,
        },
    }
}

fn window(meter: WindowUsage) -> wire::WindowUsage {
    wire::WindowUsage {
        used: meter.used,
        limit: meter.limit,
        window_ends_at: meter.window_ends_at,
    }
}

fn count(meter: CountUsage) -> wire::CountUsage {
    wire::CountUsage {
        used: meter.used,
        limit: meter.limit,
    }
}

fn gated(meter: GatedUsage) -> wire::GatedUsage {
    wire::GatedUsage {
        used: meter.used,
        limit: meter.limit,
        allowed: meter.allowed,
    }
}

fn usage_body(report: Usage) -> wire::Usage {
    let (addresses, agents) = (report.addresses, report.agents);
    wire::Usage {
        plan: report.plan.into(),
        addresses: wire::AddressUsage {
            used: addresses.used,
            limit: addresses.limit,
            remaining: addresses.remaining,
            assigned: addresses.assigned,
        },
        messages_received: window(report.messages_received),
        messages_sent: wire::SentUsage {
            hour: window(report.messages_sent.hour),
            day: window(report.messages_sent.day),
        },
        object_reads: window(report.object_reads),
        devices: count(report.devices),
        paired: count(report.paired),
        agents: wire::AllowedUsage {
            used: agents.used,
            allowed: agents.allowed,
        },
        api_keys: gated(report.api_keys),
        webhooks: gated(report.webhooks),
        domains: count(report.domains),
        messages_stored: report.messages_stored,
        stored_bytes: wire::StoredBytesUsage {
            used: report.stored_bytes.used,
            limit: report.stored_bytes.limit,
        },
    }
}

fn overview_body(counts: Overview) -> wire::Overview {
    let (addresses, devices, messages, webhooks) = (
        counts.addresses,
        counts.devices,
        counts.messages,
        counts.webhooks,
    );
    wire::Overview {
        plan_id: counts.plan_id,
        addresses: wire::AddressCounts {
            total: addresses.total,
            assigned: addresses.assigned,
            unassigned: addresses.unassigned,
        },
        devices: wire::DeviceCounts {
            total: devices.total,
            online: devices.online,
            offline: devices.offline,
            disabled: devices.disabled,
        },
        agents: counts.agents,
        messages: wire::MessageCounts {
            stored: messages.stored,
            unread: messages.unread,
            held: messages.held,
        },
        webhooks: wire::WebhookCounts {
            total: webhooks.total,
            active: webhooks.active,
            failing: webhooks.failing,
            disabled: webhooks.disabled,
        },
    }
}

fn subscription_reply(subscription: Subscription) -> wire::SubscriptionReply {
    wire::SubscriptionReply {
        subscription: wire::Subscription {
            plan_id: subscription.plan_id,
            plan_name: subscription.plan_id.display_name().to_owned(),
            balance: wire::Money {
                amount: subscription.balance.amount,
                currency: subscription.balance.currency.to_owned(),
            },
            pause: subscription.pause.map(|pause| wire::Pause {
                plan_id: pause.plan_id,
                since: pause.since,
                deletes_at: pause.deletes_at,
                addresses: pause.addresses,
                devices: pause.devices,
                api_keys: pause.api_keys,
                domains: pause.domains,
            }),
            renews_at: subscription.renews_at,
            pending_plan_id: subscription.pending_plan_id,
            pending_at: subscription.pending_plan_id.and(subscription.renews_at),
            renewing: subscription.renewing,
        },
    }
}

/// Every plan with its price and limits, cheapest first.
#[utoipa::path(get, path = "/plans", operation_id = "list_plans", tag = "billing",
    responses((status = 200, body = wire::PlanList)))]
pub async fn list() -> HttpResponse {
    HttpResponse::Ok().json(wire::PlanList {
        plans: PLANS.iter().map(plan_offer).collect(),
    })
}

/// What the account has used of its plan. Reading it spends nothing.
#[utoipa::path(get, path = "/usage", operation_id = "get_usage", tag = "billing", security(("bearer" = [])),
    responses((status = 200, body = wire::Usage), (status = 401, body = wire::ErrorBody)))]
pub async fn usage(state: Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let usage = state.subscriptions.usage(caller.account()).await?;
    Ok(HttpResponse::Ok().json(usage_body(usage)))
}

/// The dashboard's counters.
#[utoipa::path(get, path = "/overview", operation_id = "account_overview", tag = "billing", security(("bearer" = [])),
    responses((status = 200, body = wire::Overview), (status = 401, body = wire::ErrorBody)))]
pub async fn overview(
    state: Data<AppState>,
    caller: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let overview = state.subscriptions.overview(caller.account()).await?;
    Ok(HttpResponse::Ok().json(overview_body(overview)))
}

/// The account's plan, balance and pause. Billing fills balance, pause and renewsAt.
#[utoipa::path(get, path = "/subscription", tag = "billing", security(("bearer" = [])),
    responses((status = 200, body = wire::SubscriptionReply), (status = 401, body = wire::ErrorBody)))]
pub async fn get_subscription(
    state: Data<AppState>,
    caller: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let subscription = state.subscriptions.subscription(caller.account()).await?;
    Ok(HttpResponse::Ok().json(subscription_reply(subscription)))
}

/// Moves to a plan priced the same or lower. A dearer plan goes through checkout.
#[utoipa::path(post, path = "/subscription/plan", tag = "billing", security(("session" = [])),
    request_body = wire::ChangePlanRequest,
    responses((status = 200, body = wire::SubscriptionReply),
        (status = 400, body = wire::ErrorBody, description = "invalid_field: unknown planId"),
        (status = 402, body = wire::ErrorBody, description = "payment_required: a dearer plan (use checkout) or Enterprise (by contract)"),
        (status = 409, body = wire::ErrorBody, description = "downgrade_blocked: addresses or devices do not fit the plan"),
        (status = 503, body = wire::ErrorBody, description = "provider_unavailable: the move is scheduled, but the card provider could not be told to stop renewing or to renew the new plan; choose the plan again")))]
pub async fn change_plan(
    state: Data<AppState>,
    caller: SessionCaller,
    Json(body): Json<wire::ChangePlanRequest>,
) -> Result<HttpResponse, ApiError> {
    let target = body.plan_id.parse::<PlanId>().map_err(|_| {
        ApiError::invalid_field(
            "planId",
            "unknown plan; one of free, operator, scale, fleet, enterprise",
        )
    })?;
    state
        .subscriptions
        .change_plan(&caller.account, target)
        .await?;
    // While a card subscription renews: a move to Free stops its renewal at
    // the provider (whose notice then sets `renewing`); a move to a cheaper
    // paid plan, or taking one back, changes the price it renews at.
    state.billing.follow_plan_change(&caller.account).await?;
    let subscription = state.subscriptions.subscription(&caller.account).await?;
    Ok(HttpResponse::Ok().json(subscription_reply(subscription)))
}
