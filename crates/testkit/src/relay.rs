//! A real SMTP relay on loopback for the sending tests, built on the
//! project's own SMTP session (`sealpost-smtp`): it records every message it
//! accepts, refuses as it is told (4xx or 5xx, at RCPT or at the end of
//! DATA), or accepts connections and never says a word.
//!
//! Also the test DKIM key: `data/dkim-test-key.pem` (RSA 2048, made for
//! these tests only) and its DNS record `data/dkim-test-record.txt`.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mail_auth::common::parse::TxtRecordParser;
use mail_auth::common::verify::DomainKey;
use mail_auth::{
    AuthenticatedMessage, DkimResult, MessageAuthenticator, Parameters, ResolverCache, Txt,
};
use sealpost_smtp_session::{
    Delivery, DeliveryOutcome, Envelope, RecipientDecision, SmtpConfig, serve_session,
};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The TXT record publishing the test DKIM key (`v=DKIM1; k=rsa; p=...`).
pub const DKIM_TEST_RECORD: &str = include_str!("../data/dkim-test-record.txt");

/// The PEM file of the test DKIM key, for `SEALPOST_DKIM_KEY`.
pub fn dkim_test_key_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/dkim-test-key.pem")
}

/// The DNS answers mail-auth would get for the test key on the default
/// shared domain (`sealpost._domainkey.mail.localhost`), without DNS.
struct PublishedKey(Mutex<HashMap<Box<str>, Txt>>);

impl ResolverCache<Box<str>, Txt> for PublishedKey {
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

/// Whether `raw` carries exactly one DKIM signature and it verifies (with
/// mail-auth) against the test key published for `mail.localhost` under
/// the selector `sealpost`.
pub async fn dkim_verifies(raw: &[u8]) -> bool {
    dkim_verifies_with(raw, "sealpost._domainkey.mail.localhost", DKIM_TEST_RECORD).await
}

/// Whether `raw` carries exactly one DKIM signature and it verifies (with
/// mail-auth) against `record` (`v=DKIM1; k=rsa; p=...`) published at
/// `name` (`<selector>._domainkey.<domain>`); no other name is answered.
pub async fn dkim_verifies_with(raw: &[u8], name: &str, record: &str) -> bool {
    let published = PublishedKey(Mutex::new(HashMap::new()));
    let name = name.trim_end_matches('.');
    for name in [format!("{name}."), name.to_owned()] {
        let Ok(key) = DomainKey::parse(record.trim().as_bytes()) else {
            return false;
        };
        published
            .0
            .lock()
            .unwrap()
            .insert(name.into(), Txt::from(key));
    }
    let Some(message) = AuthenticatedMessage::parse(raw) else {
        return false;
    };
    // No lookup leaves the process: the one name asked for is answered above.
    let authenticator = MessageAuthenticator::new_cloudflare().unwrap();
    let outputs = authenticator
        .verify_dkim(Parameters::new(&message).with_txt_cache(&published))
        .await;
    outputs.len() == 1 && *outputs[0].result() == DkimResult::Pass
}

/// How the relay answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// 250 to everything; the message is recorded.
    Accept,
    /// 550 5.7.1 at every RCPT.
    RefuseRecipients,
    /// 452 4.2.2 at every RCPT.
    DeferRecipients,
    /// 554 5.6.0 at the end of DATA.
    RejectData,
    /// 451 4.3.0 at the end of DATA.
    DeferData,
    /// Accepts the connection, never sends a byte (not even the greeting).
    Silent,
}

/// One message the relay accepted.
#[derive(Clone, Debug)]
pub struct Relayed {
    pub mail_from: String,
    pub recipients: Vec<String>,
    /// The message as received (dot-unstuffed).
    pub data: Vec<u8>,
}

struct Recorder {
    behaviour: Arc<Mutex<Behaviour>>,
    received: Arc<Mutex<Vec<Relayed>>>,
}

impl Recorder {
    fn behaviour(&self) -> Behaviour {
        *self.behaviour.lock().unwrap()
    }
}

