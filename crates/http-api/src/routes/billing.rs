//! The billing endpoints that involve a payment provider (docs/api.md
//! "Billing"): the provider list, checkout, payments, the providers' signed
//! notices, and the sandbox checkout page.

use actix_web::http::header::ContentType;
use actix_web::web::{Bytes, Data, Form, Path, Query};
use actix_web::{HttpRequest, HttpResponse};
use sealpost_billing::{NoticeOutcome, Payment, ProviderId, SandboxProvider, Settled};
use sealpost_kernel::{PageLimits, PaymentId, PlanId};
use sealpost_wire as wire;
use serde::Deserialize;

use crate::auth::{Authenticated, SessionCaller};
use crate::error::ApiError;
use crate::json::Json;
use crate::routes::activity::PageQuery;
use crate::state::AppState;

/// The payment providers this deployment takes: those with keys configured
/// and not switched off by an operator.
#[utoipa::path(get, path = "/billing/providers", operation_id = "list_payment_providers", tag = "billing",
    responses((status = 200, body = wire::ProviderList)))]
pub async fn providers(state: Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(wire::ProviderList {
        providers: state
            .billing
            .providers()
            .into_iter()
            .map(|id| wire::Provider {
                id: id.as_str().into(),
                kind: id.kind().to_owned(),
            })
            .collect(),
    })
}

fn payment_body(payment: Payment) -> wire::Payment {
    wire::Payment {
        id: payment.id,
        status: payment.status.as_str().into(),
        plan_id: payment.plan,
        provider: payment.provider.as_str().into(),
        amount: payment.amount,
        currency: payment.currency,
        created_at: payment.created_at,
        settled_at: payment.settled_at,
        url: payment.checkout_url,
    }
}

/// Starts a checkout for one 30-day period of a plan: an upgrade, a renewal
/// of the current plan, a cheaper plan whose limits the account fits, or any
/// plan while paused after a missed payment.
#[utoipa::path(post, path = "/billing/checkout", tag = "billing", security(("session" = [])),
    request_body = wire::CheckoutRequest,
    responses((status = 201, body = wire::Checkout),
        (status = 400, body = wire::ErrorBody, description = "invalid_field: unknown planId or provider, or a plan not sold through checkout (free, enterprise)"),
        (status = 409, body = wire::ErrorBody, description = "downgrade_blocked: the account holds more than the plan allows; renewal_active: a card subscription renews the plan and the provider cannot renew (turn renewal off in the billing portal first)"),
        (status = 503, body = wire::ErrorBody, description = "provider_unavailable: no keys, switched off, or the provider is failing")))]
pub async fn checkout(
    state: Data<AppState>,
    caller: SessionCaller,
    Json(body): Json<wire::CheckoutRequest>,
) -> Result<HttpResponse, ApiError> {
    let plan = body.plan_id.parse::<PlanId>().map_err(|_| {
        ApiError::invalid_field("planId", "unknown plan; one of operator, scale, fleet")
    })?;
    let provider = body.provider.parse::<ProviderId>().map_err(|_| {
        ApiError::invalid_field("provider", "unknown provider; see GET /billing/providers")
    })?;
    let payment = state
        .billing
        .checkout(&caller.account, plan, provider)
        .await?;
    Ok(HttpResponse::Created().json(wire::Checkout {
        url: payment.checkout_url.clone(),
        payment: payment_body(payment),
    }))
}

/// A session of the card provider's customer portal for the account, where
/// the payer turns renewal off or on and keeps the card and invoices: the
/// url to send the payer to (it expires within minutes; ask again).
#[utoipa::path(post, path = "/billing/portal", operation_id = "billing_portal", tag = "billing", security(("session" = [])),
    responses((status = 200, body = wire::BillingPortal),
        (status = 404, body = wire::ErrorBody, description = "not_found: the account never paid by card (crypto and sandbox payments have no portal)"),
        (status = 503, body = wire::ErrorBody, description = "provider_unavailable: the card provider is not configured here, or failing")))]
pub async fn portal(
    state: Data<AppState>,
    caller: SessionCaller,
) -> Result<HttpResponse, ApiError> {
    let url = state.billing.portal(&caller.account).await?;
    Ok(HttpResponse::Ok().json(wire::BillingPortal { url }))
}

/// The account's payments, newest first: checkouts started (whatever their
/// state) and renewals the card provider charged. Ids, plans, amounts and
/// states only: the card is the provider's and never here.
#[utoipa::path(get, path = "/billing/payments", operation_id = "list_payments", tag = "billing", security(("bearer" = [])),
    params(PageQuery),
    responses((status = 200, body = wire::PaymentPage)))]
