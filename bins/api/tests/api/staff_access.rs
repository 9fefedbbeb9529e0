//! Who may use the staff API and how far: token expiry (401), roles (403),
//! the support key rotation's proof, list reads in the audit log, and the
//! staff lists paged past 500.

use std::collections::HashSet;

use chrono::TimeDelta;
use diesel::QueryableByName;
use diesel_async::RunQueryDsl;
use reqwest::StatusCode;
use sealpost_client::support::{self, TicketHeader};
use sealpost_seal::b64;
use sealpost_support::{Role, Roles};
use serde_json::{Value, json};

use crate::support::Api;
use crate::tickets::{SupportKeys, account, support_api};

async fn token_with(api: &Api, name: &str, roles: &[Role], lifetime: Option<TimeDelta>) -> String {
    let (_, token) = api
        .app
        .services()
        .staff
        .create_token(name, Roles::of(roles), lifetime)
        .await
        .unwrap();
    token
}

async fn execute_sql(api: &Api, sql: &str) {
    let mut conn = api.app.db.connect().await;
    diesel::sql_query(sql).execute(&mut conn).await.unwrap();
}

#[derive(QueryableByName)]
struct AuditRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    actor: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    action: String,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    note: Option<String>,
}

async fn audit_rows(api: &Api) -> Vec<AuditRow> {
    let mut conn = api.app.db.connect().await;
    diesel::sql_query("SELECT actor, action, note FROM staff_audit ORDER BY id")
        .load(&mut conn)
        .await
        .unwrap()
}

async fn staff_id(api: &Api, name: &str) -> String {
    api.app
        .services()
        .staff
        .tokens()
        .await
        .unwrap()
        .into_iter()
        .find(|token| token.name == name)
        .unwrap()
        .id
}

#[tokio::test(flavor = "multi_thread")]
async fn each_staff_endpoint_needs_its_role_and_an_expired_token_is_401() {
    let (api, _) = support_api().await;
    let (_, owner, _) = account(&api).await;
    let reader = token_with(&api, "reader", &[Role::Read], Some(TimeDelta::days(2))).await;
    let before = audit_rows(&api).await.len();

    // Read is enough to read.
    for path in [
        "/staff/tickets",
        "/staff/abuse-reports",
        "/staff/switches",
        "/staff/audit",
    ] {
        let read = api.get(path, Some(&reader)).await;
        assert_eq!(read.status, StatusCode::OK, "{path}: {}", read.body);
    }
    // Every other role's endpoint is 403 role_required, and does nothing.
    let account_path = format!("/staff/accounts/{}/suspend", owner.account_id);
    let refused = [
        (
            "POST",
            "/staff/tickets/tkt_aaaaaaaaaaaaaaaaaaaa/resolve".to_owned(),
            json!({}),
        ),
        ("POST", account_path, json!({ "reason": "spam" })),
        (
            "PATCH",
            "/staff/switches".to_owned(),
            json!({ "supportOff": true }),
        ),
        (
            "POST",
            "/staff/abuse-reports/abr_x/resolve".to_owned(),
            json!({ "resolution": "done" }),
        ),
        ("POST", "/staff/support-key/challenge".to_owned(), json!({})),
        (
            "POST",
            "/staff/support-key".to_owned(),
            json!({ "staffKey": b64::encode(&[7; 32]), "nonce": "x", "proof": "x" }),
        ),
    ];
    for (method, path, body) in refused {
        let reply = match method {
            "PATCH" => api.patch(&path, Some(&reader), body).await,
            _ => api.post(&path, Some(&reader), body).await,
        };
        assert_eq!(
            reply.status,
            StatusCode::FORBIDDEN,
            "{path}: {}",
            reply.body
        );
        assert_eq!(reply.body["error"]["code"], "role_required", "{path}");
    }
    let switches = api.get("/staff/switches", Some(&reader)).await;
    assert_eq!(
        switches.body["supportOff"], false,
        "the refused PATCH did nothing"
    );
    let suspended = audit_rows(&api)
        .await
        .into_iter()
        .skip(before)
        .filter(|row| !row.action.ends_with(".list") && row.action != "audit.read")
        .count();
    assert_eq!(suspended, 0, "no refused action reached the audit log");

    // Two days on the token has expired: 401 like any expired token.
    api.app.clock.advance(TimeDelta::days(2));
    let expired = api.get("/staff/tickets", Some(&reader)).await;
    assert_eq!(expired.status, StatusCode::UNAUTHORIZED, "{}", expired.body);
    assert_eq!(expired.body["error"]["code"], "session_expired");
    // A token with the default lifetime still works.
    let fresh = token_with(&api, "fresh", &[Role::Read], None).await;
    api.app.clock.advance(TimeDelta::days(89));
    let live = api.get("/staff/tickets", Some(&fresh)).await;
    assert_eq!(live.status, StatusCode::OK, "{}", live.body);
    api.app.clock.advance(TimeDelta::days(1));
    let ended = api.get("/staff/tickets", Some(&fresh)).await;
    assert_eq!(ended.status, StatusCode::UNAUTHORIZED, "90 days by default");
}

