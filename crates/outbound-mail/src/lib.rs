//! Outbound mail: the messages domain's [`MailRelay`] over SMTP with lettre.
//!
//! The message is built as proper MIME (`text/plain`, or
//! `multipart/alternative` with the HTML; UTF-8 headers encoded), carries
//! the `Message-ID` and `Date` the domain chose, is DKIM-signed with the
//! shared domains' key (RSA, `rsa-sha256`, relaxed/relaxed, `d=` the
//! sender's domain; a sender on an account's own domain signs with that
//! domain's key, [`OwnDomainKeys`]) and submitted to the relay of
//! `SEALPOST_SMTP_RELAY`.
//!
//! Signing is mail-auth's DKIM signer on *ring*, over the bytes lettre
//! formatted, so every header is there to sign ([`SIGNED_HEADERS`]:
//! `Content-Type` too, and `From`, `To`, `Cc` and `Subject` once more than
//! they occur, so a second one added later breaks the signature); the
//! `DKIM-Signature` header is put in front and those bytes are submitted.
//! The `rsa` crate only makes own domains' key pairs ([`RsaDkimKeyMaker`]).
//!
//! The relay URL:
//! `smtp://host[:port]` (plain), `smtp://...?tls=required` or
//! `?tls=opportunistic` (STARTTLS), `smtps://host[:port]` (TLS from the
//! first byte), with optional `user:password@` credentials. The whole
//! submission (connect, greeting, every command, the message) is bounded by
//! one timeout: lettre's own bounds only the connect.
//!
//! Errors name the relay's reply code and text with anything that looks
//! like an address masked, so the log never carries a sender or recipient.

mod dkim_keys;
pub use dkim_keys::{DKIM_RSA_BITS, RsaDkimKeyMaker};

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use lettre::address::Envelope;
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use mail_auth::common::crypto::{Algorithm, RsaKey, Sha256, SigningKey};
use mail_auth::common::headers::{HeaderWriter, Writable};
use mail_auth::dkim::{Canonicalization, DkimSigner};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use sealpost_messages::send::{MailAddress, MailRelay, OutgoingMail, RelayError, Submitted};

/// The headers a DKIM signature covers (`h=`), in this order. `From`, `To`,
/// `Cc` and `Subject` are listed twice: a message has at most one of each,
/// and the second entry signs the absence of another (RFC 6376, 5.4.2), so
/// a `Subject:` or `Cc:` added after signing fails verification.
pub const SIGNED_HEADERS: [&str; 12] = [
    "From",
    "To",
    "Cc",
    "Subject",
    "Date",
    "Message-ID",
    "MIME-Version",
    "Content-Type",
    "From",
    "To",
    "Cc",
    "Subject",
];

/// A DKIM key: the selector and the RSA private key, held by *ring*.
#[derive(Clone)]
pub struct DkimSettings {
    /// The `s=` selector: the key is published at `<selector>._domainkey.<domain>`.
    pub selector: String,
    key: Arc<RsaKey<Sha256>>,
}

impl DkimSettings {
    /// The key of a PEM file (`SEALPOST_DKIM_KEY`): PKCS#1 (`BEGIN RSA
    /// PRIVATE KEY`) or PKCS#8 (`BEGIN PRIVATE KEY`), 2048 to 4096 bits.
    pub fn from_pem(selector: &str, pem: &str) -> Result<Self, RelaySetupError> {
        let der = PrivateKeyDer::from_pem_slice(pem.as_bytes())
            .map_err(|error| RelaySetupError::DkimKey(error.to_string()))?;
        Self::from_der(selector, der)
    }

    /// An own domain's key as [`RsaDkimKeyMaker`] made it (PKCS#8 DER,
    /// opened from its seal).
    pub fn from_pkcs8_der(selector: &str, der: &[u8]) -> Result<Self, RelaySetupError> {
        Self::from_der(selector, PrivatePkcs8KeyDer::from(der).into())
    }

    fn from_der(selector: &str, der: PrivateKeyDer<'_>) -> Result<Self, RelaySetupError> {
        let key = RsaKey::<Sha256>::from_key_der(der)
            .map_err(|error| RelaySetupError::DkimKey(error.to_string()))?;
        Ok(Self {
            selector: selector.to_owned(),
            key: Arc::new(key),
        })
    }
}

