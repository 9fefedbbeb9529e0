//! `POST /messages/send`.

use reqwest::Method;

use crate::{Client, Result};

pub use sealpost_wire::{SendMailRequest, SentMail};

impl Client {
    /// `POST /messages/send` (session): answers once the service's relay
    /// accepted the message. `send_failed` (502) when the relay refused it
    /// (nothing counted), `rate_limited` past the plan's hourly or daily
    /// sends (one per recipient), `feature_disabled` without a relay.
    pub async fn send_mail(&self, mail: &SendMailRequest) -> Result<SentMail> {
        self.json(self.authed(Method::POST, "/messages/send").json(mail))
            .await
    }
}
