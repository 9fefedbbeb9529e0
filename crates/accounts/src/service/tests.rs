use std::sync::{Arc, Mutex};

use chrono::TimeDelta;
use sealpost_kernel::{
    AccountId, ApiKeyId, Clock, DeviceId, PlanId, SessionId, TestClock, Timestamp,
};
use sealpost_plans::LimitError;
use sealpost_seal::{AccountKeys, RecoveryPhrase, b64, sha256};

use crate::repository::MockAccountRepository;
use crate::*;

const PHRASE: &str =
    "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";

fn keys() -> AccountKeys {
    RecoveryPhrase::parse(PHRASE).unwrap().keys()
}

fn account_id() -> AccountId {
    AccountId::parse(&keys().account_id()).unwrap()
}

/// A token of the real length (43 characters) that names what it stands for.
fn token(tag: &str) -> String {
    format!("{tag:a<43}")
}

fn clock() -> Arc<TestClock> {
    Arc::new(TestClock::at(
        Timestamp::parse("2026-11-22T12:00:00Z").unwrap(),
    ))
}

/// The server key the tests' service runs under.
const SERVER_KEY: [u8; 32] = [9; 32];

fn service(repo: MockAccountRepository, clock: &Arc<TestClock>) -> Accounts {
    Accounts::new(
        Arc::new(repo),
        clock.clone(),
        sealpost_seal::ServerKeys::new(SERVER_KEY, []),
    )
}

fn stored_account(now: Timestamp) -> Account {
    Account {
        id: account_id(),
        plan: PlanId::Free,
        auth_public_key: keys().auth_public_key(),
        created_at: now,
    }
}

fn session(now: Timestamp, expires_at: Timestamp) -> Session {
    Session {
        id: SessionId::generate(),
        account_id: account_id(),
        token_hash: [7; 32],
        created_at: now,
        expires_at,
    }
}

#[tokio::test]
async fn register_keeps_only_hashes_and_starts_a_30_day_session() {
    let clock = clock();
    let now = clock.now();
    let mut repo = MockAccountRepository::new();
    let seen = Arc::new(Mutex::new(None));
    let seen_in_repo = seen.clone();
    repo.expect_register()
        .times(1)
        .returning(move |account, session, _| {
            *seen_in_repo.lock().unwrap() = Some((account, session));
            Ok(RegisterOutcome::Registered)
        });
    let signed_in = service(repo, &clock)
        .register(Registration {
            account_id: account_id(),
            auth_verifier: keys().auth_verifier(),
            auth_public_key: keys().auth_public_key(),
            network: "192.0.2.0/24".into(),
        })
        .await
        .unwrap();

    let (account, session) = seen.lock().unwrap().take().unwrap();
    assert_eq!(account.auth_verifier_hash, sha256(&keys().auth_verifier()));
    assert_ne!(account.auth_verifier_hash, keys().auth_verifier());
    assert_eq!(account.account.plan, PlanId::Free);
    assert_eq!(session.token_hash, sha256(signed_in.token.as_bytes()));
    assert_eq!(session.expires_at, now + TimeDelta::days(30));
    assert_eq!(signed_in.session, session);
    assert_eq!(b64::decode(&signed_in.token).unwrap().len(), 32);
}

#[tokio::test]
async fn register_refuses_a_used_id() {
    let clock = clock();
    let mut repo = MockAccountRepository::new();
    repo.expect_register()
        .returning(|_, _, _| Ok(RegisterOutcome::IdTaken));
    let result = service(repo, &clock)
        .register(Registration {
            account_id: account_id(),
            auth_verifier: [1; 32],
            auth_public_key: [2; 32],
            network: "192.0.2.0/24".into(),
        })
        .await;
    assert!(matches!(result, Err(AccountError::IdTaken)));
}

