//! The message methods against the real API (`TestApp`), opened with
//! `sealing::open_message` and `sealing::open_attachment` both as the
//! operator (keys from the phrase) and as a device (its key bundle).

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed step stops the test loudly"
)]

use std::time::{Duration, Instant};

use data_encoding::BASE64_MIME;
use sealpost_client::Client;
use sealpost_client::sealing::{self, DeviceProfile, KeyBundle};
use sealpost_client::types::{CreateAddressRequest, PageParams, Platform};
use sealpost_kernel::{AddressId, DeviceId, MessageId};
use sealpost_seal::{PublicKey, StaticSecret, random_bytes};
use sealpost_testkit::TestApp;

mod support;

use support::{Operator, assert_api, operator};

/// Creates an address on `mail.localhost`, with its public key unless
/// `keyless`.
async fn create_address(owner: &Operator, keyless: bool) -> AddressId {
    let id = sealing::new_address_id();
    let mut request = CreateAddressRequest::new(&id, "mail.localhost");
    if !keyless {
        request = request.with_public_key(&owner.keys.address_public_key(id.as_str(), 0));
    }
    owner.client.create_address(&request).await.unwrap();
    id
}

/// A paired device: its id, pairing secret and a client holding its
/// credential.
struct Device {
    id: DeviceId,
    secret: StaticSecret,
    client: Client,
}