/// The shared key as mail-auth's signer takes it (it owns its key).
struct SharedKey(Arc<RsaKey<Sha256>>);

impl SigningKey for SharedKey {
    type Hasher = Sha256;

    fn sign(&self, input: impl Writable) -> mail_auth::Result<Vec<u8>> {
        self.0.sign(input)
    }

    fn algorithm(&self) -> Algorithm {
        self.0.algorithm()
    }
}

// The key never reaches a log line through `{:?}`.
impl std::fmt::Debug for DkimSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DkimSettings")
            .field("selector", &self.selector)
            .finish_non_exhaustive()
    }
}

/// The DKIM keys of own domains (docs/domains.md, DKIM): mail from an
/// address on one is signed with its key, published by `sealpost-dns`.
#[async_trait]
pub trait OwnDomainKeys: Send + Sync {
    /// The key of the proved own domain `domain` (lower case), if it is one.
    async fn dkim(&self, domain: &str) -> Result<Option<DkimSettings>, String>;
}

#[derive(Debug, thiserror::Error)]
pub enum RelaySetupError {
    #[error("SEALPOST_SMTP_RELAY: {0}")]
    Url(#[source] lettre::transport::smtp::Error),
    #[error("the DKIM key is not an RSA private key (PKCS#1 or PKCS#8) that ring takes: {0}")]
    DkimKey(String),
}

/// Submits to one relay; cheap to share (connections are pooled).
pub struct SmtpRelay {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    dkim: Option<DkimSettings>,
    own_domain_keys: Option<Arc<dyn OwnDomainKeys>>,
    /// Bound on one whole submission.
    timeout: Duration,
}

impl SmtpRelay {
    /// Checks the URL (the key was checked when it was read); connects
    /// only when mail is sent.
    pub fn new(
        url: &str,
        timeout: Duration,
        dkim: Option<DkimSettings>,
    ) -> Result<Self, RelaySetupError> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(RelaySetupError::Url)?
            .timeout(Some(timeout))
            .build();
        Ok(Self {
            transport,
            dkim,
            own_domain_keys: None,
            timeout,
        })
    }

    /// Also signs mail from own domains, each with its own key.
    #[must_use]
    pub fn with_own_domain_keys(mut self, keys: Arc<dyn OwnDomainKeys>) -> Self {
        self.own_domain_keys = Some(keys);
        self
    }

    /// The key `mail` is signed with: its own domain's, else the shared one.
    async fn signing_settings(
        &self,
        mail: &OutgoingMail,
    ) -> Result<Option<DkimSettings>, RelayError> {
        if let Some(keys) = &self.own_domain_keys
            && let Some(own) = keys
                .dkim(&mail.from.domain())
                .await
                .map_err(|error| RelayError(format!("reading the domain's DKIM key: {error}")))?
        {
            return Ok(Some(own));
        }
        Ok(self.dkim.clone())
    }
}

fn mailbox(address: &MailAddress) -> Result<Mailbox, RelayError> {
    let parsed = address
        .address
        .parse()
        .map_err(|_| RelayError("an address the domain accepted does not parse".into()))?;
    Ok(Mailbox::new(address.name.clone(), parsed))
}

/// The MIME message.
fn build(mail: &OutgoingMail) -> Result<Message, RelayError> {
    let mut builder = Message::builder()
        .from(mailbox(&mail.from)?)
        .subject(mail.subject.clone())
        .message_id(Some(mail.message_id_header.clone()))
        .date(SystemTime::from(mail.date.as_datetime()));
    for to in &mail.to {
        builder = builder.to(mailbox(to)?);
    }
    // lettre's envelope takes its recipients from To and Cc alike.
    for cc in &mail.cc {
        builder = builder.cc(mailbox(cc)?);
    }
    let built = match &mail.html {
        Some(html) => builder.multipart(MultiPart::alternative_plain_html(
            mail.text.clone(),
            html.clone(),
        )),
        None => builder.singlepart(SinglePart::plain(mail.text.clone())),
    };
    built.map_err(|error| RelayError(format!("building the message: {error}")))
}

