//! A raw message through the MIME-to-content path the ingest runs before
//! sealing: it never panics, and what it yields is the JSON that gets
//! sealed, with every stored attachment listed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sealpost_messages::content::{parse_mail, parse_mail_checked};

fuzz_target!(|raw: &[u8]| {
    // Mail from outside goes through the checked parse; a message over the
    // structure limits is refused there, and the unchecked parse (mail the
    // account imports) must still read it.
    let parsed = parse_mail_checked(raw).unwrap_or_else(|_| parse_mail(raw));
    let json = parsed.content.to_json();
    let value: serde_json::Value =
        serde_json::from_slice(&json).expect("the sealed content is JSON");
    assert!(value.is_object(), "the sealed content is an object");
    for part in &parsed.attachments {
        let listed = parsed
            .content
            .attachments
            .iter()
            .find(|info| info.index == part.index)
            .expect("every attachment part is listed");
        assert_eq!(listed.stored, part.bytes.is_some());
        if let Some(bytes) = &part.bytes {
            assert_eq!(listed.size_bytes, bytes.len() as u64);
        }
    }
});
