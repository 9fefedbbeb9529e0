use std::sync::Arc;

use sealpost_activity::{Notice, Records};
use sealpost_kernel::{AccountId, ApiKeyId, Clock, PlanId, SessionId, Timestamp};
use sealpost_plans::{LimitError, OnPlan, decide_on_current_plan, plan};
use sealpost_seal::{
    ChallengeKeypair, SealedBox, ServerKeys, b64, random_bytes, random_token, sha256,
    verify_handshake_proof,
};

use crate::{
    API_KEY_TOKEN_PREFIX, Account, AccountError, AccountRepository, ApiKey, ApiKeyOutcome,
    Authentication, Bearer, CHALLENGE_LIFETIME, Caller, Challenge,
    DEFAULT_REGISTRATIONS_PER_NETWORK, EXPIRED_SESSION_GRACE, IssuedApiKey, IssuedChallenge,
    NewAccount, REGISTRATION_WINDOW, RegisterOutcome, Registration, RegistrationSource,
    SESSION_LIFETIME, Session, SessionView, SignedIn,
};

/// Length of a base64url token made from 32 random bytes.
const TOKEN_LEN: usize = 43;

/// The purpose a challenge's secret is derived for (`ServerKeys::derive`).
const CHALLENGE_PURPOSE: &str = "sign-in challenge";

#[derive(Clone)]
pub struct Accounts {
    repo: Arc<dyn AccountRepository>,
    clock: Arc<dyn Clock>,
    keys: Arc<ServerKeys>,
    /// Registrations an hour per client network
    /// (`SEALPOST_REGISTRATIONS_PER_NETWORK`).
    registrations_per_network: u32,
}

impl Accounts {
    /// `keys` derive each challenge's secret from its nonce, so nothing the
    /// database holds is enough to answer a challenge.
    pub fn new(repo: Arc<dyn AccountRepository>, clock: Arc<dyn Clock>, keys: ServerKeys) -> Self {
        Self {
            repo,
            clock,
            keys: Arc::new(keys),
            registrations_per_network: DEFAULT_REGISTRATIONS_PER_NETWORK,
        }
    }

    /// Lets each client network register `limit` accounts an hour.
    #[must_use]
    pub fn with_registrations_per_network(mut self, limit: u32) -> Self {
        self.registrations_per_network = limit;
        self
    }

    /// The challenge key pair of `nonce`: its secret is derived under the
    /// current server key, never stored.
    fn challenge_keypair(&self, nonce: &str) -> ChallengeKeypair {
        ChallengeKeypair::from_secret(*self.keys.derive(CHALLENGE_PURPOSE, nonce.as_bytes()))
    }

    /// `POST /accounts`: creates the account on the Free plan and signs it in.
    pub async fn register(&self, input: Registration) -> Result<SignedIn, AccountError> {
        let now = self.clock.now();
        let account = Account {
            id: input.account_id,
            plan: PlanId::Free,
            auth_public_key: input.auth_public_key,
            created_at: now,
        };
        let (session, token) = new_session(&account.id, now);
        let stored = NewAccount {
            account: account.clone(),
            auth_verifier_hash: sha256(&input.auth_verifier),
        };
        let source = RegistrationSource {
            network_hash: sha256(format!("registration-source:{}", input.network).as_bytes()),
            limit: self.registrations_per_network,
            since: now - REGISTRATION_WINDOW,
        };
        match self.repo.register(stored, session.clone(), source).await? {
            RegisterOutcome::Registered => Ok(SignedIn {
                account,
                token,
                session,
            }),
            RegisterOutcome::IdTaken => Err(AccountError::IdTaken),
            RegisterOutcome::TooMany { oldest } => {
                // Once the oldest leaves the window, one more fits.
                let free_at = oldest + REGISTRATION_WINDOW;
                let millis = (free_at - now).num_milliseconds().max(0) as u64;
                Err(AccountError::TooManyRegistrations {
                    retry_after_seconds: millis.div_ceil(1000).max(1),
                })
            }
        }
    }

