//! The JSON of the bodies both sides read and write.

use sealpost_kernel::{AddressId, PlanId};
use sealpost_seal::b64;
use serde_json::json;

use crate::*;

#[test]
fn responses_decode_and_ignore_unknown_fields() {
    let signed: SignedIn = serde_json::from_value(json!({
        "account": {
            "id": "acct_aaaaaaaaaaaaaaaaaaaaaaaa",
            "plan": {"id": "free", "name": "Free", "extra": 1},
            "createdAt": "2026-01-02T03:04:05.678Z",
        },
        "token": "secret-token",
        "expiresAt": "2026-02-01T03:04:05.678Z",
        "somethingNew": true,
    }))
    .unwrap();
    assert_eq!(signed.account.plan.id, PlanId::Free);
    assert!(!format!("{signed:?}").contains("secret-token"));

    let me: Me = serde_json::from_value(json!({
        "account": {
            "id": "acct_aaaaaaaaaaaaaaaaaaaaaaaa",
            "plan": {"id": "operator", "name": "Operator"},
            "createdAt": "2026-01-02T03:04:05.678Z",
        },
        "supportKey": null,
    }))
    .unwrap();
    assert_eq!(me.support_key, None);

    let list: SessionList = serde_json::from_value(json!({"sessions": [{
        "id": "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa",
        "createdAt": "2026-01-02T03:04:05.678Z",
        "expiresAt": "2026-02-01T03:04:05.678Z",
        "current": true,
    }]}))
    .unwrap();
    assert!(list.sessions[0].current);
}

#[test]
fn bad_challenge_key_is_refused() {
    let wrong = serde_json::from_value::<Challenge>(json!({
        "nonce": "abc",
        "expiresAt": "2026-01-02T03:04:05.678Z",
        "challengeKey": b64::encode(&[9u8; 31]),
    }));
    assert!(wrong.is_err());
}

#[test]
fn names_a_newer_service_adds_do_not_break_decoding() {
    let status: DeviceStatus = serde_json::from_value(json!("offline")).unwrap();
    assert_eq!(status, DeviceStatus::Offline);
    let state: PairingState = serde_json::from_value(json!("operator_detected")).unwrap();
    assert_eq!(state, PairingState::OperatorDetected);
    let platform: Platform = serde_json::from_value(json!("watch")).unwrap();
    assert_eq!(platform, Platform::Other("watch".to_owned()));
    assert_eq!(serde_json::to_value(&platform).unwrap(), json!("watch"));
    assert_eq!(Platform::from("ios").to_string(), "ios");
    let paid: PaymentStatus = serde_json::from_value(json!("paid")).unwrap();
    assert_eq!(paid, PaymentStatus::Paid);
}

#[test]
fn address_bodies_keep_their_nulls_and_leave_out_an_unassigned_device() {
    let key = b64::encode(&[4u8; 32]);
    let wire = json!({
        "id": "ibx_first01",
        "operatorId": "acct_aaaaaaaaaaaaaaaaaaaaaaaa",
        "emailAddress": "shop.x1@mail.localhost",
        "status": "active",
        "createdAt": "2026-01-02T03:04:05.678Z",
        "assignedWorkerId": "wkr_phone01",
        "retentionDays": 7,
        "pausedAt": null,
        "meta": null,
        "keyEpoch": 0,
        "publicKey": key,
    });
    let address: Address = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(address.status, AddressStatus::Active);
    assert_eq!(address.public_key, Some([4u8; 32]));
    assert_eq!(
        address.assigned_device_id.as_ref().unwrap().as_str(),
        "wkr_phone01"
    );
    assert_eq!(serde_json::to_value(&address).unwrap(), wire);

    let bare: Address = serde_json::from_value(json!({
        "id": "ibx_first01",
        "operatorId": "acct_aaaaaaaaaaaaaaaaaaaaaaaa",
        "emailAddress": "shop.x1@mail.localhost",
        "status": "unassigned",
        "createdAt": "2026-01-02T03:04:05.678Z",
        "retentionDays": 7,
        "keyEpoch": 0,
    }))
    .unwrap();
    assert_eq!((&bare.assigned_device_id, bare.public_key), (&None, None));
    // What the service writes: no `assignedWorkerId`, the other empties null.
    assert_eq!(
        serde_json::to_value(&bare).unwrap(),
        json!({
            "id": "ibx_first01",
            "operatorId": "acct_aaaaaaaaaaaaaaaaaaaaaaaa",
            "emailAddress": "shop.x1@mail.localhost",
            "status": "unassigned",
            "createdAt": "2026-01-02T03:04:05.678Z",
            "retentionDays": 7,
            "pausedAt": null,
            "meta": null,
            "keyEpoch": 0,
            "publicKey": null,
        })
    );
}

#[test]
fn requests_leave_out_unset_fields() {
    let id = AddressId::parse("ibx_first01").unwrap();
    let mut create = CreateAddressRequest::new(&id, "mail.localhost");
    assert_eq!(
        serde_json::to_value(&create).unwrap(),
        json!({"id": "ibx_first01", "domain": "mail.localhost"})
    );
    create = create.with_public_key(&[4u8; 32]);
    create.retention_days = Some(30);
    assert_eq!(
        serde_json::to_value(&create).unwrap(),
        json!({"id": "ibx_first01", "domain": "mail.localhost", "retentionDays": 30,
               "publicKey": b64::encode(&[4u8; 32])})
    );
    assert_eq!(
        serde_json::to_value(UpdateDeviceRequest::disable()).unwrap(),
        json!({"status": "disabled"})
    );
    assert_eq!(
        serde_json::to_value(UpdateAddressRequest::default()).unwrap(),
        json!({})
    );
    assert_eq!(
        serde_json::to_value(OpenPairingRequest::new(
            Platform::Unknown,
            "cli",
            &[4u8; 32]
        ))
        .unwrap(),
        json!({"platform": "unknown", "deviceName": "cli", "publicKey": b64::encode(&[4u8; 32])})
    );
    assert_eq!(
        serde_json::to_value(
            OpenPairingRequest::new(Platform::Unknown, "ci", &[4u8; 32])
                .with_kind(crate::DeviceKind::Agent)
        )
        .unwrap(),
        json!({"platform": "unknown", "kind": "agent", "deviceName": "ci", "publicKey": b64::encode(&[4u8; 32])})
    );
}

#[test]
fn a_sealed_box_travels_in_a_request_as_it_serialises() {
    let sealed = sealpost_seal::SealedBox::seal(&[7u8; 32], "service/v1/test", b"label");
    let update = UpdateAddressRequest::default().with_meta(&sealed);
    let back: sealpost_seal::SealedBox =
        serde_json::from_value(update.meta.clone().unwrap()).unwrap();
    assert_eq!(back, sealed);
    assert_eq!(
        sealpost_seal::check_box(update.meta.as_ref().unwrap(), 4096),
        Ok(sealed)
    );
}
