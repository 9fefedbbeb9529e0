//! In-app support from the account's side: sealed tickets end to end with
//! the real crypto, every support limit and error code, the 60/90-day
//! sweep on the test clock, and bad input.

use chrono::TimeDelta;
use reqwest::StatusCode;
use sealpost_client::Client;
use sealpost_client::support::{self, TicketHeader};
use sealpost_kernel::Clock;
use sealpost_seal::{AccountKeys, PublicKey, SealedBox, StaticSecret, b64, random_bytes};
use sealpost_testkit::TestApp;
use serde_json::{Value, json};

use crate::messages::everything_in_the_database;
use crate::support::{Api, SignedIn, new_keys};

/// The support team's key pair, as the staff CLI holds it.
pub struct SupportKeys {
    pub secret: StaticSecret,
    pub public: [u8; 32],
}

impl SupportKeys {
    pub fn generate() -> Self {
        let secret = StaticSecret::from(random_bytes::<32>());
        let public = PublicKey::from(&secret).to_bytes();
        Self { secret, public }
    }
}

pub async fn support_api() -> (Api, SupportKeys) {
    let keys = SupportKeys::generate();
    let text = b64::encode(&keys.public);
    let app = TestApp::spawn_with(|config| config.support_key = Some(text)).await;
    (Api::with(app), keys)
}

pub async fn account(api: &Api) -> (AccountKeys, SignedIn, Client) {
    let (_, keys) = new_keys();
    let signed_in = api.register(&keys).await;
    let client = Client::new(api.app.base_url.clone())
        .unwrap()
        .with_token(signed_in.token.clone());
    (keys, signed_in, client)
}

fn header() -> TicketHeader {
    TicketHeader::new("billing", "normal", "A question")
}

/// A ticket as JSON, sealed for real.
fn ticket_json(keys: &AccountKeys, staff: &[u8; 32], text: &str) -> (String, Value) {
    let sealed = support::seal_new_ticket(keys, staff, &header(), text);
    (
        sealed.ticket_id.to_string(),
        serde_json::to_value(&sealed.request).unwrap(),
    )
}

async fn open_ticket(api: &Api, token: &str, keys: &AccountKeys, staff: &[u8; 32]) -> String {
    let (id, body) = ticket_json(keys, staff, "hello");
    let reply = api.post("/support/tickets", Some(token), body).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    id
}

