//! `plans`, `usage` and a sandbox upgrade.

use sealpost_kernel::Timestamp;
use sealpost_testkit::TestApp;

use crate::support::{Cli, lines};

#[tokio::test(flavor = "multi_thread")]
async fn plans_usage_and_a_sandbox_upgrade_from_the_command_line() {
    let app = TestApp::spawn().await;
    // The CLI tells a running paid period by its own clock: the service's
    // starts at the same time.
    let start = Timestamp::from(chrono::Utc::now());
    app.clock.set(start);
    let paid_until = (start + chrono::TimeDelta::days(30)).to_string();
    let tmp = tempfile::tempdir().unwrap();
    let cli = Cli::new(&app, &tmp.path().join("laptop"));

    // The plan table needs no account; its columns line up (all but the
    // first are right-aligned, so every line is as long as the header).
    let plans = cli.ok(&["plan", "list"]).await;
    let scale = plans
        .lines()
        .find(|line| line.starts_with("scale"))
        .unwrap();
    assert!(
        scale.contains("$49.00") && scale.contains("1000"),
        "{plans}"
    );
    assert!(plans.contains("by contract"), "{plans}");
    let header_width = plans.lines().next().unwrap().len();
    assert!(
        plans.lines().all(|line| line.len() == header_width),
        "{plans}"
    );
    // The test service takes the sandbox only.
    let providers = cli.ok(&["billing", "providers"]).await;
    assert_eq!(lines(&providers), ["sandbox  sandbox"], "{providers}");

    cli.ok(&["init"]).await;
    let usage = cli.ok(&["usage"]).await;
    assert!(usage.contains("Plan: Free (free)"), "{usage}");
    let addresses = usage.lines().find(|l| l.starts_with("addresses")).unwrap();
    assert_eq!(
        addresses.split_whitespace().take(3).collect::<Vec<_>>(),
        ["addresses", "0", "3"],
        "{usage}"
    );
    let webhooks = usage.lines().find(|l| l.starts_with("webhooks")).unwrap();
    assert!(webhooks.contains("not on plan"), "{usage}");

    // An upgrade needs payment; the error names the command that pays, not
    // an API route.
    let refused = cli.fails(&["plan", "change", "scale"]).await;
    assert!(
        refused.contains("pay for it with `sealpost billing checkout scale`"),
        "{refused}"
    );
    assert!(refused.contains("(payment_required)"), "{refused}");
    assert!(!refused.contains("POST /"), "{refused}");

    // A provider the service does not take is refused with the list;
    // without --provider, the only one is used.
    let err = cli
        .fails(&["billing", "checkout", "scale", "--provider", "stripe"])
        .await;
    assert!(
        err.contains("does not take stripe; --provider is one of: sandbox (sandbox)"),
        "{err}"
    );
    let run = cli.run(&["billing", "checkout", "scale"]).await;
    assert!(run.ok, "{}", run.stderr);
    let url = run.stdout.trim().to_owned();
    assert!(
        url.starts_with(&format!("{}/billing/sandbox/pay_", app.base_url)),
        "{url}"
    );
    let payment_id = url.rsplit('/').next().unwrap().to_owned();
    assert!(
        cli.ok(&["billing", "payment", &payment_id])
            .await
            .contains("pending")
    );

    // Pay on the sandbox page, as a person would.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let paid = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("outcome=paid")
        .send()
        .await
        .unwrap();
    assert!(paid.status().is_success());
    assert!(
        cli.ok(&["billing", "payment", &payment_id])
            .await
            .contains("Status:   paid")
    );
    let shown = cli.ok(&["plan", "show"]).await;
    assert!(shown.contains("Plan: Scale (scale)"), "{shown}");
    assert!(
        shown.contains(&format!("Paid until: {paid_until}")),
        "{shown}"
    );
    let usage = cli.ok(&["usage"]).await;
    let addresses = usage.lines().find(|l| l.starts_with("addresses")).unwrap();
    assert!(addresses.contains(" 1000 "), "{usage}");

    // Fleet costs more than Scale: checkout again.
    let refused = cli.fails(&["plan", "change", "fleet"]).await;
    assert!(
        refused.contains("`sealpost billing checkout fleet`"),
        "{refused}"
    );

    // Back down to Free waits for the end of the paid month; choosing Scale
    // again takes it back.
    let scheduled = cli.ok(&["plan", "change", "free"]).await;
    assert!(scheduled.contains("Plan: Scale (scale)"), "{scheduled}");
    assert!(
        scheduled.contains(&format!("Scheduled: moves to free at {paid_until}")),
        "{scheduled}"
    );
    let shown = cli.ok(&["plan", "show"]).await;
    assert!(shown.contains("Scheduled: moves to free"), "{shown}");
    let kept = cli.ok(&["plan", "change", "scale"]).await;
    assert!(!kept.contains("Scheduled"), "{kept}");
    app.stop().await;
}
