//! Reproduces every vector of `tests/data/vectors.json` (a copy of the
//! protocol's vectors, docs/protocol.md) except `webhookSignature`, which
//! another crate owns.

#![allow(clippy::unwrap_used)] // test helpers, outside #[test] fns

use data_encoding::HEXLOWER;
use sealpost_seal::{
    AccountKeys, ChallengeKeypair, RecoveryPhrase, SealedBox, b64, handshake_proof, open_binary,
    team_fingerprint, verify_handshake_proof,
};
use serde_json::Value;
use std::sync::OnceLock;

fn vectors() -> &'static Value {
    static V: OnceLock<Value> = OnceLock::new();
    V.get_or_init(|| serde_json::from_str(include_str!("data/vectors.json")).unwrap())
}

fn s<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_str()
        .unwrap_or_else(|| panic!("missing string {path:?}"))
}

fn hex(text: &str) -> Vec<u8> {
    HEXLOWER.decode(text.as_bytes()).unwrap()
}

fn hex_n<const N: usize>(text: &str) -> [u8; N] {
    hex(text).try_into().unwrap()
}

/// The keys of the vector phrase (PBKDF2 is slow in debug builds: once).
fn keys() -> &'static AccountKeys {
    static K: OnceLock<AccountKeys> = OnceLock::new();
    K.get_or_init(|| {
        RecoveryPhrase::parse(s(vectors(), &["phrase"]))
            .unwrap()
            .keys()
    })
}

#[test]
fn seed_matches() {
    let v = vectors();
    let phrase = RecoveryPhrase::parse(s(v, &["phrase"])).unwrap();
    assert_eq!(phrase.words().as_str(), s(v, &["phrase"]));
    let seed: [u8; 64] = hex_n(s(v, &["seedHex"]));
    let mnemonic = bip39::Mnemonic::parse_in(bip39::Language::English, s(v, &["phrase"])).unwrap();
    assert_eq!(mnemonic.to_seed(""), seed);
    // Same derivations from the seed as from the phrase.
    let from_seed = AccountKeys::from_seed(seed);
    for label in v["derive"].as_object().unwrap().keys() {
        assert_eq!(from_seed.derive(label), keys().derive(label));
    }
    assert_eq!(from_seed.account_id(), keys().account_id());
}

#[test]
fn every_derive_label_matches() {
    let labels = vectors()["derive"].as_object().unwrap();
    assert_eq!(labels.len(), 7);
    for (label, expected) in labels {
        assert_eq!(
            HEXLOWER.encode(&keys().derive(label)),
            expected.as_str().unwrap(),
            "label {label}"
        );
    }
    // The named accessors use those labels.
    let id = s(vectors(), &["inbox", "id"]);
    assert_eq!(
        HEXLOWER.encode(&keys().auth_secret().to_bytes()),
        s(vectors(), &["derive", "auth-key"])
    );
    assert_eq!(
        HEXLOWER.encode(&keys().vault_secret().to_bytes()),
        s(vectors(), &["derive", "vault-key"])
    );
    assert_eq!(
        HEXLOWER.encode(&keys().address_secret(id, 0).to_bytes()),
        s(vectors(), &["derive", "inbox-key:ibx_vector01"])
    );
    assert_eq!(
        HEXLOWER.encode(&keys().address_secret(id, 1).to_bytes()),
        s(vectors(), &["derive", "inbox-key:ibx_vector01:1"])
    );
    assert_eq!(
        HEXLOWER.encode(&keys().address_sealing_key(id, 0)),
        s(vectors(), &["derive", "inbox-sealing:ibx_vector01"])
    );
    assert_eq!(
        keys().address_sealing_key(id, 1),
        keys().derive("inbox-sealing:ibx_vector01:1")
    );
}

#[test]
fn account_and_public_keys_match() {
    let v = vectors();
    let k = keys();
    assert_eq!(k.account_id(), s(v, &["accountId"]));
    assert_eq!(k.account_id().len(), 5 + 24);
    assert_eq!(b64::encode(&k.auth_public_key()), s(v, &["authPublicKey"]));
    assert_eq!(b64::encode(&k.auth_verifier()), s(v, &["authVerifier"]));
    assert_eq!(
        b64::encode(&k.vault_public_key()),
        s(v, &["vaultPublicKey"])
    );
    let id = s(v, &["inbox", "id"]);
    assert_eq!(
        b64::encode(&k.address_public_key(id, 0)),
        s(v, &["inbox", "epoch0PublicKey"])
    );
    assert_eq!(
        b64::encode(&k.address_public_key(id, 1)),
        s(v, &["inbox", "epoch1PublicKey"])
    );
}