pub async fn list_payments(
    state: Data<AppState>,
    caller: Authenticated,
    query: Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let request = query.request(PageLimits::STANDARD)?;
    let page = state.billing.payments(caller.account(), &request).await?;
    Ok(HttpResponse::Ok().json(wire::PaymentPage {
        payments: page.items.into_iter().map(payment_body).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// One of the account's payments. The plan changes when it is paid.
#[utoipa::path(get, path = "/billing/payments/{id}", tag = "billing", security(("bearer" = [])),
    params(("id" = sealpost_kernel::PaymentId, Path)),
    responses((status = 200, body = wire::PaymentReply), (status = 404, body = wire::ErrorBody)))]
pub async fn get_payment(
    state: Data<AppState>,
    caller: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = PaymentId::parse(&id).map_err(|_| ApiError::not_found())?;
    let payment = state.billing.payment(caller.account(), &id).await?;
    Ok(HttpResponse::Ok().json(wire::PaymentReply {
        payment: payment_body(payment),
    }))
}

/// A payment provider's signed notice (Stripe webhook with `Stripe-Signature`,
/// BTCPay webhook with `BTCPay-Sig`), verified against the raw body. A paid
/// payment changes the plan once, however often its notice arrives.
#[utoipa::path(post, path = "/billing/notices/{provider}", operation_id = "payment_notice", tag = "billing",
    params(("provider" = String, Path, description = "stripe or btcpay")),
    responses((status = 200, body = wire::NoticeReceived),
        (status = 400, body = wire::ErrorBody, description = "invalid_field: the signature header is missing, malformed, wrong or too old; or the body is not the provider's notice"),
        (status = 404, body = wire::ErrorBody, description = "no such provider"),
        (status = 503, body = wire::ErrorBody, description = "provider_unavailable: not enabled here")))]
pub async fn notice(
    state: Data<AppState>,
    provider: Path<String>,
    request: HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let provider = match provider.parse::<ProviderId>() {
        Ok(ProviderId::Sandbox) | Err(_) => return Err(ApiError::not_found()),
        Ok(provider) => provider,
    };
    let header = state.billing.signature_header(provider)?;
    let signature = request
        .headers()
        .get(header)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let settled = state.billing.notice(provider, signature, &body).await?;
    match &settled {
        Settled::Changed(payment) => {
            tracing::info!(payment = %payment.id, status = %payment.status, %provider, "payment settled");
        }
        Settled::Renewing(renewing) => {
            tracing::info!(renewing, %provider, "subscription renewal changed");
        }
        Settled::Unchanged | Settled::UnknownReference => {}
    }
    Ok(HttpResponse::Ok().json(wire::NoticeReceived { received: true }))
}

fn sandbox_payment_id(text: &str) -> Result<PaymentId, ApiError> {
    PaymentId::parse(text).map_err(|_| ApiError::not_found())
}

fn page(title: &str, body: &str) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(ContentType::html())
        .body(format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
             <body><h1>{title}</h1>{body}</body></html>"
        ))
}

/// The sandbox checkout page (only while `SEALPOST_BILLING_SANDBOX` is on):
/// a form that pays or fails the payment.
pub async fn sandbox_page(
    state: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = sandbox_payment_id(&id)?;
    let payment = state.billing.sandbox_payment(&id).await?;
    let amount = format!(
        "{}.{:02} {}",
        payment.amount / 100,
        payment.amount % 100,
        payment.currency
    );
    Ok(page(
        "Sandbox checkout",
        &format!(
            "<p>{plan} plan, 30 days: {amount}. Status: {status}.</p>\
             <form method=\"post\"><button name=\"outcome\" value=\"paid\">Pay</button> \
             <button name=\"outcome\" value=\"failed\">Fail</button></form>",
            plan = payment.plan.display_name(),
            status = payment.status,
        ),
    ))
}

#[derive(Deserialize)]
pub struct SandboxForm {
    outcome: String,
}

/// The sandbox form's post: settles the payment through the same path a real
/// provider's verified notice takes.
pub async fn sandbox_settle(
    state: Data<AppState>,
    id: Path<String>,
    form: Form<SandboxForm>,
) -> Result<HttpResponse, ApiError> {
    let id = sandbox_payment_id(&id)?;
    let outcome = match form.outcome.as_str() {
        "paid" => NoticeOutcome::Paid,
        "failed" => NoticeOutcome::Failed,
        _ => {
            return Err(ApiError::invalid_field(
                "outcome",
                "expected paid or failed",
            ));
        }
    };
    // 404 unless the sandbox is on and the payment is the sandbox's.
    state.billing.sandbox_payment(&id).await?;
    let settled = state
        .billing
        .settle(ProviderId::Sandbox, &SandboxProvider::notice(&id, outcome))
        .await?;
    let status = match settled {
        Settled::Changed(payment) => payment.status,
        // Already settled (the form posted again): show how it stands.
        _ => state.billing.sandbox_payment(&id).await?.status,
    };
    Ok(page(
        "Sandbox checkout",
        &format!("<p>Payment {id} is {status}.</p>"),
    ))
}

/// Where a provider sends the payer back after its checkout.
pub async fn returned() -> HttpResponse {
    page(
        "Thank you",
        "<p>Your plan changes as soon as the payment provider confirms the payment. \
         You can close this page; <code>GET /subscription</code> shows where the account stands.</p>",
    )
}
