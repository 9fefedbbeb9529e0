//! What answers when no route matched: 404 "no such route" for a path the
//! API does not serve (distinct from "no such record", which a real route
//! says), and the error body of the 405 actix gives a path served with
//! other methods.
//!
//! Every path is one `web::resource` with all its methods (see `routes` in
//! the crate root), so actix itself finds the path and sets `Allow`; no
//! route table is searched here.

use actix_web::body::BoxBody;
use actix_web::dev::ServiceResponse;
use actix_web::http::header;
use actix_web::middleware::ErrorHandlerResponse;
use actix_web::{HttpRequest, HttpResponse, ResponseError};

use crate::error::{ApiError, ErrorCode};

/// The default service: no resource has this path.
pub async fn no_route() -> Result<HttpResponse, ApiError> {
    Err(ApiError::new(ErrorCode::NotFound, "no such route"))
}

/// 405 for a path whose own service takes GET only and lets other methods
/// fall through (the Swagger UI's files).
pub async fn get_only() -> HttpResponse {
    HttpResponse::MethodNotAllowed()
        .insert_header((header::ALLOW, "GET"))
        .finish()
}

/// Gives actix's empty 405 the error body every error has
/// (`method_not_allowed`, naming the allowed methods), and lists `Allow`
/// in alphabetical order, whatever the order the routes were registered in.
pub fn explain_405<B>(response: ServiceResponse<B>) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let (req, response) = response.into_parts();
    let mut allowed: Vec<String> = response
        .headers()
        .get_all(header::ALLOW)
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|method| method.trim().to_owned())
        .filter(|method| !method.is_empty())
        .collect();
    allowed.sort();
    allowed.dedup();
    let explained = method_not_allowed(&req, &allowed.join(", "));
    Ok(ErrorHandlerResponse::Response(
        ServiceResponse::new(req, explained).map_into_right_body::<B>(),
    ))
}

fn method_not_allowed(req: &HttpRequest, allow: &str) -> HttpResponse<BoxBody> {
    let mut response = ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!("{} is not served here; allowed: {allow}", req.method()),
    )
    .error_response();
    if let Ok(value) = header::HeaderValue::from_str(allow) {
        response.headers_mut().insert(header::ALLOW, value);
    }
    response
}
