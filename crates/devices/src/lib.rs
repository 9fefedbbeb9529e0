//! Devices (workers) and how they pair.
//!
//! Pairing (docs/protocol.md "Pairing a device"): the device opens a session
//! and shows its 8-digit code; the operator looks the code up, then claims the
//! session with a client-made `wkr_` id and a sealed profile. The device
//! credential is minted at the claim and handed to the device once, on its
//! first poll after it. Until then it waits sealed to a key derived from the
//! pairing token, which the service keeps only as a hash, so the stored copy is
//! useless to anyone without the device's token.

mod device;
mod error;
mod repository;
mod service;
mod session;

pub use device::*;
pub use error::DeviceError;
pub use repository::*;
pub use service::Devices;
pub use session::*;
