//! The client-side conventions for what the service stores sealed: address
//! labels, device profiles and device key bundles, and client-made ids
//! (`docs/cli.md` "Client-side crypto conventions"). Every client that
//! follows them can read what the others wrote. Also opening what the
//! service seals: received mail ([`open_message`], [`open_attachment`]),
//! with the operator's keys or a device's key bundle ([`AddressSecrets`]).
//!
//! Nothing here talks to the service; the service sees only the boxes.
//!
//! ```
//! use sealpost_client::sealing::{self, DeviceProfile, KeyBundle};
//! use sealpost_seal::{PublicKey, RecoveryPhrase, StaticSecret, random_bytes};
//!
//! let keys = RecoveryPhrase::generate().keys();
//! let inbox = sealing::new_address_id();
//! let meta = sealing::seal_label(&keys, &inbox, "shopping");
//! assert_eq!(sealing::open_label(&keys, &inbox, &meta).unwrap(), "shopping");
//!
//! // The device's pairing key; the operator learns the public half from the
//! // pairing lookup and seals the device's key bundle to it.
//! let device_secret = StaticSecret::from(random_bytes::<32>());
//! let device_public = PublicKey::from(&device_secret).to_bytes();
//! let worker = sealing::new_device_id();
//! let bundle = KeyBundle::for_addresses(&keys, [&inbox]).seal(&device_public, &worker);
//! let opened = KeyBundle::open(&device_secret, &worker, &bundle).unwrap();
//! assert_eq!(opened.addresses[0].address_id, inbox);
//! # let _ = DeviceProfile::new("phone", device_public);
//! ```

use std::fmt;

use sealpost_kernel::{AddressId, ApiKeyId, DeviceId, WebhookId};
use sealpost_seal::{
    AccountKeys, PublicKey, SealError, SealedBox, StaticSecret, b64, context, open_binary,
    random_bytes, sha256,
};
use serde::{Deserialize, Deserializer, Serialize};

use crate::types::Message;

/// Why a sealed record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The box did not open: another key (another account's phrase, another
    /// device), another record's box, or tampering.
    #[error(transparent)]
    Seal(#[from] SealError),
    /// The box opened but its content is not what the convention says.
    #[error("the sealed content is malformed: {0}")]
    Content(String),
    /// The keys at hand do not include this address at this key epoch (a
    /// device whose bundle lacks the address, for example).
    #[error("no key for address {address_id} at key epoch {epoch}")]
    NoKey { address_id: AddressId, epoch: u32 },
}

// ---- Ids ------------------------------------------------------------------

/// Characters of the random part of client-made ids.
const ID_ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";
/// Length of the random part: 16 characters, about 82 bits.
const ID_LEN: usize = 16;

/// `len` random lowercase letters and digits, without modulo bias.
pub(crate) fn random_id_body(len: usize) -> String {
    // 252 = 7 * 36: bytes at or above it are dropped so each character is
    // equally likely.
    let mut body = String::with_capacity(len);
    while body.len() < len {
        for byte in random_bytes::<32>() {
            if byte < 252 && body.len() < len {
                body.push(char::from(ID_ALPHABET[usize::from(byte % 36)]));
            }
        }
    }
    body
}

/// A new device id: `wkr_` + 16 random lowercase letters and digits.
#[must_use]
pub fn new_device_id() -> DeviceId {
    DeviceId::from_trusted(format!("{}{}", DeviceId::PREFIX, random_id_body(ID_LEN)))
}

/// A new address id: `ibx_` + 16 random lowercase letters and digits.
#[must_use]
pub fn new_address_id() -> AddressId {
    AddressId::from_trusted(format!("{}{}", AddressId::PREFIX, random_id_body(ID_LEN)))
}

/// A new API key id: `key_` + 16 random lowercase letters and digits.
#[must_use]
pub fn new_api_key_id() -> ApiKeyId {
    ApiKeyId::from_trusted(format!("{}{}", ApiKeyId::PREFIX, random_id_body(ID_LEN)))
}

/// A new webhook id: `whk_` + 16 random lowercase letters and digits.
#[must_use]
pub fn new_webhook_id() -> WebhookId {
    WebhookId::from_trusted(format!("{}{}", WebhookId::PREFIX, random_id_body(ID_LEN)))
}

