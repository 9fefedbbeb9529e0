use std::sync::Arc;

use sealpost_activity::Records;
use sealpost_kernel::{
    AccountId, Clock, Cursor, DeviceId, Page, PageRequest, PairingSessionId, PlanId,
};
use sealpost_plans::{OnPlan, decide_on_current_plan};
use sealpost_seal::{SealedBox, b64, random_token, sha256};

use crate::*;

/// What the device sees when it creates or polls its session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairingView {
    pub state: PairingState,
    pub code: String,
    /// Present once: on the first poll after the claim.
    pub handed_over: Option<(DeviceId, String)>,
}

/// A new session, with the token shown to the device once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenedPairing {
    pub token: String,
    pub code: String,
    pub state: PairingState,
}

#[derive(Clone)]
pub struct Devices {
    repo: Arc<dyn DeviceRepository>,
    clock: Arc<dyn Clock>,
}

/// Attempts at a unique live code before giving up (10^8 codes: a collision is rare).
const CODE_ATTEMPTS: usize = 8;
/// Attempts at a guarded write whose input changed under it.
const STALE_RETRIES: usize = 3;

impl Devices {
    pub fn new(repo: Arc<dyn DeviceRepository>, clock: Arc<dyn Clock>) -> Self {
        Self { repo, clock }
    }

    /// `POST /workers/pairing-session` (device, no auth), from `client_ip`
    /// (the limiter's key): at most [`MAX_OPEN_PER_IP`] live unclaimed
    /// sessions per address.
    pub async fn open_pairing(
        &self,
        platform: Platform,
        kind: DeviceKind,
        device_name: String,
        public_key: [u8; 32],
        client_ip: &str,
    ) -> Result<OpenedPairing, DeviceError> {
        if device_name.chars().count() > 100 {
            return Err(DeviceError::InvalidField {
                field: "deviceName",
                reason: "at most 100 characters".into(),
            });
        }
        let now = self.clock.now();
        // Only a hash of the address is kept with the session.
        let source = b64::encode(&sha256(format!("pairing-source:{client_ip}").as_bytes()));
        for _ in 0..CODE_ATTEMPTS {
            let token = random_token();
            let session = PairingSession {
                id: PairingSessionId::generate(),
                token_hash: sha256(token.as_bytes()),
                code: generate_code(),
                state: PairingState::Waiting,
                kind,
                platform,
                device_name: device_name.clone(),
                public_key,
                handoff_key: HandoffKey::for_token(&token),
                created_at: now,
                detected_by: None,
                claimed_by: None,
                device_id: None,
                handoff: None,
            };
            let code = session.code.clone();
            match self
                .repo
                .insert_pairing(
                    session,
                    source.clone(),
                    MAX_OPEN_PER_IP,
                    now - UNPOLLED_LIFETIME,
                )
                .await?
            {
                PairingInsert::Inserted => {
                    return Ok(OpenedPairing {
                        token,
                        code,
                        state: PairingState::Waiting,
                    });
                }
                PairingInsert::TooMany => {
                    return Err(DeviceError::TooManyPairings {
                        retry_after_seconds: 60,
                    });
                }
                PairingInsert::CodeTaken => {}
            }
        }
        Err(DeviceError::Store(
            sealpost_kernel::StoreError::Unavailable("no free pairing code".into()),
        ))
    }

    /// `GET /workers/pairing-session/:token`: the credential appears on the
    /// first poll after the claim. Each poll keeps an unclaimed session
    /// alive for [`UNPOLLED_LIFETIME`]; after that it is gone.
    pub async fn poll_pairing(&self, token: &str) -> Result<PairingView, DeviceError> {
        let now = self.clock.now();
        let session = self
            .repo
            .poll_pairing(sha256(token.as_bytes()), now, now - UNPOLLED_LIFETIME)
            .await?
            .ok_or(DeviceError::NotFound)?;
        let mut handed_over = None;
        if session.state.is_claimed()
            && let Some(device) = session.device_id.clone()
            && let Some(sealed) = self.repo.take_handoff(&session.id).await?
        {
            let credential =
                open_handoff(token, &session.id, &sealed).ok_or(DeviceError::NotFound)?;
            handed_over = Some((device, credential));
        }
        Ok(PairingView {
            state: session.state,
            code: session.code,
            handed_over,
        })
    }

