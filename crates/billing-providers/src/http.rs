//! The one place a provider request meets the network: sends a
//! [`PreparedRequest`] and hands back the status and (bounded) body.

use std::error::Error as StdError;
use std::sync::Arc;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::redirect::Policy;
use sealpost_billing::{CheckoutRequest, CheckoutSession, ProviderError, ProviderId};

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
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls_config()?)
            .redirect(Policy::none())
            .referer(false)
            .no_proxy()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(REQUEST_TIMEOUT)
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
        let headers = header_map(&request.headers)?;
        let response = self
            .client
            .request(request.method.clone(), &request.url)
            .headers(headers)
            .body(request.body.clone())
            .send()
            .await
            .map_err(|error| ProviderError::Unreachable(describe(&error)))?;
        let status = response.status().as_u16();
        let body = read_body(response)
            .await
            .map_err(|error| ProviderError::Unreachable(describe(&error)))?;
        Ok(Answer { status, body })
    }
}

fn tls_config() -> Result<rustls::ClientConfig, BuildError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tls)
}

fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, ProviderError> {
    let mut map = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let header_name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ProviderError::Refused(format!("invalid request header name {name:?}")))?;
        let mut header_value = HeaderValue::from_str(value).map_err(|_| {
            ProviderError::Refused(format!("invalid value of request header {name}"))
        })?;
        if name.eq_ignore_ascii_case("authorization") {
            header_value.set_sensitive(true);
        }
        map.append(header_name, header_value);
    }
    Ok(map)
}

/// The body, up to [`MAX_RESPONSE_BYTES`] (the rest is not read; a cut
/// JSON answer then fails to parse and is refused).
async fn read_body(mut response: reqwest::Response) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while body.len() < MAX_RESPONSE_BYTES {
        match response.chunk().await? {
            Some(chunk) => {
                let take = chunk.len().min(MAX_RESPONSE_BYTES - body.len());
                body.extend_from_slice(chunk.get(..take).unwrap_or_default());
            }
            None => break,
        }
    }
    Ok(body)
}

/// A transport failure as one short line: what failed and its causes.
fn describe(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return format!("no answer within {} s", REQUEST_TIMEOUT.as_secs());
    }
    let mut text = if error.is_connect() {
        "could not connect".to_owned()
    } else {
        "request failed".to_owned()
    };
    let mut current: Option<&(dyn StdError + 'static)> = error.source();
    while let Some(cause) = current {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        current = cause.source();
    }
    crate::excerpt(&text, MAX_ERROR_CHARS)
}
