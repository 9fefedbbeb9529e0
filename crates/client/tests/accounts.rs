//! Every SDK method against the real API (`TestApp`).

use sealpost_client::types;
use sealpost_client::{Client, ClientError};
use sealpost_kernel::{AccountId, PlanId, SessionId};
use sealpost_seal::{AccountKeys, RecoveryPhrase};
use sealpost_testkit::TestApp;

fn new_keys() -> AccountKeys {
    RecoveryPhrase::generate().keys()
}

fn assert_api(result: Result<impl std::fmt::Debug, ClientError>, status: u16, code: &str) {
    match result {
        Err(err @ ClientError::Api { .. }) => {
            assert_eq!((err.status(), err.code()), (Some(status), code), "{err:?}");
        }
        other => panic!("expected {status} {code}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn health() {
    let app = TestApp::spawn().await;
    // A trailing slash on the base URL is fine.
    let client = Client::new(format!("{}/", app.base_url)).unwrap();
    assert_eq!(client.health().await.unwrap().status, "up");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn register_sign_in_and_sessions() {
    let app = TestApp::spawn().await;
    let anonymous = Client::new(&app.base_url).unwrap();
    let keys = new_keys();

    let registered = anonymous.register(&keys).await.unwrap();
    assert_eq!(registered.account.id.as_str(), keys.account_id());
    assert_eq!(registered.account.plan.id, PlanId::Free);
    assert!(registered.expires_at > registered.account.created_at);
    assert_api(anonymous.register(&keys).await, 409, "id_taken");

    let first = anonymous.clone().with_token(registered.token.clone());
    assert_eq!(first.token(), Some(registered.token.as_str()));
    let me = first.me().await.unwrap();
    assert_eq!(me.account, registered.account);

    let signed_in = anonymous.sign_in(&keys).await.unwrap();
    assert_ne!(signed_in.token, registered.token);
    assert_eq!(signed_in.account.id, registered.account.id);
    let second = anonymous.clone().with_token(signed_in.token);

    // Two sessions; each client sees its own as current.
    let listed = first.sessions().await.unwrap().sessions;
    assert_eq!(listed.len(), 2);
    assert_eq!(listed.iter().filter(|s| s.current).count(), 1);
    let from_second = second.sessions().await.unwrap().sessions;
    let first_id = listed.iter().find(|s| s.current).unwrap().id.clone();
    let second_id = from_second.iter().find(|s| s.current).unwrap().id.clone();
    assert_ne!(first_id, second_id);

    // Revoke the second session from the first.
    first.revoke_session(&second_id).await.unwrap();
    assert_api(second.me().await, 401, "unauthenticated");
    assert_api(
        first.revoke_session(&SessionId::generate()).await,
        404,
        "not_found",
    );

    // Revoke all others: two new sessions go, the current one stays.
    let third = anonymous
        .clone()
        .with_token(anonymous.sign_in(&keys).await.unwrap().token);
    anonymous.sign_in(&keys).await.unwrap();
    assert_eq!(first.revoke_other_sessions().await.unwrap(), 2);
    assert_eq!(first.revoke_other_sessions().await.unwrap(), 0);
    assert_api(third.sessions().await, 401, "unauthenticated");
    assert_eq!(first.sessions().await.unwrap().sessions.len(), 1);

    // Sign out ends the session.
    first.sign_out().await.unwrap();
    assert_api(first.me().await, 401, "unauthenticated");
    assert_api(anonymous.me().await, 401, "unauthenticated");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn wrong_phrase_and_bad_proofs_are_unauthenticated() {
    let app = TestApp::spawn().await;
    let client = Client::new(&app.base_url).unwrap();
    let keys = new_keys();
    client.register(&keys).await.unwrap();

    // A phrase that was never registered.
    assert_api(client.sign_in(&new_keys()).await, 401, "unauthenticated");

    // The right account id, a proof from other keys.
    let account_id = AccountId::parse(&keys.account_id()).unwrap();
    let challenge = client.challenge(&account_id).await.unwrap();
    let mut forged = types::answer(&new_keys(), &challenge);
    forged.account_id = account_id.to_string();
    assert_api(client.verify(&forged).await, 401, "unauthenticated");
    // The nonce was consumed by that attempt: the right proof is too late.
    assert_api(
        client.verify(&types::answer(&keys, &challenge)).await,
        401,
        "unauthenticated",
    );

    // A fresh challenge answered correctly works.
    let challenge = client.challenge(&account_id).await.unwrap();
    client
        .verify(&types::answer(&keys, &challenge))
        .await
        .unwrap();
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn erase_account() {
    let app = TestApp::spawn().await;
    let anonymous = Client::new(&app.base_url).unwrap();
    let keys = new_keys();
    let token = anonymous.register(&keys).await.unwrap().token;
    let client = anonymous.clone().with_token(token);

    client.erase_account().await.unwrap();
    assert_api(client.me().await, 401, "unauthenticated");
    assert_api(anonymous.sign_in(&keys).await, 401, "unauthenticated");
    // The id is never issued again.
    assert_api(anonymous.register(&keys).await, 409, "id_taken");
    app.stop().await;
}

#[tokio::test]
async fn unreachable_service_is_a_transport_error() {
    // Port 9 (discard) on loopback is closed on test machines.
    let client = Client::new("http://127.0.0.1:9").unwrap();
    let err = client.health().await.unwrap_err();
    assert!(matches!(err, ClientError::Transport(_)), "{err:?}");
    assert_eq!(err.code(), "transport");
}

#[tokio::test(flavor = "multi_thread")]
async fn checkout_payment_and_the_payment_history() {
    let app = TestApp::spawn().await;
    let anonymous = Client::new(&app.base_url).unwrap();
    let keys = new_keys();
    let token = anonymous.register(&keys).await.unwrap().token;
    let client = anonymous.with_token(token);
    let empty = client
        .payments(&types::PageParams::default())
        .await
        .unwrap();
    assert!(empty.payments.is_empty());
    assert_eq!(empty.next_cursor, None);

    let first = client.checkout(PlanId::Operator, "sandbox").await.unwrap();
    // Paid on the sandbox's page, as a browser posts its form.
    let paid = reqwest::Client::new()
        .post(&first.url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("outcome=paid")
        .send()
        .await
        .unwrap();
    assert!(paid.status().is_success());
    app.clock.advance(chrono::TimeDelta::minutes(1));
    let second = client.checkout(PlanId::Scale, "sandbox").await.unwrap();

    let page = types::PageParams::first(1);
    let newest = client.payments(&page).await.unwrap();
    assert_eq!(newest.payments, vec![second.payment.clone()]);
    let next = page
        .next(newest.next_cursor.as_deref())
        .expect("a second page");
    let older = client.payments(&next).await.unwrap();
    assert_eq!(older.payments.len(), 1);
    assert_eq!(older.payments[0].id, first.payment.id);
    assert_eq!(older.payments[0].status.as_str(), "paid");
    assert_eq!(older.next_cursor, None);
    assert_eq!(
        client.payment(&first.payment.id).await.unwrap(),
        older.payments[0]
    );
    assert_api(
        client
            .payments(&types::PageParams {
                limit: Some(0),
                cursor: None,
            })
            .await,
        400,
        "invalid_field",
    );
    app.stop().await;
}