    /// `DELETE /workers/pairing-session/:token`: only while nobody claimed it.
    pub async fn cancel_pairing(&self, token: &str) -> Result<(), DeviceError> {
        let session = self
            .repo
            .pairing_by_token(sha256(token.as_bytes()))
            .await?
            .ok_or(DeviceError::NotFound)?;
        if session.state.is_claimed() || !self.repo.delete_unclaimed_pairing(&session.id).await? {
            return Err(DeviceError::AlreadyUsed);
        }
        Ok(())
    }

    /// `POST /workers/pair/lookup`. Failures count per account and per IP.
    pub async fn lookup(
        &self,
        account: &AccountId,
        client_ip: &str,
        code: &str,
    ) -> Result<PairingSession, DeviceError> {
        let now = self.clock.now();
        let keys = vec![format!("account:{account}"), format!("ip:{client_ip}")];
        // Counted before the lookup, atomically: a burst of lookups cannot
        // all pass the check before any failure is written. A lookup that
        // finds its session takes its failure back.
        if let Some(failures) = self
            .repo
            .reserve_lookup(
                keys.clone(),
                now,
                now - LOOKUP_WINDOW,
                FAILED_LOOKUP_LIMIT as u32,
            )
            .await?
        {
            return Err(DeviceError::TooManyLookups {
                retry_after_seconds: lookup_retry_after(&failures, now).unwrap_or(1),
            });
        }
        let found = if is_code(code) {
            self.repo
                .live_pairing_by_code(code, now - UNPOLLED_LIFETIME)
                .await?
        } else {
            None
        };
        // A session another account detected first is not this one's to
        // take over: it answers like a wrong code.
        let Some(mut session) = found.filter(|session| {
            session.detected_by.is_none() || session.detected_by.as_ref() == Some(account)
        }) else {
            return Err(DeviceError::NotFound);
        };
        if !self.repo.mark_detected(&session.id, account).await? {
            return Err(DeviceError::NotFound);
        }
        self.repo.release_lookup(keys, now).await?;
        session.state = PairingState::OperatorDetected;
        session.detected_by = Some(account.clone());
        Ok(session)
    }

    /// `POST /workers/pair`: mints the credential and creates the device, of
    /// the kind the session was opened for. An agent needs a plan that
    /// allows agents, decided on the plan the account holds under its lock.
    pub async fn claim(
        &self,
        account: &AccountId,
        plan: PlanId,
        session_id: &PairingSessionId,
        device_id: DeviceId,
        profile: SealedBox,
    ) -> Result<Device, DeviceError> {
        let now = self.clock.now();
        let session = self
            .repo
            .pairing_by_id(session_id)
            .await?
            .filter(|session| session.detected_by.as_ref() == Some(account))
            .ok_or(DeviceError::NotFound)?;
        if session.state.is_claimed() {
            return Err(DeviceError::AlreadyUsed);
        }
        let device = Device {
            id: device_id,
            account: account.clone(),
            kind: session.kind,
            platform: session.platform,
            disabled: false,
            connected: true,
            created_at: now,
            last_active_at: Some(now),
            paused_at: None,
            profile: Some(profile),
            public_key: Some(session.public_key),
        };
        decide_on_current_plan(plan, async |plan| {
            let limits = sealpost_plans::plan(plan);
            if device.kind == DeviceKind::Agent {
                limits.check_new_agent()?;
            }
            let credential = random_token();
            let mut records = Records::new();
            records.device_paired(account, &device.id, device.kind.as_str(), now);
            let outcome = self
                .repo
                .claim(Claim {
                    session: session.id.clone(),
                    device: device.clone(),
                    credential_hash: sha256(credential.as_bytes()),
                    handoff: seal_handoff(&session.handoff_key, &session.id, &credential),
                    plan,
                    max_devices: limits.devices,
                    records,
                })
                .await?;
            match outcome {
                ClaimOutcome::Claimed => Ok(OnPlan::Done(device.clone())),
                ClaimOutcome::AlreadyUsed => Err(DeviceError::AlreadyUsed),
                ClaimOutcome::NotFound => Err(DeviceError::NotFound),
                ClaimOutcome::IdTaken => Err(DeviceError::IdTaken),
                ClaimOutcome::LimitReached => Err(DeviceError::Limit(
                    sealpost_plans::LimitError::DeviceLimitReached {
                        limit: limits.devices.unwrap_or(u32::MAX),
                    },
                )),
                ClaimOutcome::PlanChanged(current) => Ok(OnPlan::Changed(current)),
            }
        })
        .await
    }

