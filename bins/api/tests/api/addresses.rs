use reqwest::StatusCode;
use serde_json::json;

use crate::support::{Api, new_keys};

#[tokio::test(flavor = "multi_thread")]
async fn create_list_update_and_the_free_limits() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;

    let domains = api.get("/domains", Some(&owner.token)).await;
    assert_eq!(
        domains.body,
        json!({ "domains": [{ "domain": "mail.localhost", "reserved": false }] })
    );

    let public_key = sealpost_seal::b64::encode(&keys.address_public_key("ibx_first01", 0));
    let created = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": "ibx_first01", "domain": "mail.localhost", "prefix": "Shop", "publicKey": public_key }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let address = &created.body["inbox"];
    assert!(
        address["emailAddress"]
            .as_str()
            .unwrap()
            .starts_with("shop.")
    );
    assert!(
        address["emailAddress"]
            .as_str()
            .unwrap()
            .ends_with("@mail.localhost")
    );
    assert_eq!(address["status"], "unassigned");
    assert_eq!(address["retentionDays"], 7);
    assert_eq!(address["keyEpoch"], 0);
    assert_eq!(address["publicKey"], public_key);

    let same_id = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": "ibx_first01", "domain": "mail.localhost" }),
        )
        .await;
    assert_eq!(
        (same_id.status, same_id.code()),
        (StatusCode::CONFLICT, "id_taken")
    );

    api.create_address(&owner.token, "ibx_second2").await;
    api.create_address(&owner.token, "ibx_third03").await;
    let fourth = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": "ibx_fourth4", "domain": "mail.localhost" }),
        )
        .await;
    assert_eq!(
        (fourth.status, fourth.code()),
        (StatusCode::PAYMENT_REQUIRED, "allocation_exhausted")
    );

    let allocation = api.get("/inboxes/allocation", Some(&owner.token)).await;
    assert_eq!(
        allocation.body,
        json!({ "planId": "free", "limit": 3, "used": 3, "assigned": 0, "remaining": 0 })
    );

    let meta = serde_json::to_value(sealpost_seal::SealedBox::seal(
        &keys.vault_public_key(),
        &sealpost_seal::context::address_meta("ibx_first01"),
        b"shopping",
    ))
    .unwrap();
    let patched = api
        .patch(
            "/inboxes/ibx_first01",
            Some(&owner.token),
            json!({ "meta": meta, "retentionDays": 30 }),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    assert_eq!(patched.body["inbox"]["retentionDays"], 30);
    assert_eq!(patched.body["inbox"]["meta"], meta);

    let listed = api.get("/inboxes", Some(&owner.token)).await;
    assert_eq!(listed.body["inboxes"].as_array().unwrap().len(), 3);

    let deleted = api.delete("/inboxes/ibx_second2", Some(&owner.token)).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    // The place on the plan is free again, but the id is not.
    api.create_address(&owner.token, "ibx_fourth4").await;
    let reused = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": "ibx_second2", "domain": "mail.localhost" }),
        )
        .await;
    assert_eq!(reused.code(), "id_taken");

    let events = api.event_types(&owner.account_id).await;
    assert_eq!(
        events,
        vec![
            "inbox.created",
            "inbox.created",
            "inbox.created",
            "inbox.deleted",
            "inbox.created"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn field_errors_have_their_codes() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let cases = [
        (
            json!({ "id": "ibx_bad-id", "domain": "mail.localhost" }),
            "invalid_id",
        ),
        (
            json!({ "id": "ibx_abcd", "domain": "gmail.com" }),
            "invalid_field",
        ),
        (
            json!({ "id": "ibx_abcd", "domain": "mail.localhost", "retentionDays": 91 }),
            "invalid_field",
        ),
        (
            json!({ "id": "ibx_abcd", "domain": "mail.localhost", "retentionDays": "7" }),
            "invalid_field",
        ),
        (
            json!({ "id": "ibx_abcd", "domain": "mail.localhost", "publicKey": "AAAA" }),
            "invalid_key",
        ),
        // A low-order point: every box sealed to it would open for anyone.
        (
            json!({ "id": "ibx_abcd", "domain": "mail.localhost", "publicKey": sealpost_seal::b64::encode(&[0; 32]) }),
            "invalid_key",
        ),
        (
            json!({ "id": "ibx_abcd", "domain": "mail.localhost", "meta": { "v": 3 } }),
            "invalid_box",
        ),
        (
            json!({ "id": "ibx_abcd", "domain": "mail.localhost", "localPart": "hello" }),
            "plan_required",
        ),
    ];
    for (body, code) in cases {
        let reply = api.post("/inboxes", Some(&owner.token), body.clone()).await;
        assert_eq!(reply.code(), code, "{body}");
    }
    let too_big = json!({
        "id": "ibx_abcd", "domain": "mail.localhost",
        "meta": { "v": 2, "epk": sealpost_seal::b64::encode(&[1; 32]), "n": sealpost_seal::b64::encode(&[1; 12]),
                  "t": sealpost_seal::b64::encode(&[1; 16]), "c": sealpost_seal::b64::encode(&vec![0u8; 8 * 1024]) }
    });
    let reply = api.post("/inboxes", Some(&owner.token), too_big).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::PAYLOAD_TOO_LARGE, "too_large")
    );
    // None of the refused requests created anything.
    assert_eq!(
        api.get("/inboxes", Some(&owner.token)).await.body["inboxes"],
        json!([])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_address_is_never_issued_again() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let first = api.register(&keys).await;
    api.set_plan(&first.account_id, "scale").await;
    let created = api
        .post(
            "/inboxes",
            Some(&first.token),
            json!({ "id": "ibx_hello01", "emailAddress": "Hello@mail.localhost" }),
        )
        .await;
    assert_eq!(
        created.body["inbox"]["emailAddress"],
        "hello@mail.localhost"
    );
    let taken = api
        .post(
            "/inboxes",
            Some(&first.token),
            json!({ "id": "ibx_hello02", "domain": "mail.localhost", "localPart": "hello" }),
        )
        .await;
    assert_eq!(
        (taken.status, taken.code()),
        (StatusCode::CONFLICT, "address_taken")
    );

    api.delete("/inboxes/ibx_hello01", Some(&first.token)).await;
    let again = api
        .post(
            "/inboxes",
            Some(&first.token),
            json!({ "id": "ibx_hello03", "domain": "mail.localhost", "localPart": "hello" }),
        )
        .await;
    assert_eq!(again.code(), "address_taken", "not by its old account");

    let (_, other_keys) = new_keys();
    let second = api.register(&other_keys).await;
    api.set_plan(&second.account_id, "scale").await;
    let stranger = api
        .post(
            "/inboxes",
            Some(&second.token),
            json!({ "id": "ibx_hello04", "emailAddress": "hello@mail.localhost" }),
        )
        .await;
    assert_eq!(stranger.code(), "address_taken", "nor by anyone else");

    // Also not after the account that held it is erased.
    api.post(
        "/inboxes",
        Some(&second.token),
        json!({ "id": "ibx_world01", "emailAddress": "world@mail.localhost" }),
    )
    .await;
    api.delete("/accounts/me", Some(&second.token)).await;
    let after_erasure = api
        .post(
            "/inboxes",
            Some(&first.token),
            json!({ "id": "ibx_world02", "emailAddress": "world@mail.localhost" }),
        )
        .await;
    assert_eq!(after_erasure.code(), "address_taken");
    let id_after_erasure = api
        .post(
            "/inboxes",
            Some(&first.token),
            json!({ "id": "ibx_world01", "domain": "mail.localhost" }),
        )
        .await;
    assert_eq!(id_after_erasure.code(), "id_taken");
}

