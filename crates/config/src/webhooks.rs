//! Webhook delivery: hosts pinned to an address and extra trusted roots
//! (both for tests).

use crate::variables::{Variable, Vars};
use std::path::PathBuf;

pub(crate) const WEBHOOK_RESOLVE: Variable = Variable {
    name: "SEALPOST_WEBHOOK_RESOLVE",
    default: "(unset)",
    meaning: "`host=ip:port` pairs, comma separated, pinning webhook hosts to an address (tests). Only pinned hosts may resolve to loopback or private addresses.",
};

pub(crate) const WEBHOOK_CA_FILE: Variable = Variable {
    name: "SEALPOST_WEBHOOK_CA_FILE",
    default: "(unset)",
    meaning: "PEM file of extra trusted roots for webhook delivery (tests).",
};

pub(crate) struct Webhooks {
    pub(crate) webhook_resolve: Option<String>,
    pub(crate) webhook_ca_file: Option<PathBuf>,
}

pub(crate) fn read(vars: Vars<'_>) -> Webhooks {
    Webhooks {
        webhook_resolve: vars.get(&WEBHOOK_RESOLVE).map(str::to_owned),
        webhook_ca_file: vars.path(&WEBHOOK_CA_FILE),
    }
}
