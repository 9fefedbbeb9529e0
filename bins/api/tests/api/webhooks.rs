use reqwest::StatusCode;
use serde_json::json;

use crate::support::{Api, SignedIn, new_keys};

async fn operator(api: &Api) -> SignedIn {
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    owner
}

#[tokio::test(flavor = "multi_thread")]
async fn endpoints_follow_the_plan_url_and_count_rules() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let free = api.register(&keys).await;
    let refused = api
        .post(
            "/webhook-endpoints",
            Some(&free.token),
            json!({ "id": "whk_free01", "url": "https://hooks.example.com/x", "events": ["*"] }),
        )
        .await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::FORBIDDEN, "plan_required")
    );

    let owner = operator(&api).await;
    for (url, why) in [
        ("http://hooks.example.com/x", "not https"),
        ("https://127.0.0.1/x", "IP literal"),
        ("https://[::1]/x", "IPv6 literal"),
        ("https://localhost/x", "localhost"),
        ("https://printer.local/x", "*.local"),
        ("https://api.mail.localhost/x", "the service's own domain"),
    ] {
        let reply = api
            .post(
                "/webhook-endpoints",
                Some(&owner.token),
                json!({ "id": "whk_bad001", "url": url, "events": ["*"] }),
            )
            .await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::BAD_REQUEST, "invalid_url"),
            "{why}"
        );
    }
    let unknown_event = api
        .post("/webhook-endpoints", Some(&owner.token), json!({ "id": "whk_bad001", "url": "https://hooks.example.com/x", "events": ["mail.exploded"] }))
        .await;
    assert_eq!(unknown_event.code(), "invalid_field");

    let created = api
        .post(
            "/webhook-endpoints",
            Some(&owner.token),
            json!({ "id": "whk_first1", "url": "https://hooks.example.com/x", "events": ["inbox.created", "message.received"] }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let secret = created.body["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"));
    assert_eq!(created.body["webhook"]["status"], "active");
    let listed = api.get("/webhook-endpoints", Some(&owner.token)).await;
    assert!(
        listed.body["webhooks"][0].get("secret").is_none(),
        "the secret is shown once"
    );
    assert_eq!(listed.body["eventTypes"].as_array().unwrap().len(), 12);

    for n in 2..=10 {
        let reply = api
            .post("/webhook-endpoints", Some(&owner.token), json!({ "id": format!("whk_more{n:02}"), "url": "https://hooks.example.com/x", "events": ["*"] }))
            .await;
        assert_eq!(reply.status, StatusCode::CREATED);
    }
    let eleventh = api
        .post(
            "/webhook-endpoints",
            Some(&owner.token),
            json!({ "id": "whk_more11", "url": "https://hooks.example.com/x", "events": ["*"] }),
        )
        .await;
    assert_eq!(
        (eleventh.status, eleventh.code()),
        (StatusCode::CONFLICT, "limit_reached")
    );

    let rotated = api
        .post(
            "/webhook-endpoints/whk_first1/rotate-secret",
            Some(&owner.token),
            json!({}),
        )
        .await;
    assert_ne!(rotated.body["secret"].as_str().unwrap(), secret);

    let disabled = api
        .patch(
            "/webhook-endpoints/whk_first1",
            Some(&owner.token),
            json!({ "status": "disabled" }),
        )
        .await;
    assert_eq!(disabled.body["webhook"]["disabledReason"], "manual");
    let test = api
        .post(
            "/webhook-endpoints/whk_first1/test",
            Some(&owner.token),
            json!({}),
        )
        .await;
    assert_eq!(
        (test.status, test.code()),
        (StatusCode::CONFLICT, "webhook_disabled")
    );

    let deleted = api
        .delete("/webhook-endpoints/whk_first1", Some(&owner.token))
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let reused = api
        .post(
            "/webhook-endpoints",
            Some(&owner.token),
            json!({ "id": "whk_first1", "url": "https://hooks.example.com/x", "events": ["*"] }),
        )
        .await;
    assert_eq!(reused.code(), "id_taken");

    // Another account sees none of it.
    let stranger = operator(&api).await;
    let foreign = api
        .get(
            "/webhook-endpoints/whk_more02/deliveries",
            Some(&stranger.token),
        )
        .await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
    let foreign = api
        .patch(
            "/webhook-endpoints/whk_more02",
            Some(&stranger.token),
            json!({ "status": "disabled" }),
        )
        .await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn tests_and_redeliveries_are_logged_and_limited_to_60_an_hour() {
    let api = Api::spawn().await;
    let owner = operator(&api).await;
    api.post(
        "/webhook-endpoints",
        Some(&owner.token),
        json!({ "id": "whk_first1", "url": "https://hooks.example.com/x", "events": ["*"] }),
    )
    .await;
    let sent = api
        .post(
            "/webhook-endpoints/whk_first1/test",
            Some(&owner.token),
            json!({}),
        )
        .await;
    assert_eq!(sent.status, StatusCode::ACCEPTED, "{}", sent.body);
    let delivery_id = sent.body["deliveryId"].as_str().unwrap().to_owned();
    let event_id = sent.body["eventId"].as_str().unwrap().to_owned();

    let log = api
        .get(
            "/webhook-endpoints/whk_first1/deliveries",
            Some(&owner.token),
        )
        .await;
    let first = &log.body["deliveries"][0];
    assert_eq!(first["id"], delivery_id.as_str());
    assert_eq!(first["status"], "pending");
    assert_eq!(first["eventType"], "webhook.test");
    assert_eq!(first["event"]["payload"]["webhookId"], "whk_first1");

    let again = api
        .post(
            &format!("/webhook-endpoints/whk_first1/deliveries/{delivery_id}/redeliver"),
            Some(&owner.token),
            json!({}),
        )
        .await;
    assert_eq!(again.status, StatusCode::ACCEPTED);
    assert_ne!(again.body["deliveryId"], delivery_id.as_str());
    assert_eq!(again.body["eventId"], event_id.as_str(), "same event id");

    for _ in 2..60 {
        assert_eq!(
            api.post(
                "/webhook-endpoints/whk_first1/test",
                Some(&owner.token),
                json!({})
            )
            .await
            .status,
            StatusCode::ACCEPTED
        );
    }
    let limited = api
        .post(
            "/webhook-endpoints/whk_first1/test",
            Some(&owner.token),
            json!({}),
        )
        .await;
    assert_eq!(
        (limited.status, limited.code()),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    assert_eq!(limited.headers["retry-after"], "3600");

    let pending = api
        .get(
            "/webhook-endpoints/whk_first1/deliveries?status=pending&limit=5",
            Some(&owner.token),
        )
        .await;
    assert_eq!(pending.body["deliveries"].as_array().unwrap().len(), 5);
    assert!(pending.body["nextCursor"].is_string());
    let bad = api
        .get(
            "/webhook-endpoints/whk_first1/deliveries?status=lost",
            Some(&owner.token),
        )
        .await;
    assert_eq!(bad.code(), "invalid_field");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_tests_gets_sixty_and_no_more() {
    let api = Api::spawn().await;
    let owner = operator(&api).await;
    api.post(
        "/webhook-endpoints",
        Some(&owner.token),
        json!({ "id": "whk_burst1", "url": "https://hooks.example.com/x", "events": ["*"] }),
    )
    .await;
    let http = reqwest::Client::new();
    let mut burst = tokio::task::JoinSet::new();
    for _ in 0..75 {
        let request = http
            .post(api.app.url("/webhook-endpoints/whk_burst1/test"))
            .bearer_auth(&owner.token)
            .json(&json!({}));
        burst.spawn(async move { request.send().await.unwrap().status() });
    }
    let statuses = burst.join_all().await;
    let sent = statuses
        .iter()
        .filter(|status| **status == StatusCode::ACCEPTED)
        .count();
    let limited = statuses
        .iter()
        .filter(|status| **status == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!((sent, limited), (60, 15), "{statuses:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_patch_writes_only_what_it_changes() {
    use sealpost_webhooks::{EndpointChange, WebhookRepository};
    let api = Api::spawn().await;
    let owner = operator(&api).await;
    api.post(
        "/webhook-endpoints",
        Some(&owner.token),
        json!({ "id": "whk_patch1", "url": "https://hooks.example.com/x", "events": ["*"] }),
    )
    .await;
    // The PATCH has read the row (active); the sender then switches it off
    // for failing; the PATCH's write of a new URL must not switch it on.
    let mut conn = api.app.db.connect().await;
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(
            "UPDATE webhooks SET active = false, disabled_reason = 'failing' WHERE id = 'whk_patch1'",
        ),
        &mut conn,
    )
    .await
    .unwrap();
    let store = sealpost_store_pg::PgStore::connect(&api.app.db.url, 2).unwrap();
    let account = sealpost_kernel::AccountId::parse(&owner.account_id).unwrap();
    let id = sealpost_kernel::WebhookId::parse("whk_patch1").unwrap();
    let change = EndpointChange {
        url: Some("https://hooks.example.com/moved".to_owned()),
        ..EndpointChange::default()
    };
    let after = store
        .update_endpoint(&account, &id, change)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.url, "https://hooks.example.com/moved");
    assert!(!after.status.is_active(), "the switch-off stands");

    // Through the API too: the reply and the row stay disabled.
    let patched = api
        .send(
            reqwest::Method::PATCH,
            "/webhook-endpoints/whk_patch1",
            Some(&owner.token),
            Some(json!({ "events": ["inbox.created"] }).to_string().into()),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    assert_eq!(patched.body["webhook"]["status"], "disabled");
    assert_eq!(
        patched.body["webhook"]["url"],
        "https://hooks.example.com/moved"
    );
}

/// The plan the route read is stale by the time the store locks the
/// account (a downgrade to Free between them): the endpoint is refused,
/// not created on a plan without webhooks.
#[tokio::test(flavor = "multi_thread")]
async fn an_endpoint_is_decided_with_the_plan_the_locked_account_holds() {
    use sealpost_kernel::{AccountId, PlanId, WebhookId};
    use sealpost_webhooks::events::EventFilter;
    use sealpost_webhooks::url::validate_url;
    use sealpost_webhooks::{EndpointError, WebhookError};

    let api = Api::spawn().await;
    let owner = operator(&api).await;
    api.set_plan(&owner.account_id, "free").await;
    let refused = api
        .app
        .services()
        .webhooks
        .create(
            &AccountId::parse(&owner.account_id).unwrap(),
            PlanId::Operator,
            WebhookId::parse("whk_stale1").unwrap(),
            validate_url("https://hooks.example.com/in", &[]).unwrap(),
            EventFilter::parse(&["*"]).unwrap(),
            None,
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(WebhookError::Rule(EndpointError::PlanRequired))
        ),
        "{refused:?}"
    );
    api.set_plan(&owner.account_id, "operator").await;
    let listed = api.get("/webhook-endpoints", Some(&owner.token)).await;
    assert_eq!(listed.body["webhooks"], json!([]), "{}", listed.body);
}