    /// `POST /accounts/challenge`. Deliberately never looks the account up, so
    /// the answer has the same shape and takes the same work whether or not it exists.
    pub async fn challenge(&self, account_id: AccountId) -> Result<IssuedChallenge, AccountError> {
        let now = self.clock.now();
        let nonce = b64::encode(&random_bytes::<32>());
        let keypair = self.challenge_keypair(&nonce);
        let expires_at = now + CHALLENGE_LIFETIME;
        self.repo
            .save_challenge(Challenge {
                nonce_hash: sha256(nonce.as_bytes()),
                account_id,
                expires_at,
            })
            .await?;
        Ok(IssuedChallenge {
            nonce,
            expires_at,
            challenge_key: keypair.public,
        })
    }

    /// `POST /accounts/verify`. The nonce is consumed before anything is
    /// checked, so a second attempt with it fails whatever the first did.
    pub async fn verify(
        &self,
        account_id: &AccountId,
        nonce: &str,
        proof: &[u8],
    ) -> Result<SignedIn, AccountError> {
        let now = self.clock.now();
        let challenge = self
            .repo
            .take_challenge(sha256(nonce.as_bytes()))
            .await?
            .ok_or(AccountError::Unauthenticated)?;
        if challenge.account_id != *account_id || challenge.expires_at <= now {
            return Err(AccountError::Unauthenticated);
        }
        let account = self
            .repo
            .account(account_id)
            .await?
            .ok_or(AccountError::Unauthenticated)?;
        let proven = verify_handshake_proof(
            &self.challenge_keypair(nonce).secret,
            &account.auth_public_key,
            nonce,
            account_id.as_str(),
            proof,
        );
        if !proven {
            return Err(AccountError::Unauthenticated);
        }
        let (session, token) = new_session(account_id, now);
        // The account's phones hear of every sign-in (push `newSignIn`).
        let notice = Records::notice(Notice::signed_in(account_id, &session.id, now));
        self.repo.create_session(session.clone(), notice).await?;
        Ok(SignedIn {
            account,
            token,
            session,
        })
    }

    /// Resolves a bearer token to its caller and whether its account is
    /// suspended (one store lookup).
    pub async fn authenticate(&self, token: &str) -> Result<Authentication, AccountError> {
        let well_formed = token.len() == TOKEN_LEN
            || token
                .strip_prefix(API_KEY_TOKEN_PREFIX)
                .is_some_and(|rest| rest.len() == TOKEN_LEN);
        if !well_formed {
            return Err(AccountError::Unauthenticated);
        }
        let found = self
            .repo
            .bearer(sha256(token.as_bytes()))
            .await?
            .ok_or(AccountError::Unauthenticated)?;
        let caller = match found.bearer {
            Bearer::Session(session) if session.expires_at <= self.clock.now() => {
                return Err(AccountError::SessionExpired);
            }
            Bearer::Session(session) => Caller::Session {
                account: session.account_id,
                session: session.id,
            },
            Bearer::Device {
                account_id,
                device_id,
            } => Caller::Device {
                account: account_id,
                device: device_id,
            },
            Bearer::ApiKey { paused: true, .. } => return Err(AccountError::ApiKeyPaused),
            Bearer::ApiKey {
                account_id,
                key_id,
                last_used_at,
                paused: false,
            } => {
                // Kept to the hour, so a busy key writes once an hour.
                let hour = self.clock.now().start_of_hour();
                if last_used_at != Some(hour) {
                    self.repo.touch_api_key(&key_id, hour).await?;
                }
                Caller::ApiKey {
                    account: account_id,
                    key: key_id,
                }
            }
        };
        Ok(Authentication {
            caller,
            suspended: found.suspended,
        })
    }

    pub async fn account(&self, id: &AccountId) -> Result<Account, AccountError> {
        self.repo.account(id).await?.ok_or(AccountError::NotFound)
    }

    /// Live sessions, newest first, the caller's own marked.
    pub async fn sessions(&self, caller: &Caller) -> Result<Vec<SessionView>, AccountError> {
        let current = caller.session()?;
        let now = self.clock.now();
        let mut sessions: Vec<SessionView> = self
            .repo
            .sessions(caller.account())
            .await?
            .into_iter()
            .filter(|session| session.expires_at > now)
            .map(|session| SessionView {
                current: session.id == *current,
                id: session.id,
                created_at: session.created_at,
                expires_at: session.expires_at,
            })
            .collect();
        sessions.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        Ok(sessions)
    }