fn message_json(keys: &AccountKeys, staff: &[u8; 32], ticket: &str, text: &str) -> Value {
    let ticket = sealpost_kernel::TicketId::parse(ticket).unwrap();
    serde_json::to_value(support::seal_message(
        staff,
        &keys.vault_public_key(),
        &ticket,
        text,
    ))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ticket_is_sealed_end_to_end_and_the_database_holds_no_plaintext() {
    let (api, staff) = support_api().await;
    let (keys, _, client) = account(&api).await;
    let marker = "TICKETMARKER5d1e";

    let overview = client.support().await.unwrap();
    assert!(overview.available);
    assert_eq!(overview.staff_key, Some(b64::encode(&staff.public)));
    assert!(overview.tickets.is_empty());

    let sealed = support::seal_new_ticket(
        &keys,
        &staff.public,
        &TicketHeader::new("account", "high", &format!("Subject {marker}")),
        &format!("Body {marker}"),
    );
    let ticket = client.create_ticket(&sealed.request).await.unwrap();
    assert_eq!(ticket.id, sealed.ticket_id);
    assert_eq!(ticket.status, support::TicketStatus::Open);
    assert_eq!(ticket.last_author, support::TicketAuthor::Account);
    assert!(!ticket.unread);

    // The account gets its own copies back and opens them.
    let detail = client.get_ticket(&sealed.ticket_id).await.unwrap();
    let opened = support::open_header(
        &keys.vault_secret(),
        &sealed.ticket_id,
        &detail.ticket.header,
    )
    .unwrap();
    assert_eq!(opened.subject, format!("Subject {marker}"));
    assert_eq!(detail.messages.len(), 1);
    let text = support::open_message(
        &keys.vault_secret(),
        &sealed.ticket_id,
        &detail.messages[0].id,
        &detail.messages[0].sealed,
    )
    .unwrap();
    assert_eq!(text, format!("Body {marker}"));
    // Only the account's copy: the support key cannot open it.
    assert!(support::open_header(&staff.secret, &sealed.ticket_id, &detail.ticket.header).is_err());

    let reply = support::seal_message(
        &staff.public,
        &keys.vault_public_key(),
        &sealed.ticket_id,
        &format!("Reply {marker}"),
    );
    client
        .add_ticket_message(&sealed.ticket_id, &reply)
        .await
        .unwrap();
    let listed = client.support().await.unwrap();
    assert_eq!(listed.tickets.len(), 1);

    let database = everything_in_the_database(&api).await;
    assert!(
        database.contains(sealed.ticket_id.as_str()),
        "the scan sees the rows"
    );
    assert!(
        !database.contains(marker),
        "ticket plaintext in the database"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tickets_are_listed_newest_first_and_closed_and_reopened() {
    let (api, staff) = support_api().await;
    let (keys, owner, _) = account(&api).await;
    let first = open_ticket(&api, &owner.token, &keys, &staff.public).await;
    api.app.clock.advance(TimeDelta::minutes(1));
    let second = open_ticket(&api, &owner.token, &keys, &staff.public).await;
    let listed = api.get("/support", Some(&owner.token)).await;
    let ids: Vec<&str> = listed.body["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [second.as_str(), first.as_str()]);

    let closed = api
        .post(
            &format!("/support/tickets/{first}/close"),
            Some(&owner.token),
            json!({}),
        )
        .await;
    assert_eq!(closed.status, StatusCode::OK, "{}", closed.body);
    assert_eq!(closed.body["ticket"]["status"], "resolved");
    assert!(closed.body["ticket"]["closedAt"].is_string());

    let refused = api
        .post(
            &format!("/support/tickets/{first}/messages"),
            Some(&owner.token),
            message_json(&keys, &staff.public, &first, "more"),
        )
        .await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert_eq!(refused.code(), "ticket_closed");

    let reopened = api
        .post(
            &format!("/support/tickets/{first}/reopen"),
            Some(&owner.token),
            json!({}),
        )
        .await;
    assert_eq!(reopened.status, StatusCode::OK);
    assert_eq!(reopened.body["ticket"]["status"], "open");
    assert!(reopened.body["ticket"]["closedAt"].is_null());

    // Resolving pushes a support notice to the account's phones.
    assert_eq!(
        api.events(&owner.account_id, "notice.support_resolved")
            .await
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_support_key_support_is_unavailable() {
    let api = Api::spawn().await;
    let (keys, owner, _) = account(&api).await;
    let overview = api.get("/support", Some(&owner.token)).await;
    assert_eq!(overview.status, StatusCode::OK);
    assert_eq!(overview.body["available"], false);
    assert!(overview.body["staffKey"].is_null());
    let (_, body) = ticket_json(&keys, &[5u8; 32], "hi");
    let refused = api.post("/support/tickets", Some(&owner.token), body).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.code(), "support_unavailable");
    let key = api
        .post(
            "/support/key",
            Some(&owner.token),
            serde_json::to_value(support::key_binding(&keys, &[5u8; 32])).unwrap(),
        )
        .await;
    assert_eq!(key.code(), "support_unavailable");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ticket_sealed_to_an_old_support_key_is_refused() {
    let (api, old) = support_api().await;
    let (keys, owner, client) = account(&api).await;
    let ticket = open_ticket(&api, &owner.token, &keys, &old.public).await;
    let new = SupportKeys::generate();
    api.app
        .services()
        .store
        .set_switches(
            Some(sealpost_support::PublicKey(new.public)),
            None,
            None,
            api.app.clock.now(),
            &sealpost_support::AuditEntry {
                actor: "operator".to_owned(),
                action: "support.rotate_key".to_owned(),
                target: None,
                note: None,
                at: api.app.clock.now(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        client.support().await.unwrap().staff_key,
        Some(b64::encode(&new.public))
    );
    assert_eq!(
        client.me().await.unwrap().support_key,
        Some(b64::encode(&new.public))
    );
    let (_, body) = ticket_json(&keys, &old.public, "hi");
    let refused = api.post("/support/tickets", Some(&owner.token), body).await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert_eq!(refused.code(), "staff_key_changed");
    let refused = api
        .post(
            &format!("/support/tickets/{ticket}/messages"),
            Some(&owner.token),
            message_json(&keys, &old.public, &ticket, "again"),
        )
        .await;
    assert_eq!(refused.code(), "staff_key_changed");
    let refused = api
        .post(
            "/support/key",
            Some(&owner.token),
            serde_json::to_value(support::key_binding(&keys, &old.public)).unwrap(),
        )
        .await;
    assert_eq!(refused.code(), "staff_key_changed");
    // Sealed again to the new key, it goes through.
    open_ticket(&api, &owner.token, &keys, &new.public).await;
    assert!(
        client
            .bind_support_key(&support::key_binding(&keys, &new.public))
            .await
            .unwrap()
    );
    assert!(
        !client
            .bind_support_key(&support::key_binding(&keys, &new.public))
            .await
            .unwrap(),
        "the same binding again changes nothing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn five_open_tickets_and_reopening_counts_against_them() {
    let (api, staff) = support_api().await;
    let (keys, owner, _) = account(&api).await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(open_ticket(&api, &owner.token, &keys, &staff.public).await);
    }
    let (_, body) = ticket_json(&keys, &staff.public, "sixth");
    let refused = api.post("/support/tickets", Some(&owner.token), body).await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert_eq!(refused.code(), "too_many_open");

    api.post(
        &format!("/support/tickets/{}/close", ids[0]),
        Some(&owner.token),
        json!({}),
    )
    .await;
    api.app.clock.advance(TimeDelta::days(1));
    open_ticket(&api, &owner.token, &keys, &staff.public).await;
    let refused = api
        .post(
            &format!("/support/tickets/{}/reopen", ids[0]),
            Some(&owner.token),
            json!({}),
        )
        .await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert_eq!(refused.code(), "too_many_open");
}

#[tokio::test(flavor = "multi_thread")]
async fn five_new_tickets_a_day() {
    let (api, staff) = support_api().await;
    let (keys, owner, _) = account(&api).await;
    for _ in 0..5 {
        let id = open_ticket(&api, &owner.token, &keys, &staff.public).await;
        api.post(
            &format!("/support/tickets/{id}/close"),
            Some(&owner.token),
            json!({}),
        )
        .await;
    }
    let (_, body) = ticket_json(&keys, &staff.public, "sixth");
    let refused = api
        .post("/support/tickets", Some(&owner.token), body.clone())
        .await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.code(), "rate_limited");
    assert!(refused.headers.contains_key("retry-after"));
    api.app.clock.advance(TimeDelta::days(1));
    let accepted = api.post("/support/tickets", Some(&owner.token), body).await;
    assert_eq!(accepted.status, StatusCode::CREATED, "{}", accepted.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn twenty_stored_tickets() {
    let (api, staff) = support_api().await;
    let (keys, owner, _) = account(&api).await;
    for _ in 0..4 {
        for _ in 0..5 {
            let id = open_ticket(&api, &owner.token, &keys, &staff.public).await;
            api.post(
                &format!("/support/tickets/{id}/close"),
                Some(&owner.token),
                json!({}),
            )
            .await;
        }
        api.app.clock.advance(TimeDelta::days(1));
    }
    let (_, body) = ticket_json(&keys, &staff.public, "21st");
    let refused = api.post("/support/tickets", Some(&owner.token), body).await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert_eq!(refused.code(), "too_many_tickets");
}

#[tokio::test(flavor = "multi_thread")]
async fn thirty_replies_an_hour_and_fifty_messages_a_ticket() {
    let (api, staff) = support_api().await;
    let (keys, owner, _) = account(&api).await;
    let ticket = open_ticket(&api, &owner.token, &keys, &staff.public).await;
    let path = format!("/support/tickets/{ticket}/messages");
    for n in 0..30 {
        let reply = api
            .post(
                &path,
                Some(&owner.token),
                message_json(&keys, &staff.public, &ticket, "r"),
            )
            .await;
        assert_eq!(
            reply.status,
            StatusCode::CREATED,
            "reply {n}: {}",
            reply.body
        );
    }
    let limited = api
        .post(
            &path,
            Some(&owner.token),
            message_json(&keys, &staff.public, &ticket, "r"),
        )
        .await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(limited.code(), "rate_limited");
    api.app.clock.advance(TimeDelta::hours(1));
    // 31 messages so far; 19 more make 50.
    for n in 0..19 {
        let reply = api
            .post(
                &path,
                Some(&owner.token),
                message_json(&keys, &staff.public, &ticket, "r"),
            )
            .await;
        assert_eq!(
            reply.status,
            StatusCode::CREATED,
            "reply {n}: {}",
            reply.body
        );
    }
    let full = api
        .post(
            &path,
            Some(&owner.token),
            message_json(&keys, &staff.public, &ticket, "r"),
        )
        .await;
    assert_eq!(full.status, StatusCode::CONFLICT);
    assert_eq!(full.code(), "ticket_full");
}

#[tokio::test(flavor = "multi_thread")]
async fn support_storage_is_512_kb_per_account() {
    let (api, staff) = support_api().await;
    let (keys, owner, _) = account(&api).await;
    let ticket = open_ticket(&api, &owner.token, &keys, &staff.public).await;
    let path = format!("/support/tickets/{ticket}/messages");
    // About 45 KB per copy, 90 KB a message: the sixth passes 512 KB.
    let big = "x".repeat(45_000);
    for n in 0..5 {
        let reply = api
            .post(
                &path,
                Some(&owner.token),
                message_json(&keys, &staff.public, &ticket, &big),
            )
            .await;
        assert_eq!(
            reply.status,
            StatusCode::CREATED,
            "reply {n}: {}",
            reply.body
        );
    }
    let full = api
        .post(
            &path,
            Some(&owner.token),
            message_json(&keys, &staff.public, &ticket, &big),
        )
        .await;
    assert_eq!(full.status, StatusCode::CONFLICT);
    assert_eq!(full.code(), "support_storage_full");
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_tickets_close_after_60_days_and_go_90_days_later() {
    let (api, staff) = support_api().await;
    let (keys, owner, _) = account(&api).await;
    let (id, body) = ticket_json(&keys, &staff.public, "idle");
    assert_eq!(
        api.post("/support/tickets", Some(&owner.token), body.clone())
            .await
            .status,
        StatusCode::CREATED
    );
    // Sessions last 30 days: sign in again after each jump.
    api.app.clock.advance(TimeDelta::days(59));
    api.sweeps().run_once().await;
    let token = api.sign_in(&keys).await;
    let still = api
        .get(&format!("/support/tickets/{id}"), Some(&token))
        .await;
    assert_eq!(still.body["ticket"]["status"], "open", "{}", still.body);

    api.app.clock.advance(TimeDelta::days(2));
    api.sweeps().run_once().await;
    let closed = api
        .get(&format!("/support/tickets/{id}"), Some(&token))
        .await;
    assert_eq!(closed.body["ticket"]["status"], "resolved");
    assert!(closed.body["ticket"]["closedAt"].is_string());

    api.app.clock.advance(TimeDelta::days(89));
    api.sweeps().run_once().await;
    let token = api.sign_in(&keys).await;
    let kept = api
        .get(&format!("/support/tickets/{id}"), Some(&token))
        .await;
    assert_eq!(kept.status, StatusCode::OK);

    api.app.clock.advance(TimeDelta::days(2));
    api.sweeps().run_once().await;
    let gone = api
        .get(&format!("/support/tickets/{id}"), Some(&token))
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    // A deleted ticket's id is never used again.
    let again = api.post("/support/tickets", Some(&token), body).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.code(), "id_taken");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_gets_its_code_and_stores_nothing() {
    let (api, staff) = support_api().await;
    let (keys, owner, _) = account(&api).await;
    let (_, good) = ticket_json(&keys, &staff.public, "x");
    let cases: Vec<(Value, StatusCode, &str)> = vec![
        (
            with(&good, "/id", json!("tkt_UPPERCASE0123456789")),
            StatusCode::BAD_REQUEST,
            "invalid_id",
        ),
        (
            with(&good, "/id", json!("tkt_short")),
            StatusCode::BAD_REQUEST,
            "invalid_id",
        ),
        (
            with(&good, "/message/id", json!("tkm_!")),
            StatusCode::BAD_REQUEST,
            "invalid_id",
        ),
        (
            with(&good, "/staffKey", json!("AAAA")),
            StatusCode::BAD_REQUEST,
            "invalid_key",
        ),
        (
            with(&good, "/staffKey", json!(b64::encode(&[0u8; 32]))),
            StatusCode::BAD_REQUEST,
            "invalid_key",
        ),
        // A low-order point: a box sealed to it opens for anyone.
        (
            with(&good, "/accountKey", json!(b64::encode(&[0u8; 32]))),
            StatusCode::BAD_REQUEST,
            "invalid_key",
        ),
        (
            with(&good, "/accountKey", json!(7)),
            StatusCode::BAD_REQUEST,
            "invalid_field",
        ),
        (
            with(&good, "/binding", json!("bm90IGEgbWFj")),
            StatusCode::BAD_REQUEST,
            "invalid_field",
        ),
        (
            with(&good, "/header/forStaff", json!({ "v": 3 })),
            StatusCode::BAD_REQUEST,
            "invalid_box",
        ),
        (
            with(&good, "/message/forAccount", json!("not a box")),
            StatusCode::BAD_REQUEST,
            "invalid_box",
        ),
        (
            with(
                &good,
                "/message/forStaff",
                serde_json::to_value(SealedBox::seal(&staff.public, "c", &vec![0u8; 70_000]))
                    .unwrap(),
            ),
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
        ),
    ];
    for (body, status, code) in cases {
        let reply = api.post("/support/tickets", Some(&owner.token), body).await;
        assert_eq!(
            (reply.status, reply.code()),
            (status, code),
            "{}",
            reply.body
        );
    }
    let listed = api.get("/support", Some(&owner.token)).await;
    assert_eq!(listed.body["tickets"], json!([]));
    let missing = api
        .get("/support/tickets/not-a-ticket-id", Some(&owner.token))
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let other = api
        .get(
            "/support/tickets/tkt_abcdefghij0123456789",
            Some(&owner.token),
        )
        .await;
    assert_eq!(other.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn another_account_cannot_see_a_ticket_and_devices_need_a_session() {
    let (api, staff) = support_api().await;
    let (keys, owner, _) = account(&api).await;
    let ticket = open_ticket(&api, &owner.token, &keys, &staff.public).await;
    let (_, stranger, _) = account(&api).await;
    let hidden = api
        .get(&format!("/support/tickets/{ticket}"), Some(&stranger.token))
        .await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    let hidden = api
        .post(
            &format!("/support/tickets/{ticket}/close"),
            Some(&stranger.token),
            json!({}),
        )
        .await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);

    let device = api.pair(&owner.token, "wkr_support1").await;
    for path in ["/support", &format!("/support/tickets/{ticket}")] {
        let refused = api.get(path, Some(&device.credential)).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert_eq!(refused.code(), "session_required");
    }
}

/// `body` with the value at `pointer` replaced.
fn with(body: &Value, pointer: &str, value: Value) -> Value {
    let mut body = body.clone();
    *body.pointer_mut(pointer).unwrap() = value;
    body
}
