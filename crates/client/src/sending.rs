//! `POST /messages/send`: the request and response types (wire types only,
//! with the one call that uses them).

use reqwest::Method;
use sealpost_kernel::MessageId;
use serde::{Deserialize, Serialize};

use crate::{Client, Result};

/// Mail to send from one of the account's addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMail {
    /// One of the account's email addresses.
    pub from: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_name: Option<String>,
    /// 1 to 50 recipients, each `address` or `Name <address>`.
    pub to: Vec<String>,
    pub subject: String,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
}

/// Answer of `POST /messages/send`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sent {
    /// Always true: the relay accepted the message.
    pub sent: bool,
    /// The copy in the `sent` folder; `None` when the address has no key.
    pub message_id: Option<MessageId>,
}

impl Client {
    /// `POST /messages/send` (session): answers once the service's relay
    /// accepted the message. `send_failed` (502) when the relay refused it
    /// (nothing counted), `rate_limited` past the plan's hourly or daily
    /// sends (one per recipient), `feature_disabled` without a relay.
    pub async fn send_mail(&self, mail: &SendMail) -> Result<Sent> {
        self.json(self.authed(Method::POST, "/messages/send").json(mail))
            .await
    }
}
