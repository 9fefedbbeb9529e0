//! The box openers (the JSON box and the binary box) given arbitrary
//! bytes: they never panic, and a box sealed to a key opens to what was
//! sealed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sealpost_seal::{PublicKey, SealedBox, StaticSecret, check_box, open_binary, seal_binary};

const CONTEXT: &str = "sealpost-fuzz";

fuzz_target!(|data: &[u8]| {
    let secret = StaticSecret::from([7u8; 32]);
    let _ = open_binary(&secret, CONTEXT, data);
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
        if let Ok(sealed) = check_box(&value, 1 << 20) {
            let _ = sealed.open(&secret, CONTEXT);
        }
        if let Ok(sealed) = serde_json::from_value::<SealedBox>(value) {
            let _ = sealed.open(&secret, CONTEXT);
        }
    }
    let public = PublicKey::from(&secret).to_bytes();
    let binary = seal_binary(&public, CONTEXT, data);
    assert_eq!(open_binary(&secret, CONTEXT, &binary).as_deref(), Ok(data));
    assert!(open_binary(&secret, "another context", &binary).is_err());
    let sealed = SealedBox::seal(&public, CONTEXT, data);
    assert_eq!(sealed.open(&secret, CONTEXT).as_deref(), Ok(data));
});
