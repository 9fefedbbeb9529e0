//! The device, pairing, address, domain and activity methods against the
//! real API (`TestApp`), with the sealing conventions of `sealing`.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed step stops the test loudly"
)]

use chrono::TimeDelta;
use sealpost_client::Client;
use sealpost_client::sealing::{self, DeviceProfile, KeyBundle};
use sealpost_client::types::{
    AddressStatus, CreateAddressRequest, DeviceKind, DeviceStatus, PageParams, PairingState,
    Platform, UpdateAddressRequest, UpdateDeviceRequest,
};
use sealpost_kernel::{AddressId, DeviceId, PlanId};
use sealpost_seal::{AccountKeys, PublicKey, StaticSecret, random_bytes};
use sealpost_testkit::TestApp;

mod support;

use support::{Operator, assert_api, operator};

/// Moves an account to another plan directly in the database (billing is
/// not what these tests are about).
async fn set_plan(app: &TestApp, keys: &AccountKeys, plan: &str) {
    use diesel_async::RunQueryDsl;
    let mut conn = app.db.connect().await;
    diesel::sql_query("UPDATE accounts SET plan_id = $1 WHERE id = $2")
        .bind::<diesel::sql_types::Text, _>(plan)
        .bind::<diesel::sql_types::Text, _>(keys.account_id())
        .execute(&mut conn)
        .await
        .unwrap();
}

/// A paired device: its id, pairing secret and a client holding its
/// credential.
struct Device {
    id: DeviceId,
    secret: StaticSecret,
    client: Client,
}

/// The whole pairing flow, as a device and its operator run it.
async fn pair(app: &TestApp, owner: &Operator, name: &str) -> Device {
    let anonymous = Client::new(&app.base_url).unwrap();
    let secret = StaticSecret::from(random_bytes::<32>());
    let public = PublicKey::from(&secret).to_bytes();
    let opened = anonymous
        .open_pairing(Platform::Unknown, name, &public)
        .await
        .unwrap();
    let session = owner.client.lookup_pairing(&opened.code).await.unwrap();
    let id = sealing::new_device_id();
    let profile = DeviceProfile::new(name, session.public_key).seal(&owner.keys, &id);
    owner
        .client
        .claim_device(&session.id, &id, &profile)
        .await
        .unwrap();
    let credential = anonymous
        .poll_pairing(&opened.token)
        .await
        .unwrap()
        .credential
        .unwrap();
    Device {
        id,
        secret,
        client: anonymous.with_token(credential),
    }
}

/// Creates an address on the first domain with a label and its public key.
async fn create_address(owner: &Operator, label: &str) -> AddressId {
    let domain = owner.client.domains().await.unwrap().domains[0]
        .domain
        .clone();
    let id = sealing::new_address_id();
    let request = CreateAddressRequest::new(&id, domain)
        .with_meta(&sealing::seal_label(&owner.keys, &id, label))
        .with_public_key(&owner.keys.address_public_key(id.as_str(), 0));
    owner.client.create_address(&request).await.unwrap();
    id
}

