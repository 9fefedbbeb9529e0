//! `plan list|show|change`, `usage`, `billing providers|checkout|payment|portal`.

use anyhow::{Context, Result, bail};
use sealpost_client::ClientError;
use sealpost_client::billing::{
    CountUsage, GatedUsage, PaymentStatus, PlanOffer, Provider, Subscription, WindowUsage,
};
use sealpost_kernel::{PaymentId, PlanId};

use super::{Ctx, now, relative, reworded};
use crate::escape;
use crate::output;
use crate::table::{Align, Table};

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

/// Every plan with its price and main limits, in columns.
pub async fn plan_list(ctx: &Ctx) -> Result<()> {
    let plans = ctx.public_client()?.plans().await?;
    output::stdout_fmt(format_args!("{}", plan_table(&plans)));
    Ok(())
}

fn plan_table(plans: &[PlanOffer]) -> String {
    let mut table = Table::new(&[
        ("PLAN", Align::Left),
        ("PRICE/30 DAYS", Align::Right),
        ("ADDRESSES", Align::Right),
        ("DEVICES", Align::Right),
        ("MAIL/30 DAYS", Align::Right),
        ("DOMAINS", Align::Right),
        ("WEBHOOKS", Align::Right),
    ]);
    for plan in plans {
        let price = match plan.price_cents {
            Some(0) => "free".to_owned(),
            Some(cents) => dollars(i64::from(cents)),
            None => "by contract".to_owned(),
        };
        table.row(vec![
            plan.id.to_string(),
            price,
            plan.limits.addresses.to_string(),
            limit(plan.limits.devices.map(u64::from)),
            plan.limits.received_per_30_days.to_string(),
            plan.limits.own_domains.to_string(),
            plan.limits.webhooks.to_string(),
        ]);
    }
    table.render()
}

fn print_subscription(subscription: &Subscription) {
    outln!(
        "Plan: {} ({})",
        subscription.plan_name,
        subscription.plan_id
    );
    let now = now();
    match subscription.renews_at {
        Some(at) if subscription.renewing => outln!(
            "Paid until: {at} ({}); renews by card then (`sealpost billing portal` turns that off)",
            relative(at, now),
        ),
        Some(at) => outln!(
            "Paid until: {at} ({}); renew before then with `sealpost billing checkout {}`",
            relative(at, now),
            subscription.plan_id
        ),
        None => outln!("Paid until: nothing to pay"),
    }
    outln!("{}", renewing_line(subscription));
    if let Some(pending) = subscription.pending_plan_id {
        outln!(
            "Scheduled: moves to {pending} at {} (the end of the paid period); `sealpost plan change {}` keeps {}",
            subscription
                .pending_at
                .map_or_else(|| "the period end".to_owned(), |at| at.to_string()),
            subscription.plan_id,
            subscription.plan_id
        );
    }
    if let Some(pause) = &subscription.pause {
        outln!(
            "Paused since {}: {} addresses and {} devices; mail to them is held until paid.",
            pause.since,
            pause.addresses,
            pause.devices
        );
        match pause.plan_id {
            Some(plan) => {
                outln!("Pay for {plan} to release them (`sealpost billing checkout {plan}`).")
            }
            None => outln!("What the current plan does not cover stays paused."),
        }
        outln!("Deleted at {} unless paid.", pause.deletes_at);
    }
}

/// Whether the paid period renews by itself.
fn renewing_line(subscription: &Subscription) -> &'static str {
    if subscription.renewing {
        "Renewing: yes, by card"
    } else {
        "Renewing: no"
    }
}

/// The account's plan and where it stands.
pub async fn plan_show(ctx: &Ctx) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    print_subscription(&client.subscription().await?);
    Ok(())
}

/// The service's refusal of a plan change, naming the command to use.
fn change_refused(err: ClientError, target: PlanId, plans: &[PlanOffer]) -> ClientError {
    let name = plans
        .iter()
        .find(|p| p.id == target)
        .map_or_else(|| target.to_string(), |p| p.name.clone());
    match err.code() {
        "payment_required" if target == PlanId::Enterprise => {
            let message = format!("the {name} plan is arranged by contract with the service");
            reworded(err, message)
        }
        "payment_required" => {
            let message = format!(
                "the {name} plan costs more than the current one; pay for it with `sealpost billing checkout {target}`"
            );
            reworded(err, message)
        }
        "downgrade_blocked" => {
            let message = format!(
                "{}; `sealpost address delete` and `sealpost device remove` do that",
                err
            );
            reworded(err, message)
        }
        _ => err,
    }
}

