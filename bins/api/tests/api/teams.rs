//! Teams over HTTP: two real accounts and sessions, mail delivered over real
//! SMTP, grants sealed and opened as clients do, sending through a real
//! relay on loopback.

use std::time::Duration;

use reqwest::StatusCode;
use sealpost_seal::{AccountKeys, SealedBox, StaticSecret, b64, context, team_fingerprint};
use sealpost_testkit::TestApp;
use sealpost_testkit::relay::{Behaviour, TestRelay, dkim_test_key_path};
use serde_json::{Value, json};

use crate::billing::{buy, keyed_address};
use crate::support::{Api, Reply, SignedIn, SmtpClient, new_keys};

struct Person {
    keys: AccountKeys,
    signed_in: SignedIn,
}

impl Person {
    fn token(&self) -> Option<&str> {
        Some(&self.signed_in.token)
    }

    fn id(&self) -> &str {
        &self.signed_in.account_id
    }
}

async fn person(api: &Api) -> Person {
    let (_, keys) = new_keys();
    let signed_in = api.register(&keys).await;
    Person { keys, signed_in }
}

/// The pin: the member's key sealed to the owner's vault.
fn pin(owner: &AccountKeys, key: &[u8; 32]) -> Value {
    serde_json::to_value(SealedBox::seal(&owner.vault_public_key(), "", key)).unwrap()
}

fn add_body(owner: &Person, member: &Person) -> Value {
    let key = member.keys.auth_public_key();
    json!({ "memberId": member.id(), "publicKey": b64::encode(&key), "pin": pin(&owner.keys, &key) })
}

/// One address's keys at `epoch`, sealed to the member as the owner's client does.
fn sealed_grant(owner: &Person, member: &Person, address: &str, epoch: u32) -> Value {
    let keys = json!({
        "inboxKey": b64::encode(&owner.keys.address_secret(address, epoch).to_bytes()),
        "sealingKey": b64::encode(&owner.keys.address_sealing_key(address, epoch)),
    });
    serde_json::to_value(SealedBox::seal(
        &member.keys.auth_public_key(),
        &context::team_grant(owner.id(), member.id(), address, epoch),
        keys.to_string().as_bytes(),
    ))
    .unwrap()
}

async fn grant(api: &Api, owner: &Person, member: &Person, address: &str, access: &str) -> Reply {
    api.post(
        &format!("/team/members/{}/grants", member.id()),
        owner.token(),
        json!({ "grants": [{ "inboxId": address, "epoch": 0, "access": access,
                             "sealed": sealed_grant(owner, member, address, 0) }] }),
    )
    .await
}

async fn smtp_deliver(app: &mut TestApp, to: &str, marker: &str) {
    let smtp = app.spawn_smtp().await;
    let (mut client, greeting) = SmtpClient::connect(smtp).await;
    assert_eq!(greeting, 220);
    assert_eq!(client.command("EHLO client.example").await, 250);
    assert_eq!(client.command("MAIL FROM:<sender@example.com>").await, 250);
    assert_eq!(client.command(&format!("RCPT TO:<{to}>")).await, 250);
    let message = format!(
        "From: Sender <sender@example.com>\r\nTo: {to}\r\nSubject: team {marker}\r\n\r\nbody {marker}"
    );
    assert_eq!(client.data(&message).await, 250);
    assert_eq!(client.command("QUIT").await, 221);
}

