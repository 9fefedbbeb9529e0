//! `plan list|show|change`, `usage`, `billing providers|checkout|payment`.

use anyhow::{Context, Result};
use sealpost_client::billing::{CountUsage, GatedUsage, PaymentStatus, Subscription, WindowUsage};
use sealpost_kernel::{PaymentId, PlanId};

use super::{Ctx, now, relative};

fn plan_id(text: &str) -> Result<PlanId> {
    text.trim()
        .to_ascii_lowercase()
        .parse::<PlanId>()
        .ok()
        .with_context(|| {
            format!("{text:?} is not a plan; one of free, operator, scale, fleet, enterprise")
        })
}

/// Cents as dollars: 4900 -> "$49.00".
fn dollars(cents: i64) -> String {
    format!("${}.{:02}", cents / 100, cents % 100)
}

fn limit(value: Option<u64>) -> String {
    value.map_or_else(|| "unlimited".to_owned(), |n| n.to_string())
}

/// Every plan with its price and main limits.
pub async fn plan_list(ctx: &Ctx) -> Result<()> {
    let plans = ctx.public_client()?.plans().await?;
    println!(
        "{:<11} {:>14} {:>9} {:>9} {:>12} {:>8} {:>8}",
        "PLAN", "PRICE/30 DAYS", "ADDRESSES", "DEVICES", "MAIL/30 DAYS", "DOMAINS", "WEBHOOKS"
    );
    for plan in plans {
        let price = match plan.price_cents {
            Some(0) => "free".to_owned(),
            Some(cents) => dollars(i64::from(cents)),
            None => "by contract".to_owned(),
        };
        println!(
            "{:<11} {:>14} {:>9} {:>9} {:>12} {:>8} {:>8}",
            plan.id,
            price,
            plan.limits.addresses,
            limit(plan.limits.devices.map(u64::from)),
            plan.limits.received_per_30_days,
            plan.limits.own_domains,
            plan.limits.webhooks,
        );
    }
    Ok(())
}

fn print_subscription(subscription: &Subscription) {
    println!(
        "Plan: {} ({})",
        subscription.plan_name, subscription.plan_id
    );
    let now = now();
    match subscription.renews_at {
        Some(at) => println!(
            "Paid until: {at} ({}); renew before then with `sealpost billing checkout {} --provider ...`",
            relative(at, now),
            subscription.plan_id
        ),
        None => println!("Paid until: nothing to pay"),
    }
    if let Some(pause) = &subscription.pause {
        println!(
            "Paused since {}: {} addresses and {} devices; mail to them is held until paid.",
            pause.since, pause.addresses, pause.devices
        );
        match pause.plan_id {
            Some(plan) => println!(
                "Pay for {plan} to release them (`sealpost billing checkout {plan} --provider ...`)."
            ),
            None => println!("What the current plan does not cover stays paused."),
        }
        println!("Deleted at {} unless paid.", pause.deletes_at);
    }
}

/// The account's plan and where it stands.
pub async fn plan_show(ctx: &Ctx) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    print_subscription(&client.subscription().await?);
    Ok(())
}

/// Moves to a plan priced the same or lower.
pub async fn plan_change(ctx: &Ctx, plan: &str) -> Result<()> {
    let plan = plan_id(plan)?;
    let (_, client) = ctx.signed_in()?;
    let subscription = client.change_plan(plan).await?;
    print_subscription(&subscription);
    Ok(())
}

fn row(name: &str, used: u64, limit: &str, resets: &str) {
    println!("{name:<20} {used:>10} {limit:>12}  {resets}");
}

fn window_row(name: &str, usage: WindowUsage) {
    row(
        name,
        usage.used,
        &usage.limit.to_string(),
        &format!("resets {}", usage.window_ends_at),
    );
}

fn count_row(name: &str, usage: CountUsage) {
    row(name, usage.used, &limit(usage.limit), "");
}

fn gated_row(name: &str, usage: GatedUsage) {
    let shown = if usage.allowed {
        limit(usage.limit)
    } else {
        "not on plan".to_owned()
    };
    row(name, usage.used, &shown, "");
}

/// `GET /usage` as a table.
pub async fn usage(ctx: &Ctx) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    let usage = client.usage().await?;
    println!("Plan: {} ({})", usage.plan.name, usage.plan.id);
    println!("{:<20} {:>10} {:>12}", "", "USED", "LIMIT");
    row(
        "addresses",
        usage.addresses.used,
        &usage.addresses.limit.to_string(),
        &format!(
            "{} assigned, {} more can be created",
            usage.addresses.assigned, usage.addresses.remaining
        ),
    );
    window_row("mail received", usage.messages_received);
    window_row("mail sent (hour)", usage.messages_sent.hour);
    window_row("mail sent (day)", usage.messages_sent.day);
    window_row("object reads", usage.object_reads);
    count_row("devices", usage.devices);
    count_row("paired", usage.paired);
    let agents = if usage.agents.allowed {
        "allowed"
    } else {
        "not on plan"
    };
    row("agents", usage.agents.used, agents, "");
    gated_row("api keys", usage.api_keys);
    gated_row("webhooks", usage.webhooks);
    count_row("own domains", usage.domains);
    row("messages stored", usage.messages_stored, "", "");
    Ok(())
}

/// The payment providers this service takes.
pub async fn providers(ctx: &Ctx) -> Result<()> {
    let providers = ctx.public_client()?.billing_providers().await?;
    if providers.is_empty() {
        println!("This service takes no payments.");
    }
    for provider in providers {
        println!("{:<8} {}", provider.id, provider.kind);
    }
    Ok(())
}

/// Starts a checkout and prints where to pay.
pub async fn checkout(ctx: &Ctx, plan: &str, provider: &str) -> Result<()> {
    let plan = plan_id(plan)?;
    let (_, client) = ctx.signed_in()?;
    let checkout = client
        .checkout(plan, provider.trim().to_ascii_lowercase().as_str())
        .await?;
    println!("{}", checkout.url);
    eprintln!(
        "Payment {} for {} ({} {}); pay at the url above, then `sealpost billing payment {}`.",
        checkout.payment.id,
        checkout.payment.plan_id,
        dollars(checkout.payment.amount),
        checkout.payment.currency,
        checkout.payment.id
    );
    Ok(())
}

/// One payment and its status.
pub async fn payment(ctx: &Ctx, id: &str) -> Result<()> {
    let id = PaymentId::parse(id.trim())
        .with_context(|| format!("{id:?} is not a payment id (pay_...)"))?;
    let (_, client) = ctx.signed_in()?;
    let payment = client.payment(&id).await?;
    println!("Payment:  {}", payment.id);
    println!("Status:   {}", payment.status);
    println!("Plan:     {}", payment.plan_id);
    println!(
        "Amount:   {} {} via {}",
        dollars(payment.amount),
        payment.currency,
        payment.provider
    );
    println!("Created:  {}", payment.created_at);
    if let Some(at) = payment.settled_at {
        println!("Settled:  {at}");
    }
    if payment.status == PaymentStatus::Pending {
        println!("Pay at:   {}", payment.url);
    }
    Ok(())
}
