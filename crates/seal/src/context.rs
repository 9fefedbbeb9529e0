//! Associated-data (context) strings of sealed records, docs/protocol.md
//! "Sealed boxes".

/// Message content: `service/v1/message:<inboxId>:<messageId>`.
#[must_use]
pub fn message(address_id: &str, message_id: &str) -> String {
    format!("service/v1/message:{address_id}:{message_id}")
}

/// Attachment: `service/v1/attachment:<messageId>:<index>`.
#[must_use]
pub fn attachment(message_id: &str, index: u32) -> String {
    format!("service/v1/attachment:{message_id}:{index}")
}

/// Address meta: `service/v1/inbox-meta:<inboxId>`.
#[must_use]
pub fn address_meta(address_id: &str) -> String {
    format!("service/v1/inbox-meta:{address_id}")
}

/// Device profile: `service/v1/worker-profile:<workerId>`.
#[must_use]
pub fn device_profile(device_id: &str) -> String {
    format!("service/v1/worker-profile:{device_id}")
}

/// Webhook meta: `service/v1/webhook-meta:<webhookId>`.
#[must_use]
pub fn webhook_meta(webhook_id: &str) -> String {
    format!("service/v1/webhook-meta:{webhook_id}")
}

/// API key label (this service's choice): `service/v1/api-key-label:<keyId>`.
#[must_use]
pub fn api_key_label(key_id: &str) -> String {
    format!("service/v1/api-key-label:{key_id}")
}

/// Device key bundle: `service/v1/worker-keys:<workerId>`.
#[must_use]
pub fn device_keys(device_id: &str) -> String {
    format!("service/v1/worker-keys:{device_id}")
}

/// Team grant:
/// `service/v1/team-grant:<owner account id>:<member account id>:<address id>:<epoch>`.
#[must_use]
pub fn team_grant(owner_id: &str, member_id: &str, address_id: &str, epoch: u32) -> String {
    format!("service/v1/team-grant:{owner_id}:{member_id}:{address_id}:{epoch}")
}

/// Support ticket header (this service's choice; docs/protocol.md lists none):
/// `service/v1/support-header:<ticketId>`.
#[must_use]
pub fn support_header(ticket_id: &str) -> String {
    format!("service/v1/support-header:{ticket_id}")
}

/// Support ticket message: `service/v1/support-message:<ticketId>:<messageId>`.
#[must_use]
pub fn support_message(ticket_id: &str, message_id: &str) -> String {
    format!("service/v1/support-message:{ticket_id}:{message_id}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn strings_match_the_contract() {
        assert_eq!(
            super::message("ibx_1", "msg_2"),
            "service/v1/message:ibx_1:msg_2"
        );
        assert_eq!(
            super::attachment("msg_2", 0),
            "service/v1/attachment:msg_2:0"
        );
        assert_eq!(super::address_meta("ibx_1"), "service/v1/inbox-meta:ibx_1");
        assert_eq!(
            super::device_profile("wkr_3"),
            "service/v1/worker-profile:wkr_3"
        );
        assert_eq!(
            super::webhook_meta("whk_4"),
            "service/v1/webhook-meta:whk_4"
        );
        assert_eq!(super::device_keys("wkr_3"), "service/v1/worker-keys:wkr_3");
        assert_eq!(
            super::team_grant("acct_o", "acct_m", "ibx_1", 2),
            "service/v1/team-grant:acct_o:acct_m:ibx_1:2"
        );
    }
}
