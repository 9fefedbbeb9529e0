//! Outbound mail: the messages domain's [`MailRelay`] over SMTP with lettre.
//!
//! The message is built as proper MIME (`text/plain`, or
//! `multipart/alternative` with the HTML; UTF-8 headers encoded), carries
//! the `Message-ID` and `Date` the domain chose, is DKIM-signed with the
//! shared domains' key (RSA, `rsa-sha256`, relaxed/relaxed, `d=` the
//! sender's domain; a sender on an account's own domain signs with that
//! domain's key, [`OwnDomainKeys`]) and submitted to the relay of
//! `SEALPOST_SMTP_RELAY`:
//! `smtp://host[:port]` (plain), `smtp://...?tls=required` or
//! `?tls=opportunistic` (STARTTLS), `smtps://host[:port]` (TLS from the
//! first byte), with optional `user:password@` credentials. The whole
//! submission (connect, greeting, every command, the message) is bounded by
//! one timeout: lettre's own bounds only the connect.
//!
//! Errors name the relay's reply code and text with anything that looks
//! like an address masked, so the log never carries a sender or recipient.

mod dkim_keys;
pub use dkim_keys::{DKIM_RSA_BITS, RsaDkimKeyMaker, dkim_settings_from_pkcs8};

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use lettre::message::dkim::{
    DkimCanonicalization, DkimCanonicalizationType, DkimConfig, DkimSigningAlgorithm,
    DkimSigningKey,
};
use lettre::message::header::HeaderName;
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use sealpost_messages::send::{MailAddress, MailRelay, OutgoingMail, RelayError, Submitted};

/// The DKIM key of the shared domains.
#[derive(Clone)]
pub struct DkimSettings {
    /// The `s=` selector: the key is published at `<selector>._domainkey.<domain>`.
    pub selector: String,
    /// An RSA private key, PKCS#1 PEM (`BEGIN RSA PRIVATE KEY`).
    pub private_key_pem: String,
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
    #[error("the DKIM key is not an RSA private key in PKCS#1 PEM: {0}")]
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
    /// Checks the URL and the key; connects only when mail is sent.
    pub fn new(
        url: &str,
        timeout: Duration,
        dkim: Option<DkimSettings>,
    ) -> Result<Self, RelaySetupError> {
        if let Some(dkim) = &dkim {
            signing_key(dkim)?;
        }
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

fn signing_key(dkim: &DkimSettings) -> Result<DkimSigningKey, RelaySetupError> {
    DkimSigningKey::new(&dkim.private_key_pem, DkimSigningAlgorithm::Rsa)
        .map_err(|error| RelaySetupError::DkimKey(error.to_string()))
}

fn mailbox(address: &MailAddress) -> Result<Mailbox, RelayError> {
    let parsed = address
        .address
        .parse()
        .map_err(|_| RelayError("an address the domain accepted does not parse".into()))?;
    Ok(Mailbox::new(address.name.clone(), parsed))
}

/// The MIME message, signed when a key is configured.
fn build(mail: &OutgoingMail, dkim: Option<&DkimSettings>) -> Result<Message, RelayError> {
    let mut builder = Message::builder()
        .from(mailbox(&mail.from)?)
        .subject(mail.subject.clone())
        .message_id(Some(mail.message_id_header.clone()))
        .date(SystemTime::from(mail.date.as_datetime()));
    for to in &mail.to {
        builder = builder.to(mailbox(to)?);
    }
    let built = match &mail.html {
        Some(html) => builder.multipart(MultiPart::alternative_plain_html(
            mail.text.clone(),
            html.clone(),
        )),
        None => builder.singlepart(SinglePart::plain(mail.text.clone())),
    };
    let mut message =
        built.map_err(|error| RelayError(format!("building the message: {error}")))?;
    if let Some(dkim) = dkim {
        let key = signing_key(dkim).map_err(|error| RelayError(error.to_string()))?;
        // Not Content-Type: lettre writes a multipart's Content-Type with
        // the body, after signing, so it cannot be among the signed headers.
        let headers = [
            "From",
            "To",
            "Subject",
            "Date",
            "Message-ID",
            "MIME-Version",
        ]
        .into_iter()
        .map(HeaderName::new_from_ascii_str)
        .collect();
        message.sign(&DkimConfig::new(
            dkim.selector.clone(),
            mail.from.domain(),
            key,
            headers,
            DkimCanonicalization {
                header: DkimCanonicalizationType::Relaxed,
                body: DkimCanonicalizationType::Relaxed,
            },
        ));
    }
    Ok(message)
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
        let message = build(mail, dkim.as_ref())?;
        let size_bytes = u64::try_from(message.formatted().len()).unwrap_or(u64::MAX);
        // Dropping the unfinished submission drops its connection too.
        match tokio::time::timeout(self.timeout, self.transport.send(message)).await {
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
            subject: "Grüße, code 123456".into(),
            text: "code 123456".into(),
            html: html.map(str::to_owned),
            message_id_header: "<abc123@mail.localhost>".into(),
            date: Timestamp::parse("2026-11-22T12:00:00Z").unwrap(),
        }
    }

    #[test]
    fn plain_and_alternative_messages_carry_the_chosen_headers_encoded() {
        let plain = String::from_utf8(build(&mail(None), None).unwrap().formatted()).unwrap();
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

        let both = String::from_utf8(build(&mail(Some("<p>code</p>")), None).unwrap().formatted())
            .unwrap();
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
        let bad_key = DkimSettings {
            selector: "s".into(),
            private_key_pem: "not a key".into(),
        };
        assert!(matches!(
            SmtpRelay::new(
                "smtp://127.0.0.1:2525",
                Duration::from_secs(5),
                Some(bad_key)
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

    struct Published(Mutex<HashMap<String, Txt>>);

    impl ResolverCache<String, Txt> for Published {
        fn get<Q>(&self, name: &Q) -> Option<Txt>
        where
            String: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            self.0.lock().unwrap().get(name).cloned()
        }
        fn remove<Q>(&self, name: &Q) -> Option<Txt>
        where
            String: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            self.0.lock().unwrap().remove(name)
        }
        fn insert(&self, key: String, value: Txt, _: std::time::Instant) {
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
        let dkim = DkimSettings {
            selector: "sealpost".into(),
            private_key_pem: KEY.into(),
        };
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
                subject: "Grüße, code 123456".into(),
                text: "code 123456\n.leading dot".into(),
                html: html.map(str::to_owned),
                message_id_header: "<abc123@mail.localhost>".into(),
                date: Timestamp::parse("2026-11-22T12:00:00Z").unwrap(),
            };
            let raw = build(&mail, Some(&dkim)).unwrap().formatted();
            let text = String::from_utf8(raw.clone()).unwrap();
            assert!(text.contains("d=mail.localhost; s=sealpost;"), "{text}");
            assert_eq!(verify(&raw).await, DkimResult::Pass, "{text}");
            let changed = text.replace("123456", "654321");
            assert_ne!(verify(changed.as_bytes()).await, DkimResult::Pass);
        }
    }
}
