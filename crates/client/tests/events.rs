//! `follow_events` against the real API (`TestApp`): events in order,
//! resumed after the last id.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed step stops the test loudly"
)]

use sealpost_client::sealing;
use sealpost_client::types::CreateAddressRequest;
use sealpost_kernel::AddressId;
use sealpost_testkit::TestApp;

mod support;

use support::{Operator, assert_api, operator};

async fn create_address(owner: &Operator) -> AddressId {
    let domain = owner.client.domains().await.unwrap().domains[0]
        .domain
        .clone();
    let id = sealing::new_address_id();
    owner
        .client
        .create_address(
            &CreateAddressRequest::new(&id, domain)
                .with_public_key(&owner.keys.address_public_key(id.as_str(), 0)),
        )
        .await
        .unwrap();
    id
}

#[tokio::test(flavor = "multi_thread")]
async fn follow_events_reads_in_order_and_resumes_after_the_last_id() {
    let app = TestApp::spawn().await;
    let owner = operator(&app).await;
    let mut stream = owner.client.follow_events(None).await.unwrap();
    let first = create_address(&owner).await;
    let event = stream.next_event().await.unwrap().unwrap();
    assert_eq!(event.kind, "inbox.created");
    assert_eq!(event.payload["inboxId"], first.as_str());
    let resume = stream.last_event_id().unwrap().to_owned();
    assert_eq!(resume, event.id);
    drop(stream);

    let second = create_address(&owner).await;
    let mut resumed = owner.client.follow_events(Some(&resume)).await.unwrap();
    let event = resumed.next_event().await.unwrap().unwrap();
    assert_eq!(event.payload["inboxId"], second.as_str());
    drop(resumed);

    let refused = owner.client.follow_events(Some("nonsense")).await;
    assert_api(refused.map(|_| ()), 400, "invalid_field");
    app.stop().await;
}