// ---- Address labels -------------------------------------------------------

/// An address label (`meta`): the UTF-8 text sealed to the account's vault
/// key, context `service/v1/inbox-meta:<inboxId>`.
#[must_use]
pub fn seal_label(keys: &AccountKeys, address_id: &AddressId, label: &str) -> SealedBox {
    SealedBox::seal(
        &keys.vault_public_key(),
        &context::address_meta(address_id.as_str()),
        label.as_bytes(),
    )
}

/// Opens an address label with the account's vault key.
pub fn open_label(
    keys: &AccountKeys,
    address_id: &AddressId,
    meta: &SealedBox,
) -> Result<String, OpenError> {
    let bytes = meta.open(
        &keys.vault_secret(),
        &context::address_meta(address_id.as_str()),
    )?;
    String::from_utf8(bytes).map_err(|_| OpenError::Content("the label is not UTF-8".to_owned()))
}

// ---- Device profiles ------------------------------------------------------

/// A device's profile: JSON `{"name", "tags": [], "notes": "", "publicKey"}`
/// sealed to the account's vault key, context
/// `service/v1/worker-profile:<workerId>`.
///
/// `publicKey` is the device's pairing key, kept here because the service
/// does not return it after pairing and the operator needs it to re-seal the
/// key bundle. Fields this version does not know are kept in `extra` and
/// written back, so re-sealing never drops another client's data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceProfile {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub notes: String,
    /// The device's X25519 pairing public key, base64url.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl DeviceProfile {
    /// A profile with a name and the device's pairing key, no tags or notes.
    #[must_use]
    pub fn new(name: impl Into<String>, device_public_key: [u8; 32]) -> Self {
        Self {
            name: name.into(),
            tags: Vec::new(),
            notes: String::new(),
            public_key: Some(b64::encode(&device_public_key)),
            extra: serde_json::Map::new(),
        }
    }

    /// The device's pairing key, when the profile holds a well-formed one.
    #[must_use]
    pub fn device_public_key(&self) -> Option<[u8; 32]> {
        self.public_key
            .as_deref()
            .and_then(|text| b64::decode_32(text).ok())
    }

    /// Seals the profile of device `worker_id` to the account's vault key.
    #[must_use]
    pub fn seal(&self, keys: &AccountKeys, device_id: &DeviceId) -> SealedBox {
        // Serialising strings and a string-keyed map cannot fail.
        let json = serde_json::to_vec(self).unwrap_or_default();
        SealedBox::seal(
            &keys.vault_public_key(),
            &context::device_profile(device_id.as_str()),
            &json,
        )
    }

    /// Opens the profile of device `worker_id` with the account's vault key.
    pub fn open(
        keys: &AccountKeys,
        device_id: &DeviceId,
        profile: &SealedBox,
    ) -> Result<Self, OpenError> {
        let json = profile.open(
            &keys.vault_secret(),
            &context::device_profile(device_id.as_str()),
        )?;
        serde_json::from_slice(&json).map_err(|e| OpenError::Content(e.to_string()))
    }
}

// ---- Device key bundles ---------------------------------------------------

/// The keys of one address at one key epoch. `Debug` shows no key.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddressKeys {
    #[serde(rename = "inboxId")]
    pub address_id: AddressId,
    pub epoch: u32,
    /// The X25519 secret mail to the address is sealed to.
    #[serde(rename = "inboxKey")]
    #[serde(with = "b64::serde_32")]
    pub address_key: [u8; 32],
    /// The address's sealing key.
    #[serde(with = "b64::serde_32")]
    pub sealing_key: [u8; 32],
}

impl fmt::Debug for AddressKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AddressKeys")
            .field("inbox_id", &self.address_id)
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

impl AddressKeys {
    /// The epoch 0 keys of `inbox_id`, derived from the account's phrase.
    #[must_use]
    pub fn derive(keys: &AccountKeys, address_id: &AddressId) -> Self {
        Self {
            address_id: address_id.clone(),
            epoch: 0,
            address_key: keys.address_secret(address_id.as_str(), 0).to_bytes(),
            sealing_key: keys.address_sealing_key(address_id.as_str(), 0),
        }
    }