#[tokio::test(flavor = "multi_thread")]
async fn assignment_rules_and_events() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let device = api.pair(&owner.token, "wkr_phone01").await;
    api.create_address(&owner.token, "ibx_first01").await;
    api.create_address(&owner.token, "ibx_second2").await;

    let first = api
        .post(
            "/workers/wkr_phone01/inboxes",
            Some(&owner.token),
            json!({ "inboxId": "ibx_first01" }),
        )
        .await;
    assert_eq!(first.body["inbox"]["assignedWorkerId"], "wkr_phone01");
    let poll_state = api
        .get("/workers/wkr_phone01", Some(&device.credential))
        .await;
    assert_eq!(poll_state.status, StatusCode::OK);
    let second = api
        .post(
            "/workers/wkr_phone01/inboxes",
            Some(&owner.token),
            json!({ "inboxId": "ibx_second2" }),
        )
        .await;
    assert_eq!(
        (second.status, second.code()),
        (StatusCode::PAYMENT_REQUIRED, "allocation_exhausted"),
        "Free: a device holds one address"
    );

    // The device sees only its own address.
    let seen = api.get("/inboxes", Some(&device.credential)).await;
    let ids: Vec<_> = seen.body["inboxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].clone())
        .collect();
    assert_eq!(ids, vec![json!("ibx_first01")]);
    let allocation = api.get("/inboxes/allocation", Some(&owner.token)).await;
    assert_eq!(allocation.body["assigned"], 1);

    let unassigned = api
        .delete(
            "/workers/wkr_phone01/inboxes/ibx_first01",
            Some(&owner.token),
        )
        .await;
    assert_eq!(unassigned.status, StatusCode::NO_CONTENT);
    let twice = api
        .delete(
            "/workers/wkr_phone01/inboxes/ibx_first01",
            Some(&owner.token),
        )
        .await;
    assert_eq!(twice.status, StatusCode::NOT_FOUND);
    let now_ok = api
        .post(
            "/workers/wkr_phone01/inboxes",
            Some(&owner.token),
            json!({ "inboxId": "ibx_second2" }),
        )
        .await;
    assert_eq!(now_ok.status, StatusCode::OK);

    assert_eq!(
        api.event_types(&owner.account_id).await,
        vec![
            "worker.paired",
            "inbox.created",
            "inbox.created",
            "inbox.assigned",
            "inbox.removed",
            "inbox.assigned"
        ]
    );
    let activity = api.get("/activity?limit=2", Some(&owner.token)).await;
    let kinds: Vec<_> = activity.body["activity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].clone())
        .collect();
    assert_eq!(kinds, vec![json!("inbox.assigned"), json!("inbox.removed")]);
    let cursor = activity.body["nextCursor"].as_str().unwrap();
    let next = api
        .get(
            &format!("/activity?limit=2&cursor={cursor}"),
            Some(&owner.token),
        )
        .await;
    let kinds: Vec<_> = next.body["activity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].clone())
        .collect();
    assert_eq!(kinds, vec![json!("inbox.assigned"), json!("inbox.created")]);
    let bad = api.get("/activity?limit=500", Some(&owner.token)).await;
    assert_eq!(bad.code(), "invalid_field");
}

/// JSON Schema's integer is a value, not a form: `47.0` is the integer 47
/// the document's `"type": "integer"` admits, so the service takes it too.
#[tokio::test(flavor = "multi_thread")]
async fn an_integer_written_with_a_fraction_of_zero_is_an_integer() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let created = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": "ibx_whole01", "domain": "mail.localhost", "retentionDays": 47.0 }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["inbox"]["retentionDays"], 47);
    let patched = api
        .patch(
            "/inboxes/ibx_whole01",
            Some(&owner.token),
            json!({ "retentionDays": 3e1 }),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    assert_eq!(patched.body["inbox"]["retentionDays"], 30);
    let fraction = api
        .patch(
            "/inboxes/ibx_whole01",
            Some(&owner.token),
            json!({ "retentionDays": 47.5 }),
        )
        .await;
    assert_eq!(fraction.code(), "invalid_field");
}

#[tokio::test(flavor = "multi_thread")]
async fn role_names_are_reserved_on_shared_domains_and_earlier_ones_are_listed() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "scale").await;
    for (field, body) in [
        (
            "emailAddress",
            json!({ "id": "ibx_role01", "emailAddress": "Postmaster@mail.localhost" }),
        ),
        (
            "localPart",
            json!({ "id": "ibx_role02", "domain": "mail.localhost", "localPart": "admin+certs" }),
        ),
    ] {
        let refused = api.post("/inboxes", Some(&owner.token), body).await;
        assert_eq!(
            (refused.status, refused.code()),
            (StatusCode::BAD_REQUEST, "invalid_field"),
            "{}",
            refused.body
        );
        let message = refused.body["error"]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(
            message.contains(field) && message.contains("reserved"),
            "{message}"
        );
    }

    // An address issued under a name the operator reserves later stays with
    // its owner, and the start-up listing names it.
    let issued = api
        .post(
            "/inboxes",
            Some(&owner.token),
            json!({ "id": "ibx_role03", "emailAddress": "billing@mail.localhost" }),
        )
        .await;
    assert_eq!(issued.status, StatusCode::CREATED, "{}", issued.body);
    let listed = api
        .app
        .services()
        .store
        .addresses_under_names(&["mail.localhost".to_owned()], &["billing".to_owned()])
        .await
        .unwrap();
    let listed: Vec<&str> = listed.iter().map(|id| id.as_str()).collect();
    assert_eq!(listed, ["ibx_role03"]);
}
