//! What answers when no route matched: 405 with `Allow` for a path the API
//! serves with other methods, 404 "no such route" for a path it does not
//! serve at all (distinct from "no such record", which a real route says).
//!
//! The path table is read from the OpenAPI document, so the two cannot
//! drift; the few pages outside the document are listed here.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};

use crate::error::{ApiError, ErrorCode};

/// Served, but not API operations (HTML pages, the document itself).
const PAGES: &[(&str, &[&str])] = &[
    ("/", &["GET"]),
    ("/docs", &["GET"]),
    ("/docs/{file}", &["GET"]),
    ("/openapi.json", &["GET"]),
    ("/billing/sandbox/{id}", &["GET", "POST"]),
    ("/billing/return", &["GET"]),
];

struct Route {
    segments: Vec<String>,
    methods: BTreeSet<String>,
}

impl Route {
    fn matches(&self, path: &[&str]) -> bool {
        self.segments.len() == path.len()
            && self.segments.iter().zip(path).all(|(template, given)| {
                (template.starts_with('{') && !given.is_empty()) || template == given
            })
    }
}

impl Route {
    fn templates(&self) -> usize {
        self.segments
            .iter()
            .filter(|segment| segment.starts_with('{'))
            .count()
    }
}

fn segments(path: &str) -> Vec<&str> {
    path.trim_end_matches('/').split('/').skip(1).collect()
}

static ROUTES: LazyLock<Vec<Route>> = LazyLock::new(|| {
    let document: serde_json::Value =
        serde_json::from_str(&crate::openapi_json()).unwrap_or_default();
    let documented =
        document["paths"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(path, operations)| {
                let methods = operations
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(method, _)| method.to_ascii_uppercase())
                    .collect();
                (path.clone(), methods)
            });
    let pages = PAGES.iter().map(|(path, methods)| {
        let methods = methods.iter().map(|method| (*method).to_owned()).collect();
        ((*path).to_owned(), methods)
    });
    documented
        .chain(pages)
        .map(|(path, methods): (String, BTreeSet<String>)| Route {
            segments: segments(&path).into_iter().map(str::to_owned).collect(),
            methods,
        })
        .collect()
});

/// The methods the API serves at `path`, or none when it serves nothing
/// there. A literal segment beats a template: `/inboxes/allocation` is that
/// route's path, not an address id for `/inboxes/{id}`.
fn allowed_methods(path: &str) -> BTreeSet<&'static str> {
    let path = segments(path);
    let matching: Vec<&Route> = ROUTES.iter().filter(|route| route.matches(&path)).collect();
    let fewest = matching.iter().map(|route| route.templates()).min();
    matching
        .into_iter()
        .filter(|route| Some(route.templates()) == fewest)
        .flat_map(|route| route.methods.iter().map(String::as_str))
        .collect()
}

/// 405 with `Allow` for a method the path does not serve.
fn method_not_allowed(req: &HttpRequest, allowed: BTreeSet<&str>) -> HttpResponse {
    let allow = allowed.into_iter().collect::<Vec<_>>().join(", ");
    let mut response = actix_web::ResponseError::error_response(&ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!("{} is not served here; allowed: {allow}", req.method()),
    ));
    if let Ok(value) = header::HeaderValue::from_str(&allow) {
        response.headers_mut().insert(header::ALLOW, value);
    }
    response
}

/// A request that a template route would take although a literal route
/// names its path with other methods (`PATCH /inboxes/allocation` is not
/// `PATCH /inboxes/{id}`): its 405, before routing.
pub fn shadowed(req: &HttpRequest) -> Option<HttpResponse> {
    let allowed = allowed_methods(req.path());
    if allowed.is_empty() || allowed.contains(req.method().as_str()) {
        return None;
    }
    Some(method_not_allowed(req, allowed))
}

/// The default service.
pub async fn no_route(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let allowed = allowed_methods(req.path());
    if allowed.is_empty() {
        return Err(ApiError::new(ErrorCode::NotFound, "no such route"));
    }
    Ok(method_not_allowed(&req, allowed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_one_segment_each() {
        assert_eq!(
            allowed_methods("/inboxes/ibx_abcd"),
            BTreeSet::from(["DELETE", "PATCH"])
        );
        assert!(allowed_methods("/inboxes").contains("GET"));
        assert!(allowed_methods("/inboxes/").contains("POST"));
        assert!(allowed_methods("/inboxes/ibx_abcd/nothing").is_empty());
        assert!(allowed_methods("/nothing").is_empty());
        assert_eq!(allowed_methods("/"), BTreeSet::from(["GET"]));
        assert_eq!(
            allowed_methods("/inboxes/allocation"),
            BTreeSet::from(["GET"]),
            "a literal route is not the template's id"
        );
        assert_eq!(
            allowed_methods("/messages/folders"),
            BTreeSet::from(["GET"])
        );
    }
}
