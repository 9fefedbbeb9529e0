//! Helpers shared by the SDK's integration tests.

use sealpost_client::{Client, ClientError};
use sealpost_seal::{AccountKeys, RecoveryPhrase};
use sealpost_testkit::TestApp;

/// Asserts an API error with this status and code.
pub fn assert_api(result: Result<impl std::fmt::Debug, ClientError>, status: u16, code: &str) {
    match result {
        Err(err @ ClientError::Api { .. }) => {
            assert_eq!((err.status(), err.code()), (Some(status), code), "{err:?}");
        }
        other => panic!("expected {status} {code}, got {other:?}"),
    }
}

/// A registered account: its keys and a client holding its session.
pub struct Operator {
    pub keys: AccountKeys,
    pub client: Client,
}

pub async fn operator(app: &TestApp) -> Operator {
    let keys = RecoveryPhrase::generate().keys();
    let anonymous = Client::new(&app.base_url).unwrap();
    let token = anonymous.register(&keys).await.unwrap().token;
    Operator {
        keys,
        client: anonymous.with_token(token),
    }
}