#[tokio::test]
async fn registrations_are_counted_per_network_over_the_last_hour() {
    let clock = clock();
    let now = clock.now();
    let mut repo = MockAccountRepository::new();
    let expected_hash = sha256(b"registration-source:198.51.100.0/24");
    repo.expect_register()
        .withf(move |_, _, source| {
            source.network_hash == expected_hash
                && source.limit == 3
                && source.since == now - TimeDelta::hours(1)
        })
        .times(1)
        // The oldest of the three was 40 minutes ago: room again in 20.
        .returning(move |_, _, _| {
            Ok(RegisterOutcome::TooMany {
                oldest: now - TimeDelta::minutes(40),
            })
        });
    let result = service(repo, &clock)
        .with_registrations_per_network(3)
        .register(Registration {
            account_id: account_id(),
            auth_verifier: [1; 32],
            auth_public_key: [2; 32],
            network: "198.51.100.0/24".into(),
        })
        .await;
    match result {
        Err(AccountError::TooManyRegistrations {
            retry_after_seconds,
        }) => assert_eq!(retry_after_seconds, 20 * 60),
        other => panic!("{other:?}"),
    }
}

/// Issues a challenge through the service and returns what it stored and answered.
async fn issue_challenge(
    clock: &Arc<TestClock>,
    for_account: AccountId,
) -> (Challenge, IssuedChallenge) {
    let mut repo = MockAccountRepository::new();
    let saved = Arc::new(Mutex::new(None));
    let saved_in_repo = saved.clone();
    // No expectation on `account`: looking the account up would panic the mock.
    repo.expect_save_challenge()
        .times(1)
        .returning(move |challenge| {
            *saved_in_repo.lock().unwrap() = Some(challenge);
            Ok(())
        });
    let issued = service(repo, clock).challenge(for_account).await.unwrap();
    let challenge = saved.lock().unwrap().take().unwrap();
    (challenge, issued)
}

#[tokio::test]
async fn challenge_never_looks_the_account_up_and_lives_two_minutes() {
    let clock = clock();
    let unknown = AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap();
    let (stored, issued) = issue_challenge(&clock, unknown.clone()).await;
    assert_eq!(stored.account_id, unknown);
    assert_eq!(stored.nonce_hash, sha256(issued.nonce.as_bytes()));
    assert_eq!(issued.expires_at, clock.now() + TimeDelta::minutes(2));
    assert_eq!(b64::decode(&issued.nonce).unwrap().len(), 32);
    assert_ne!(issued.challenge_key, [0; 32]);
}

/// A repository holding one challenge and the vector account.
fn repo_with(challenge: Challenge, account: Option<Account>) -> MockAccountRepository {
    let mut repo = MockAccountRepository::new();
    let slot = Mutex::new(Some(challenge));
    repo.expect_take_challenge().returning(move |hash| {
        let mut slot = slot.lock().unwrap();
        Ok(slot.take_if(|challenge| challenge.nonce_hash == hash))
    });
    repo.expect_account()
        .returning(move |_| Ok(account.clone()));
    repo
}

#[tokio::test]
async fn verify_with_the_right_proof_opens_a_session() {
    let clock = clock();
    let (challenge, issued) = issue_challenge(&clock, account_id()).await;
    let mut repo = repo_with(challenge, Some(stored_account(clock.now())));
    repo.expect_create_session()
        .withf(|session, records| {
            records.notices.len() == 1
                && records.notices[0].kind == sealpost_activity::NoticeKind::SignedIn
                && records.notices[0].payload["sessionId"] == session.id.as_str()
        })
        .times(1)
        .returning(|_, _| Ok(()));
    let proof = keys().handshake_proof(&issued.challenge_key, &issued.nonce, account_id().as_str());

    let signed_in = service(repo, &clock)
        .verify(&account_id(), &issued.nonce, &proof)
        .await
        .unwrap();
    assert_eq!(signed_in.account.id, account_id());
    assert_eq!(
        signed_in.session.token_hash,
        sha256(signed_in.token.as_bytes())
    );
}

