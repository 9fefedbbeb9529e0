//! The API's own TLS (`SEALPOST_TLS_CERT` / `SEALPOST_TLS_KEY`): with both
//! set it serves HTTPS only, with the certificate a client can verify.

use std::time::Duration;

use reqwest::StatusCode;
use sealpost_testkit::TestApp;
use sealpost_testkit::push::TestCa;

fn client(extra_root_pem: Option<&[u8]>) -> reqwest::Client {
    sealpost_outbound_http::client_builder(
        extra_root_pem,
        Duration::from_secs(10),
        Duration::from_secs(5),
    )
    .unwrap()
    .build()
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_certificate_and_key_the_api_serves_https_only() {
    let ca = TestCa::new();
    let dir = std::env::temp_dir().join(format!(
        "sealpost-api-tls-{}-{}",
        std::process::id(),
        sealpost_seal::random_token()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let files = sealpost_config::TlsFiles {
        cert: dir.join("api.crt"),
        key: dir.join("api.key"),
    };
    std::fs::write(&files.cert, &ca.cert_pem).unwrap();
    std::fs::write(&files.key, &ca.key_pem).unwrap();
    let app = TestApp::spawn_with(|config| config.tls = Some(files.clone())).await;
    let https = app.base_url.replacen("http://", "https://", 1);

    let trusting = client(Some(ca.ca_pem.as_bytes()));
    let reply = trusting.get(format!("{https}/plans")).send().await.unwrap();
    assert_eq!(reply.status(), StatusCode::OK);
    let body: serde_json::Value = reply.json().await.unwrap();
    assert!(
        body["plans"]
            .as_array()
            .is_some_and(|plans| !plans.is_empty())
    );

    // Not the CA's client: the certificate is not trusted.
    let error = client(None)
        .get(format!("{https}/plans"))
        .send()
        .await
        .unwrap_err();
    assert!(error.is_connect(), "{error:?}");
    // Plain HTTP on the same port gets no answer.
    let plain = client(None).get(app.url("/plans")).send().await;
    assert!(plain.is_err(), "{plain:?}");

    app.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