/// Moves to a plan priced the same or lower; asks first when that loses
/// paid time, unless `yes`.
///
/// A move down while a paid period runs waits for its end, so nothing paid
/// for is lost and nothing asks first; `--yes` is still accepted for scripts.
pub async fn plan_change(ctx: &Ctx, plan: &str, _yes: bool) -> Result<()> {
    let target = plan_id(plan)?;
    let (_, client) = ctx.signed_in()?;
    let plans = client.plans().await?;
    let subscription = client
        .change_plan(target)
        .await
        .map_err(|err| change_refused(err, target, &plans))?;
    print_subscription(&subscription);
    Ok(())
}

fn row(name: &str, used: u64, limit: &str, note: &str) {
    outln!(
        "{}",
        format!("{name:<20} {used:>10} {limit:>12}  {note}").trim_end()
    );
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
    let subscription = client.subscription().await?;
    outln!("Plan: {} ({})", usage.plan.name, usage.plan.id);
    outln!("{}", renewing_line(&subscription));
    if let Some(pending) = subscription.pending_plan_id {
        outln!(
            "Scheduled: moves to {pending} at {}",
            subscription
                .pending_at
                .map_or_else(|| "the period end".to_owned(), |at| at.to_string())
        );
    }
    outln!("{:<20} {:>10} {:>12}", "", "USED", "LIMIT");
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
    row(
        "bytes stored",
        usage.stored_bytes.used,
        &usage.stored_bytes.limit.to_string(),
        "sealed mail held; new mail is refused at the limit",
    );
    Ok(())
}

/// The payment providers this service takes.
pub async fn providers(ctx: &Ctx) -> Result<()> {
    let providers = ctx.public_client()?.billing_providers().await?;
    if providers.is_empty() {
        outln!("This service takes no payments.");
    }
    let mut table = Table::headless(&[Align::Left, Align::Left]);
    for provider in &providers {
        table.row(vec![
            escape::line(provider.id.as_str()).into_owned(),
            escape::line(&provider.kind).into_owned(),
        ]);
    }
    output::stdout_fmt(format_args!("{}", table.render()));
    Ok(())
}

/// The provider to pay through: `wanted` when the service takes it, else
/// the only one it takes.
fn choose_provider(providers: &[Provider], wanted: Option<&str>) -> Result<String> {
    let listed = || {
        let names: Vec<String> = providers
            .iter()
            .map(|p| format!("{} ({})", p.id, p.kind))
            .collect();
        escape::line(&names.join(", ")).into_owned()
    };
    match (wanted, providers) {
        (_, []) => bail!("this service takes no payments"),
        (None, [only]) => Ok(only.id.as_str().to_owned()),
        (None, _) => bail!(
            "this service takes several payment providers; choose one with --provider: {}",
            listed()
        ),
        (Some(wanted), _) => {
            let wanted = wanted.trim().to_ascii_lowercase();
            if providers.iter().any(|p| p.id.as_str() == wanted) {
                Ok(wanted)
            } else {
                bail!(
                    "this service does not take {}; --provider is one of: {}",
                    escape::line(&wanted),
                    listed()
                )
            }
        }
    }
}

