//! Devices: the operator's side (`device`: pair, list, rename, disable,
//! remove) and this machine as a device (`agent`).

use clap::Subcommand;

/// Operator side: the account's devices.
#[derive(Debug, Subcommand)]
pub enum DeviceCommand {
    /// Pair the device showing CODE (`sealpost agent pair` on the device
    /// prints one) and send it its key bundle.
    Pair {
        /// The 8-digit pairing code; spaces and dashes are ignored.
        code: String,
        /// The name to give the device [default: the name it reports].
        #[arg(long)]
        name: Option<String>,
    },
    /// List the devices with their names.
    List,
    /// Rename a device.
    Rename {
        /// The device id (wkr_...).
        id: String,
        name: String,
    },
    /// Disable a device: its credential stops working at once.
    Disable {
        /// The device id (wkr_...).
        id: String,
    },
    /// Remove a device: its credential goes, its addresses become unassigned.
    Remove {
        /// The device id (wkr_...).
        id: String,
    },
}

/// Device side: this machine as a device of an account.
#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Pair this machine as an agent (a machine such as a CI runner or a
    /// server; the Operator plan and up): prints a code for the operator's
    /// `sealpost device pair`, waits for it and stores the credential.
    Pair {
        /// The name the operator sees [default: this machine's host name].
        #[arg(long)]
        name: Option<String>,
        /// The platform reported to the service.
        #[arg(long, default_value = "unknown",
              value_parser = ["ios", "android", "web", "unknown"])]
        platform: String,
        /// What the pairing makes: an agent, or (`device`, which every
        /// plan allows) a device.
        #[arg(long, default_value = "agent", value_parser = ["agent", "device"])]
        kind: String,
        /// Replace an existing pairing (its credential is discarded).
        #[arg(long)]
        force: bool,
    },
    /// Show this device as the service sees it, and report it active.
    Status,
    /// List the addresses this device holds keys for.
    Keys,
}
