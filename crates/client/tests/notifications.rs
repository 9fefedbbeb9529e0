//! The notification methods against the real API (`TestApp`).

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed step stops the test loudly"
)]

use sealpost_client::Client;
use sealpost_client::notifications::{PushPlatform, UpdatePreferencesRequest};
use sealpost_client::types::CreateAddressRequest;
use sealpost_kernel::AddressId;
use sealpost_testkit::TestApp;

mod support;

use support::{Operator, assert_api, operator};

#[tokio::test(flavor = "multi_thread")]
async fn preferences_mutes_and_push_tokens_round_trip() {
    let app = TestApp::spawn().await;
    let Operator { client, keys } = operator(&app).await;

    let settings = client.notification_settings().await.unwrap();
    assert!(settings.preferences.new_mail && settings.preferences.webhook_failures);
    assert!(settings.muted_addresses.is_empty());
    let settings = client
        .update_notification_preferences(&UpdatePreferencesRequest {
            billing: Some(false),
            ..UpdatePreferencesRequest::default()
        })
        .await
        .unwrap();
    assert!(!settings.preferences.billing && settings.preferences.new_mail);
    // Preferences belong to the account, not the session.
    let token = Client::new(&app.base_url)
        .unwrap()
        .sign_in(&keys)
        .await
        .unwrap()
        .token;
    let other_session = Client::new(&app.base_url).unwrap().with_token(token);
    assert_eq!(
        other_session.notification_settings().await.unwrap(),
        settings
    );

    let address = client
        .create_address(&CreateAddressRequest::new(
            &AddressId::parse("ibx_sdkmute").unwrap(),
            "mail.localhost",
        ))
        .await
        .unwrap();
    let mute = client.mute_address(&address.id, true).await.unwrap();
    assert!(mute.muted);
    assert_eq!(
        client
            .notification_settings()
            .await
            .unwrap()
            .muted_addresses,
        std::slice::from_ref(&address.id)
    );
    assert_api(
        client
            .mute_address(&AddressId::parse("ibx_nothere").unwrap(), true)
            .await,
        404,
        "not_found",
    );

    let device = client
        .register_push_token("fcm:token-1", PushPlatform::Android)
        .await
        .unwrap();
    assert_eq!(
        (device.token.as_str(), device.platform),
        ("fcm:token-1", PushPlatform::Android)
    );
    assert_api(
        client.register_push_token("", PushPlatform::Ios).await,
        400,
        "invalid_field",
    );
    client.remove_push_token("fcm:token-1").await.unwrap();
    assert_api(
        client.remove_push_token("fcm:token-1").await,
        404,
        "not_found",
    );
}
