//! The SMTP session state machine fed an arbitrary byte stream as the
//! client's side of the connection: it must never panic, hang or answer
//! anything but well-formed reply lines.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sealpost_smtp_session::{
    Delivery, DeliveryOutcome, Envelope, RecipientDecision, SmtpConfig, serve_session,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Answers that depend on the input, so every branch of the session is
/// reachable: recipients and messages by their length.
struct ByLength;

#[async_trait::async_trait]
impl Delivery for ByLength {
    async fn check_recipient(&self, address: &str) -> RecipientDecision {
        match address.len() % 4 {
            0 => RecipientDecision::Accept,
            1 => RecipientDecision::UnknownAddress,
            2 => RecipientDecision::Refused("refused".to_owned()),
            _ => RecipientDecision::TryLater("later".to_owned()),
        }
    }

    async fn deliver(&self, envelope: &Envelope, data: &[u8]) -> DeliveryOutcome {
        assert!(
            !envelope.recipients.is_empty(),
            "a message is delivered only with an accepted recipient"
        );
        assert!(data.len() <= MAX_MESSAGE, "DATA over the advertised size");
        match data.len() % 5 {
            0 => DeliveryOutcome::TryLater("later".to_owned()),
            1 => DeliveryOutcome::Rejected("rejected".to_owned()),
            2 => DeliveryOutcome::ExceedsLimits("limits".to_owned()),
            _ => DeliveryOutcome::Accepted,
        }
    }
}

const MAX_MESSAGE: usize = 64 * 1024;

fuzz_target!(|input: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut config = SmtpConfig::new("mx.fuzz.test");
        config.max_message_size = MAX_MESSAGE;
        config.max_recipients = 5;
        let (client, server) = tokio::io::duplex(1 << 16);
        let (mut replies_in, mut client_out) = tokio::io::split(client);
        let session = serve_session(server, [192, 0, 2, 1].into(), &config, &ByLength);
        let talk = async {
            // The session may close first (QUIT, too many errors): then
            // the rest of the input has nowhere to go, which is fine.
            let _ = client_out.write_all(input).await;
            let _ = client_out.shutdown().await;
        };
        let mut replies = Vec::new();
        let listen = replies_in.read_to_end(&mut replies);
        let (_, (), _) = tokio::join!(session, talk, listen);
        for line in replies.split_inclusive(|byte| *byte == b'\n') {
            assert!(
                line.len() >= 6
                    && line[..3].iter().all(u8::is_ascii_digit)
                    && (line[3] == b' ' || line[3] == b'-')
                    && line.ends_with(b"\r\n"),
                "not a reply line: {:?}",
                String::from_utf8_lossy(line)
            );
        }
    });
});