    pub async fn list(
        &self,
        account: &AccountId,
        page: &PageRequest,
    ) -> Result<Page<Device>, DeviceError> {
        let rows = self.repo.devices(account, page).await?;
        Ok(Page::from_rows(rows, page, |device| Cursor {
            at: device.created_at,
            id: device.id.to_string(),
        }))
    }

    pub async fn get(&self, account: &AccountId, id: &DeviceId) -> Result<Device, DeviceError> {
        self.repo
            .device(account, id)
            .await?
            .ok_or(DeviceError::NotFound)
    }

    pub async fn update_profile(
        &self,
        account: &AccountId,
        id: &DeviceId,
        profile: SealedBox,
    ) -> Result<(), DeviceError> {
        found(self.repo.update_profile(account, id, profile).await?)
    }

    /// `status=disabled`: the credential stops working at once.
    pub async fn disable(&self, account: &AccountId, id: &DeviceId) -> Result<(), DeviceError> {
        found(self.repo.disable(account, id).await?)
    }

    /// `DELETE /workers/:id`: credential gone, addresses unassigned, with their events.
    pub async fn remove(&self, account: &AccountId, id: &DeviceId) -> Result<(), DeviceError> {
        for _ in 0..STALE_RETRIES {
            let now = self.clock.now();
            let assigned = self.repo.assigned_addresses(account, id).await?;
            let mut records = Records::new();
            for address in &assigned {
                records.address_removed(account, address, id, now);
            }
            records.device_removed(account, id, now);
            match self.repo.remove(account, id, assigned, records).await? {
                WriteOutcome::Changed => return Ok(()),
                WriteOutcome::NotFound => return Err(DeviceError::NotFound),
                WriteOutcome::Stale => continue,
            }
        }
        Err(DeviceError::Store(
            sealpost_kernel::StoreError::Unavailable("device kept changing; retry".into()),
        ))
    }

    /// `POST /workers/heartbeat`: active now; reconnects a disconnected device.
    pub async fn heartbeat(
        &self,
        account: &AccountId,
        id: &DeviceId,
    ) -> Result<Device, DeviceError> {
        let now = self.clock.now();
        let mut device = self.get(account, id).await?;
        let mut records = Records::new();
        if !device.connected {
            records.device_connected(account, id, now);
        }
        self.repo.record_activity(account, id, now, records).await?;
        device.connected = true;
        device.last_active_at = Some(now);
        Ok(device)
    }

    pub async fn set_keys(
        &self,
        account: &AccountId,
        id: &DeviceId,
        keys: SealedBox,
    ) -> Result<KeyBundle, DeviceError> {
        let bundle = KeyBundle {
            keys,
            updated_at: self.clock.now(),
        };
        found(self.repo.set_keys(account, id, bundle.clone()).await?)?;
        Ok(bundle)
    }

    pub async fn keys(&self, account: &AccountId, id: &DeviceId) -> Result<KeyBundle, DeviceError> {
        self.get(account, id).await?;
        self.repo
            .keys(account, id)
            .await?
            .ok_or(DeviceError::NotFound)
    }

    /// The hourly sweep: reports stale devices disconnected and removes
    /// unclaimed sessions past 14 days. Returns how many devices disconnected.
    pub async fn sweep(&self) -> Result<u64, DeviceError> {
        let now = self.clock.now();
        let before = now - DISCONNECT_AFTER;
        let mut disconnected = 0;
        for device in self.repo.stale_devices(before).await? {
            let mut records = Records::new();
            records.device_disconnected(&device.account, &device.id, now);
            if self
                .repo
                .mark_disconnected(&device.id, before, records)
                .await?
            {
                disconnected += 1;
            }
        }
        self.repo
            .sweep_pairing(
                now - UNCLAIMED_LIFETIME,
                now - UNPOLLED_LIFETIME,
                now - LOOKUP_WINDOW,
            )
            .await?;
        Ok(disconnected)
    }
}

fn found(changed: bool) -> Result<(), DeviceError> {
    if changed {
        Ok(())
    } else {
        Err(DeviceError::NotFound)
    }
}

#[cfg(test)]
mod tests;
