//! The headers every response of confab's own code carries.

use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::middleware::DefaultHeaders;

/// Headers on every response confab's code produces (outside the error
/// rewriting, so errors carry them too): answers hold private data that no
/// shared cache may keep, and a browser must not guess a type other than
/// the one declared. A middleware's error travels past this as `Err`, so
/// authentication answers its refusals as responses (see `auth`), and
/// `telemetry::observe` adds them to an error that still leaves as `Err`.
pub fn security_headers() -> DefaultHeaders {
    DefaultHeaders::new()
        .add((header::CACHE_CONTROL, "no-store"))
        .add((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
}

/// The same headers, added to a response built outside the middleware.
pub fn add_security_headers(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}