    /// `POST /accounts/signout`.
    pub async fn sign_out(&self, caller: &Caller) -> Result<(), AccountError> {
        let current = caller.session()?;
        self.repo.delete_session(caller.account(), current).await?;
        Ok(())
    }

    /// `DELETE /accounts/sessions/:id`: any of the caller's sessions, the current one included.
    pub async fn revoke_session(
        &self,
        caller: &Caller,
        id: &SessionId,
    ) -> Result<(), AccountError> {
        caller.session()?;
        if self.repo.delete_session(caller.account(), id).await? {
            Ok(())
        } else {
            Err(AccountError::NotFound)
        }
    }

    /// `DELETE /accounts/sessions`: every session but the caller's. Returns how many went.
    pub async fn revoke_other_sessions(&self, caller: &Caller) -> Result<u64, AccountError> {
        let current = caller.session()?;
        Ok(self
            .repo
            .delete_sessions_except(caller.account(), current)
            .await?)
    }

    /// `DELETE /accounts/me`: erases at once.
    /// Returns the card subscription that still renewed (queued to be
    /// stopped at the provider with the erasure), for the caller to stop now.
    pub async fn erase(&self, caller: &Caller) -> Result<Option<String>, AccountError> {
        caller.session()?;
        self.repo
            .erase(caller.account(), self.clock.now())
            .await
            .map_err(AccountError::from)
    }

    /// `POST /api-keys`: a new key for the session's account, on a plan
    /// with API keys and under its limit; the token is returned once.
    pub async fn create_api_key(
        &self,
        caller: &Caller,
        id: ApiKeyId,
        label: SealedBox,
    ) -> Result<IssuedApiKey, AccountError> {
        caller.session()?;
        let account = self.account(caller.account()).await?;
        let token = format!("{API_KEY_TOKEN_PREFIX}{}", random_token());
        let key = ApiKey {
            id,
            account_id: account.id,
            token_hash: sha256(token.as_bytes()),
            label,
            created_at: self.clock.now(),
            last_used_at: None,
            paused: false,
        };
        decide_on_current_plan(account.plan, async |plan_id| {
            let limits = plan(plan_id);
            limits.check_new_api_key(0)?;
            match self
                .repo
                .create_api_key(key.clone(), plan_id, limits.api_keys)
                .await?
            {
                ApiKeyOutcome::Created => Ok(OnPlan::Done(IssuedApiKey {
                    key: key.clone(),
                    token: token.clone(),
                })),
                ApiKeyOutcome::IdTaken => Err(AccountError::ApiKeyIdTaken),
                ApiKeyOutcome::LimitReached => Err(LimitError::ApiKeyLimit {
                    limit: limits.api_keys,
                }
                .into()),
                ApiKeyOutcome::PlanChanged(current) => Ok(OnPlan::Changed(current)),
            }
        })
        .await
    }

    /// `GET /api-keys`: the account's keys, oldest first (a session only).
    pub async fn api_keys(&self, caller: &Caller) -> Result<Vec<ApiKey>, AccountError> {
        caller.session()?;
        Ok(self.repo.api_keys(caller.account()).await?)
    }

    /// `DELETE /api-keys/:id`: the key stops working at once (a session only).
    pub async fn revoke_api_key(&self, caller: &Caller, id: &ApiKeyId) -> Result<(), AccountError> {
        caller.session()?;
        if self
            .repo
            .delete_api_key(caller.account(), id, self.clock.now())
            .await?
        {
            Ok(())
        } else {
            Err(AccountError::NotFound)
        }
    }

    /// Removes expired challenges, and sessions long past their expiry.
    pub async fn sweep(&self) -> Result<u64, AccountError> {
        let now = self.clock.now();
        Ok(self
            .repo
            .sweep_expired(now, now - EXPIRED_SESSION_GRACE, now - REGISTRATION_WINDOW)
            .await?)
    }
}

fn new_session(account_id: &AccountId, now: Timestamp) -> (Session, String) {
    let token = random_token();
    let session = Session {
        id: SessionId::generate(),
        account_id: account_id.clone(),
        token_hash: sha256(token.as_bytes()),
        created_at: now,
        expires_at: now + SESSION_LIFETIME,
    };
    (session, token)
}

#[cfg(test)]
mod tests;
