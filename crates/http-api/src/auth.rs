//! Bearer authentication. One extractor resolves any token to its caller
//! (session, device credential or API key); `SessionCaller` additionally
//! refuses anything but an operator session with 403 `session_required`.
//! Both refuse a suspended account (403 `account_suspended`), which the
//! token lookup itself reports; `SupportCaller`, the `/support*` routes'
//! extractor, lets it through at the suspended accounts' rate.

use std::future::Future;
use std::pin::Pin;

use actix_web::http::header;
use actix_web::web::Data;
use actix_web::{FromRequest, HttpRequest, dev::Payload};
use sealpost_accounts::{API_KEY_TOKEN_PREFIX, AccountError, Authentication, Caller};
use sealpost_kernel::{AccountId, DeviceId, SessionId};

use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// Any authenticated caller.
pub struct Authenticated(pub Caller);

/// A session or a device credential, but never an API key (refused by
/// its prefix, as [`SessionCaller`] does): `POST /messages/send`, which
/// agents may call too.
pub struct SessionOrDevice(pub Caller);

/// An operator session, for session-only endpoints.
pub struct SessionCaller {
    pub account: AccountId,
    pub session: SessionId,
    pub caller: Caller,
}

pub(crate) fn bearer_token(req: &HttpRequest) -> Result<String, ApiError> {
    let value = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| ApiError::new(ErrorCode::Unauthenticated, "missing bearer token"))?;
    let (scheme, token) = value.split_once(' ').ok_or_else(|| {
        ApiError::new(ErrorCode::Unauthenticated, "malformed Authorization header")
    })?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(ApiError::new(
            ErrorCode::Unauthenticated,
            "expected Authorization: Bearer <token>",
        ));
    }
    Ok(token.trim().to_owned())
}

pub(crate) fn state(req: &HttpRequest) -> Result<Data<AppState>, ApiError> {
    req.app_data::<Data<AppState>>().cloned().ok_or_else(|| {
        ApiError::internal(&std::io::Error::other("application state is not installed"))
    })
}

/// What a bearer extractor's `from_request` returns.
pub(crate) type Extracting<T> = Pin<Box<dyn Future<Output = Result<T, ApiError>>>>;

/// The shell every bearer extractor shares: the state and the token are
/// taken from the request (in that order of refusal), then `resolve` turns
/// the token into the caller.
pub(crate) fn with_bearer<T, Resolving>(
    req: &HttpRequest,
    resolve: impl FnOnce(Data<AppState>, String) -> Resolving + 'static,
) -> Extracting<T>
where
    Resolving: Future<Output = Result<T, ApiError>> + 'static,
{
    let token = bearer_token(req);
    let state = state(req);
    Box::pin(async move { resolve(state?, token?).await })
}

/// The token's caller and its account's standing (one store lookup), past
/// the account's edge limit (a refusal held like the per-IP one).
async fn authenticate(state: &AppState, token: &str) -> Result<Authentication, ApiError> {
    let found = state.accounts.authenticate(token).await?;
    crate::rate_limit::held(state.limiter.check_account(found.caller.account())).await?;
    Ok(found)
}

/// A suspended account reaches only its support requests ([`SupportCaller`]).
fn unless_suspended(found: Authentication) -> Result<Caller, ApiError> {
    if found.suspended {
        return Err(ApiError::new(
            ErrorCode::AccountSuspended,
            "this account is suspended; contact support through the app",
        ));
    }
    Ok(found.caller)
}

/// An API key is told by its prefix: a session-only extractor refuses it at
/// once, before any other extractor of the handler (a JSON body, say) can
/// answer first, so a key always learns `session_required` there.
fn api_key_refused<T: 'static>(req: &HttpRequest) -> Option<Extracting<T>> {
    let token = bearer_token(req).ok()?;
    token
        .starts_with(API_KEY_TOKEN_PREFIX)
        .then(|| -> Extracting<T> {
            Box::pin(std::future::ready(
                Err(AccountError::SessionRequired.into()),
            ))
        })
}

impl SessionCaller {
    fn of(caller: Caller) -> Result<Self, ApiError> {
        let session = caller.session()?.clone();
        Ok(Self {
            account: caller.account().clone(),
            session,
            caller,
        })
    }
}

impl FromRequest for Authenticated {
    type Error = ApiError;
    type Future = Extracting<Self>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        with_bearer(req, async |state, token| {
            let found = authenticate(&state, &token).await?;
            Ok(Authenticated(unless_suspended(found)?))
        })
    }
}

impl FromRequest for SessionCaller {
    type Error = ApiError;
    type Future = Extracting<Self>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        if let Some(refused) = api_key_refused(req) {
            return refused;
        }
        with_bearer(req, async |state, token| {
            let found = authenticate(&state, &token).await?;
            SessionCaller::of(unless_suspended(found)?)
        })
    }
}

impl FromRequest for SessionOrDevice {
    type Error = ApiError;
    type Future = Extracting<Self>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        if let Some(refused) = api_key_refused(req) {
            return refused;
        }
        with_bearer(req, async |state, token| {
            let found = authenticate(&state, &token).await?;
            Ok(SessionOrDevice(unless_suspended(found)?))
        })
    }
}

/// An operator session on `/support*`: the one place a suspended account
/// still reaches, under the suspended accounts' own (lowest) rate limit.
pub struct SupportCaller(pub SessionCaller);

impl std::ops::Deref for SupportCaller {
    type Target = SessionCaller;

    fn deref(&self) -> &SessionCaller {
        &self.0
    }
}

impl FromRequest for SupportCaller {
    type Error = ApiError;
    type Future = Extracting<Self>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        if let Some(refused) = api_key_refused(req) {
            return refused;
        }
        with_bearer(req, async |state, token| {
            let found = authenticate(&state, &token).await?;
            if found.suspended {
                state.limiter.check_suspended(found.caller.account())?;
            }
            Ok(SupportCaller(SessionCaller::of(found.caller)?))
        })
    }
}

impl Authenticated {
    pub fn account(&self) -> &AccountId {
        self.0.account()
    }

    /// The device a device credential is limited to; `None` for account-wide callers.
    pub fn own_device(&self) -> Option<&DeviceId> {
        match &self.0 {
            Caller::Device { device, .. } => Some(device),
            _ => None,
        }
    }

    /// A device credential reaches only its own device; anything else looks missing.
    pub fn check_device(&self, id: &DeviceId) -> Result<(), ApiError> {
        match self.own_device() {
            Some(own) if own != id => Err(ApiError::not_found()),
            _ => Ok(()),
        }
    }

    /// For device-only endpoints: any other caller gets 403 `device_required`
    /// (the endpoint exists; it is the identity that is wrong).
    pub fn device(&self) -> Result<&DeviceId, ApiError> {
        self.own_device().ok_or_else(|| {
            ApiError::new(
                ErrorCode::DeviceRequired,
                "only a device credential can call this endpoint",
            )
        })
    }
}