#[async_trait]
impl Delivery for Recorder {
    async fn check_recipient(&self, _address: &str) -> RecipientDecision {
        match self.behaviour() {
            Behaviour::RefuseRecipients => RecipientDecision::Refused("relaying denied".into()),
            Behaviour::DeferRecipients => RecipientDecision::TryLater("try again later".into()),
            _ => RecipientDecision::Accept,
        }
    }

    async fn deliver(&self, envelope: &Envelope, data: &[u8]) -> DeliveryOutcome {
        match self.behaviour() {
            Behaviour::RejectData => DeliveryOutcome::Rejected("message refused".into()),
            Behaviour::DeferData => DeliveryOutcome::TryLater("queue full".into()),
            _ => {
                self.received.lock().unwrap().push(Relayed {
                    mail_from: envelope.mail_from.clone(),
                    recipients: envelope.recipients.clone(),
                    data: data.to_vec(),
                });
                DeliveryOutcome::Accepted
            }
        }
    }
}

pub struct TestRelay {
    pub addr: SocketAddr,
    behaviour: Arc<Mutex<Behaviour>>,
    received: Arc<Mutex<Vec<Relayed>>>,
    task: JoinHandle<()>,
}

impl TestRelay {
    pub async fn start(behaviour: Behaviour) -> TestRelay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let behaviour = Arc::new(Mutex::new(behaviour));
        let received = Arc::new(Mutex::new(Vec::new()));
        let recorder = Arc::new(Recorder {
            behaviour: behaviour.clone(),
            received: received.clone(),
        });
        let task = tokio::spawn(accept_forever(listener, recorder));
        TestRelay {
            addr,
            behaviour,
            received,
            task,
        }
    }

    /// `SEALPOST_SMTP_RELAY` for this relay (plain SMTP on loopback).
    pub fn url(&self) -> String {
        format!("smtp://{}", self.addr)
    }

    /// Changes how the relay answers from the next command on.
    pub fn set(&self, behaviour: Behaviour) {
        *self.behaviour.lock().unwrap() = behaviour;
    }

    /// Everything accepted so far, oldest first.
    pub fn received(&self) -> Vec<Relayed> {
        self.received.lock().unwrap().clone()
    }

    /// Copies every accepted message into `dir` as it arrives, for tests in
    /// other processes (the browser tests, through `sealpost-stack`): the
    /// `n`th message (from 1) as `NNNNNN.eml`, its envelope as
    /// `NNNNNN.json` (`{mailFrom, recipients}`), each written under a
    /// temporary name and renamed, so a reader never sees half a file.
    pub fn mirror_to(&self, dir: PathBuf) -> JoinHandle<()> {
        let received = self.received.clone();
        tokio::spawn(async move {
            let mut written = 0;
            loop {
                let new: Vec<Relayed> = received.lock().unwrap()[written..].to_vec();
                for message in new {
                    written += 1;
                    let envelope = serde_json::json!({
                        "mailFrom": message.mail_from,
                        "recipients": message.recipients,
                    });
                    for (ext, bytes) in [
                        ("eml", message.data),
                        ("json", envelope.to_string().into_bytes()),
                    ] {
                        let name = dir.join(format!("{written:06}.{ext}"));
                        let partial = dir.join(format!(".{written:06}.{ext}.partial"));
                        if std::fs::write(&partial, bytes).is_ok() {
                            let _ = std::fs::rename(&partial, &name);
                        }
                    }
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        })
    }
}

impl Drop for TestRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_forever(listener: TcpListener, recorder: Arc<Recorder>) {
    // Connections of a silent relay are held open, unanswered, until it stops.
    let mut silent: Vec<TcpStream> = Vec::new();
    let config = Arc::new(SmtpConfig::new("relay.test"));
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        if recorder.behaviour() == Behaviour::Silent {
            silent.push(stream);
            continue;
        }
        let recorder = recorder.clone();
        let config = config.clone();
        tokio::spawn(async move {
            let _ = serve_session(stream, peer.ip(), &config, recorder.as_ref()).await;
        });
    }
}