#[tokio::test(flavor = "multi_thread")]
async fn rotating_the_support_key_needs_the_current_key_s_proof() {
    let (api, current) = support_api().await;
    let token = token_with(&api, "rotator", &[Role::Rotate, Role::Read], None).await;
    let staff = sealpost_client::Client::new(api.app.base_url.clone())
        .unwrap()
        .with_token(token.clone());
    let new = SupportKeys::generate();
    let new_text = b64::encode(&new.public);
    let key_in_force =
        async || api.get("/staff/switches", Some(&token)).await.body["staffKey"].clone();

    let challenge = staff.support_key_challenge().await.unwrap();
    assert_eq!(challenge.staff_key, Some(b64::encode(&current.public)));
    let challenge_key = b64::decode_32(&challenge.challenge_key).unwrap();
    let proof_by = |secret: &sealpost_seal::StaticSecret, new_key: &str| {
        b64::encode(&sealpost_seal::support_key_proof(
            secret,
            &challenge_key,
            &challenge.nonce,
            new_key,
        ))
    };
    let rotation = |staff_key: &str, nonce: &str, proof: String| json!({ "staffKey": staff_key, "nonce": nonce, "proof": proof });
    let rotate = async |body: Value| api.post("/staff/support-key", Some(&token), body).await;
    let nonce = challenge.nonce.as_str();
    let stranger = SupportKeys::generate();
    let refused: [(&str, Value); 4] = [
        ("no proof", rotation(&new_text, nonce, String::new())),
        (
            "a proof by another key",
            rotation(&new_text, nonce, proof_by(&stranger.secret, &new_text)),
        ),
        (
            "a proof over another new key",
            rotation(
                &new_text,
                nonce,
                proof_by(&current.secret, &b64::encode(&stranger.public)),
            ),
        ),
        (
            "a nonce never issued",
            rotation(
                &new_text,
                &b64::encode(&[0; 24]),
                proof_by(&current.secret, &new_text),
            ),
        ),
    ];
    for (what, body) in refused {
        let reply = rotate(body).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{what}: {}",
            reply.body
        );
        assert_eq!(reply.body["error"]["code"], "invalid_field", "{what}");
        assert_eq!(
            key_in_force().await,
            json!(b64::encode(&current.public)),
            "{what} changed nothing"
        );
    }
    // A low-order new key (a ticket sealed to it would open for anyone) is
    // refused with a proof that would otherwise hold.
    let low_order = b64::encode(&[0u8; 32]);
    let reply = rotate(rotation(
        &low_order,
        nonce,
        proof_by(&current.secret, &low_order),
    ))
    .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.body);
    assert_eq!(reply.body["error"]["code"], "invalid_key");
    assert_eq!(key_in_force().await, json!(b64::encode(&current.public)));
    // The right proof, once its challenge is older than five minutes.
    api.app
        .clock
        .advance(TimeDelta::minutes(5) + TimeDelta::seconds(1));
    let late = rotate(rotation(
        &new_text,
        nonce,
        proof_by(&current.secret, &new_text),
    ))
    .await;
    assert_eq!(late.status, StatusCode::BAD_REQUEST, "{}", late.body);

    // A fresh challenge and the current key's proof: rotated, and audited.
    let challenge = staff.support_key_challenge().await.unwrap();
    let switched = staff
        .rotate_support_key(&new.public, &challenge, &current.secret)
        .await
        .unwrap();
    assert_eq!(switched.staff_key, Some(new_text.clone()));
    assert_eq!(key_in_force().await, json!(new_text));
    let rotations: Vec<_> = audit_rows(&api)
        .await
        .into_iter()
        .filter(|row| row.action == "support.rotate_key")
        .collect();
    assert_eq!(rotations.len(), 1);
    // The old key can no longer rotate: its proof is not the current key's.
    let again = staff.support_key_challenge().await.unwrap();
    let error = staff
        .rotate_support_key(&SupportKeys::generate().public, &again, &current.secret)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "invalid_field");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_staff_list_read_is_in_the_audit_log() {
    let (api, _) = support_api().await;
    let token = token_with(&api, "ada", &[Role::Read], None).await;
    let ada = staff_id(&api, "ada").await;
    for path in [
        "/staff/tickets?status=open",
        "/staff/abuse-reports?limit=10",
        "/staff/audit?limit=5",
    ] {
        let read = api.get(path, Some(&token)).await;
        assert_eq!(read.status, StatusCode::OK, "{path}: {}", read.body);
    }
    let reads: Vec<(String, Option<String>)> = audit_rows(&api)
        .await
        .into_iter()
        .filter(|row| row.actor == ada)
        .map(|row| (row.action, row.note))
        .collect();
    assert_eq!(
        reads,
        vec![
            (
                "ticket.list".to_owned(),
                Some("status=open limit=500".to_owned())
            ),
            ("abuse.list".to_owned(), Some("limit=10".to_owned())),
            ("audit.read".to_owned(), Some("limit=5".to_owned())),
        ]
    );
    // A read the database refuses to record is not answered.
    execute_sql(
        &api,
        "ALTER TABLE staff_audit ADD CONSTRAINT refuse_list_reads \
         CHECK (action <> 'ticket.list') NOT VALID",
    )
    .await;
    let unrecorded = api.get("/staff/tickets", Some(&token)).await;
    assert_eq!(unrecorded.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(unrecorded.body.get("tickets").is_none());
}

/// Pages `path` (which has a query already) to the end; each page's items
/// under `field`, by `id_of`.
async fn every_page(
    api: &Api,
    token: &str,
    path: &str,
    field: &str,
    id_of: fn(&Value) -> String,
) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(cursor) => format!("{path}&cursor={cursor}"),
            None => path.to_owned(),
        };
        let page = api.get(&url, Some(token)).await;
        assert_eq!(page.status, StatusCode::OK, "{url}: {}", page.body);
        pages.push(
            page.body[field]
                .as_array()
                .unwrap()
                .iter()
                .map(id_of)
                .collect(),
        );
        cursor = page.body["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            return pages;
        }
        assert!(pages.len() < 10, "the pages never end");
    }
}