/// `formatted` (a whole message as lettre writes it) with a
/// `DKIM-Signature` header in front: `rsa-sha256`, relaxed/relaxed, `d=`
/// `domain`, `h=` [`SIGNED_HEADERS`].
fn sign(formatted: &[u8], domain: &str, dkim: &DkimSettings) -> Result<Vec<u8>, RelayError> {
    let signature = DkimSigner::from_key(SharedKey(Arc::clone(&dkim.key)))
        .domain(domain)
        .selector(dkim.selector.as_str())
        .headers(SIGNED_HEADERS)
        .header_canonicalization(Canonicalization::Relaxed)
        .body_canonicalization(Canonicalization::Relaxed)
        .sign(formatted)
        .map_err(|error| RelayError(format!("DKIM signing: {error}")))?;
    let mut signed = signature.to_header().into_bytes();
    signed.extend_from_slice(formatted);
    Ok(signed)
}

/// What is submitted: the envelope and the bytes of the MIME message,
/// signed when a key applies.
struct Rendered {
    envelope: Envelope,
    raw: Vec<u8>,
}

fn render(mail: &OutgoingMail, dkim: Option<&DkimSettings>) -> Result<Rendered, RelayError> {
    let message = build(mail)?;
    let formatted = message.formatted();
    let raw = match dkim {
        Some(dkim) => sign(&formatted, &mail.from.domain(), dkim)?,
        None => formatted,
    };
    Ok(Rendered {
        envelope: message.envelope().clone(),
        raw,
    })
}