async fn pair(app: &TestApp, owner: &Operator) -> Device {
    let anonymous = Client::new(&app.base_url).unwrap();
    let secret = StaticSecret::from(random_bytes::<32>());
    let public = PublicKey::from(&secret).to_bytes();
    let opened = anonymous
        .open_pairing(Platform::Unknown, "Phone", &public)
        .await
        .unwrap();
    let session = owner.client.lookup_pairing(&opened.code).await.unwrap();
    let id = sealing::new_device_id();
    let profile = DeviceProfile::new("Phone", session.public_key).seal(&owner.keys, &id);
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

/// Bytes that are not UTF-8, so nothing on the way can take them as text.
fn attachment_bytes() -> Vec<u8> {
    (0..=255u8).rev().chain(0..=255u8).collect()
}

/// A multipart message with a text body and a binary attachment.
fn raw_mail(subject: &str) -> Vec<u8> {
    format!(
        "From: Sender <sender@example.com>\r\nTo: someone@mail.localhost\r\nSubject: {subject}\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=sep\r\n\r\n\
         --sep\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nYour code is 482913.\r\n\
         --sep\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\
         Content-Disposition: attachment; filename=\"blob.bin\"\r\n\r\n{}\r\n--sep--\r\n",
        BASE64_MIME.encode(&attachment_bytes())
    )
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_operator_delivers_lists_reads_and_marks_mail() {
    let app = TestApp::spawn().await;
    let owner = operator(&app).await;
    let address = create_address(&owner, false).await;

    let id = owner
        .client
        .deliver_raw(&address, &raw_mail("First"))
        .await
        .unwrap();

    // Listed, unread, and it opens with the keys from the phrase.
    let page = owner
        .client
        .list_messages(&address, &PageParams::default())
        .await
        .unwrap();
    assert_eq!(page.messages.len(), 1);
    assert_eq!(page.next_cursor, None);
    let listed = &page.messages[0];
    assert_eq!((&listed.id, &listed.address_id), (&id, &address));
    assert!(!listed.read);
    assert_eq!(listed.key_epoch, 0);
    let content = sealing::open_message(&owner.keys, listed).unwrap();
    assert_eq!(content.subject.as_deref(), Some("First"));
    assert_eq!(content.from.as_deref(), Some("Sender <sender@example.com>"));
    assert_eq!(content.to, vec!["someone@mail.localhost".to_owned()]);
    assert!(content.text.as_deref().unwrap().contains("482913"));
    let attachment = content.attachment(0).unwrap();
    assert_eq!(attachment.filename.as_deref(), Some("blob.bin"));
    assert_eq!(attachment.content_type, "application/octet-stream");
    assert_eq!(attachment.size_bytes, 512);
    assert!(attachment.stored);

    // One message, and its attachment, byte for byte.
    let one = owner.client.get_message(&id).await.unwrap();
    assert_eq!(&one, listed);
    let sealed = owner.client.get_attachment(&id, 0).await.unwrap();
    assert_ne!(sealed, attachment_bytes());
    assert_eq!(
        sealing::open_attachment(&owner.keys, &one, 0, &sealed).unwrap(),
        attachment_bytes()
    );
    assert!(sealing::open_attachment(&owner.keys, &one, 1, &sealed).is_err());
    assert_api(owner.client.get_attachment(&id, 1).await, 404, "not_found");

    // Read, unread.
    owner.client.mark_read(&id, true).await.unwrap();
    assert!(owner.client.get_message(&id).await.unwrap().read);
    owner.client.mark_read(&id, false).await.unwrap();
    assert!(!owner.client.get_message(&id).await.unwrap().read);

    // Pages, newest first.
    let second = owner
        .client
        .deliver_raw(&address, b"Subject: second\r\n\r\nhi")
        .await
        .unwrap();
    let third = owner
        .client
        .deliver_raw(&address, b"Subject: third\r\n\r\nhi")
        .await
        .unwrap();
    let first_page = PageParams::first(2);
    let page = owner
        .client
        .list_messages(&address, &first_page)
        .await
        .unwrap();
    let ids: Vec<&MessageId> = page.messages.iter().map(|m| &m.id).collect();
    assert_eq!(ids, vec![&third, &second]);
    let next = first_page.next(page.next_cursor.as_deref()).unwrap();
    let page = owner.client.list_messages(&address, &next).await.unwrap();
    assert_eq!(page.messages.len(), 1);
    assert_eq!(page.messages[0].id, id);
    assert_eq!(page.next_cursor, None);

    // Refusals.
    let keyless = create_address(&owner, true).await;
    assert_api(
        owner
            .client
            .deliver_raw(&keyless, b"Subject: x\r\n\r\ny")
            .await,
        400,
        "invalid_key",
    );
    let unknown = MessageId::parse("msg_0000000000000000000000000a").unwrap();
    assert_api(owner.client.get_message(&unknown).await, 404, "not_found");
    assert_api(
        owner.client.mark_read(&unknown, true).await,
        404,
        "not_found",
    );
    assert_api(owner.client.device_messages().await, 403, "device_required");
    let stranger = operator(&app).await;
    assert_api(stranger.client.get_message(&id).await, 404, "not_found");
    assert_api(
        stranger
            .client
            .list_messages(&address, &PageParams::default())
            .await,
        404,
        "not_found",
    );
    // Another account's keys do not open it.
    assert!(sealing::open_message(&stranger.keys, &one).is_err());
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_answers_none_at_the_timeout_and_mail_as_it_lands() {
    let app = TestApp::spawn().await;
    let owner = operator(&app).await;
    let address = create_address(&owner, false).await;

    // Nothing yet: None after the (clamped) one second.
    let started = Instant::now();
    assert_eq!(
        owner
            .client
            .wait_for_messages(&address, None, 0)
            .await
            .unwrap(),
        None
    );
    assert!(started.elapsed() >= Duration::from_millis(900));

    // A wait longer than the client's usual request timeout is allowed.
    let waiter = {
        let client = owner.client.clone();
        let address = address.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let answer = client.wait_for_messages(&address, None, 60).await;
            (answer, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let id = owner
        .client
        .deliver_raw(&address, &raw_mail("Waited for"))
        .await
        .unwrap();
    let (answer, waited) = waiter.await.unwrap();
    let body = answer.unwrap().unwrap();
    assert!(waited < Duration::from_secs(10), "woken by the mail");
    assert_eq!(body.messages.len(), 1);
    assert_eq!(body.messages[0].id, id);
    let content = sealing::open_message(&owner.keys, &body.messages[0]).unwrap();
    assert_eq!(content.subject.as_deref(), Some("Waited for"));

    // After its cursor nothing is new; the next mail is.
    assert_eq!(
        owner
            .client
            .wait_for_messages(&address, Some(&body.cursor), 1)
            .await
            .unwrap(),
        None
    );
    let later = owner
        .client
        .deliver_raw(&address, b"Subject: later\r\n\r\nx")
        .await
        .unwrap();
    let next = owner
        .client
        .wait_for_messages(&address, Some(&body.cursor), 5)
        .await
        .unwrap()
        .unwrap();
    let ids: Vec<&MessageId> = next.messages.iter().map(|m| &m.id).collect();
    assert_eq!(ids, vec![&later]);
    assert_api(
        owner
            .client
            .wait_for_messages(&address, Some("not a cursor"), 1)
            .await,
        400,
        "invalid_field",
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_device_reads_the_mail_of_its_addresses_with_its_key_bundle() {
    let app = TestApp::spawn().await;
    let owner = operator(&app).await;
    let device = pair(&app, &owner).await;
    let address = create_address(&owner, false).await;
    owner
        .client
        .assign_address(&device.id, &address)
        .await
        .unwrap();
    let public = PublicKey::from(&device.secret).to_bytes();
    let bundle = KeyBundle::for_addresses(&owner.keys, [&address]).seal(&public, &device.id);
    owner
        .client
        .set_device_keys(&device.id, &bundle)
        .await
        .unwrap();
    let id = owner
        .client
        .deliver_raw(&address, &raw_mail("For the device"))
        .await
        .unwrap();

    // The device opens its bundle, then the mail, without the phrase.
    let sealed = device.client.get_device_keys(&device.id).await.unwrap();
    let keys = KeyBundle::open(&device.secret, &device.id, &sealed.keys).unwrap();
    let mine = device.client.device_messages().await.unwrap().messages;
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0].id, id);
    let content = sealing::open_message(&keys, &mine[0]).unwrap();
    assert_eq!(content.subject.as_deref(), Some("For the device"));

    let page = device
        .client
        .list_messages(&address, &PageParams::default())
        .await
        .unwrap();
    assert_eq!(page.messages, mine);
    let message = device.client.get_message(&id).await.unwrap();
    let sealed = device.client.get_attachment(&id, 0).await.unwrap();
    assert_eq!(
        sealing::open_attachment(&keys, &message, 0, &sealed).unwrap(),
        attachment_bytes()
    );
    let waited = device
        .client
        .wait_for_messages(&address, None, 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(waited.messages, mine);
    device.client.mark_read(&id, true).await.unwrap();
    assert!(owner.client.get_message(&id).await.unwrap().read);

    // Delivering is for the operator's session.
    assert_api(
        device
            .client
            .deliver_raw(&address, b"Subject: x\r\n\r\ny")
            .await,
        403,
        "session_required",
    );
    // Another address of the account is not the device's.
    let other = create_address(&owner, false).await;
    assert_api(
        device
            .client
            .list_messages(&other, &PageParams::default())
            .await,
        404,
        "not_found",
    );
    app.stop().await;
}
