//! The web client at `/app/`: the files Vite builds into
//! `web/packages/web/dist`, embedded in the binary when it is compiled
//! (`build.rs` copies them into the build directory), so a release is one
//! binary and the code a person runs is the code that was reviewed.
//!
//! Every answer carries the page's security headers (`docs/web.md`):
//! a strict Content-Security-Policy (inline styles only, because mail's
//! HTML uses them), no sniffing, no referrer, an opener policy of its own.
//! Hashed assets are cached for good; the page itself is revalidated
//! (`ETag`, 304). None of this is an API operation: it is not in the
//! OpenAPI document.

use std::borrow::Cow;
use std::sync::LazyLock;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, web};
use rust_embed::{EmbeddedFile, RustEmbed};

#[derive(RustEmbed)]
#[folder = "$OUT_DIR/app"]
struct Build;

/// Where the client is served.
pub const PREFIX: &str = "/app/";

/// The page's Content-Security-Policy. `'unsafe-inline'` for styles only:
/// sanitised mail HTML keeps its inline styles inside the sandboxed frame.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self'; \
     connect-src 'self'; worker-src 'self'; frame-src 'self' blob:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'; object-src 'none'";

const PAGE: &str = "index.html";
/// Vite's directory of content-hashed files.
const HASHED: &str = "assets/";
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The build's id: the first 12 hex digits of the page's SHA-256 (the page
/// names every hashed asset, so it changes with any of them); `None` when
/// the server was compiled without a web build.
pub fn build_id() -> Option<&'static str> {
    static ID: LazyLock<Option<String>> =
        LazyLock::new(|| Build::get(PAGE).map(|page| hex(&page.metadata.sha256_hash()[..6])));
    ID.as_deref()
}

/// `/app` and everything under it: static files, exempt from the per-IP
/// edge limit (loading the page never spends a person's API allowance) and
/// logged at debug, like the health probes.
pub fn is_app_path(path: &str) -> bool {
    path == "/app" || path.starts_with(PREFIX)
}

pub fn routes(config: &mut web::ServiceConfig) {
    config
        .service(web::resource("/app").get(|| async {
            page_headers(&mut HttpResponse::PermanentRedirect())
                .insert_header((header::LOCATION, PREFIX))
                .finish()
        }))
        .service(
            web::resource("/app/{path:.*}")
                .get(asset)
                .route(web::head().to(asset)),
        );
}

/// One file of the build. A path whose last segment has no extension is a
/// client-side route and gets the page; a missing file is 404.
async fn asset(request: HttpRequest, path: web::Path<String>) -> HttpResponse {
    let Some(page) = Build::get(PAGE) else {
        return not_built();
    };
    let path = path.into_inner();
    let (name, file) = if path.is_empty() || path == PAGE {
        (PAGE, page)
    } else if let Some(file) = Build::get(&path) {
        (path.as_str(), file)
    } else if path.starts_with(HASHED)
        || path
            .rsplit('/')
            .next()
            .is_some_and(|last| last.contains('.'))
    {
        return page_headers(&mut HttpResponse::NotFound())
            .insert_header((header::CACHE_CONTROL, "no-cache"))
            .content_type("text/plain; charset=utf-8")
            .body("not found\n");
    } else {
        (PAGE, page)
    };
    serve(&request, name, file)
}

fn serve(request: &HttpRequest, name: &str, file: EmbeddedFile) -> HttpResponse {
    let etag = format!("\"{}\"", hex(&file.metadata.sha256_hash()[..16]));
    // Vite names the files under assets/ by their content.
    let cache = if name.starts_with(HASHED) {
        IMMUTABLE
    } else {
        "no-cache"
    };
    let unchanged = request
        .headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == "*" || tag == etag);
    let mut response = if unchanged {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    page_headers(&mut response)
        .insert_header((header::CACHE_CONTROL, cache))
        .insert_header((header::ETAG, etag));
    if unchanged {
        return response.finish();
    }
    response.content_type(content_type(file.metadata.mimetype()));
    match file.data {
        Cow::Borrowed(bytes) => response.body(bytes),
        Cow::Owned(bytes) => response.body(bytes),
    }
}

/// Text types say their charset (Vite writes UTF-8).
fn content_type(mime: &str) -> String {
    let textual = mime.starts_with("text/")
        || matches!(
            mime,
            "application/javascript" | "application/json" | "image/svg+xml"
        );
    if textual && !mime.contains("charset") {
        format!("{mime}; charset=utf-8")
    } else {
        mime.to_owned()
    }
}

/// The answer of a server compiled without the web build: how to get one.
fn not_built() -> HttpResponse {
    page_headers(&mut HttpResponse::NotFound())
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .content_type("text/plain; charset=utf-8")
        .body(
            "This server was compiled without the web client.\n\
             Build the client (in web/: npm ci && npm run build), then rebuild sealpost-api:\n\
             the files in web/packages/web/dist are embedded when it is compiled.\n",
        )
}

/// The headers of every answer under `/app/`.
fn page_headers(response: &mut HttpResponseBuilder) -> &mut HttpResponseBuilder {
    response
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header(("cross-origin-opener-policy", "same-origin"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_is_one_line_with_single_spaces() {
        assert!(!CONTENT_SECURITY_POLICY.contains("  "));
        assert!(CONTENT_SECURITY_POLICY.starts_with("default-src 'none'; script-src 'self'; "));
        assert!(CONTENT_SECURITY_POLICY.ends_with("frame-ancestors 'none'; object-src 'none'"));
    }

    #[test]
    fn text_types_name_their_charset() {
        assert_eq!(content_type("text/html"), "text/html; charset=utf-8");
        assert_eq!(
            content_type("application/javascript"),
            "application/javascript; charset=utf-8"
        );
        assert_eq!(content_type("image/png"), "image/png");
    }

    #[test]
    fn app_paths_are_the_prefix_and_below_only() {
        assert!(is_app_path("/app"));
        assert!(is_app_path("/app/"));
        assert!(is_app_path("/app/assets/index-abc.js"));
        assert!(!is_app_path("/apple"));
        assert!(!is_app_path("/application/x"));
    }
}