/// The member's client: the grant from `GET /memberships`, opened with its
/// own sign-in secret, gives the address key that opens the message.
async fn open_as_member(
    api: &Api,
    member: &Person,
    owner: &str,
    address: &str,
    message_id: &str,
) -> String {
    let listed = api.get("/memberships", member.token()).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    let membership = listed.body["memberships"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["ownerId"] == owner)
        .unwrap()
        .clone();
    let shared = membership["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["inboxId"] == address)
        .unwrap()
        .clone();
    let sealed: SealedBox = serde_json::from_value(shared["grants"][0]["sealed"].clone()).unwrap();
    let keys: Value = serde_json::from_slice(
        &sealed
            .open(
                &member.keys.auth_secret(),
                &context::team_grant(owner, member.id(), address, 0),
            )
            .unwrap(),
    )
    .unwrap();
    let address_key = b64::decode_32(keys["inboxKey"].as_str().unwrap()).unwrap();
    let read = api
        .get(&format!("/messages/{message_id}"), member.token())
        .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    let content: SealedBox =
        serde_json::from_value(read.body["message"]["content"].clone()).unwrap();
    let plain = content
        .open(
            &StaticSecret::from(address_key),
            &context::message(address, message_id),
        )
        .unwrap();
    String::from_utf8(plain).unwrap()
}

async fn team_api() -> (Api, TestRelay) {
    let relay = TestRelay::start(Behaviour::Accept).await;
    let url = relay.url();
    let app = TestApp::spawn_with(|config| {
        config.smtp_relay = Some(sealpost_config::RelayUrl::new(url));
        config.dkim_key_file = Some(dkim_test_key_path());
        config.smtp_relay_timeout = Duration::from_secs(2);
    })
    .await;
    (Api::with(app), relay)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_owner_shares_an_address_read_only_then_with_send_and_takes_it_back() {
    let (mut api, relay) = team_api().await;
    let owner = person(&api).await;
    let member = person(&api).await;
    buy(&api, &owner.signed_in, "fleet").await;
    keyed_address(&api, &owner.signed_in, &owner.keys, "ibx_shared01").await;
    keyed_address(&api, &owner.signed_in, &owner.keys, "ibx_private01").await;
    let addresses = api.get("/inboxes", owner.token()).await;
    let address_of = |id: &str| {
        addresses.body["inboxes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|address| address["id"] == id)
            .unwrap()["emailAddress"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let shared = address_of("ibx_shared01");
    let private = address_of("ibx_private01");

    // Both people compare the six words of the member's key.
    let key = member.keys.auth_public_key();
    let join_code = format!("service-team-1.{}.{}", member.id(), b64::encode(&key));
    let from_code = b64::decode_32(join_code.rsplit('.').next().unwrap()).unwrap();
    assert_eq!(team_fingerprint(&from_code), team_fingerprint(&key));

    let added = api
        .post("/team/members", owner.token(), add_body(&owner, &member))
        .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.body);
    assert_eq!(added.body["member"]["memberId"], member.id());
    assert_eq!(added.body["member"]["publicKey"], b64::encode(&key));
    let again = api
        .post("/team/members", owner.token(), add_body(&owner, &member))
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.code(), "already_member");

    let granted = grant(&api, &owner, &member, "ibx_shared01", "read").await;
    assert_eq!(granted.status, StatusCode::OK, "{}", granted.body);
    assert_eq!(
        granted.body["member"]["grants"],
        json!([{ "inboxId": "ibx_shared01", "epoch": 0, "access": "read" }])
    );
    let team = api.get("/team", owner.token()).await;
    assert_eq!(team.status, StatusCode::OK, "{}", team.body);
    assert_eq!(team.body["limit"], 25);
    assert_eq!(team.body["members"].as_array().unwrap().len(), 1);

    smtp_deliver(&mut api.app, &shared, "SHAREDMARK").await;
    smtp_deliver(&mut api.app, &private, "PRIVATEMARK").await;

    // The member lists the shared address like its own, and opens the mail.
    let listed = api
        .get("/inboxes/ibx_shared01/messages", member.token())
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    let messages = listed.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    let message_id = messages[0]["id"].as_str().unwrap().to_owned();
    let plain = open_as_member(&api, &member, owner.id(), "ibx_shared01", &message_id).await;
    assert!(plain.contains("SHAREDMARK"), "{plain}");
    let memberships = api.get("/memberships", member.token()).await;
    assert_eq!(memberships.body["memberships"][0]["active"], true);
    assert_eq!(
        memberships.body["memberships"][0]["addresses"][0]["emailAddress"],
        shared.as_str()
    );
    let marked = api
        .post(
            &format!("/messages/{message_id}/read"),
            member.token(),
            json!({ "read": true }),
        )
        .await;
    assert_eq!(marked.status, StatusCode::NO_CONTENT, "{}", marked.body);

    // Nothing else of the owner's: the other address is 404.
    let other = api
        .get("/inboxes/ibx_private01/messages", member.token())
        .await;
    assert_eq!(other.status, StatusCode::NOT_FOUND);
    let owner_list = api
        .get("/inboxes/ibx_private01/messages", owner.token())
        .await;
    let private_id = owner_list.body["messages"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        api.get(&format!("/messages/{private_id}"), member.token())
            .await
            .status,
        StatusCode::NOT_FOUND
    );

    // Read-only: no sending, moving or deleting.
    let send_body =
        json!({ "from": shared, "to": ["someone@example.org"], "subject": "hi", "text": "hello" });
    let refused = api
        .post("/messages/send", member.token(), send_body.clone())
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert_eq!(refused.code(), "not_your_address");
    let moved = api
        .post(
            &format!("/messages/{message_id}/move"),
            member.token(),
            json!({ "folder": "archive" }),
        )
        .await;
    assert_eq!(moved.status, StatusCode::NOT_FOUND, "{}", moved.body);
    assert!(relay.received().is_empty());

    // With send access: sends (message.sent via member, on the owner's
    // account), moves and deletes.
    let upgraded = grant(&api, &owner, &member, "ibx_shared01", "send").await;
    assert_eq!(upgraded.status, StatusCode::OK, "{}", upgraded.body);
    let sent = api.post("/messages/send", member.token(), send_body).await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.body);
    assert_eq!(relay.received().len(), 1);
    let events = api.event_payloads(owner.id(), "message.sent").await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["via"], "member");
    assert_eq!(events[0]["inboxId"], "ibx_shared01");
    assert!(
        api.event_payloads(member.id(), "message.sent")
            .await
            .is_empty()
    );
    let moved = api
        .post(
            &format!("/messages/{message_id}/move"),
            member.token(),
            json!({ "folder": "archive" }),
        )
        .await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.body);
    let trashed = api
        .delete(&format!("/messages/{message_id}"), member.token())
        .await;
    assert!(trashed.status.is_success(), "{}", trashed.body);

    // Revoked: 404 at once.
    let revoked = api
        .delete(
            &format!("/team/members/{}/grants/ibx_shared01", member.id()),
            owner.token(),
        )
        .await;
    assert_eq!(revoked.status, StatusCode::NO_CONTENT, "{}", revoked.body);
    assert_eq!(
        api.get(&format!("/messages/{message_id}"), member.token())
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.get("/inboxes/ibx_shared01/messages", member.token())
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let again = api
        .delete(
            &format!("/team/members/{}/grants/ibx_shared01", member.id()),
            owner.token(),
        )
        .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);

    // Removing the member removes every grant.
    assert_eq!(
        grant(&api, &owner, &member, "ibx_shared01", "read")
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        api.get("/inboxes/ibx_shared01/messages", member.token())
            .await
            .status,
        StatusCode::OK
    );
    let removed = api
        .delete(&format!("/team/members/{}", member.id()), owner.token())
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT);
    assert_eq!(
        api.get("/inboxes/ibx_shared01/messages", member.token())
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let memberships = api.get("/memberships", member.token()).await;
    assert_eq!(memberships.body["memberships"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_team_is_inactive_while_the_owners_plan_has_no_teams() {
    let (mut api, _relay) = team_api().await;
    let owner = person(&api).await;
    let member = person(&api).await;
    // On Fleet with no paid period running, so the move down below is at once
    // (in a paid period it would wait for the period's end).
    api.set_plan(&owner.signed_in.account_id, "fleet").await;
    keyed_address(&api, &owner.signed_in, &owner.keys, "ibx_shared02").await;
    let added = api
        .post("/team/members", owner.token(), add_body(&owner, &member))
        .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.body);
    assert_eq!(
        grant(&api, &owner, &member, "ibx_shared02", "read")
            .await
            .status,
        StatusCode::OK
    );
    let address = api.get("/inboxes", owner.token()).await;
    let address = address.body["inboxes"][0]["emailAddress"]
        .as_str()
        .unwrap()
        .to_owned();
    smtp_deliver(&mut api.app, &address, "PLANMARK").await;
    let listed = api
        .get("/inboxes/ibx_shared02/messages", member.token())
        .await;
    let message_id = listed.body["messages"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Down to Scale: the membership stays, inactive, and reaches nothing.
    let moved = api
        .post(
            "/subscription/plan",
            owner.token(),
            json!({ "planId": "scale" }),
        )
        .await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.body);
    let memberships = api.get("/memberships", member.token()).await;
    assert_eq!(memberships.body["memberships"][0]["active"], false);
    assert_eq!(
        memberships.body["memberships"][0]["addresses"][0]["inboxId"], "ibx_shared02",
        "grants are kept"
    );
    assert_eq!(
        api.get(&format!("/messages/{message_id}"), member.token())
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.get("/inboxes/ibx_shared02/messages", member.token())
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let team = api.get("/team", owner.token()).await;
    assert_eq!(team.status, StatusCode::PAYMENT_REQUIRED);
    assert_eq!(team.code(), "plan_capability_required");

    // Back on Fleet: access returns with the same grants.
    buy(&api, &owner.signed_in, "fleet").await;
    let memberships = api.get("/memberships", member.token()).await;
    assert_eq!(memberships.body["memberships"][0]["active"], true);
    let plain = open_as_member(&api, &member, owner.id(), "ibx_shared02", &message_id).await;
    assert!(plain.contains("PLANMARK"));

    // Leaving is the member's own choice, on any plan.
    let left = api
        .delete(&format!("/memberships/{}", owner.id()), member.token())
        .await;
    assert_eq!(left.status, StatusCode::NO_CONTENT);
    assert_eq!(
        api.get(&format!("/messages/{message_id}"), member.token())
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.delete(&format!("/memberships/{}", owner.id()), member.token())
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn limits_members_grants_and_epochs() {
    let api = Api::spawn().await;
    let owner = person(&api).await;
    // Below Fleet: a malformed body is 400 as on every plan; a good one 402.
    let malformed = api
        .post(
            "/team/members",
            owner.token(),
            json!({ "memberId": "acct_x", "publicKey": "", "pin": {} }),
        )
        .await;
    assert_eq!(
        malformed.status,
        StatusCode::BAD_REQUEST,
        "{}",
        malformed.body
    );
    assert_eq!(malformed.code(), "invalid_id");
    let joining = person(&api).await;
    let free = api
        .post("/team/members", owner.token(), add_body(&owner, &joining))
        .await;
    assert_eq!(free.status, StatusCode::PAYMENT_REQUIRED, "{}", free.body);
    assert_eq!(free.code(), "plan_capability_required");

    api.set_plan(owner.id(), "fleet").await;
    let mut members = Vec::new();
    for _ in 0..26 {
        members.push(person(&api).await);
    }
    for member in &members[..25] {
        let added = api
            .post("/team/members", owner.token(), add_body(&owner, member))
            .await;
        assert_eq!(added.status, StatusCode::CREATED, "{}", added.body);
    }
    let full = api
        .post(
            "/team/members",
            owner.token(),
            add_body(&owner, &members[25]),
        )
        .await;
    assert_eq!(full.status, StatusCode::CONFLICT, "{}", full.body);
    assert_eq!(full.code(), "team_limit_reached");
    api.set_plan(owner.id(), "enterprise").await;
    let more = api
        .post(
            "/team/members",
            owner.token(),
            add_body(&owner, &members[25]),
        )
        .await;
    assert_eq!(more.status, StatusCode::CREATED, "{}", more.body);
    assert_eq!(api.get("/team", owner.token()).await.body["limit"], 100);

    // 500 grants in one request; 501 is refused whole.
    let member = &members[0];
    let mut grants = Vec::new();
    for n in 0..501 {
        let id = format!("ibx_many{n:03}");
        if n < 500 {
            keyed_address(&api, &owner.signed_in, &owner.keys, &id).await;
        }
        grants.push(json!({ "inboxId": id, "epoch": 0, "access": "read",
                            "sealed": sealed_grant(&owner, member, &id, 0) }));
    }
    let path = format!("/team/members/{}/grants", member.id());
    let too_many = api
        .post(&path, owner.token(), json!({ "grants": grants.clone() }))
        .await;
    assert_eq!(
        too_many.status,
        StatusCode::BAD_REQUEST,
        "{}",
        too_many.body
    );
    assert_eq!(too_many.code(), "invalid_field");
    grants.pop();
    let stored = api
        .post(&path, owner.token(), json!({ "grants": grants }))
        .await;
    assert_eq!(stored.status, StatusCode::OK, "{}", stored.body);
    assert_eq!(
        stored.body["member"]["grants"].as_array().unwrap().len(),
        500
    );

    // Epochs run from 0 to keyEpoch (0 for every address today).
    let above = api
        .post(
            &path,
            owner.token(),
            json!({ "grants": [
                { "inboxId": "ibx_many000", "epoch": 0, "access": "send", "sealed": sealed_grant(&owner, member, "ibx_many000", 0) },
                { "inboxId": "ibx_many000", "epoch": 1, "access": "send", "sealed": sealed_grant(&owner, member, "ibx_many000", 1) },
            ] }),
        )
        .await;
    assert_eq!(above.status, StatusCode::CONFLICT, "{}", above.body);
    assert_eq!(above.code(), "epoch_conflict");
    // Past the document's int32 no epoch can exist: a bad value, not a conflict.
    let past_int32 = api
        .post(
            &path,
            owner.token(),
            json!({ "grants": [
                { "inboxId": "ibx_many000", "epoch": 2_147_483_648_u32, "access": "read", "sealed": sealed_grant(&owner, member, "ibx_many000", 0) },
            ] }),
        )
        .await;
    assert_eq!(
        past_int32.status,
        StatusCode::BAD_REQUEST,
        "{}",
        past_int32.body
    );
    assert_eq!(past_int32.code(), "invalid_field");
    let team = api.get("/team", owner.token()).await;
    let holder = team.body["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["memberId"] == member.id())
        .unwrap();
    let first = &holder["grants"][0];
    assert_eq!(
        first["access"], "read",
        "nothing of the refused request was stored"
    );

    // Rotation: the epoch is checked first, then the feature is off.
    let rotate =
        |epoch: u32| json!({ "epoch": epoch, "publicKey": b64::encode(&[5u8; 32]), "grants": [] });
    let wrong = api
        .post("/inboxes/ibx_many000/rotate", owner.token(), rotate(2))
        .await;
    assert_eq!(wrong.status, StatusCode::CONFLICT, "{}", wrong.body);
    assert_eq!(wrong.code(), "epoch_conflict");
    let past_int32 = api
        .post(
            "/inboxes/ibx_many000/rotate",
            owner.token(),
            rotate(2_147_483_648),
        )
        .await;
    assert_eq!(
        past_int32.status,
        StatusCode::BAD_REQUEST,
        "{}",
        past_int32.body
    );
    assert_eq!(past_int32.code(), "invalid_field");
    let next = api
        .post("/inboxes/ibx_many000/rotate", owner.token(), rotate(1))
        .await;
    assert_eq!(
        next.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        next.body
    );
    assert_eq!(next.code(), "feature_disabled");
}

#[tokio::test(flavor = "multi_thread")]
async fn other_accounts_ids_are_404_and_device_credentials_403() {
    let api = Api::spawn().await;
    let owner = person(&api).await;
    let member = person(&api).await;
    let stranger = person(&api).await;
    api.set_plan(owner.id(), "fleet").await;
    api.set_plan(stranger.id(), "fleet").await;
    keyed_address(&api, &owner.signed_in, &owner.keys, "ibx_iso01").await;
    keyed_address(&api, &stranger.signed_in, &stranger.keys, "ibx_iso02").await;
    let added = api
        .post("/team/members", owner.token(), add_body(&owner, &member))
        .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.body);
    assert_eq!(
        grant(&api, &owner, &member, "ibx_iso01", "read")
            .await
            .status,
        StatusCode::OK
    );

    // The stranger names the owner's member, address and team.
    let not_found = [
        api.delete(&format!("/team/members/{}", member.id()), stranger.token())
            .await,
        grant(&api, &stranger, &member, "ibx_iso02", "read").await,
        api.delete(
            &format!("/team/members/{}/grants/ibx_iso01", member.id()),
            stranger.token(),
        )
        .await,
        api.post(
            "/inboxes/ibx_iso01/rotate",
            stranger.token(),
            json!({ "epoch": 1, "publicKey": b64::encode(&[5u8; 32]) }),
        )
        .await,
        api.delete(&format!("/memberships/{}", owner.id()), stranger.token())
            .await,
        // The owner granting the stranger's address.
        grant(&api, &owner, &member, "ibx_iso02", "read").await,
        // Malformed ids in paths.
        api.delete("/team/members/acct_nope", owner.token()).await,
        api.delete("/memberships/nope", member.token()).await,
    ];
    for reply in not_found {
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.body);
        assert_eq!(reply.code(), "not_found");
    }
    assert_eq!(
        api.get("/team", stranger.token()).await.body["members"],
        json!([])
    );
    assert_eq!(
        api.get("/memberships", stranger.token()).await.body["memberships"],
        json!([])
    );
    assert_eq!(
        api.get("/inboxes/ibx_iso01/messages", stranger.token())
            .await
            .status,
        StatusCode::NOT_FOUND
    );

    // A device credential of the owner: session only.
    let device = api.pair(&owner.signed_in.token, "wkr_teamdev01").await;
    let token = Some(device.credential.as_str());
    let member_path = format!("/team/members/{}", member.id());
    let grants_path = format!("/team/members/{}/grants", member.id());
    let forbidden = [
        api.get("/team", token).await,
        api.post("/team/members", token, add_body(&owner, &stranger))
            .await,
        api.delete(&member_path, token).await,
        api.post(&grants_path, token, json!({ "grants": [] })).await,
        api.delete(&format!("{grants_path}/ibx_iso01"), token).await,
        api.post(
            "/inboxes/ibx_iso01/rotate",
            token,
            json!({ "epoch": 1, "publicKey": b64::encode(&[5u8; 32]) }),
        )
        .await,
        api.get("/memberships", token).await,
        api.delete(&format!("/memberships/{}", owner.id()), token)
            .await,
    ];
    for reply in forbidden {
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.body);
        assert_eq!(reply.code(), "session_required");
    }
    // Unauthenticated: 401.
    assert_eq!(
        api.get("/team", None).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_keys_that_are_not_the_sign_in_key_and_invalid_boxes() {
    let api = Api::spawn().await;
    let owner = person(&api).await;
    let member = person(&api).await;
    api.set_plan(owner.id(), "fleet").await;
    keyed_address(&api, &owner.signed_in, &owner.keys, "ibx_bad01").await;

    // Another key than the one the account signs in with: 404, as for no account.
    let vault = member.keys.vault_public_key();
    let wrong_key = api
        .post(
            "/team/members",
            owner.token(),
            json!({ "memberId": member.id(), "publicKey": b64::encode(&vault), "pin": pin(&owner.keys, &vault) }),
        )
        .await;
    assert_eq!(
        wrong_key.status,
        StatusCode::NOT_FOUND,
        "{}",
        wrong_key.body
    );
    let (_, unknown) = new_keys();
    let no_account = api
        .post(
            "/team/members",
            owner.token(),
            json!({ "memberId": unknown.account_id(), "publicKey": b64::encode(&unknown.auth_public_key()),
                    "pin": pin(&owner.keys, &unknown.auth_public_key()) }),
        )
        .await;
    assert_eq!(
        no_account.status,
        StatusCode::NOT_FOUND,
        "{}",
        no_account.body
    );
    let themselves = api
        .post("/team/members", owner.token(), add_body(&owner, &owner))
        .await;
    assert_eq!(
        themselves.status,
        StatusCode::BAD_REQUEST,
        "{}",
        themselves.body
    );

    let key = b64::encode(&member.keys.auth_public_key());
    let cases = [
        (
            json!({ "memberId": "acct_!", "publicKey": key, "pin": pin(&owner.keys, &[1; 32]) }),
            "invalid_id",
        ),
        (
            json!({ "memberId": member.id(), "publicKey": "short", "pin": pin(&owner.keys, &[1; 32]) }),
            "invalid_key",
        ),
        (
            json!({ "memberId": member.id(), "publicKey": key, "pin": { "v": 2, "epk": "AA" } }),
            "invalid_box",
        ),
    ];
    for (body, code) in cases {
        let reply = api.post("/team/members", owner.token(), body).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.body);
        assert_eq!(reply.code(), code);
    }

    let added = api
        .post("/team/members", owner.token(), add_body(&owner, &member))
        .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.body);
    let path = format!("/team/members/{}/grants", member.id());
    let mut sealed = sealed_grant(&owner, &member, "ibx_bad01", 0);
    sealed["n"] = json!("AAAA");
    let bad_box = api
        .post(
            &path,
            owner.token(),
            json!({ "grants": [{ "inboxId": "ibx_bad01", "epoch": 0, "access": "read", "sealed": sealed }] }),
        )
        .await;
    assert_eq!(bad_box.status, StatusCode::BAD_REQUEST, "{}", bad_box.body);
    assert_eq!(bad_box.code(), "invalid_box");
    let bad_access = api
        .post(
            &path,
            owner.token(),
            json!({ "grants": [{ "inboxId": "ibx_bad01", "epoch": 0, "access": "write",
                                 "sealed": sealed_grant(&owner, &member, "ibx_bad01", 0) }] }),
        )
        .await;
    assert_eq!(
        bad_access.status,
        StatusCode::BAD_REQUEST,
        "{}",
        bad_access.body
    );
    assert_eq!(bad_access.code(), "invalid_field");
    let none = api
        .post(&path, owner.token(), json!({ "grants": [] }))
        .await;
    assert_eq!(none.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        api.get("/team", owner.token()).await.body["members"][0]["grants"],
        json!([])
    );
}

/// The plan the service read is stale by the time the store locks the
/// owner (a downgrade between them): the store says so instead of counting
/// against the old plan's limit.
#[tokio::test(flavor = "multi_thread")]
async fn a_member_is_counted_against_the_plan_the_locked_owner_holds() {
    use sealpost_kernel::{AccountId, PlanId};
    use sealpost_teams::{AddOutcome, NewMember, TeamRepository};

    let api = Api::spawn().await;
    let owner = person(&api).await;
    let member = person(&api).await;
    api.set_plan(owner.id(), "scale").await;
    let new = NewMember {
        owner: AccountId::parse(owner.id()).unwrap(),
        member: AccountId::parse(member.id()).unwrap(),
        public_key: [7; 32],
        pin: SealedBox::seal(&[7; 32], "pin", b"pin"),
        joined_at: sealpost_kernel::Timestamp::parse("2026-11-22T12:00:00Z").unwrap(),
    };
    let outcome = api
        .app
        .services()
        .store
        .add_member(new, PlanId::Fleet, 25)
        .await
        .unwrap();
    assert_eq!(outcome, AddOutcome::PlanChanged(PlanId::Scale));
    api.set_plan(owner.id(), "fleet").await;
    let team = api.get("/team", owner.token()).await;
    assert_eq!(team.body["members"], json!([]), "{}", team.body);
}