#[tokio::test(flavor = "multi_thread")]
async fn pairing_from_both_sides() {
    let app = TestApp::spawn().await;
    let owner = operator(&app).await;
    let device = Client::new(&app.base_url).unwrap();
    let secret = StaticSecret::from(random_bytes::<32>());
    let public = PublicKey::from(&secret).to_bytes();

    // The device opens a session and polls it.
    let opened = device
        .open_pairing(Platform::Android, "Test phone", &public)
        .await
        .unwrap();
    assert_eq!(opened.code.len(), 8);
    assert_eq!(opened.state, PairingState::Waiting);
    assert!(!format!("{opened:?}").contains(&opened.token));
    let poll = device.poll_pairing(&opened.token).await.unwrap();
    assert_eq!(
        (poll.state, poll.code.as_str()),
        (PairingState::Waiting, opened.code.as_str())
    );
    assert_eq!(poll.credential, None);

    // The operator looks the code up and sees the device's key.
    assert_api(
        owner.client.lookup_pairing("00000000").await,
        404,
        "not_found",
    );
    let session = owner.client.lookup_pairing(&opened.code).await.unwrap();
    assert_eq!(session.device_name, "Test phone");
    assert_eq!(session.platform, Platform::Android);
    assert_eq!(session.public_key, public);
    assert_eq!(session.state, PairingState::OperatorDetected);
    let poll = device.poll_pairing(&opened.token).await.unwrap();
    assert_eq!(poll.state, PairingState::OperatorDetected);

    // Claiming needs a session token.
    let id = sealing::new_device_id();
    let profile = DeviceProfile::new("Phone", session.public_key).seal(&owner.keys, &id);
    assert_api(
        device.claim_device(&session.id, &id, &profile).await,
        401,
        "unauthenticated",
    );
    let claimed = owner
        .client
        .claim_device(&session.id, &id, &profile)
        .await
        .unwrap();
    assert_eq!(claimed.id, id);
    assert_eq!(claimed.kind, DeviceKind::Device);
    assert_eq!(claimed.platform, Platform::Android);
    assert_eq!(claimed.status, DeviceStatus::Online);
    assert_eq!(claimed.operator_id.as_str(), owner.keys.account_id());
    assert_eq!(claimed.profile.as_ref(), Some(&profile));

    // The credential comes once.
    let first = device.poll_pairing(&opened.token).await.unwrap();
    assert_eq!(first.state, PairingState::AwaitingAddress);
    assert_eq!(first.device_id.as_ref(), Some(&id));
    let credential = first.credential.clone().unwrap();
    assert!(!format!("{first:?}").contains(&credential));
    let second = device.poll_pairing(&opened.token).await.unwrap();
    assert_eq!((second.device_id, second.credential), (None, None));

    // The session is used up.
    let again = sealing::new_device_id();
    assert_api(
        owner
            .client
            .claim_device(&session.id, &again, &profile)
            .await,
        409,
        "already_used",
    );
    assert_api(
        device.cancel_pairing(&opened.token).await,
        409,
        "already_used",
    );

    // The device with its credential.
    let paired = device.clone().with_token(credential);
    let own = paired.get_device(&id).await.unwrap();
    assert_eq!(own.id, id);
    let beat = paired.heartbeat().await.unwrap();
    assert_eq!(beat.status, DeviceStatus::Online);
    let seen = paired.list_devices(&PageParams::default()).await.unwrap();
    assert_eq!(seen.devices.len(), 1);
    assert_eq!(seen.next_cursor, None);
    // An operator session has no device to report active.
    assert_api(owner.client.heartbeat().await, 403, "device_required");
    // A device credential is not an operator session.
    assert_api(paired.remove_device(&id).await, 403, "session_required");

    // The operator reads the profile back.
    let listed = owner
        .client
        .list_devices(&PageParams::first(10))
        .await
        .unwrap();
    assert_eq!(listed.devices.len(), 1);
    let opened_profile = DeviceProfile::open(
        &owner.keys,
        &id,
        listed.devices[0].profile.as_ref().unwrap(),
    )
    .unwrap();
    assert_eq!(opened_profile.name, "Phone");
    assert_eq!(opened_profile.device_public_key(), Some(public));

    // Disabling revokes the credential at once.
    let disabled = owner
        .client
        .update_device(&id, &UpdateDeviceRequest::disable())
        .await
        .unwrap();
    assert_eq!(disabled.status, DeviceStatus::Disabled);
    assert_api(paired.get_device(&id).await, 401, "unauthenticated");
    assert_api(paired.heartbeat().await, 401, "unauthenticated");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unclaimed_session_can_be_cancelled() {
    let app = TestApp::spawn().await;
    let owner = operator(&app).await;
    let device = Client::new(&app.base_url).unwrap();
    let opened = device
        .open_pairing(Platform::Web, "Browser", &[7u8; 32])
        .await
        .unwrap();
    device.cancel_pairing(&opened.token).await.unwrap();
    assert_api(device.poll_pairing(&opened.token).await, 404, "not_found");
    assert_api(
        owner.client.lookup_pairing(&opened.code).await,
        404,
        "not_found",
    );
    assert_api(device.cancel_pairing(&opened.token).await, 404, "not_found");
    assert_api(
        device
            .open_pairing(Platform::Unknown, &"x".repeat(101), &[7u8; 32])
            .await,
        400,
        "invalid_field",
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn profiles_keys_and_removal() {
    let app = TestApp::spawn().await;
    let owner = operator(&app).await;
    set_plan(&app, &owner.keys, "operator").await;
    // Lists are newest first by time, then id: let time pass between steps.
    let tick = || app.clock.advance(TimeDelta::minutes(1));
    let phone = pair(&app, &owner, "Phone").await;
    tick();
    let tablet = pair(&app, &owner, "Tablet").await;
    tick();

    // Paging through the devices, newest first.
    let first = owner
        .client
        .list_devices(&PageParams::first(1))
        .await
        .unwrap();
    assert_eq!(first.devices[0].id, tablet.id);
    let next = PageParams::first(1)
        .next(first.next_cursor.as_deref())
        .unwrap();
    let second = owner.client.list_devices(&next).await.unwrap();
    assert_eq!(second.devices[0].id, phone.id);
    assert_api(
        owner.client.list_devices(&PageParams::first(500)).await,
        400,
        "invalid_field",
    );

    // Renaming re-seals the profile and keeps the device's key.
    let device = owner.client.get_device(&phone.id).await.unwrap();
    let mut profile =
        DeviceProfile::open(&owner.keys, &phone.id, device.profile.as_ref().unwrap()).unwrap();
    profile.name = "Work phone".to_owned();
    let updated = owner
        .client
        .update_device(
            &phone.id,
            &UpdateDeviceRequest::profile(&profile.seal(&owner.keys, &phone.id)),
        )
        .await
        .unwrap();
    let reopened =
        DeviceProfile::open(&owner.keys, &phone.id, updated.profile.as_ref().unwrap()).unwrap();
    assert_eq!(reopened.name, "Work phone");
    assert_eq!(reopened.public_key, profile.public_key);

    // A key bundle goes to the device, which alone can open it.
    assert_api(
        phone.client.get_device_keys(&phone.id).await,
        404,
        "not_found",
    );
    let address = create_address(&owner, "shop").await;
    tick();
    let assigned = owner
        .client
        .assign_address(&phone.id, &address)
        .await
        .unwrap();
    tick();
    assert_eq!(assigned.status, AddressStatus::Active);
    assert_eq!(assigned.assigned_device_id.as_ref(), Some(&phone.id));
    let device_key = reopened.device_public_key().unwrap();
    let sealed = KeyBundle::for_addresses(&owner.keys, [&address]).seal(&device_key, &phone.id);
    let stored = owner
        .client
        .set_device_keys(&phone.id, &sealed)
        .await
        .unwrap();
    assert_eq!(stored.keys, sealed);
    let fetched = phone.client.get_device_keys(&phone.id).await.unwrap();
    assert_eq!(fetched.keys, sealed);
    let bundle = KeyBundle::open(&phone.secret, &phone.id, &fetched.keys).unwrap();
    assert_eq!(bundle.addresses.len(), 1);
    assert_eq!(bundle.addresses[0].address_id, address);
    let mine = phone.client.list_addresses().await.unwrap().addresses;
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0].public_key, Some(bundle.addresses[0].public_key()));
    // Another device cannot read it, nor open it.
    assert_api(
        tablet.client.get_device_keys(&phone.id).await,
        404,
        "not_found",
    );
    assert!(KeyBundle::open(&tablet.secret, &phone.id, &fetched.keys).is_err());

    // Removing the device unassigns its address.
    owner.client.remove_device(&phone.id).await.unwrap();
    assert_api(phone.client.heartbeat().await, 401, "unauthenticated");
    assert_api(owner.client.get_device(&phone.id).await, 404, "not_found");
    assert_api(
        owner.client.remove_device(&phone.id).await,
        404,
        "not_found",
    );
    let addresses = owner.client.list_addresses().await.unwrap().addresses;
    assert_eq!(addresses[0].status, AddressStatus::Unassigned);
    assert_eq!(addresses[0].assigned_device_id, None);

    // The activity log, a page at a time.
    let page = owner.client.activity(&PageParams::first(2)).await.unwrap();
    let kinds: Vec<_> = page.activity.iter().map(|a| a.kind.as_str()).collect();
    assert_eq!(kinds, ["worker.removed", "inbox.removed"]);
    assert_eq!(page.activity[0].device_id.as_ref(), Some(&phone.id));
    assert_eq!(page.activity[1].address_id.as_ref(), Some(&address));
    let rest = owner
        .client
        .activity(
            &PageParams::first(2)
                .next(page.next_cursor.as_deref())
                .unwrap(),
        )
        .await
        .unwrap();
    let kinds: Vec<_> = rest.activity.iter().map(|a| a.kind.as_str()).collect();
    assert_eq!(kinds, ["inbox.assigned", "inbox.created"]);
    let all = owner.client.activity(&PageParams::default()).await.unwrap();
    assert_eq!(all.activity.len(), 6);
    assert_eq!(all.next_cursor, None);
    // The tablet sees the entries about itself.
    let own = tablet
        .client
        .activity(&PageParams::default())
        .await
        .unwrap();
    assert_eq!(own.activity.len(), 1);
    assert_eq!(own.activity[0].kind, "worker.paired");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn addresses_labels_and_limits() {
    let app = TestApp::spawn().await;
    let owner = operator(&app).await;

    let domains = owner.client.domains().await.unwrap().domains;
    assert_eq!(domains.len(), 1);
    assert_eq!(domains[0].domain, "mail.localhost");
    assert!(!domains[0].reserved);

    // Created with a prefix, a label, a retention and the public key.
    let id = sealing::new_address_id();
    let public_key = owner.keys.address_public_key(id.as_str(), 0);
    let mut request = CreateAddressRequest::new(&id, "mail.localhost")
        .with_meta(&sealing::seal_label(&owner.keys, &id, "shopping"))
        .with_public_key(&public_key);
    request.prefix = Some("Shop".to_owned());
    request.retention_days = Some(14);
    let address = owner.client.create_address(&request).await.unwrap();
    assert_eq!(address.id, id);
    assert!(
        address.email_address.starts_with("shop."),
        "{}",
        address.email_address
    );
    assert!(address.email_address.ends_with("@mail.localhost"));
    assert_eq!(address.status, AddressStatus::Unassigned);
    assert_eq!(address.assigned_device_id, None);
    assert_eq!((address.retention_days, address.key_epoch), (14, 0));
    assert_eq!(address.public_key, Some(public_key));
    let label = sealing::open_label(&owner.keys, &id, address.meta.as_ref().unwrap()).unwrap();
    assert_eq!(label, "shopping");
    assert_api(owner.client.create_address(&request).await, 409, "id_taken");

    // Field errors keep their codes.
    let mut bad = CreateAddressRequest::new(&sealing::new_address_id(), "mail.localhost");
    bad.retention_days = Some(91);
    assert_api(
        owner.client.create_address(&bad).await,
        400,
        "invalid_field",
    );
    let mut scale_only = CreateAddressRequest::new(&sealing::new_address_id(), "mail.localhost");
    scale_only.local_part = Some("hello".to_owned());
    assert_api(
        owner.client.create_address(&scale_only).await,
        403,
        "plan_required",
    );

    // Label and retention change.
    let updated = owner
        .client
        .update_address(
            &id,
            &UpdateAddressRequest::default()
                .with_meta(&sealing::seal_label(&owner.keys, &id, "groceries"))
                .with_retention_days(30),
        )
        .await
        .unwrap();
    assert_eq!(updated.retention_days, 30);
    let label = sealing::open_label(&owner.keys, &id, updated.meta.as_ref().unwrap()).unwrap();
    assert_eq!(label, "groceries");
    let only_retention = owner
        .client
        .update_address(&id, &UpdateAddressRequest::default().with_retention_days(1))
        .await
        .unwrap();
    assert_eq!(only_retention.meta, updated.meta, "the label stays");

    // Free: three addresses; a device holds one.
    let second = create_address(&owner, "two").await;
    create_address(&owner, "three").await;
    let mut fourth = CreateAddressRequest::new(&sealing::new_address_id(), "mail.localhost");
    fourth.prefix = Some("four".to_owned());
    assert_api(
        owner.client.create_address(&fourth).await,
        402,
        "allocation_exhausted",
    );
    let allocation = owner.client.allocation().await.unwrap();
    assert_eq!(allocation.plan_id, PlanId::Free);
    assert_eq!(
        (
            allocation.limit,
            allocation.used,
            allocation.assigned,
            allocation.remaining
        ),
        (3, 3, 0, 0)
    );

    let device = pair(&app, &owner, "Phone").await;
    owner.client.assign_address(&device.id, &id).await.unwrap();
    assert_api(
        owner.client.assign_address(&device.id, &second).await,
        402,
        "allocation_exhausted",
    );
    assert_eq!(owner.client.allocation().await.unwrap().assigned, 1);
    let seen: Vec<_> = device
        .client
        .list_addresses()
        .await
        .unwrap()
        .addresses
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(seen, vec![id.clone()]);
    // A device credential cannot manage addresses.
    assert_api(
        device.client.delete_address(&id).await,
        403,
        "session_required",
    );

    owner
        .client
        .unassign_address(&device.id, &id)
        .await
        .unwrap();
    assert_api(
        owner.client.unassign_address(&device.id, &id).await,
        404,
        "not_found",
    );
    owner
        .client
        .assign_address(&device.id, &second)
        .await
        .unwrap();

    // Deleting frees the place on the plan, never the id.
    owner.client.delete_address(&id).await.unwrap();
    assert_api(owner.client.delete_address(&id).await, 404, "not_found");
    assert_eq!(owner.client.allocation().await.unwrap().remaining, 1);
    assert_eq!(
        owner.client.list_addresses().await.unwrap().addresses.len(),
        2
    );
    let reuse = CreateAddressRequest::new(&id, "mail.localhost");
    assert_api(owner.client.create_address(&reuse).await, 409, "id_taken");

    // Scale and up choose the exact address.
    set_plan(&app, &owner.keys, "scale").await;
    let mut exact = CreateAddressRequest::new(&sealing::new_address_id(), "mail.localhost");
    exact.local_part = Some("hello".to_owned());
    let created = owner.client.create_address(&exact).await.unwrap();
    assert_eq!(created.email_address, "hello@mail.localhost");
    assert_eq!(created.public_key, None, "sent without a key: refuses mail");
    app.stop().await;
}
