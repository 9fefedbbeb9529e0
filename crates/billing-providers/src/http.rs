//! The one place a provider request meets the network: sends a
//! [`PreparedRequest`] and hands back the status and (bounded) body.

use std::error::Error as StdError;

use sealpost_billing::{CheckoutRequest, CheckoutSession, ProviderError, ProviderId};
use sealpost_outbound_http::{client_builder, error_text, header_map, read_capped};

use crate::{BuildError, PreparedRequest, REQUEST_TIMEOUT};

/// Most of a response body read; a checkout answer is a few KiB.
pub(crate) const MAX_RESPONSE_BYTES: usize = 1024 * 1024;
/// Longest transport error text kept.
const MAX_ERROR_CHARS: usize = 300;

/// What the provider answered.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
}

/// Sends prepared requests. Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Executor {
    client: reqwest::Client,
}

impl Executor {
    pub(crate) fn new() -> Result<Self, BuildError> {
        let client = client_builder(None, REQUEST_TIMEOUT, REQUEST_TIMEOUT)?
            .user_agent(concat!("Sealpost/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { client })
    }

    /// Starts a checkout: checks the amount, sends the provider's `prepared`
    /// request and reads its answer with `read`. A failure is logged with
    /// ids only.
    pub(crate) async fn checkout(
        &self,
        provider: ProviderId,
        request: &CheckoutRequest,
        prepared: &PreparedRequest,
        read: fn(u16, &[u8]) -> Result<CheckoutSession, ProviderError>,
    ) -> Result<CheckoutSession, ProviderError> {
        let result = match crate::check_amount(request) {
            Ok(()) => match self.send(prepared).await {
                Ok(answer) => read(answer.status, &answer.body),
                Err(error) => Err(error),
            },
            Err(error) => Err(error),
        };
        if let Err(error) = &result {
            tracing::warn!(%provider, payment = %request.payment, %error, "checkout not started");
        }
        result
    }

    /// Sends `request`. A request that gets no answer (connect, TLS,
    /// timeout, a broken body) is [`ProviderError::Unreachable`]; every
    /// answer, whatever its status, is returned for the provider to read.
    pub(crate) async fn send(&self, request: &PreparedRequest) -> Result<Answer, ProviderError> {
        let headers = header_map(&request.headers).map_err(ProviderError::Refused)?;
        let response = self
            .client
            .request(request.method.clone(), &request.url)
            .headers(headers)
            .body(request.body.clone())
            .send()
            .await
            .map_err(|error| ProviderError::Unreachable(describe(&error)))?;
        let status = response.status().as_u16();
        // The rest is not read; a cut JSON answer then fails to parse and is
        // refused.
        let body = read_capped(response, MAX_RESPONSE_BYTES)
            .await
            .map_err(|partial| ProviderError::Unreachable(describe(&partial.error)))?;
        Ok(Answer { status, body })
    }
}

/// A transport failure as one short line: what failed and its causes.
fn describe(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return format!("no answer within {} s", REQUEST_TIMEOUT.as_secs());
    }
    let head = if error.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    error_text(head, error.source(), MAX_ERROR_CHARS)
}