#[tokio::test]
async fn the_challenge_secret_is_derived_under_the_server_key_and_never_stored() {
    let clock = clock();
    let (challenge, issued) = issue_challenge(&clock, account_id()).await;
    // What the store holds is the nonce's hash and the account: nothing else
    // (the struct has no secret field), and the key is the nonce's derivation.
    assert_eq!(challenge.nonce_hash, sha256(issued.nonce.as_bytes()));
    let derived = sealpost_seal::ServerKeys::new(SERVER_KEY, [])
        .derive("sign-in challenge", issued.nonce.as_bytes());
    assert_eq!(
        issued.challenge_key,
        sealpost_seal::ChallengeKeypair::from_secret(*derived).public
    );

    // A service under another server key (someone with the database but not
    // the key) cannot check the proof the right key would accept.
    let mut repo = repo_with(challenge, Some(stored_account(clock.now())));
    repo.expect_create_session().never();
    let other = Accounts::new(
        Arc::new(repo),
        clock.clone(),
        sealpost_seal::ServerKeys::new([10; 32], []),
    );
    let proof = keys().handshake_proof(&issued.challenge_key, &issued.nonce, account_id().as_str());
    let result = other.verify(&account_id(), &issued.nonce, &proof).await;
    assert!(matches!(result, Err(AccountError::Unauthenticated)));
}

#[tokio::test]
async fn a_nonce_is_consumed_by_its_first_attempt_even_a_wrong_one() {
    let clock = clock();
    let (challenge, issued) = issue_challenge(&clock, account_id()).await;
    let mut repo = repo_with(challenge, Some(stored_account(clock.now())));
    repo.expect_create_session().never();
    let accounts = service(repo, &clock);
    let right = keys().handshake_proof(&issued.challenge_key, &issued.nonce, account_id().as_str());
    let mut wrong = right;
    wrong[0] ^= 1;

    let first = accounts.verify(&account_id(), &issued.nonce, &wrong).await;
    assert!(matches!(first, Err(AccountError::Unauthenticated)));
    let second = accounts.verify(&account_id(), &issued.nonce, &right).await;
    assert!(matches!(second, Err(AccountError::Unauthenticated)));
}

#[tokio::test]
async fn an_expired_nonce_is_refused() {
    let clock = clock();
    let (challenge, issued) = issue_challenge(&clock, account_id()).await;
    let mut repo = repo_with(challenge, Some(stored_account(clock.now())));
    repo.expect_create_session().never();
    clock.advance(TimeDelta::minutes(2));
    let proof = keys().handshake_proof(&issued.challenge_key, &issued.nonce, account_id().as_str());
    let result = service(repo, &clock)
        .verify(&account_id(), &issued.nonce, &proof)
        .await;
    assert!(matches!(result, Err(AccountError::Unauthenticated)));
}

#[tokio::test]
async fn an_unknown_account_is_refused_like_a_wrong_proof() {
    let clock = clock();
    let (challenge, issued) = issue_challenge(&clock, account_id()).await;
    let mut repo = repo_with(challenge, None);
    repo.expect_create_session().never();
    let proof = keys().handshake_proof(&issued.challenge_key, &issued.nonce, account_id().as_str());
    let result = service(repo, &clock)
        .verify(&account_id(), &issued.nonce, &proof)
        .await;
    assert!(matches!(result, Err(AccountError::Unauthenticated)));
}

