//! `domain add|list|check|remove`: own domains (Scale and up). Each answer
//! says what to do next in words: the TXT record to publish, the
//! nameservers to set at the registrar, or that addresses can be created.

use anyhow::Result;
use sealpost_client::ClientError;
use sealpost_client::domains::{DomainStep, OwnDomain};

use super::{Ctx, now, relative, reworded};
use crate::table::{Align, Table};
use crate::{escape, output};

/// The words for a step in `domain list`.
fn step_name(step: &DomainStep) -> &str {
    match step {
        DomainStep::VerifyOwnership => "verify ownership",
        DomainStep::AwaitingSetup => "awaiting setup",
        DomainStep::ChangeNameservers => "change nameservers",
        DomainStep::SettingUp => "setting up",
        DomainStep::Live => "live",
        DomainStep::Attention => "attention",
        DomainStep::Other(other) => other.as_str(),
    }
}

fn check_again(name: &str) -> String {
    format!("then run `sealpost domain check {name}`")
}

fn nameservers(domain: &OwnDomain) -> String {
    domain
        .nameservers
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|ns| escape::line(ns).into_owned())
        .collect::<Vec<_>>()
        .join(" and ")
}

/// What the domain's step means and what the person does next, one
/// sentence a line.
fn next_step(domain: &OwnDomain) -> Vec<String> {
    let name = escape::line(&domain.domain);
    let record = &domain.verification;
    let mut lines = match &domain.step {
        DomainStep::VerifyOwnership => vec![
            "Ownership is not proved yet: the TXT record does not show in DNS.".to_owned(),
            "Publish this TXT record at your DNS provider:".to_owned(),
            format!("  Name:  {}", escape::line(&record.name)),
            format!("  Type:  {}", escape::line(&record.kind)),
            format!("  Value: {}", escape::line(&record.value)),
            format!(
                "{} (DNS changes can take a few minutes to show).",
                capitalised(&check_again(&name))
            ),
        ],
        DomainStep::AwaitingSetup => vec![
            "Ownership proved; the nameserver lookup did not answer.".to_owned(),
            format!("Wait a few minutes, {}.", check_again(&name)),
        ],
        DomainStep::ChangeNameservers => vec![
            "Ownership proved.".to_owned(),
            format!(
                "At your registrar, set the nameservers of {name} to exactly {} (no others),",
                nameservers(domain)
            ),
            format!("{}.", check_again(&name)),
        ],
        DomainStep::SettingUp => vec![
            "Delegated to the service's nameservers; waiting for its MX record to show in DNS."
                .to_owned(),
            format!("Wait a few minutes, {}.", check_again(&name)),
        ],
        DomainStep::Live => vec![
            format!("{name} is live: it receives mail."),
            format!(
                "Create addresses on it with `sealpost address create --domain {name} --local-part NAME`."
            ),
        ],
        DomainStep::Attention if domain.verified_at.is_none() => vec![
            "Another account proved this domain first; this claim cannot go on.".to_owned(),
            format!("Remove it with `sealpost domain remove {name}`."),
        ],
        DomainStep::Attention => vec![
            "The domain's delegation or MX record went away.".to_owned(),
            format!(
                "At your registrar, make sure the nameservers are exactly {},",
                nameservers(domain)
            ),
            format!("{}.", check_again(&name)),
        ],
        DomainStep::Other(step) => vec![format!(
            "The service reports the step {}, which this version of sealpost does not know.",
            escape::line(step)
        )],
    };
    if let Some(until) = domain.receives_until {
        lines.push(format!(
            "The plan no longer includes own domains: no new addresses, and mail is received until {until} ({}), refused after.",
            relative(until, now())
        ));
    }
    lines
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

fn print_next_step(domain: &OwnDomain) {
    for line in next_step(domain) {
        outln!("{line}");
    }
}

/// `domain add DOMAIN`.
pub async fn add(ctx: &Ctx, domain: &str) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    let added = client
        .add_domain(domain)
        .await
        .map_err(|err| explained(err, domain))?;
    outln!(
        "Claimed {} (step: {}).",
        escape::line(&added.domain.domain),
        step_name(&added.domain.step)
    );
    print_next_step(&added.domain);
    Ok(())
}