/// Starts a checkout and prints where to pay.
pub async fn checkout(ctx: &Ctx, plan: &str, provider: Option<&str>) -> Result<()> {
    let plan = plan_id(plan)?;
    let (_, client) = ctx.signed_in()?;
    let provider = choose_provider(&client.billing_providers().await?, provider)?;
    let checkout = client.checkout(plan, &provider).await?;
    outln!("{}", escape::line(&checkout.url));
    errln!(
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
/// A session of the card provider's billing portal (turn renewal off or
/// on, change the card, see invoices): prints its url.
pub async fn portal(ctx: &Ctx) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    let url = client
        .billing_portal()
        .await
        .map_err(|err| match err.code() {
            "not_found" => reworded(
                err,
                "this account has never paid by card; the billing portal is the card provider's"
                    .to_owned(),
            ),
            _ => err,
        })?;
    outln!("{}", escape::line(&url));
    Ok(())
}

pub async fn payment(ctx: &Ctx, id: &str) -> Result<()> {
    let id = PaymentId::parse(id.trim())
        .with_context(|| format!("{id:?} is not a payment id (pay_...)"))?;
    let (_, client) = ctx.signed_in()?;
    let payment = client.payment(&id).await?;
    outln!("Payment:  {}", payment.id);
    outln!("Status:   {}", payment.status);
    outln!("Plan:     {}", payment.plan_id);
    outln!(
        "Amount:   {} {} via {}",
        dollars(payment.amount),
        payment.currency,
        payment.provider
    );
    outln!("Created:  {}", payment.created_at);
    if let Some(at) = payment.settled_at {
        outln!("Settled:  {at}");
    }
    if payment.status == PaymentStatus::Pending {
        outln!("Pay at:   {}", escape::line(&payment.url));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use sealpost_client::billing::ProviderId;

    fn plans() -> Vec<PlanOffer> {
        let plan = |id: &str, name: &str, price: Option<u32>| {
            json!({
                "id": id, "name": name, "priceCents": price, "currency": "USD", "period": "30 days",
                "purchasable": price.is_some_and(|p| p > 0),
                "limits": {
                    "addresses": 3, "devices": null, "receivedPer30Days": 1000,
                    "sendsPerHour": 0, "sendsPerDay": 0, "objectReadsPerHour": 100,
                    "ownDomains": 0, "webhooks": 10, "teamMembers": 1,
                    "storedBytes": 1073741824, "apiKeys": 0, "agents": false
                }
            })
        };
        serde_json::from_value(json!([
            plan("free", "Free", Some(0)),
            plan("operator", "Operator", Some(900)),
            plan("scale", "Scale", Some(4900)),
            plan("enterprise", "Enterprise", None),
        ]))
        .unwrap()
    }

    #[test]
    fn the_provider_defaults_to_the_only_one() {
        let provider = |id: &str, kind: &str| Provider {
            id: ProviderId::from(id),
            kind: kind.to_owned(),
        };
        let one = [provider("sandbox", "sandbox")];
        let two = [provider("stripe", "card"), provider("btcpay", "crypto")];
        assert_eq!(choose_provider(&one, None).unwrap(), "sandbox");
        assert_eq!(choose_provider(&two, Some(" BTCPay ")).unwrap(), "btcpay");
        let err = choose_provider(&two, None).unwrap_err().to_string();
        assert!(
            err.contains("--provider: stripe (card), btcpay (crypto)"),
            "{err}"
        );
        let err = choose_provider(&one, Some("stripe"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not take stripe"), "{err}");
        assert!(err.contains("sandbox (sandbox)"), "{err}");
        let err = choose_provider(&[], None).unwrap_err().to_string();
        assert!(err.contains("takes no payments"), "{err}");
    }

    #[test]
    fn refusals_name_the_command_to_use() {
        let refused = |code: &str, message: &str| ClientError::Api {
            status: 402,
            code: code.to_owned(),
            message: message.to_owned(),
            retry_after: None,
        };
        let err = change_refused(
            refused(
                "payment_required",
                "upgrade through checkout (POST /billing/checkout)",
            ),
            PlanId::Scale,
            &plans(),
        );
        assert_eq!(
            err.to_string(),
            "the Scale plan costs more than the current one; pay for it with `sealpost billing checkout scale`"
        );
        assert_eq!(err.code(), "payment_required");
        let err = change_refused(
            refused("payment_required", "x"),
            PlanId::Enterprise,
            &plans(),
        );
        assert!(!err.to_string().contains('/'), "{err}");
        let err = change_refused(
            refused("downgrade_blocked", "4 addresses"),
            PlanId::Free,
            &plans(),
        );
        assert!(
            err.to_string()
                .starts_with("4 addresses; `sealpost address delete`"),
            "{err}"
        );
    }

    #[test]
    fn the_plan_table_lines_up() {
        let table = plan_table(&plans());
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 5, "{table}");
        // Every column but the first is right-aligned, so every line is as
        // long as the header.
        assert!(lines.iter().all(|l| l.len() == lines[0].len()), "{table}");
        assert!(lines[4].starts_with("enterprise") && lines[4].contains("by contract"));
    }
}
