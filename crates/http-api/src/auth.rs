//! Bearer authentication. One extractor resolves any token to its caller
//! (session, device credential or API key); `SessionCaller` additionally
//! refuses anything but an operator session with 403 `session_required`.

use std::future::Future;
use std::pin::Pin;

use actix_web::http::header;
use actix_web::web::Data;
use actix_web::{FromRequest, HttpRequest, dev::Payload};
use sealpost_accounts::Caller;
use sealpost_kernel::{AccountId, DeviceId, SessionId};

use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// Any authenticated caller.
pub struct Authenticated(pub Caller);

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

async fn authenticate(
    state: Data<AppState>,
    token: Result<String, ApiError>,
    path: String,
) -> Result<Caller, ApiError> {
    let caller = state.accounts.authenticate(&token?).await?;
    state.limiter.check_account(caller.account())?;
    // A suspended account reaches only its support requests.
    if !is_support_path(&path) && state.staff.suspension(caller.account()).await?.is_some() {
        return Err(ApiError::new(
            ErrorCode::AccountSuspended,
            "this account is suspended; contact support through the app",
        ));
    }
    Ok(caller)
}

/// `/support` and everything under it.
fn is_support_path(path: &str) -> bool {
    path == "/support" || path.starts_with("/support/")
}

impl FromRequest for Authenticated {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let token = bearer_token(req);
        let state = state(req);
        let path = req.path().to_owned();
        Box::pin(async move { Ok(Authenticated(authenticate(state?, token, path).await?)) })
    }
}

impl FromRequest for SessionCaller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let token = bearer_token(req);
        let state = state(req);
        let path = req.path().to_owned();
        Box::pin(async move {
            let caller = authenticate(state?, token, path).await?;
            let session = caller.session()?.clone();
            Ok(SessionCaller {
                account: caller.account().clone(),
                session,
                caller,
            })
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
