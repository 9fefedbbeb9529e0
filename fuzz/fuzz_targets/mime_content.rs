//! A raw message through the MIME-to-content path the ingest runs before
//! sealing: it never panics, and what it yields is the JSON that gets
//! sealed, with every stored attachment listed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sealpost_messages::content::{parse_mail, parse_mail_checked};

/// libFuzzer's hook aborts on every panic, even one that is caught. The
/// content path catches mail-parser's own panics by design (such a message
/// is kept as text: `parse_mime`), so those are let through; any other
/// panic is still a finding.
fn tolerate_parser_panics() {
    let fuzzer_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let in_parser = info
            .location()
            .is_some_and(|at| at.file().contains("/mail-parser-"));
        if !in_parser {
            fuzzer_hook(info);
        }
    }));
}

fuzz_target!(init: tolerate_parser_panics(), |raw: &[u8]| {
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