    /// The secret that opens the address's mail.
    #[must_use]
    pub fn address_secret(&self) -> StaticSecret {
        StaticSecret::from(self.address_key)
    }

    /// The public key mail is sealed to: compare it with the address's
    /// `publicKey`.
    #[must_use]
    pub fn public_key(&self) -> [u8; 32] {
        PublicKey::from(&self.address_secret()).to_bytes()
    }
}

/// Everything a device needs to read its addresses: JSON
/// `{"inboxes": [{"inboxId", "epoch", "inboxKey", "sealingKey"}]}` sealed to
/// the device's pairing key, context `service/v1/worker-keys:<workerId>`.
/// The operator re-sends the whole bundle whenever the device's addresses
/// change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyBundle {
    #[serde(rename = "inboxes")]
    pub addresses: Vec<AddressKeys>,
}

impl KeyBundle {
    /// The epoch 0 keys of `inbox_ids`.
    #[must_use]
    pub fn for_addresses<'a>(
        keys: &AccountKeys,
        address_ids: impl IntoIterator<Item = &'a AddressId>,
    ) -> Self {
        Self {
            addresses: address_ids
                .into_iter()
                .map(|id| AddressKeys::derive(keys, id))
                .collect(),
        }
    }

    /// Seals the bundle for device `worker_id` to its pairing key.
    #[must_use]
    pub fn seal(&self, device_public_key: &[u8; 32], device_id: &DeviceId) -> SealedBox {
        let json = serde_json::to_vec(self).unwrap_or_default();
        SealedBox::seal(
            device_public_key,
            &context::device_keys(device_id.as_str()),
            &json,
        )
    }

    /// Opens device `worker_id`'s bundle with its pairing secret.
    pub fn open(
        device_secret: &StaticSecret,
        device_id: &DeviceId,
        sealed: &SealedBox,
    ) -> Result<Self, OpenError> {
        let json = sealed.open(device_secret, &context::device_keys(device_id.as_str()))?;
        serde_json::from_slice(&json).map_err(|e| OpenError::Content(e.to_string()))
    }
}

// ---- Received mail --------------------------------------------------------

/// Where the secret keys of addresses come from when opening mail: the
/// operator's [`AccountKeys`] (every address, every epoch, derived from the
/// phrase), a device's [`KeyBundle`] (its addresses, at the epochs the
/// operator sent), or one address's [`AddressKeys`].
pub trait AddressSecrets {
    /// The X25519 secret mail to `inbox_id` under key epoch `epoch` is
    /// sealed to; `None` when these keys do not hold it.
    fn secret_for(&self, address_id: &AddressId, epoch: u32) -> Option<StaticSecret>;
}

impl AddressSecrets for AccountKeys {
    fn secret_for(&self, address_id: &AddressId, epoch: u32) -> Option<StaticSecret> {
        Some(self.address_secret(address_id.as_str(), epoch))
    }
}

impl AddressSecrets for AddressKeys {
    fn secret_for(&self, address_id: &AddressId, epoch: u32) -> Option<StaticSecret> {
        (self.address_id == *address_id && self.epoch == epoch).then(|| self.address_secret())
    }
}

impl AddressSecrets for KeyBundle {
    fn secret_for(&self, address_id: &AddressId, epoch: u32) -> Option<StaticSecret> {
        self.addresses
            .iter()
            .find_map(|entry| entry.secret_for(address_id, epoch))
    }
}

/// `null` read as the type's default (an empty list or string).
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

fn stored_by_default() -> bool {
    true
}

/// A message's sealed content (docs/protocol.md "Message content"). The service
/// writes every field, absent values as `null`; missing fields and `null` lists
/// read as empty, and fields this version does not know are ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageContent {
    /// `Name <addr>` or `addr`; several mailboxes joined with `, `.
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub to: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub cc: Vec<String>,
    #[serde(default)]
    pub reply_to: Option<String>,
    #[serde(default)]
    pub subject: Option<String>,
    /// The `Date:` header, RFC 3339 UTC.
    #[serde(default)]
    pub date: Option<String>,
    /// The `Message-ID:` header in angle brackets.
    #[serde(default)]
    pub message_id_header: Option<String>,
    /// The text/plain body parts, joined by a newline.
    #[serde(default)]
    pub text: Option<String>,
    /// The text/html body parts, joined by a newline.
    #[serde(default)]
    pub html: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub attachments: Vec<AttachmentInfo>,
}