/// `domain list`.
pub async fn list(ctx: &Ctx) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    let domains = client.own_domains().await?;
    if domains.is_empty() {
        outln!("No own domains; add one with `sealpost domain add DOMAIN`.");
        return Ok(());
    }
    let mut table = Table::new(&[
        ("DOMAIN", Align::Left),
        ("STEP", Align::Left),
        ("CHECKED", Align::Left),
    ]);
    for domain in &domains {
        table.row(vec![
            escape::line(&domain.domain).into_owned(),
            step_name(&domain.step).to_owned(),
            domain
                .checked_at
                .map_or_else(|| "never".to_owned(), |at| at.to_string()),
        ]);
    }
    output::stdout_fmt(format_args!("{}", table.render()));
    outln!("`sealpost domain check DOMAIN` checks one now and says what to do next.");
    Ok(())
}

/// `domain check DOMAIN`.
pub async fn check(ctx: &Ctx, domain: &str) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    let checked = client
        .check_domain(domain)
        .await
        .map_err(|err| explained(err, domain))?;
    outln!(
        "{}: {}",
        escape::line(&checked.domain),
        step_name(&checked.step)
    );
    print_next_step(&checked);
    Ok(())
}

/// `domain remove DOMAIN`.
pub async fn remove(ctx: &Ctx, domain: &str) -> Result<()> {
    let (_, client) = ctx.signed_in()?;
    client
        .remove_domain(domain)
        .await
        .map_err(|err| explained(err, domain))?;
    outln!("Removed {}.", escape::line(domain.trim()));
    Ok(())
}

/// The service's refusals, said with the command that helps.
fn explained(err: ClientError, domain: &str) -> ClientError {
    let name = escape::line(domain.trim()).into_owned();
    let message = match err.code() {
        "not_found" => format!("{name} is not one of this account's domains (`sealpost domain list`)"),
        "plan_required" => "own domains come with the Scale plan and up; `sealpost billing checkout scale` pays for it".to_owned(),
        "domain_in_use" => format!(
            "addresses exist on {name}; delete them first (`sealpost address list`, `sealpost address delete`)"
        ),
        _ => return err,
    };
    reworded(err, message)
}

#[cfg(test)]
mod tests {
    use sealpost_client::domains::DnsRecord;
    use sealpost_kernel::Timestamp;

    use super::*;

    fn domain(step: DomainStep, proved: bool) -> OwnDomain {
        let at = Timestamp::parse("2026-01-01T00:00:00.000Z").unwrap();
        OwnDomain {
            domain: "example.org".into(),
            step,
            verification: DnsRecord {
                kind: "TXT".into(),
                name: "_service-verify.example.org".into(),
                value: "service-verify=token".into(),
            },
            nameservers: proved.then(|| vec!["ns1.example.net".into(), "ns2.example.net".into()]),
            created_at: at,
            verified_at: proved.then_some(at),
            checked_at: None,
            receives_until: None,
        }
    }

    #[test]
    fn each_step_names_what_to_do_next() {
        let text = next_step(&domain(DomainStep::VerifyOwnership, false)).join("\n");
        assert!(
            text.contains("  Name:  _service-verify.example.org"),
            "{text}"
        );
        assert!(text.contains("  Value: service-verify=token"), "{text}");
        assert!(
            text.contains("Then run `sealpost domain check example.org`"),
            "{text}"
        );
        let text = next_step(&domain(DomainStep::ChangeNameservers, true)).join("\n");
        assert!(
            text.contains("to exactly ns1.example.net and ns2.example.net"),
            "{text}"
        );
        let text = next_step(&domain(DomainStep::Live, true)).join("\n");
        assert!(
            text.contains("sealpost address create --domain example.org"),
            "{text}"
        );
        let lost = next_step(&domain(DomainStep::Attention, false)).join("\n");
        assert!(
            lost.contains("sealpost domain remove example.org"),
            "{lost}"
        );
        let gone = next_step(&domain(DomainStep::Attention, true)).join("\n");
        assert!(gone.contains("nameservers are exactly"), "{gone}");
    }
}
