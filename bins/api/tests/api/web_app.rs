//! The web client at `/app/`: the page, its hashed assets, client-side
//! routes, the security headers on every answer, revalidation, and no edge
//! limit. A server compiled without the client's build answers an
//! explanatory 404 instead; `SEALPOST_EXPECT_WEB_BUILD=1` makes a missing
//! build a failure.

use reqwest::header::HeaderMap;
use reqwest::{StatusCode, redirect};
use sealpost_testkit::TestApp;
use sha2::{Digest, Sha256};

use crate::support::Api;

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; worker-src 'self'; \
frame-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; \
object-src 'none'";

fn assert_page_headers(headers: &HeaderMap, what: &str) {
    let header = |name: &str| {
        headers
            .get(name)
            .unwrap_or_else(|| panic!("{what}: no {name}"))
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(header("content-security-policy"), CSP, "{what}");
    assert_eq!(header("x-content-type-options"), "nosniff", "{what}");
    assert_eq!(header("referrer-policy"), "no-referrer", "{what}");
    assert_eq!(
        header("cross-origin-opener-policy"),
        "same-origin",
        "{what}"
    );
}

fn expect_build() -> bool {
    std::env::var("SEALPOST_EXPECT_WEB_BUILD").is_ok_and(|value| value == "1")
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(redirect::Policy::none())
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_web_client_is_served_under_app_with_its_headers() {
    let api = Api::spawn().await;
    let http = no_redirects();
    let get = async |path: &str, etag: Option<&str>| {
        let mut request = http.get(api.app.url(path));
        if let Some(etag) = etag {
            request = request.header("if-none-match", etag);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await.unwrap().to_vec();
        (status, headers, body)
    };

    // `/app` is the way in, whatever was compiled in.
    let (status, headers, _) = get("/app", None).await;
    assert_eq!(status, StatusCode::PERMANENT_REDIRECT);
    assert_eq!(headers["location"], "/app/");
    assert_page_headers(&headers, "/app");

    let root = api.get("/", None).await;
    assert_eq!(root.body["app"], "/app/");
    let Some(build) = root.body["webBuild"].as_str() else {
        assert!(root.body["webBuild"].is_null(), "webBuild: {}", root.body);
        assert!(
            !expect_build(),
            "SEALPOST_EXPECT_WEB_BUILD=1 but the server was compiled without web/packages/web/dist \
             (run `npm ci && npm run build` in web/, then rebuild)"
        );
        for path in ["/app/", "/app/some/route", "/app/assets/index-0000.js"] {
            let (status, headers, body) = get(path, None).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
            assert_page_headers(&headers, path);
            let text = String::from_utf8(body).unwrap();
            assert!(
                text.contains("without the web client") && text.contains("npm run build"),
                "{path}: {text}"
            );
        }
        return;
    };

    // The page: revalidated, and its hash is the build's id.
    let (status, headers, page) = get("/app/", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_page_headers(&headers, "the page");
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(headers["cache-control"], "no-cache");
    let digest: String = Sha256::digest(&page)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    assert_eq!(build, &digest[..12], "webBuild is the page's SHA-256");
    let html = String::from_utf8(page.clone()).unwrap();

    let page_etag = headers["etag"].to_str().unwrap().to_owned();
    let (status, headers, body) = get("/app/", Some(&page_etag)).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());
    assert_page_headers(&headers, "the page, unchanged");
    assert_eq!(headers["etag"].to_str().unwrap(), page_etag);
    assert_eq!(headers["cache-control"], "no-cache");
    let (status, _, _) = get("/app/", Some("\"something-else\"")).await;
    assert_eq!(status, StatusCode::OK, "another tag gets the page");
    let head = http.head(api.app.url("/app/")).send().await.unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    assert_page_headers(head.headers(), "HEAD of the page");
    assert_eq!(head.headers()["etag"].to_str().unwrap(), page_etag);
    assert!(head.bytes().await.unwrap().is_empty());

    // A hashed asset the page names: cached for good.
    let script = html
        .split('"')
        .find(|part| part.starts_with("/app/assets/") && part.ends_with(".js"))
        .unwrap_or_else(|| panic!("no hashed script in the page: {html}"))
        .to_owned();
    let (status, headers, body) = get(&script, None).await;
    assert_eq!(status, StatusCode::OK, "{script}");
    assert_page_headers(&headers, &script);
    assert_eq!(
        headers["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .contains("javascript"),
        "{:?}",
        headers["content-type"]
    );
    assert!(!body.is_empty());
    let etag = headers["etag"].to_str().unwrap().to_owned();
    let (status, headers, _) = get(&script, Some(&etag)).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert_page_headers(&headers, "an unchanged asset");

    // A client-side route is the page.
    for route in ["/app/mail", "/app/addresses/ibx_abcd1234"] {
        let (status, headers, body) = get(route, None).await;
        assert_eq!(status, StatusCode::OK, "{route}");
        assert_page_headers(&headers, route);
        assert_eq!(headers["cache-control"], "no-cache", "{route}");
        assert_eq!(body, page, "{route}");
    }

    // A missing file is 404, with the same headers.
    for missing in [
        "/app/assets/index-00000000.js",
        "/app/assets/nothing",
        "/app/favicon.ico",
    ] {
        let (status, headers, body) = get(missing, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
        assert_page_headers(&headers, missing);
        assert_ne!(body, page, "{missing}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_web_client_does_not_count_against_the_edge_limit() {
    let app = TestApp::spawn_with(|config| config.edge_rate_per_minute = 3).await;
    let api = Api::with(app);
    let http = reqwest::Client::new();
    for round in 0..700 {
        let status = http
            .get(api.app.url("/app/"))
            .send()
            .await
            .unwrap()
            .status();
        assert!(
            status == StatusCode::OK || status == StatusCode::NOT_FOUND,
            "request {round}: {status}"
        );
    }
    // The limit itself is on.
    for _ in 0..3 {
        assert_eq!(
            api.get("/accounts/me", None).await.status,
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(
        api.get("/accounts/me", None).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
}
