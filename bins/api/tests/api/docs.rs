//! The pages a person finds at the API's address: `/`, the interactive
//! documentation at `/docs/`, and the answers for paths and methods the API
//! does not serve.

use reqwest::{Method, StatusCode};

use crate::support::{Api, new_keys};

#[tokio::test(flavor = "multi_thread")]
async fn the_root_points_at_the_docs_the_document_health_and_the_web_client() {
    let api = Api::spawn().await;
    let root = api.get("/", None).await;
    assert_eq!(root.status, StatusCode::OK);
    assert_eq!(root.body["docs"], "/docs/");
    assert_eq!(root.body["openapi"], "/openapi.json");
    assert_eq!(root.body["health"], "/healthz");
    assert_eq!(root.body["app"], "/app/");
    // The web client's build id: 12 hex digits, or null without a build.
    let build = &root.body["webBuild"];
    assert!(
        build.is_null()
            || build.as_str().is_some_and(|id| id.len() == 12
                && id
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))),
        "webBuild: {build}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn docs_serve_swagger_ui_and_its_assets_for_the_served_document() {
    let api = Api::spawn().await;
    let http = reqwest::Client::new();
    // `/docs` redirects to `/docs/`; reqwest follows it.
    let page = http.get(api.app.url("/docs")).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.url().path(), "/docs/");
    let html = page.text().await.unwrap();
    assert!(
        html.contains("swagger-ui"),
        "not the Swagger UI page: {html}"
    );

    // Every asset the page loads is served by the API itself (offline).
    let assets: Vec<&str> = ["src=\"", "href=\""]
        .iter()
        .flat_map(|attribute| html.split(attribute).skip(1))
        .filter_map(|rest| rest.split('"').next())
        .filter(|asset| asset.starts_with("./"))
        .collect();
    assert!(
        assets.len() >= 3,
        "expected script and style assets: {assets:?}"
    );
    let mut initializer = String::new();
    for asset in assets {
        let answer = http
            .get(api.app.url(&format!("/docs/{}", &asset[2..])))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::OK, "{asset}");
        let body = answer.text().await.unwrap();
        assert!(!body.is_empty(), "{asset} is empty");
        if asset.contains("initializer") {
            initializer = body;
        }
    }
    assert!(
        initializer.contains("/openapi.json"),
        "the page must load the served document: {initializer}"
    );
    let document = api.get("/openapi.json", None).await;
    assert_eq!(document.status, StatusCode::OK);
    assert!(document.body["paths"]["/inboxes"].is_object());
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_routes_and_unserved_methods_say_which() {
    let api = Api::spawn().await;
    let nowhere = api.get("/no/such/thing", None).await;
    assert_eq!(
        (nowhere.status, nowhere.code()),
        (StatusCode::NOT_FOUND, "not_found")
    );
    assert_eq!(nowhere.body["error"]["message"], "no such route");

    let trace = api.send(Method::TRACE, "/inboxes", None, None).await;
    assert_eq!(
        (trace.status, trace.code()),
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed")
    );
    assert_eq!(trace.headers["allow"], "GET, POST");

    // A path with an id: the template matches any id.
    let put = api
        .send(Method::PUT, "/inboxes/ibx_abcd1234", None, None)
        .await;
    assert_eq!(put.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(put.headers["allow"], "DELETE, PATCH");

    // A literal path is not the id of the template beside it: `PATCH
    // /inboxes/{id}` exists, `PATCH /inboxes/allocation` does not.
    let patch = api
        .send(Method::PATCH, "/inboxes/allocation", None, None)
        .await;
    assert_eq!(
        (patch.status, patch.code()),
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed")
    );
    assert_eq!(patch.headers["allow"], "GET");
    let allocation = api.get("/inboxes/allocation", None).await;
    assert_eq!(
        allocation.status,
        StatusCode::UNAUTHORIZED,
        "GET still reaches it"
    );

    // The Swagger UI's files, served by GET only.
    let post = api.send(Method::POST, "/docs/index.html", None, None).await;
    assert_eq!(post.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(post.headers["allow"], "GET");

    // A route that exists answers for a record that does not in its own words.
    let (_, keys) = new_keys();
    let signed_in = api.register(&keys).await;
    let missing = api
        .delete("/inboxes/ibx_abcd1234", Some(&signed_in.token))
        .await;
    assert_eq!(
        (missing.status, missing.code()),
        (StatusCode::NOT_FOUND, "not_found")
    );
    assert_eq!(missing.body["error"]["message"], "no such record");
}

/// The routes and the document list the same methods for every path: a
/// method the document lists reaches a handler (whatever it answers
/// without a session, it is not 405 or "no such route"), and a method it
/// does not list is 405 with exactly the listed ones in `Allow`.
#[tokio::test(flavor = "multi_thread")]
async fn every_documented_path_serves_exactly_its_documented_methods() {
    let api = Api::spawn().await;
    let document = api.get("/openapi.json", None).await.body;
    let http = reqwest::Client::new();
    let mut checked = 0;
    for (template, item) in document["paths"].as_object().unwrap() {
        // Any value for a path parameter: routing does not look at it.
        let path = template
            .split('/')
            .map(|segment| {
                if segment.starts_with('{') {
                    "x1"
                } else {
                    segment
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        let mut documented: Vec<String> = item
            .as_object()
            .unwrap()
            .keys()
            .map(|method| method.to_ascii_uppercase())
            .collect();
        documented.sort();
        for method in &documented {
            let answer = http
                .request(method.parse().unwrap(), api.app.url(&path))
                .send()
                .await
                .unwrap();
            let status = answer.status();
            let text = answer.text().await.unwrap();
            assert_ne!(
                status,
                StatusCode::METHOD_NOT_ALLOWED,
                "{method} {template}"
            );
            assert!(
                !text.contains("no such route"),
                "{method} {template}: {text}"
            );
        }
        let refused = http
            .request(Method::TRACE, api.app.url(&path))
            .send()
            .await
            .unwrap();
        assert_eq!(
            refused.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "TRACE {template}"
        );
        assert_eq!(
            refused.headers()["allow"].to_str().unwrap(),
            documented.join(", "),
            "{template}"
        );
        checked += 1;
    }
    assert!(checked > 70, "only {checked} paths in the document");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_request_is_one_log_line_with_its_route_never_its_token() {
    let logs = crate::support::captured_logs();
    let api = Api::spawn().await;
    let (token, _) = api.open_pairing().await;
    let poll = api
        .get(&format!("/workers/pairing-session/{token}"), None)
        .await;
    assert_eq!(poll.status, StatusCode::OK);
    let missing = api.get("/no/such/thing", None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);

    // The log is the process's: other tests poll pairing sessions at the
    // same time, so the poll's line is found by its request id.
    let request_id = poll.headers["x-request-id"].to_str().unwrap().to_owned();
    let text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| line.contains(&format!("request_id={request_id}")))
        .filter(|line| line.contains(" request "))
        .collect();
    assert!(
        lines
            .iter()
            .all(|line| line.contains("/workers/pairing-session/{token}")),
        "{lines:?}"
    );
    assert_eq!(lines.len(), 1, "one line for the poll: {text}");
    assert!(lines[0].contains("GET") && lines[0].contains("status=200"));
    assert!(lines[0].contains("duration_ms="));
    assert!(
        text.lines()
            .any(|line| line.contains("(no route)") && line.contains("status=404")),
        "unmatched requests are logged too: {text}"
    );
    assert!(!text.contains(&token), "the pairing token reached the log");
}