impl MessageContent {
    /// The attachment listed with `index`.
    #[must_use]
    pub fn attachment(&self, index: u32) -> Option<&AttachmentInfo> {
        self.attachments.iter().find(|a| a.index == index)
    }
}

/// An attachment as listed in [`MessageContent`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentInfo {
    /// Zero-based, in the order the parts appear in the message: the
    /// `index` of `GET /messages/{id}/attachments/{index}`.
    pub index: u32,
    /// As the sender named it: may hold directories or be absent; never use
    /// it as a path unchecked.
    #[serde(default)]
    pub filename: Option<String>,
    /// `type/subtype`, lower case.
    #[serde(default, deserialize_with = "null_as_default")]
    pub content_type: String,
    /// Decoded size.
    #[serde(default)]
    pub size_bytes: u64,
    /// False for an attachment over 20 MB: listed, but its bytes were not
    /// kept.
    #[serde(default = "stored_by_default")]
    pub stored: bool,
}

/// The secret `message` is sealed to, from `keys`.
fn message_secret(
    keys: &(impl AddressSecrets + ?Sized),
    message: &Message,
) -> Result<StaticSecret, OpenError> {
    keys.secret_for(&message.address_id, message.key_epoch)
        .ok_or_else(|| OpenError::NoKey {
            address_id: message.address_id.clone(),
            epoch: message.key_epoch,
        })
}

/// Opens a message's content with the key of its address at its key epoch
/// (context `service/v1/message:<inboxId>:<messageId>`).
pub fn open_message(
    keys: &(impl AddressSecrets + ?Sized),
    message: &Message,
) -> Result<MessageContent, OpenError> {
    let secret = message_secret(keys, message)?;
    let json = message.content.open(
        &secret,
        &context::message(message.address_id.as_str(), message.id.as_str()),
    )?;
    serde_json::from_slice(&json).map_err(|e| OpenError::Content(e.to_string()))
}

/// Opens the sealed bytes of `message`'s attachment `index`, as
/// `Client::get_attachment` answers them (binary box, context
/// `service/v1/attachment:<messageId>:<index>`).
pub fn open_attachment(
    keys: &(impl AddressSecrets + ?Sized),
    message: &Message,
    index: u32,
    sealed: &[u8],
) -> Result<Vec<u8>, OpenError> {
    let secret = message_secret(keys, message)?;
    Ok(open_binary(
        &secret,
        &context::attachment(message.id.as_str(), index),
        sealed,
    )?)
}

// ---- Key fingerprints -----------------------------------------------------

