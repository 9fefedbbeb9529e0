//! The JSON bodies of the larger endpoints: the first byte picks the
//! request type, the rest is the body. Reading never panics, what reads
//! writes back to the same value, and a webhook URL goes through the
//! validator.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sealpost_wire as wire;
use serde::Serialize;
use serde::de::DeserializeOwned;

fn round_trip<T>(body: &[u8]) -> Option<T>
where
    T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    let read: T = serde_json::from_slice(body).ok()?;
    let written = serde_json::to_vec(&read).expect("a request body serialises");
    let again: T = serde_json::from_slice(&written).expect("what was written reads back");
    assert_eq!(read, again, "a body changed on its way back");
    Some(read)
}

fn check_url(url: &str) {
    let service = ["api.sealpost.test".to_owned()];
    if let Ok(checked) = sealpost_webhooks::validate_url(url, &service) {
        assert!(checked.as_str().starts_with("https://"));
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&which, body)) = input.split_first() else {
        return;
    };
    match which % 12 {
        0 => {
            round_trip::<wire::RegisterRequest>(body);
        }
        1 => {
            round_trip::<wire::VerifyRequest>(body);
        }
        2 => {
            round_trip::<wire::CreateAddressRequest>(body);
        }
        3 => {
            round_trip::<wire::UpdateAddressRequest>(body);
        }
        4 => {
            if let Some(request) = round_trip::<wire::CreateWebhookRequest>(body) {
                check_url(&request.url);
            }
        }
        5 => {
            if let Some(request) = round_trip::<wire::UpdateWebhookRequest>(body)
                && let Some(url) = &request.url
            {
                check_url(url);
            }
        }
        6 => {
            round_trip::<wire::SendMailRequest>(body);
        }
        7 => {
            round_trip::<wire::CreateTicketRequest>(body);
        }
        8 => {
            round_trip::<wire::GrantsRequest>(body);
        }
        9 => {
            round_trip::<wire::DeliverRequest>(body);
        }
        10 => {
            round_trip::<wire::AbuseReportRequest>(body);
        }
        _ => {
            round_trip::<wire::ClaimRequest>(body);
        }
    }
});