fn all_once(pages: &[Vec<String>]) -> HashSet<String> {
    let ids: Vec<&String> = pages.iter().flatten().collect();
    let unique: HashSet<String> = ids.iter().map(|id| (*id).clone()).collect();
    assert_eq!(unique.len(), ids.len(), "an item came twice");
    unique
}

#[tokio::test(flavor = "multi_thread")]
async fn the_staff_lists_page_past_500() {
    let (api, support_keys) = support_api().await;
    let (keys, _, client) = account(&api).await;
    let first = support::seal_new_ticket(
        &keys,
        &support_keys.public,
        &TicketHeader::new("a", "low", "First"),
        "first",
    );
    client.create_ticket(&first.request).await.unwrap();
    // 520 more tickets like it, and 510 abuse reports, with times that tie
    // in groups so the id has to break them (in milliseconds, as the
    // service writes every time).
    execute_sql(
        &api,
        "INSERT INTO support_tickets (id, account_id, status, last_author, unread, \
           header_for_staff, header_for_account, account_key, staff_key, binding, \
           stored_bytes, message_count, created_at, updated_at, closed_at) \
         SELECT 'tkt_' || lpad(g::text, 20, '0'), account_id, status, last_author, unread, \
           header_for_staff, header_for_account, account_key, staff_key, binding, \
           stored_bytes, message_count, created_at, updated_at - (g % 7) * interval '1 second', \
           closed_at \
         FROM support_tickets, generate_series(1, 520) g",
    )
    .await;
    execute_sql(
        &api,
        "INSERT INTO abuse_reports (id, message_id, reason, status, created_at) \
         SELECT 'abr_' || lpad(g::text, 16, '0'), 'msg_x', 'spam', 'open', \
           date_trunc('milliseconds', now()) - (g % 5) * interval '1 minute' \
         FROM generate_series(1, 510) g",
    )
    .await;
    execute_sql(
        &api,
        "INSERT INTO staff_audit (actor, action, target, at) \
         SELECT 'operator', 'seed', 'seed' || g, \
           date_trunc('milliseconds', now()) - (g % 3) * interval '1 second' \
         FROM generate_series(1, 250) g",
    )
    .await;
    let token = token_with(&api, "ada", &[Role::Read], None).await;

    let tickets = every_page(&api, &token, "/staff/tickets?status=open", "tickets", |t| {
        t["ticket"]["id"].as_str().unwrap().to_owned()
    })
    .await;
    assert_eq!(
        tickets.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![500, 21]
    );
    assert_eq!(all_once(&tickets).len(), 521);
    let small = every_page(&api, &token, "/staff/tickets?limit=200", "tickets", |t| {
        t["ticket"]["id"].as_str().unwrap().to_owned()
    })
    .await;
    assert_eq!(small.len(), 3);
    assert_eq!(
        all_once(&small),
        all_once(&tickets),
        "the same list either way"
    );

    let reports = every_page(
        &api,
        &token,
        "/staff/abuse-reports?status=open",
        "reports",
        |r| r["id"].as_str().unwrap().to_owned(),
    )
    .await;
    assert_eq!(
        reports.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![500, 10]
    );
    assert_eq!(all_once(&reports).len(), 510);

    let audit = every_page(&api, &token, "/staff/audit?limit=200", "entries", |e| {
        format!("{}/{}/{}", e["action"], e["target"], e["note"])
    })
    .await;
    let seeded = all_once(&audit)
        .into_iter()
        .filter(|entry| entry.starts_with("\"seed\""))
        .count();
    assert_eq!(seeded, 250, "every seeded entry once");

    // A cursor this service did not hand out.
    let forged = api
        .get("/staff/audit?cursor=bm90LWEtY3Vyc29y", Some(&token))
        .await;
    assert_eq!(forged.status, StatusCode::BAD_REQUEST);
    let limit = api.get("/staff/tickets?limit=501", Some(&token)).await;
    assert_eq!(limit.status, StatusCode::BAD_REQUEST);
}
