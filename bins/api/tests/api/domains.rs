//! Own domains end to end: a real DNS server on loopback plays the public
//! DNS (the test publishes the TXT record, delegates, adds the MX), the
//! service checks it through `SEALPOST_DNS_RESOLVER`, and mail arrives by
//! SMTP at an address on the live domain.

use chrono::TimeDelta;
use reqwest::StatusCode;
use sealpost_seal::b64;
use sealpost_testkit::TestApp;
use sealpost_testkit::dns::PublicDns;
use serde_json::{Value, json};

use crate::support::{Api, SignedIn, SmtpClient, new_keys};

const NS: [&str; 2] = ["ns1.sealpost.net", "ns2.sealpost.net"];
const MX: &str = "mx.sealpost.net";

async fn spawn(dns: &PublicDns) -> Api {
    let resolver = dns.addr();
    Api::with(
        TestApp::spawn_with(move |config| {
            config.dns.resolver = Some(resolver);
            config.dns.nameservers = NS.iter().map(|ns| ns.to_string()).collect();
            config.dns.mx_host = MX.into();
        })
        .await,
    )
}

async fn scale_account(api: &Api, plan: &str) -> SignedIn {
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, plan).await;
    owner
}

async fn check(api: &Api, owner: &SignedIn, domain: &str) -> Value {
    let reply = api
        .post(
            &format!("/domains/custom/{domain}/check"),
            Some(&owner.token),
            json!({}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["domain"].clone()
}

async fn own_domains(api: &Api, owner: &SignedIn) -> Vec<Value> {
    let reply = api.get("/domains/custom", Some(&owner.token)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["domains"].as_array().unwrap().clone()
}

/// Claims `domain` and walks it to `live` in the public DNS; returns the TXT value.
async fn make_live(api: &Api, dns: &PublicDns, owner: &SignedIn, domain: &str) -> String {
    let added = api
        .post(
            "/domains/custom",
            Some(&owner.token),
            json!({ "domain": domain }),
        )
        .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.body);
    let value = added.body["record"]["value"].as_str().unwrap().to_owned();
    dns.publish_txt(&format!("_service-verify.{domain}"), &value);
    dns.delegate(domain, &NS);
    dns.set_mx(domain, &[MX]);
    assert_eq!(check(api, owner, domain).await["step"], "live");
    value
}

async fn rcpt(smtp: std::net::SocketAddr, address: &str) -> u16 {
    let (mut client, greeting) = SmtpClient::connect(smtp).await;
    assert_eq!(greeting, 220);
    assert_eq!(client.command("EHLO client.example").await, 250);
    assert_eq!(client.command("MAIL FROM:<sender@example.org>").await, 250);
    client.command(&format!("RCPT TO:<{address}>")).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_domain_goes_from_verify_ownership_to_live_and_back_and_takes_mail() {
    let dns = PublicDns::start(&["example.com"]).await;
    let mut api = spawn(&dns).await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "scale").await;

    let added = api
        .post(
            "/domains/custom",
            Some(&owner.token),
            json!({ "domain": "Example.COM." }),
        )
        .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.body);
    let record = &added.body["record"];
    assert_eq!(record["type"], "TXT");
    assert_eq!(record["name"], "_service-verify.example.com");
    let value = record["value"].as_str().unwrap().to_owned();
    assert!(
        value.starts_with("service-verify=") && value.len() > 30,
        "{value}"
    );
    assert_eq!(added.body["domain"]["domain"], "example.com");
    assert_eq!(added.body["domain"]["step"], "verify_ownership");
    assert!(added.body["domain"].get("nameservers").is_none());

    // Nothing published: nothing moves, and the name is not offered.
    assert_eq!(
        check(&api, &owner, "example.com").await["step"],
        "verify_ownership"
    );
    dns.publish_txt(
        "_service-verify.example.com",
        "service-verify=somebody-else",
    );
    assert_eq!(
        check(&api, &owner, "example.com").await["step"],
        "verify_ownership"
    );

    dns.publish_txt("_service-verify.example.com", &value);
    let proved = check(&api, &owner, "example.com").await;
    assert_eq!(proved["step"], "change_nameservers");
    assert_eq!(proved["nameservers"], json!(NS));
    assert!(proved["verifiedAt"].is_string());

    // Delegated to other nameservers as well: not exactly ours.
    dns.delegate("example.com", &[NS[0], NS[1], "ns.elsewhere.example"]);
    assert_eq!(
        check(&api, &owner, "example.com").await["step"],
        "change_nameservers"
    );
    dns.delegate("example.com", &NS);
    assert_eq!(
        check(&api, &owner, "example.com").await["step"],
        "setting_up"
    );
    dns.set_mx("example.com", &["mx.elsewhere.example"]);
    assert_eq!(
        check(&api, &owner, "example.com").await["step"],
        "setting_up"
    );
    dns.set_mx("example.com", &[MX]);
    assert_eq!(check(&api, &owner, "example.com").await["step"], "live");

    let listed = api.get("/domains", Some(&owner.token)).await;
    assert!(
        listed.body["domains"]
            .as_array()
            .unwrap()
            .contains(&json!({ "domain": "example.com", "reserved": true })),
        "{}",
        listed.body
    );
    let stranger = scale_account(&api, "scale").await;
    let theirs = api.get("/domains", Some(&stranger.token)).await;
    assert_eq!(
        theirs.body["domains"],
        json!([{ "domain": "mail.localhost", "reserved": false }])
    );

    // The MX goes away: attention; it comes back: live.
    dns.set_mx("example.com", &[]);
    assert_eq!(
        check(&api, &owner, "example.com").await["step"],
        "attention"
    );
    dns.set_mx("example.com", &[MX]);
    assert_eq!(check(&api, &owner, "example.com").await["step"], "live");
    // So does the delegation.
    dns.delegate("example.com", &[]);
    assert_eq!(
        check(&api, &owner, "example.com").await["step"],
        "attention"
    );
    dns.delegate("example.com", &NS);
    assert_eq!(check(&api, &owner, "example.com").await["step"], "live");
    let kinds = api.activity_kinds(&owner).await;
    for kind in [
        "domain.added",
        "domain.verified",
        "domain.live",
        "domain.attention",
    ] {
        assert!(
            kinds.iter().any(|k| k == kind),
            "{kind} missing from {kinds:?}"
        );
    }

    // An address on it, by exact name, and mail to it over SMTP.
    let created = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": "ibx_own001", "emailAddress": "Hello@Example.com",
                    "publicKey": b64::encode(&keys.address_public_key("ibx_own001", 0)) }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["inbox"]["emailAddress"], "hello@example.com");
    let generated = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": "ibx_own002", "domain": "example.com", "prefix": "shop" }),
        )
        .await;
    assert_eq!(generated.status, StatusCode::CREATED, "{}", generated.body);
    // Nobody else creates addresses on it.
    let foreign = api
        .post(
            "/inboxes",
            Some(&stranger.token),
            json!({ "id": "ibx_own003", "emailAddress": "x@example.com" }),
        )
        .await;
    assert_eq!(foreign.status, StatusCode::BAD_REQUEST, "{}", foreign.body);
    assert_eq!(foreign.code(), "invalid_field");

    let smtp = api.app.spawn_smtp().await;
    let (mut client, _) = SmtpClient::connect(smtp).await;
    assert_eq!(client.command("EHLO client.example").await, 250);
    assert_eq!(client.command("MAIL FROM:<sender@example.org>").await, 250);
    assert_eq!(client.command("RCPT TO:<nobody@example.com>").await, 550);
    assert_eq!(client.command("RCPT TO:<hello@example.com>").await, 250);
    let raw =
        "From: a@example.org\r\nTo: hello@example.com\r\nSubject: hi\r\n\r\nhello own domain\r\n";
    assert_eq!(client.data(raw).await, 250);
    assert_eq!(client.command("QUIT").await, 221);
    let messages = api
        .get("/inboxes/ibx_own001/messages", Some(&owner.token))
        .await;
    assert_eq!(messages.body["messages"].as_array().unwrap().len(), 1);

    // Addresses exist on it: it cannot be removed.
    let refused = api
        .delete("/domains/custom/example.com", Some(&owner.token))
        .await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert_eq!(refused.code(), "domain_in_use");
    assert_eq!(own_domains(&api, &owner).await.len(), 1, "nothing changed");
    for address in ["ibx_own001", "ibx_own002"] {
        let deleted = api
            .delete(&format!("/inboxes/{address}"), Some(&owner.token))
            .await;
        assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    }
    let removed = api
        .delete("/domains/custom/EXAMPLE.com", Some(&owner.token))
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT, "{}", removed.body);
    assert!(own_domains(&api, &owner).await.is_empty());
    assert_eq!(rcpt(smtp, "hello@example.com").await, 550);
    api.app.stop().await;
    dns.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_names_plans_and_counts_answer_their_codes_and_change_nothing() {
    let dns = PublicDns::start(&["example.com"]).await;
    let api = spawn(&dns).await;
    let operator = scale_account(&api, "operator").await;
    let below = api
        .post(
            "/domains/custom",
            Some(&operator.token),
            json!({ "domain": "example.com" }),
        )
        .await;
    assert_eq!(below.status, StatusCode::FORBIDDEN, "{}", below.body);
    assert_eq!(below.code(), "plan_required");
    assert!(own_domains(&api, &operator).await.is_empty());

    let owner = scale_account(&api, "scale").await;
    for bad in [
        "",
        "127.0.0.1",
        "[::1]",
        "com",
        "co.uk",
        "www.example.com",
        "exa mple.com",
        "-bad.com",
        "mail.localhost",
        "sealpost.net",
        "example.notatld",
    ] {
        let reply = api
            .post(
                "/domains/custom",
                Some(&owner.token),
                json!({ "domain": bad }),
            )
            .await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{bad}: {}",
            reply.body
        );
        assert_eq!(reply.code(), "invalid_field", "{bad}");
    }
    let wrong_type = api
        .post(
            "/domains/custom",
            Some(&owner.token),
            json!({ "domain": 7 }),
        )
        .await;
    assert_eq!(wrong_type.code(), "invalid_field");
    assert!(own_domains(&api, &owner).await.is_empty());

    // IDN and case are normalised; the same claim again answers the same record.
    let idn = api
        .post(
            "/domains/custom",
            Some(&owner.token),
            json!({ "domain": "Bücher.DE." }),
        )
        .await;
    assert_eq!(idn.status, StatusCode::CREATED, "{}", idn.body);
    assert_eq!(idn.body["domain"]["domain"], "xn--bcher-kva.de");
    assert_eq!(
        idn.body["record"]["name"],
        "_service-verify.xn--bcher-kva.de"
    );
    let again = api
        .post(
            "/domains/custom",
            Some(&owner.token),
            json!({ "domain": "xn--bcher-kva.de" }),
        )
        .await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.body["record"], idn.body["record"]);

    // 10 on Scale, 50 on Fleet.
    for n in 1..10 {
        let reply = api
            .post(
                "/domains/custom",
                Some(&owner.token),
                json!({ "domain": format!("own{n}.com") }),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    }
    let over = api
        .post(
            "/domains/custom",
            Some(&owner.token),
            json!({ "domain": "one-more.com" }),
        )
        .await;
    assert_eq!(over.status, StatusCode::CONFLICT, "{}", over.body);
    assert_eq!(over.code(), "limit_reached");
    assert_eq!(own_domains(&api, &owner).await.len(), 10);
    api.set_plan(&owner.account_id, "fleet").await;
    for n in 10..50 {
        let reply = api
            .post(
                "/domains/custom",
                Some(&owner.token),
                json!({ "domain": format!("own{n}.com") }),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    }
    let over = api
        .post(
            "/domains/custom",
            Some(&owner.token),
            json!({ "domain": "one-more.com" }),
        )
        .await;
    assert_eq!(over.code(), "limit_reached");
    assert_eq!(own_domains(&api, &owner).await.len(), 50);
    let usage = api.get("/usage", Some(&owner.token)).await;
    assert_eq!(usage.body["domains"], json!({ "used": 50, "limit": 50 }));

    // Unknown names in paths are simply not found.
    let missing = api
        .post(
            "/domains/custom/nothere.com/check",
            Some(&owner.token),
            json!({}),
        )
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let junk = api
        .delete("/domains/custom/not_a_domain", Some(&owner.token))
        .await;
    assert_eq!(junk.status, StatusCode::NOT_FOUND);
    api.app.stop().await;
    dns.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_account_to_prove_a_domain_wins_and_the_other_claim_needs_attention() {
    let dns = PublicDns::start(&["example.com"]).await;
    let api = spawn(&dns).await;
    let first = scale_account(&api, "scale").await;
    let second = scale_account(&api, "fleet").await;
    let second_claim = api
        .post(
            "/domains/custom",
            Some(&second.token),
            json!({ "domain": "example.com" }),
        )
        .await;
    assert_eq!(
        second_claim.status,
        StatusCode::CREATED,
        "an unproved claim reserves nothing"
    );
    make_live(&api, &dns, &first, "example.com").await;

    let lost = own_domains(&api, &second).await;
    assert_eq!(lost[0]["step"], "attention");
    // Publishing its own token does not take the domain over.
    dns.publish_txt(
        "_service-verify.example.com",
        second_claim.body["record"]["value"].as_str().unwrap(),
    );
    assert_eq!(
        check(&api, &second, "example.com").await["step"],
        "attention"
    );
    assert!(
        api.activity_kinds(&second)
            .await
            .contains(&"domain.attention".to_owned())
    );
    let third = scale_account(&api, "scale").await;
    let taken = api
        .post(
            "/domains/custom",
            Some(&third.token),
            json!({ "domain": "example.com" }),
        )
        .await;
    assert_eq!(taken.status, StatusCode::CONFLICT);
    assert_eq!(taken.code(), "already_used");
    assert!(own_domains(&api, &third).await.is_empty());
    api.app.stop().await;
    dns.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn after_the_plan_loses_own_domains_mail_is_received_21_days_then_refused() {
    let dns = PublicDns::start(&["example.com"]).await;
    let mut api = spawn(&dns).await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "scale").await;
    make_live(&api, &dns, &owner, "example.com").await;
    let created = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": "ibx_loss01", "emailAddress": "kept@example.com",
                    "publicKey": b64::encode(&keys.address_public_key("ibx_loss01", 0)) }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let smtp = api.app.spawn_smtp().await;

    api.set_plan(&owner.account_id, "operator").await;
    // No new addresses at once.
    let refused = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": "ibx_loss02", "domain": "example.com", "prefix": "new" }),
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert_eq!(refused.code(), "plan_required");
    // Mail still comes in; the sweep starts the 21 days.
    assert_eq!(rcpt(smtp, "kept@example.com").await, 250);
    api.sweeps().run_once().await;
    let listed = own_domains(&api, &owner).await;
    let until = listed[0]["receivesUntil"].as_str().unwrap().to_owned();
    assert_eq!(until, "2026-12-13T12:00:00.000Z");
    api.app
        .clock
        .advance(TimeDelta::days(21) - TimeDelta::seconds(1));
    assert_eq!(rcpt(smtp, "kept@example.com").await, 250);
    api.deliver(&owner, "ibx_loss01").await;
    api.app.clock.advance(TimeDelta::seconds(1));
    assert_eq!(
        rcpt(smtp, "kept@example.com").await,
        550,
        "refused after 21 days"
    );
    // `POST /messages` takes the same path and is refused alike, storing nothing.
    let raw = b"From: a@example.com\r\nSubject: late\r\n\r\nhello";
    let refused = api
        .post(
            "/messages",
            Some(&owner.token),
            json!({ "inboxId": "ibx_loss01", "raw": b64::encode(raw) }),
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert_eq!(refused.code(), "plan_required");
    let stored = api
        .get("/inboxes/ibx_loss01/messages", Some(&owner.token))
        .await;
    assert_eq!(stored.body["messages"].as_array().unwrap().len(), 1);

    // The plan includes own domains again: back to normal.
    api.set_plan(&owner.account_id, "scale").await;
    assert_eq!(rcpt(smtp, "kept@example.com").await, 250);
    api.deliver(&owner, "ibx_loss01").await;
    api.sweeps().run_once().await;
    assert!(
        own_domains(&api, &owner).await[0]
            .get("receivesUntil")
            .is_none()
    );
    api.app.stop().await;
    dns.stop().await;
}

/// An address created on a live own domain, straight through the store as
/// the address service does after its own check of the domain.
fn address_on(owner: &SignedIn, id: &str, email: &str) -> sealpost_addresses::Address {
    sealpost_addresses::Address {
        id: sealpost_kernel::AddressId::parse(id).unwrap(),
        account: sealpost_kernel::AccountId::parse(&owner.account_id).unwrap(),
        email_address: email.to_owned(),
        domain: email.rsplit_once('@').unwrap().1.to_owned(),
        device: None,
        retention_days: 7,
        paused_at: None,
        meta: None,
        public_key: None,
        key_epoch: 0,
        created_at: sealpost_kernel::Timestamp::parse("2026-11-22T12:00:00Z").unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_domain_removed_after_the_address_check_takes_no_address() {
    use sealpost_addresses::{AddressRepository, CreateOutcome};

    let dns = PublicDns::start(&["example.com"]).await;
    let api = spawn(&dns).await;
    let owner = scale_account(&api, "scale").await;
    make_live(&api, &dns, &owner, "example.com").await;
    // The service has checked the domain (live); the removal commits before
    // the insert.
    let removed = api
        .delete("/domains/custom/example.com", Some(&owner.token))
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT, "{}", removed.body);
    let store = &api.app.services().store;
    let outcome = store
        .create(
            address_on(&owner, "ibx_race01", "late@example.com"),
            sealpost_kernel::PlanId::Scale,
            true,
            100,
            sealpost_activity::Records::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome, CreateOutcome::DomainGone);
    let listed = api.get("/inboxes", Some(&owner.token)).await;
    assert_eq!(listed.body["inboxes"], json!([]), "{}", listed.body);
    api.app.stop().await;
    dns.stop().await;
}

/// The plan the route read is stale by the time the store locks the
/// account (a downgrade between them): the store says so instead of
/// counting against the old plan's limit, and the service decides again.
#[tokio::test(flavor = "multi_thread")]
async fn a_claim_is_counted_against_the_plan_the_locked_account_holds() {
    use sealpost_domains::{AddOutcome, DomainRepository};

    let dns = PublicDns::start(&["example.com"]).await;
    let api = spawn(&dns).await;
    let owner = scale_account(&api, "scale").await;
    api.set_plan(&owner.account_id, "operator").await;
    let account = sealpost_kernel::AccountId::parse(&owner.account_id).unwrap();
    let claim = sealpost_domains::OwnDomain {
        account: account.clone(),
        name: sealpost_domains::DomainName::parse("example.com", &[]).unwrap(),
        token: "stale-plan".to_owned(),
        step: sealpost_domains::Step::VerifyOwnership,
        proved_at: None,
        created_at: sealpost_kernel::Clock::now(&*api.app.clock),
        checked_at: None,
        next_check_at: sealpost_kernel::Clock::now(&*api.app.clock),
        checks_in_step: 0,
        plan_lost_at: None,
    };
    let store = &api.app.services().store;
    let outcome = store
        .add(
            &claim,
            sealpost_kernel::PlanId::Scale,
            10,
            sealpost_activity::Records::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        outcome,
        AddOutcome::PlanChanged(sealpost_kernel::PlanId::Operator)
    );
    assert!(own_domains(&api, &owner).await.is_empty(), "nothing stored");
    // Through the service, the stale plan is decided again: refused.
    let refused = api
        .app
        .services()
        .domains
        .add(&account, sealpost_kernel::PlanId::Scale, "example.com")
        .await;
    assert!(
        matches!(refused, Err(sealpost_domains::DomainError::Limit(_))),
        "{refused:?}"
    );
    assert!(own_domains(&api, &owner).await.is_empty());
    api.app.stop().await;
    dns.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn removing_a_domain_while_addresses_are_created_on_it_never_strands_one() {
    let dns = PublicDns::start(&["example.com"]).await;
    let api = spawn(&dns).await;
    let owner = scale_account(&api, "scale").await;
    for round in 0..8 {
        make_live(&api, &dns, &owner, "example.com").await;
        let id = format!("ibx_race{round:02}");
        let create = api.post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": id, "emailAddress": format!("r{round}@example.com") }),
        );
        let remove = api.delete("/domains/custom/example.com", Some(&owner.token));
        let (created, removed) = tokio::join!(create, remove);
        let domains = own_domains(&api, &owner).await;
        let addresses = api.get("/inboxes", Some(&owner.token)).await.body["inboxes"]
            .as_array()
            .unwrap()
            .clone();
        if removed.status == StatusCode::NO_CONTENT {
            assert_eq!(created.status, StatusCode::BAD_REQUEST, "{}", created.body);
            assert!(domains.is_empty() && addresses.is_empty(), "round {round}");
        } else {
            assert_eq!(removed.status, StatusCode::CONFLICT, "{}", removed.body);
            assert_eq!(removed.code(), "domain_in_use");
            assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
            assert_eq!((domains.len(), addresses.len()), (1, 1), "round {round}");
            let deleted = api
                .delete(&format!("/inboxes/{id}"), Some(&owner.token))
                .await;
            assert_eq!(deleted.status, StatusCode::NO_CONTENT);
            let removed = api
                .delete("/domains/custom/example.com", Some(&owner.token))
                .await;
            assert_eq!(removed.status, StatusCode::NO_CONTENT, "{}", removed.body);
        }
    }
    api.app.stop().await;
    dns.stop().await;
}