/// Words holding `@` become `<address>`: relay replies often quote the
/// sender or a recipient, and logs never hold either.
fn mask_addresses(text: &str) -> String {
    text.split(' ')
        .map(|word| {
            if word.contains('@') {
                "<address>"
            } else {
                word
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn describe(error: &lettre::transport::smtp::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_permanent() {
        "refused (permanent)"
    } else if error.is_transient() {
        "refused (transient)"
    } else {
        "failed"
    };
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    format!("relay {kind}: {}", mask_addresses(&text))
}

#[async_trait]
impl MailRelay for SmtpRelay {
    async fn submit(&self, mail: &OutgoingMail) -> Result<Submitted, RelayError> {
        let dkim = self.signing_settings(mail).await?;
        let rendered = render(mail, dkim.as_ref())?;
        let size_bytes = u64::try_from(rendered.raw.len()).unwrap_or(u64::MAX);
        // Dropping the unfinished submission drops its connection too.
        let submission = self.transport.send_raw(&rendered.envelope, &rendered.raw);
        match tokio::time::timeout(self.timeout, submission).await {
            Ok(Ok(_)) => Ok(Submitted { size_bytes }),
            Ok(Err(error)) => Err(RelayError(describe(&error))),
            Err(_) => Err(RelayError(format!(
                "relay timed out: no complete answer within {} s",
                self.timeout.as_secs()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use sealpost_kernel::Timestamp;

    use super::*;

    fn mail(html: Option<&str>) -> OutgoingMail {
        OutgoingMail {
            from: MailAddress {
                name: Some("Zoë Shop".into()),
                address: "shop.abcdef@mail.localhost".into(),
            },
            to: vec![MailAddress {
                name: None,
                address: "bob@example.com".into(),
            }],
            cc: vec![MailAddress {
                name: Some("Carol".into()),
                address: "carol@example.org".into(),
            }],
            subject: "Grüße, code 123456".into(),
            text: "code 123456".into(),
            html: html.map(str::to_owned),
            message_id_header: "<abc123@mail.localhost>".into(),
            date: Timestamp::parse("2026-11-22T12:00:00Z").unwrap(),
        }
    }

    #[test]
    fn plain_and_alternative_messages_carry_the_chosen_headers_encoded() {
        let plain = String::from_utf8(build(&mail(None)).unwrap().formatted()).unwrap();
        assert!(
            plain.contains("Message-ID: <abc123@mail.localhost>\r\n"),
            "{plain}"
        );
        assert!(
            plain.contains("Date: Sun, 22 Nov 2026 12:00:00 +0000\r\n"),
            "{plain}"
        );
        assert!(
            plain.contains("Subject: =?utf-8?"),
            "UTF-8 subject encoded: {plain}"
        );
        assert!(
            plain.contains("Content-Type: text/plain; charset=utf-8"),
            "{plain}"
        );
        assert!(!plain.contains("Zoë"), "no raw UTF-8 in headers: {plain}");
        assert!(
            plain.contains("Cc: Carol <carol@example.org>\r\n"),
            "{plain}"
        );
        let envelope = build(&mail(None)).unwrap().envelope().clone();
        let recipients: Vec<String> = envelope.to().iter().map(ToString::to_string).collect();
        assert_eq!(recipients, ["bob@example.com", "carol@example.org"]);

        let both =
            String::from_utf8(build(&mail(Some("<p>code</p>"))).unwrap().formatted()).unwrap();
        assert!(
            both.contains("Content-Type: multipart/alternative;"),
            "{both}"
        );
        assert!(
            both.contains("Content-Type: text/html; charset=utf-8"),
            "{both}"
        );
    }

    #[test]
    fn relay_text_is_logged_without_addresses() {
        assert_eq!(
            mask_addresses("550 5.1.1 <bob@example.com>: user unknown"),
            "550 5.1.1 <address> user unknown"
        );
    }

    #[test]
    fn a_bad_url_or_key_stops_start_up() {
        assert!(matches!(
            SmtpRelay::new("ftp://relay.example", Duration::from_secs(5), None),
            Err(RelaySetupError::Url(_))
        ));
        assert!(matches!(
            DkimSettings::from_pem("s", "not a key"),
            Err(RelaySetupError::DkimKey(_))
        ));
        // A PEM block that is no RSA key ring takes.
        assert!(matches!(
            DkimSettings::from_pem(
                "s",
                "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
            ),
            Err(RelaySetupError::DkimKey(_))
        ));
    }
}

#[cfg(test)]
mod dkim_tests {
    use std::borrow::Borrow;
    use std::collections::HashMap;
    use std::hash::Hash;
    use std::sync::Mutex;

    use mail_auth::common::parse::TxtRecordParser;
    use mail_auth::common::verify::DomainKey;
    use mail_auth::{
        AuthenticatedMessage, DkimResult, MessageAuthenticator, Parameters, ResolverCache, Txt,
    };
    use sealpost_kernel::Timestamp;

    use super::*;

    struct Published(Mutex<HashMap<Box<str>, Txt>>);

    impl ResolverCache<Box<str>, Txt> for Published {
        fn get<Q>(&self, name: &Q) -> Option<Txt>
        where
            Box<str>: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            self.0.lock().unwrap().get(name).cloned()
        }
        fn remove<Q>(&self, name: &Q) -> Option<Txt>
        where
            Box<str>: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            self.0.lock().unwrap().remove(name)
        }
        fn insert(&self, key: Box<str>, value: Txt, _: std::time::Instant) {
            self.0.lock().unwrap().insert(key, value);
        }
    }

    const KEY: &str = include_str!("../../testkit/data/dkim-test-key.pem");
    const RECORD: &str = include_str!("../../testkit/data/dkim-test-record.txt");

    async fn verify(raw: &[u8]) -> DkimResult {
        let published = Published(Mutex::new(HashMap::new()));
        for name in [
            "sealpost._domainkey.mail.localhost.",
            "sealpost._domainkey.mail.localhost",
        ] {
            let key = DomainKey::parse(RECORD.trim().as_bytes()).unwrap();
            published
                .0
                .lock()
                .unwrap()
                .insert(name.into(), Txt::from(key));
        }
        let parsed = AuthenticatedMessage::parse(raw).unwrap();
        // Nothing is looked up: the one name asked for is answered above.
        let authenticator = MessageAuthenticator::new_cloudflare().unwrap();
        let outputs = authenticator
            .verify_dkim(Parameters::new(&parsed).with_txt_cache(&published))
            .await;
        assert_eq!(outputs.len(), 1);
        outputs[0].result().clone()
    }

    #[tokio::test]
    async fn signed_mail_verifies_against_the_published_key_and_a_changed_one_does_not() {
        let dkim = DkimSettings::from_pem("sealpost", KEY).unwrap();
        for html in [None, Some("<p>code <b>123456</b></p>")] {
            let mail = OutgoingMail {
                from: MailAddress {
                    name: Some("Zoë's Shop".into()),
                    address: "shop.abcdef@mail.localhost".into(),
                },
                to: vec![MailAddress {
                    name: Some("Bob".into()),
                    address: "bob@example.com".into(),
                }],
                // No Cc: its entries in h= sign that there is none.
                cc: Vec::new(),
                subject: "Grüße, code 123456".into(),
                text: "code 123456\n.leading dot".into(),
                html: html.map(str::to_owned),
                message_id_header: "<abc123@mail.localhost>".into(),
                date: Timestamp::parse("2026-11-22T12:00:00Z").unwrap(),
            };
            let raw = render(&mail, Some(&dkim)).unwrap().raw;
            let text = String::from_utf8(raw.clone()).unwrap();
            assert!(
                text.starts_with("DKIM-Signature: v=1; a=rsa-sha256;"),
                "{text}"
            );
            assert!(text.contains(" s=sealpost;"), "{text}");
            assert!(text.contains(" d=mail.localhost;"), "{text}");
            assert!(text.contains(" c=relaxed/relaxed;"), "{text}");
            assert_eq!(verify(&raw).await, DkimResult::Pass, "{text}");
            let changed = text.replace("123456", "654321");
            assert_ne!(verify(changed.as_bytes()).await, DkimResult::Pass);
        }
    }

    /// The `h=` tag of the one `DKIM-Signature` header, lower-cased names.
    fn signed_headers(text: &str) -> Vec<String> {
        let start = text.find("DKIM-Signature:").expect("signed");
        let header: String = text[start..]
            .split("\r\n")
            .enumerate()
            .take_while(|(n, line)| *n == 0 || line.starts_with([' ', '\t']))
            .map(|(_, line)| line.trim())
            .collect();
        let tag = header
            .split(';')
            .map(str::trim)
            .find_map(|tag| tag.strip_prefix("h="))
            .expect("an h= tag");
        tag.split(':')
            .map(|name| name.trim().to_ascii_lowercase())
            .collect()
    }

    #[tokio::test]
    async fn content_type_is_signed_and_from_to_subject_are_over_signed() {
        let dkim = DkimSettings::from_pem("sealpost", KEY).unwrap();
        for html in [None, Some("<p>code <b>123456</b></p>")] {
            let mail = OutgoingMail {
                from: MailAddress {
                    name: None,
                    address: "shop.abcdef@mail.localhost".into(),
                },
                to: vec![MailAddress {
                    name: None,
                    address: "bob@example.com".into(),
                }],
                cc: vec![MailAddress {
                    name: None,
                    address: "carol@example.org".into(),
                }],
                subject: "Your code".into(),
                text: "code 123456".into(),
                html: html.map(str::to_owned),
                message_id_header: "<abc123@mail.localhost>".into(),
                date: Timestamp::parse("2026-11-22T12:00:00Z").unwrap(),
            };
            let raw = render(&mail, Some(&dkim)).unwrap().raw;
            let text = String::from_utf8(raw.clone()).unwrap();
            assert_eq!(verify(&raw).await, DkimResult::Pass, "{text}");

            let signed = signed_headers(&text);
            let count = |name: &str| signed.iter().filter(|signed| *signed == name).count();
            assert_eq!(count("content-type"), 1, "h={signed:?}");
            for name in ["from", "to", "cc", "subject"] {
                // Once for the header, once more for the one not there.
                assert_eq!(count(name), 2, "{name} over-signed: h={signed:?}");
            }
            for name in ["date", "message-id", "mime-version"] {
                assert_eq!(count(name), 1, "h={signed:?}");
            }

            // A second Subject, added after signing (at the top, as a
            // forwarder would, or below the first), breaks the signature.
            let top = format!("Subject: Pay now\r\n{text}");
            assert_ne!(verify(top.as_bytes()).await, DkimResult::Pass, "{top}");
            let below = text.replacen(
                "Subject: Your code\r\n",
                "Subject: Your code\r\nSubject: Pay now\r\n",
                1,
            );
            assert_ne!(below, text);
            assert_ne!(verify(below.as_bytes()).await, DkimResult::Pass, "{below}");
            // So does a changed Content-Type.
            let retyped = text.replacen("Content-Type: ", "Content-Type: text/html; x=", 1);
            assert_ne!(verify(retyped.as_bytes()).await, DkimResult::Pass);
        }
    }
}
