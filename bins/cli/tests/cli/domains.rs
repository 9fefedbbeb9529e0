//! `domain`: an own domain claimed, proved, delegated, used and removed.

use sealpost_testkit::TestApp;

use crate::support::{Cli, after, line_of, pay_in_sandbox, printed_phrase};

#[tokio::test(flavor = "multi_thread")]
async fn an_own_domain_is_claimed_proved_delegated_used_and_removed_from_the_command_line() {
    use sealpost_testkit::dns::PublicDns;

    const NS: [&str; 2] = ["ns1.sealpost.test", "ns2.sealpost.test"];
    const MX: &str = "mx.sealpost.test";
    let dns = PublicDns::start(&["example.org"]).await;
    let resolver = dns.addr();
    let app = TestApp::spawn_with(move |config| {
        config.dns.resolver = Some(resolver);
        config.dns.nameservers = NS.iter().map(|ns| ns.to_string()).collect();
        config.dns.mx_host = MX.into();
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Cli::new(&app, &tmp.path().join("operator"));
    a.phrase = Some(printed_phrase(&a.ok(&["init"]).await));
    assert!(a.ok(&["domain", "list"]).await.contains("No own domains"));

    // Below Scale: the plan, and how to get it.
    let err = a.fails(&["domain", "add", "example.org"]).await;
    assert!(
        err.contains("`sealpost billing checkout scale`") && err.contains("(plan_required)"),
        "{err}"
    );
    let url = a
        .ok(&["billing", "checkout", "scale"])
        .await
        .trim()
        .to_owned();
    pay_in_sandbox(&url).await;

    // A name that cannot be an own domain is refused with the service's code.
    let err = a.fails(&["domain", "add", "127.0.0.1"]).await;
    assert!(err.contains("(invalid_field)"), "{err}");

    // The claim: the record to publish and the command to run next.
    let out = a.ok(&["domain", "add", "Example.ORG."]).await;
    assert!(
        out.contains("Claimed example.org (step: verify ownership)"),
        "{out}"
    );
    assert!(out.contains("Publish this TXT record"), "{out}");
    assert_eq!(after(&out, "  Name:"), "_service-verify.example.org");
    assert_eq!(after(&out, "  Type:"), "TXT");
    let value = after(&out, "  Value:").to_owned();
    assert!(value.starts_with("service-verify="), "{value}");
    assert!(
        out.contains("Then run `sealpost domain check example.org`"),
        "{out}"
    );

    // Not published yet: the same instructions again.
    let out = a.ok(&["domain", "check", "example.org"]).await;
    assert!(out.starts_with("example.org: verify ownership"), "{out}");
    assert_eq!(after(&out, "  Value:"), value);

    // Published: the nameservers to set at the registrar.
    dns.publish_txt("_service-verify.example.org", &value);
    let out = a.ok(&["domain", "check", "example.org"]).await;
    assert!(out.starts_with("example.org: change nameservers"), "{out}");
    assert!(
        out.contains(&format!("to exactly {} and {}", NS[0], NS[1])),
        "{out}"
    );

    // Delegated, and the MX shows: live, and how to make an address there.
    dns.delegate("example.org", &NS);
    dns.set_mx("example.org", &[MX]);
    let out = a.ok(&["domain", "check", "example.org"]).await;
    assert!(out.starts_with("example.org: live"), "{out}");
    assert!(
        out.contains("sealpost address create --domain example.org"),
        "{out}"
    );
    let listed = a.ok(&["domain", "list"]).await;
    let line = line_of(&listed, "example.org");
    assert!(line.contains("live"), "{listed}");
    assert!(
        a.ok(&["domains"])
            .await
            .contains("example.org  (this account's own)")
    );

    let out = a
        .ok(&[
            "inbox",
            "create",
            "--domain",
            "example.org",
            "--local-part",
            "hello",
        ])
        .await;
    assert!(out.contains("hello@example.org"), "{out}");

    // An address on it keeps it; without one it goes.
    let err = a.fails(&["domain", "remove", "example.org"]).await;
    assert!(
        err.contains("addresses exist on example.org; delete them first")
            && err.contains("(domain_in_use)"),
        "{err}"
    );
    a.ok(&["address", "delete", "hello@example.org"]).await;
    let out = a.ok(&["domain", "remove", "example.org"]).await;
    assert!(out.contains("Removed example.org."), "{out}");
    assert!(a.ok(&["domain", "list"]).await.contains("No own domains"));
    let err = a.fails(&["domain", "check", "example.org"]).await;
    assert!(
        err.contains("example.org is not one of this account's domains")
            && err.contains("(not_found)"),
        "{err}"
    );
    app.stop().await;
    dns.stop().await;
}
