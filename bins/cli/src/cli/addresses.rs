//! Addresses (`address`, formerly `inbox`) and the domains they are
//! created on (`domain`: the shared ones, and own domains).

use clap::Subcommand;

/// Days an address keeps mail: 1 to 90.
fn retention_days() -> clap::builder::RangedI64ValueParser<u8> {
    clap::value_parser!(u8).range(1..=90)
}

/// Operator side: the account's addresses.
#[derive(Debug, Subcommand)]
pub enum AddressCommand {
    /// Create an address that can receive mail.
    Create {
        /// Start of the address; the service appends a random ending.
        #[arg(long, conflicts_with = "local_part")]
        prefix: Option<String>,
        /// The exact name before the @ (Scale plan and up).
        #[arg(long)]
        local_part: Option<String>,
        /// The domain [default: the first one the service offers].
        #[arg(long)]
        domain: Option<String>,
        /// Days mail is kept, 1 to 90 [default: 7].
        #[arg(long, value_name = "DAYS", value_parser = retention_days())]
        retention: Option<u8>,
        /// A label only you can read.
        #[arg(long, value_name = "TEXT")]
        label: Option<String>,
        /// Also print the address's secret key, once, as one line of JSON
        /// (`{"inboxId","epoch","inboxKey","sealingKey"}`): a script holding
        /// it and an API key reads this address's mail without the phrase.
        #[arg(long)]
        export_key: bool,
    },
    /// List the addresses with their labels, devices and retention.
    List,
    /// Change an address's label.
    Label {
        /// The address id (ibx_...) or the email address.
        id: String,
        text: String,
    },
    /// Change how many days an address keeps mail; a shorter retention
    /// deletes stored mail past it.
    Retention {
        /// The address id (ibx_...) or the email address.
        id: String,
        #[arg(value_parser = retention_days())]
        days: u8,
    },
    /// Give an address to a device and send the device its keys.
    Assign {
        /// The address id (ibx_...) or the email address.
        id: String,
        /// The device id (wkr_...).
        device_id: String,
    },
    /// Take an address off a device and send the device its remaining keys.
    Unassign {
        /// The address id (ibx_...) or the email address.
        id: String,
        /// The device id (wkr_...).
        device_id: String,
    },
    /// Delete an address with its mail; it is never issued again.
    Delete {
        /// The address id (ibx_...) or the email address.
        id: String,
    },
}

/// The account's own domains.
#[derive(Debug, Subcommand)]
pub enum DomainCommand {
    /// The domains addresses can be created on (`address create --domain`):
    /// the shared ones and your own that are live.
    Available,
    /// Claim a domain; prints the TXT record that proves you own it.
    Add {
        /// The domain, e.g. example.org (Unicode names are fine).
        domain: String,
    },
    /// The account's own domains and the step each is at.
    List,
    /// Check the domain's DNS now; prints its step and what to do next.
    Check { domain: String },
    /// Remove the domain (refused while addresses exist on it).
    Remove { domain: String },
}