#[tokio::test]
async fn a_challenge_for_another_account_is_refused() {
    let clock = clock();
    let other = AccountId::parse("acct_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap();
    let (challenge, issued) = issue_challenge(&clock, other).await;
    let mut repo = repo_with(challenge, Some(stored_account(clock.now())));
    repo.expect_create_session().never();
    let proof = keys().handshake_proof(&issued.challenge_key, &issued.nonce, account_id().as_str());
    let result = service(repo, &clock)
        .verify(&account_id(), &issued.nonce, &proof)
        .await;
    assert!(matches!(result, Err(AccountError::Unauthenticated)));
}

#[tokio::test]
async fn authenticate_tells_live_expired_unknown_and_device_tokens_apart() {
    let clock = clock();
    let now = clock.now();
    let live = session(now, now + TimeDelta::days(1));
    let expired = session(now - TimeDelta::days(31), now);
    let device = DeviceId::parse("wkr_phone01").unwrap();
    let mut repo = MockAccountRepository::new();
    let (live_copy, expired_copy, device_copy) = (live.clone(), expired.clone(), device.clone());
    let found = |bearer, suspended| Some(FoundBearer { bearer, suspended });
    repo.expect_bearer().returning(move |hash| {
        Ok(match hash {
            h if h == sha256(token("live").as_bytes()) => {
                found(Bearer::Session(live_copy.clone()), false)
            }
            h if h == sha256(token("susp").as_bytes()) => {
                found(Bearer::Session(live_copy.clone()), true)
            }
            h if h == sha256(token("expd").as_bytes()) => {
                found(Bearer::Session(expired_copy.clone()), true)
            }
            h if h == sha256(token("dev-").as_bytes()) => found(
                Bearer::Device {
                    account_id: account_id(),
                    device_id: device_copy.clone(),
                },
                false,
            ),
            _ => None,
        })
    });
    let accounts = service(repo, &clock);

    let session_caller = Caller::Session {
        account: account_id(),
        session: live.id,
    };
    assert_eq!(
        accounts.authenticate(&token("live")).await.unwrap(),
        Authentication {
            caller: session_caller.clone(),
            suspended: false
        }
    );
    assert_eq!(
        accounts.authenticate(&token("susp")).await.unwrap(),
        Authentication {
            caller: session_caller,
            suspended: true
        }
    );
    assert!(matches!(
        accounts.authenticate(&token("expd")).await,
        Err(AccountError::SessionExpired)
    ));
    let resolved = accounts.authenticate(&token("dev-")).await.unwrap();
    assert!(!resolved.suspended);
    assert_eq!(
        resolved.caller,
        Caller::Device {
            account: account_id(),
            device
        }
    );
    assert!(matches!(
        resolved.caller.session(),
        Err(AccountError::SessionRequired)
    ));
    assert!(matches!(
        accounts.authenticate(&token("nope")).await,
        Err(AccountError::Unauthenticated)
    ));
}

#[tokio::test]
async fn a_token_of_the_wrong_length_never_reaches_the_store() {
    let clock = clock();
    let mut repo = MockAccountRepository::new();
    repo.expect_bearer().never();
    let result = service(repo, &clock).authenticate("short").await;
    assert!(matches!(result, Err(AccountError::Unauthenticated)));
}

#[tokio::test]
async fn sessions_lists_live_ones_newest_first_with_the_current_marked() {
    let clock = clock();
    let now = clock.now();
    let older = session(now - TimeDelta::days(2), now + TimeDelta::days(28));
    let newer = session(now - TimeDelta::days(1), now + TimeDelta::days(29));
    let expired = session(now - TimeDelta::days(40), now - TimeDelta::days(10));
    let mut repo = MockAccountRepository::new();
    let rows = vec![older.clone(), expired, newer.clone()];
    repo.expect_sessions().returning(move |_| Ok(rows.clone()));
    let caller = Caller::Session {
        account: account_id(),
        session: older.id.clone(),
    };
    let listed = service(repo, &clock).sessions(&caller).await.unwrap();
    let ids: Vec<_> = listed.iter().map(|s| (s.id.clone(), s.current)).collect();
    assert_eq!(ids, vec![(newer.id, false), (older.id, true)]);
}

#[tokio::test]
async fn revoking_a_session_that_is_not_the_callers_is_not_found() {
    let clock = clock();
    let mut repo = MockAccountRepository::new();
    repo.expect_delete_session().returning(|_, _| Ok(false));
    let caller = Caller::Session {
        account: account_id(),
        session: SessionId::generate(),
    };
    let result = service(repo, &clock)
        .revoke_session(&caller, &SessionId::generate())
        .await;
    assert!(matches!(result, Err(AccountError::NotFound)));
}

#[tokio::test]
async fn session_only_operations_refuse_a_device() {
    let clock = clock();
    let mut repo = MockAccountRepository::new();
    repo.expect_erase().never();
    repo.expect_delete_sessions_except().never();
    let device = Caller::Device {
        account: account_id(),
        device: DeviceId::parse("wkr_phone01").unwrap(),
    };
    let accounts = service(repo, &clock);
    assert!(matches!(
        accounts.erase(&device).await,
        Err(AccountError::SessionRequired)
    ));
    assert!(matches!(
        accounts.revoke_other_sessions(&device).await,
        Err(AccountError::SessionRequired)
    ));
}

#[tokio::test]
async fn sweep_keeps_expired_sessions_for_a_grace_period() {
    let clock = clock();
    let now = clock.now();
    let mut repo = MockAccountRepository::new();
    repo.expect_sweep_expired()
        .withf(move |at, before, registrations| {
            *at == now
                && *before == now - TimeDelta::days(30)
                && *registrations == now - TimeDelta::hours(1)
        })
        .times(1)
        .returning(|_, _, _| Ok(3));
    assert_eq!(service(repo, &clock).sweep().await.unwrap(), 3);
}

fn label() -> sealpost_seal::SealedBox {
    sealpost_seal::SealedBox::seal(&[3; 32], "service/v1/api-key-label:key_ci01", b"ci")
}

fn key_id() -> ApiKeyId {
    ApiKeyId::parse("key_ci01").unwrap()
}

fn session_caller() -> Caller {
    Caller::Session {
        account: account_id(),
        session: SessionId::generate(),
    }
}

fn on_plan(plan: PlanId, now: Timestamp) -> Account {
    Account {
        plan,
        ..stored_account(now)
    }
}

#[tokio::test]
async fn an_api_key_is_stored_as_a_hash_and_its_prefixed_token_shown_once() {
    let clock = clock();
    let now = clock.now();
    let mut repo = MockAccountRepository::new();
    repo.expect_account()
        .returning(move |_| Ok(Some(on_plan(PlanId::Operator, now))));
    let stored = Arc::new(Mutex::new(None));
    let keep = stored.clone();
    repo.expect_create_api_key()
        .times(1)
        .returning(move |key, plan, limit| {
            assert_eq!(plan, PlanId::Operator);
            assert_eq!(limit, sealpost_plans::plan(PlanId::Operator).api_keys);
            *keep.lock().unwrap() = Some(key);
            Ok(ApiKeyOutcome::Created)
        });
    let issued = service(repo, &clock)
        .create_api_key(&session_caller(), key_id(), label())
        .await
        .unwrap();
    assert!(issued.token.starts_with(API_KEY_TOKEN_PREFIX));
    assert_eq!(issued.token.len(), API_KEY_TOKEN_PREFIX.len() + 43);
    let key = stored.lock().unwrap().clone().unwrap();
    assert_eq!(key.token_hash, sha256(issued.token.as_bytes()));
    assert_eq!(
        (key.created_at, key.last_used_at, key.paused),
        (now, None, false)
    );
}

#[tokio::test]
async fn api_keys_need_a_plan_with_them_and_stop_at_its_limit() {
    let clock = clock();
    let now = clock.now();
    let mut repo = MockAccountRepository::new();
    repo.expect_account()
        .returning(move |_| Ok(Some(on_plan(PlanId::Free, now))));
    repo.expect_create_api_key().never();
    let refused = service(repo, &clock)
        .create_api_key(&session_caller(), key_id(), label())
        .await;
    assert!(matches!(
        refused,
        Err(AccountError::Limit(LimitError::ApiKeysNeedOperator))
    ));

    let mut repo = MockAccountRepository::new();
    repo.expect_account()
        .returning(move |_| Ok(Some(on_plan(PlanId::Scale, now))));
    repo.expect_create_api_key()
        .returning(|_, _, _| Ok(ApiKeyOutcome::LimitReached));
    let full = service(repo, &clock)
        .create_api_key(&session_caller(), key_id(), label())
        .await;
    let limit = sealpost_plans::plan(PlanId::Scale).api_keys;
    assert!(matches!(
        full,
        Err(AccountError::Limit(LimitError::ApiKeyLimit { limit: l })) if l == limit
    ));
}

#[tokio::test]
async fn a_plan_that_changed_under_the_lock_is_decided_again() {
    let clock = clock();
    let now = clock.now();
    let mut repo = MockAccountRepository::new();
    repo.expect_account()
        .returning(move |_| Ok(Some(on_plan(PlanId::Operator, now))));
    repo.expect_create_api_key()
        .times(1)
        .returning(|_, _, _| Ok(ApiKeyOutcome::PlanChanged(PlanId::Free)));
    let refused = service(repo, &clock)
        .create_api_key(&session_caller(), key_id(), label())
        .await;
    assert!(matches!(
        refused,
        Err(AccountError::Limit(LimitError::ApiKeysNeedOperator))
    ));
}

#[tokio::test]
async fn only_a_session_manages_api_keys() {
    let clock = clock();
    let mut repo = MockAccountRepository::new();
    repo.expect_create_api_key().never();
    repo.expect_api_keys().never();
    repo.expect_delete_api_key().never();
    let accounts = service(repo, &clock);
    let key_caller = Caller::ApiKey {
        account: account_id(),
        key: key_id(),
    };
    assert!(matches!(
        accounts
            .create_api_key(&key_caller, key_id(), label())
            .await,
        Err(AccountError::SessionRequired)
    ));
    assert!(matches!(
        accounts.api_keys(&key_caller).await,
        Err(AccountError::SessionRequired)
    ));
    assert!(matches!(
        accounts.revoke_api_key(&key_caller, &key_id()).await,
        Err(AccountError::SessionRequired)
    ));
}

#[tokio::test]
async fn a_key_authenticates_records_its_use_once_an_hour_and_is_refused_while_paused() {
    let clock = clock();
    let now = clock.now();
    let key_token = format!("{API_KEY_TOKEN_PREFIX}{}", token("key-"));
    let paused_token = format!("{API_KEY_TOKEN_PREFIX}{}", token("paus"));
    let (live_hash, paused_hash) = (
        sha256(key_token.as_bytes()),
        sha256(paused_token.as_bytes()),
    );
    let last_used = Arc::new(Mutex::new(None::<Timestamp>));
    let mut repo = MockAccountRepository::new();
    let seen = last_used.clone();
    repo.expect_bearer().returning(move |hash| {
        let bearer = |last_used_at, paused| Bearer::ApiKey {
            account_id: account_id(),
            key_id: key_id(),
            last_used_at,
            paused,
        };
        Ok(if hash == live_hash {
            Some(FoundBearer {
                bearer: bearer(*seen.lock().unwrap(), false),
                suspended: false,
            })
        } else if hash == paused_hash {
            Some(FoundBearer {
                bearer: bearer(None, true),
                suspended: false,
            })
        } else {
            None
        })
    });
    let written = last_used.clone();
    repo.expect_touch_api_key()
        .times(2)
        .returning(move |_, hour| {
            *written.lock().unwrap() = Some(hour);
            Ok(())
        });
    let accounts = service(repo, &clock);
    for _ in 0..3 {
        let found = accounts.authenticate(&key_token).await.unwrap();
        assert_eq!(
            found.caller,
            Caller::ApiKey {
                account: account_id(),
                key: key_id()
            }
        );
    }
    assert_eq!(*last_used.lock().unwrap(), Some(now.start_of_hour()));
    clock.advance(TimeDelta::hours(1));
    accounts.authenticate(&key_token).await.unwrap();
    assert_eq!(
        *last_used.lock().unwrap(),
        Some((now + TimeDelta::hours(1)).start_of_hour())
    );
    assert!(matches!(
        accounts.authenticate(&paused_token).await,
        Err(AccountError::ApiKeyPaused)
    ));
    // A key token without its prefix, or with the prefix on a short body, is malformed.
    assert!(matches!(
        accounts
            .authenticate(&format!("{API_KEY_TOKEN_PREFIX}short"))
            .await,
        Err(AccountError::Unauthenticated)
    ));
}

#[tokio::test]
async fn revoking_a_key_the_account_lacks_is_not_found() {
    let clock = clock();
    let mut repo = MockAccountRepository::new();
    repo.expect_delete_api_key().returning(|_, _, _| Ok(false));
    assert!(matches!(
        service(repo, &clock)
            .revoke_api_key(&session_caller(), &key_id())
            .await,
        Err(AccountError::NotFound)
    ));
}