#[test]
fn handshake_matches_on_both_sides() {
    let h = &vectors()["handshake"];
    let challenge = ChallengeKeypair::from_secret(hex_n(s(h, &["challengeSecretHex"])));
    assert_eq!(b64::encode(&challenge.public), s(h, &["challengeKey"]));
    let challenge_key = b64::decode_32(s(h, &["challengeKey"])).unwrap();
    let nonce = s(h, &["nonce"]);
    let account_id = s(h, &["accountId"]);
    assert_eq!(account_id, keys().account_id());

    // Client.
    let proof = keys().handshake_proof(&challenge_key, nonce, account_id);
    assert_eq!(b64::encode(&proof), s(h, &["proof"]));

    // Service: the same shared secret from its side gives the same proof.
    let shared = sealpost_seal::StaticSecret::from(challenge.secret)
        .diffie_hellman(&sealpost_seal::PublicKey::from(keys().auth_public_key()));
    assert_eq!(
        b64::encode(&handshake_proof(shared.as_bytes(), nonce, account_id)),
        s(h, &["proof"])
    );
    let expected = b64::decode(s(h, &["proof"])).unwrap();
    let auth_public = keys().auth_public_key();
    assert!(verify_handshake_proof(
        &challenge.secret,
        &auth_public,
        nonce,
        account_id,
        &expected
    ));

    // Anything else is refused.
    let mut wrong = expected.clone();
    wrong[0] ^= 1;
    assert!(!verify_handshake_proof(
        &challenge.secret,
        &auth_public,
        nonce,
        account_id,
        &wrong
    ));
    assert!(!verify_handshake_proof(
        &challenge.secret,
        &auth_public,
        nonce,
        account_id,
        &expected[..31]
    ));
    assert!(!verify_handshake_proof(
        &challenge.secret,
        &auth_public,
        nonce,
        "acct_aaaaaaaaaaaaaaaaaaaaaaaa",
        &expected
    ));
    let other_nonce = b64::encode(&[0u8; 32]);
    assert!(!verify_handshake_proof(
        &challenge.secret,
        &auth_public,
        &other_nonce,
        account_id,
        &expected
    ));
}

fn vector_box(name: &str) -> SealedBox {
    serde_json::from_value(vectors()[name]["box"].clone()).unwrap()
}

#[test]
fn box_v2_seals_byte_for_byte_and_opens() {
    let bv = &vectors()["boxV2"];
    let recipient = b64::decode_32(s(bv, &["recipientPublicKey"])).unwrap();
    let id = s(vectors(), &["inbox", "id"]);
    assert_eq!(recipient, keys().address_public_key(id, 0));
    let context = s(bv, &["context"]);
    assert_eq!(context, sealpost_seal::context::message(id, "msg_vector01"));
    let plaintext = s(bv, &["plaintext"]);

    let sealed = SealedBox::seal_with(
        hex_n(s(bv, &["ephemeralSecretHex"])),
        hex_n(s(bv, &["nonceHex"])),
        &recipient,
        context,
        plaintext.as_bytes(),
    );
    assert_eq!(sealed, vector_box("boxV2"));
    // Serialises to exactly the vector's JSON object.
    assert_eq!(serde_json::to_value(&sealed).unwrap(), bv["box"]);

    let opened = sealed.open(&keys().address_secret(id, 0), context).unwrap();
    assert_eq!(opened, plaintext.as_bytes());
}

#[test]
fn box_v1_opens() {
    let bv = &vectors()["boxV1"];
    let id = s(vectors(), &["inbox", "id"]);
    let recipient = b64::decode_32(s(bv, &["recipientPublicKey"])).unwrap();
    assert_eq!(recipient, keys().address_public_key(id, 0));
    let sealed = vector_box("boxV1");
    assert_eq!(sealed.v, 1);
    let opened = sealed
        .open(&keys().address_secret(id, 0), s(bv, &["context"]))
        .unwrap();
    assert_eq!(opened, s(bv, &["plaintext"]).as_bytes());
    // Version 1 is read only: it has no binary form.
    assert!(sealed.to_binary().is_err());
}

#[test]
fn binary_box_opens_and_reseals_equal() {
    let bv = &vectors()["binaryBox"];
    let id = s(vectors(), &["inbox", "id"]);
    let bytes = b64::decode(s(bv, &["bytes"])).unwrap();
    let context = s(bv, &["context"]);
    assert_eq!(
        context,
        sealpost_seal::context::attachment("msg_vector01", 0)
    );
    let plaintext = s(bv, &["plaintext"]);
    let secret = keys().address_secret(id, 0);

    assert_eq!(
        open_binary(&secret, context, &bytes).unwrap(),
        plaintext.as_bytes()
    );

    let parsed = SealedBox::from_binary(&bytes).unwrap();
    assert_eq!(parsed.v, 2);
    assert_eq!(parsed.to_binary().unwrap(), bytes);
    let nonce: [u8; 12] = bytes[33..45].try_into().unwrap();
    let resealed = SealedBox::seal_with(
        hex_n(s(vectors(), &["boxV2", "ephemeralSecretHex"])),
        nonce,
        &keys().address_public_key(id, 0),
        context,
        plaintext.as_bytes(),
    );
    assert_eq!(resealed.epk, &bytes[1..33]);
    assert_eq!(resealed.to_binary().unwrap(), bytes);
}

#[test]
fn team_fingerprint_matches() {
    let tf = &vectors()["teamFingerprint"];
    let key = b64::decode_32(s(tf, &["publicKey"])).unwrap();
    let expected: Vec<&str> = tf["words"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(team_fingerprint(&key).to_vec(), expected);
}