/// A short fingerprint of a device's pairing key, for people to compare:
/// the first 8 bytes of its SHA-256 as four groups of four hex digits
/// (`1a2b-3c4d-5e6f-7a8b`). Both sides of a pairing show it; when they
/// differ, someone in between substituted the key and the pairing must be
/// abandoned.
#[must_use]
pub fn key_fingerprint(public_key: &[u8; 32]) -> String {
    let digest = sha256(public_key);
    digest[..8]
        .chunks(2)
        .map(|pair| format!("{:02x}{:02x}", pair[0], pair[1]))
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use sealpost_seal::RecoveryPhrase;
    use serde_json::json;

    use super::*;

    fn keys() -> AccountKeys {
        AccountKeys::from_seed([5u8; 64])
    }

    fn device() -> (StaticSecret, [u8; 32]) {
        let secret = StaticSecret::from([9u8; 32]);
        let public = PublicKey::from(&secret).to_bytes();
        (secret, public)
    }

    #[test]
    fn ids_have_the_documented_shape() {
        let device = new_device_id();
        let body = device.as_str().strip_prefix("wkr_").unwrap();
        assert_eq!(body.len(), 16);
        assert!(
            body.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        );
        assert!(DeviceId::parse(device.as_str()).is_ok());
        let address = new_address_id();
        assert!(AddressId::parse(address.as_str()).is_ok());
        assert_ne!(new_address_id(), address);
    }

    #[test]
    fn labels_are_bound_to_their_address_and_account() {
        let keys = keys();
        let a = AddressId::parse("ibx_aaaa").unwrap();
        let b = AddressId::parse("ibx_bbbb").unwrap();
        let meta = seal_label(&keys, &a, "shop ✓");
        assert_eq!(open_label(&keys, &a, &meta).unwrap(), "shop ✓");
        assert!(matches!(
            open_label(&keys, &b, &meta),
            Err(OpenError::Seal(_))
        ));
        let other = RecoveryPhrase::generate().keys();
        assert!(open_label(&other, &a, &meta).is_err());
        // Interoperates with a box sealed directly as the convention says.
        let direct = SealedBox::seal(
            &keys.vault_public_key(),
            &context::address_meta("ibx_aaaa"),
            b"x",
        );
        assert_eq!(open_label(&keys, &a, &direct).unwrap(), "x");
    }

    #[test]
    fn profiles_round_trip_and_keep_unknown_fields() {
        let keys = keys();
        let device_id = DeviceId::parse("wkr_phone01").unwrap();
        let (_, public) = device();
        let profile = DeviceProfile::new("Phone", public);
        let sealed = profile.seal(&keys, &device_id);
        let opened = DeviceProfile::open(&keys, &device_id, &sealed).unwrap();
        assert_eq!(opened, profile);
        assert_eq!(opened.device_public_key(), Some(public));

        // Another client's profile: only a name, plus a field of its own.
        let foreign = SealedBox::seal(
            &keys.vault_public_key(),
            &context::device_profile("wkr_phone01"),
            br#"{"name":"Tablet","colour":"red"}"#,
        );
        let mut opened = DeviceProfile::open(&keys, &device_id, &foreign).unwrap();
        assert_eq!((opened.name.as_str(), opened.tags.len()), ("Tablet", 0));
        assert_eq!(opened.device_public_key(), None);
        opened.name = "Renamed".to_owned();
        let json = opened
            .seal(&keys, &device_id)
            .open(
                &keys.vault_secret(),
                &context::device_profile("wkr_phone01"),
            )
            .unwrap();
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(
            value,
            json!({"name": "Renamed", "tags": [], "notes": "", "colour": "red"})
        );
    }

    #[test]
    fn bundles_open_only_on_their_device() {
        let keys = keys();
        let (secret, public) = device();
        let device_id = DeviceId::parse("wkr_phone01").unwrap();
        let address = AddressId::parse("ibx_first01").unwrap();
        let bundle = KeyBundle::for_addresses(&keys, [&address]);
        let sealed = bundle.seal(&public, &device_id);

        let opened = KeyBundle::open(&secret, &device_id, &sealed).unwrap();
        assert_eq!(opened, bundle);
        let entry = &opened.addresses[0];
        assert_eq!(entry.epoch, 0);
        assert_eq!(
            entry.public_key(),
            keys.address_public_key("ibx_first01", 0)
        );
        assert_eq!(
            entry.sealing_key,
            keys.address_sealing_key("ibx_first01", 0)
        );
        assert!(!format!("{entry:?}").contains(&format!("{:?}", entry.address_key)));

        let other_device = DeviceId::parse("wkr_other1").unwrap();
        assert!(KeyBundle::open(&secret, &other_device, &sealed).is_err());
        assert!(KeyBundle::open(&StaticSecret::from([1u8; 32]), &device_id, &sealed).is_err());

        // The wire form is the documented JSON.
        let json = sealed
            .open(&secret, &context::device_keys("wkr_phone01"))
            .unwrap();
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(
            value,
            json!({"inboxes": [{
                "inboxId": "ibx_first01",
                "epoch": 0,
                "inboxKey": b64::encode(&keys.address_secret("ibx_first01", 0).to_bytes()),
                "sealingKey": b64::encode(&keys.address_sealing_key("ibx_first01", 0)),
            }]})
        );
    }

    /// A message to `inbox` sealed the way the service seals SMTP mail.
    fn sealed_message(keys: &AccountKeys, address: &str, epoch: u32, json: &[u8]) -> Message {
        let id = "msg_0000000000000000000000000a";
        let content = SealedBox::seal(
            &keys.address_public_key(address, epoch),
            &context::message(address, id),
            json,
        );
        serde_json::from_value(json!({
            "id": id,
            "inboxId": address,
            "receivedAt": "2026-11-22T12:00:00.000Z",
            "read": false,
            "sizeBytes": 10,
            "keyEpoch": epoch,
            "content": content,
            "folder": "inbox",
            "starred": false,
            "outgoing": false,
        }))
        .unwrap()
    }

    #[test]
    fn messages_open_for_the_operator_and_for_a_device_holding_the_address() {
        let keys = keys();
        let json = br#"{"from":"A <a@example.com>","to":["b@mail.localhost"],"cc":null,
            "replyTo":null,"subject":"Code","date":null,"messageIdHeader":null,"text":"123456",
            "html":null,"attachments":[{"index":0,"filename":"a.bin","contentType":
            "application/octet-stream","sizeBytes":3,"stored":true}],"newField":1}"#;
        let message = sealed_message(&keys, "ibx_first01", 0, json);
        let content = open_message(&keys, &message).unwrap();
        assert_eq!(content.subject.as_deref(), Some("Code"));
        assert_eq!(content.to, vec!["b@mail.localhost".to_owned()]);
        assert!(content.cc.is_empty());
        assert_eq!(
            content.attachment(0).unwrap().filename.as_deref(),
            Some("a.bin")
        );
        assert!(content.attachment(1).is_none());

        let address = AddressId::parse("ibx_first01").unwrap();
        let other = AddressId::parse("ibx_other01").unwrap();
        let bundle = KeyBundle::for_addresses(&keys, [&address]);
        assert_eq!(open_message(&bundle, &message).unwrap(), content);
        assert_eq!(
            open_message(&bundle.addresses[0], &message).unwrap(),
            content
        );
        let without = KeyBundle::for_addresses(&keys, [&other]);
        assert!(matches!(
            open_message(&without, &message),
            Err(OpenError::NoKey { epoch: 0, .. })
        ));

        // Sealed under epoch 1: the epoch 0 bundle has no key for it.
        let later = sealed_message(&keys, "ibx_first01", 1, json);
        assert_eq!(open_message(&keys, &later).unwrap(), content);
        assert!(matches!(
            open_message(&bundle, &later),
            Err(OpenError::NoKey { epoch: 1, .. })
        ));

        // Bound to its message: another id does not open.
        let mut moved = message.clone();
        moved.id = sealpost_kernel::MessageId::parse("msg_0000000000000000000000000b").unwrap();
        assert!(matches!(
            open_message(&keys, &moved),
            Err(OpenError::Seal(_))
        ));

        let bytes = sealpost_seal::seal_binary(
            &keys.address_public_key("ibx_first01", 0),
            &context::attachment(message.id.as_str(), 0),
            b"abc",
        );
        assert_eq!(open_attachment(&keys, &message, 0, &bytes).unwrap(), b"abc");
        assert_eq!(
            open_attachment(&bundle, &message, 0, &bytes).unwrap(),
            b"abc"
        );
        assert!(open_attachment(&keys, &message, 1, &bytes).is_err());
        assert!(open_attachment(&without, &message, 0, &bytes).is_err());
    }

    #[test]
    fn sparse_content_reads_as_empty() {
        let keys = keys();
        let message = sealed_message(&keys, "ibx_first01", 0, br#"{"subject":null}"#);
        assert_eq!(
            open_message(&keys, &message).unwrap(),
            MessageContent::default()
        );
        let broken = sealed_message(&keys, "ibx_first01", 0, b"not json");
        assert!(matches!(
            open_message(&keys, &broken),
            Err(OpenError::Content(_))
        ));
    }

    #[test]
    fn fingerprints_are_short_and_stable() {
        let fingerprint = key_fingerprint(&[0u8; 32]);
        assert_eq!(fingerprint.len(), 19);
        assert_eq!(fingerprint, key_fingerprint(&[0u8; 32]));
        assert_ne!(fingerprint, key_fingerprint(&[1u8; 32]));
        assert_eq!(fingerprint.matches('-').count(), 3);
    }
}
