//! Two layers of the application around the routes: CORS for the
//! configured origins, and the rewriting of every error answer into the
//! contract's JSON body.

use super::*;

/// CORS for the configured origins: the headers a client sends and reads
/// (bearer auth, idempotency, request ids, rate limits, `Location`).
/// Requests from other origins are served without CORS headers (the
/// browser then keeps the answer from the page) rather than refused, so
/// that clients outside browsers are unaffected.
pub(super) fn cors_middleware(origins: &CorsOrigins) -> Cors {
    let mut cors = Cors::default()
        .allowed_methods(["GET", "POST", "PUT", "PATCH", "DELETE"])
        .allowed_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::HeaderName::from_static("idempotency-key"),
            // A fetch()-based event stream client resuming.
            header::HeaderName::from_static("last-event-id"),
            confab_http::request_id::HEADER,
        ])
        .expose_headers([
            header::LOCATION,
            header::RETRY_AFTER,
            header::HeaderName::from_static("ratelimit-limit"),
            header::HeaderName::from_static("ratelimit-remaining"),
            header::HeaderName::from_static("ratelimit-reset"),
            confab_http::request_id::HEADER,
            header::HeaderName::from_static("idempotent-replayed"),
        ])
        .max_age(3600)
        .block_on_origin_mismatch(false);
    match origins {
        CorsOrigins::Off => {}
        CorsOrigins::Any => cors = cors.allow_any_origin().send_wildcard(),
        CorsOrigins::Some(list) => {
            for origin in list {
                cors = cors.allowed_origin(origin);
            }
        }
    }
    cors
}

/// Rewrites an error response that did not come from [`ApiError`] (actix's
/// own errors, actix-cors refusals) into the contract's JSON shape, so no
/// response ever carries a plain-text error body. The headers set so far
/// (CORS, `Allow`, ...) are kept, but those describing the old body; a
/// server error's original text goes to the log line as its cause.
pub(super) fn json_error_body<B: MessageBody + 'static>(
    res: ServiceResponse<B>,
) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let is_json = res
        .response()
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|ct| ct == HeaderValue::from_static("application/json"));
    if is_json {
        return Ok(ErrorHandlerResponse::Response(res.map_into_left_body()));
    }
    let status = res.status();
    let (req, old) = res.into_parts();
    let mut error = ApiError::for_status(status);
    // A preflight actix-cors refused (an origin, method or header not
    // allowed): the request is forbidden, not malformed (docs/api.md "Requests and answers").
    let preflight = req.method() == actix_web::http::Method::OPTIONS
        && req.headers().contains_key(header::ORIGIN)
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if preflight && status == actix_web::http::StatusCode::BAD_REQUEST {
        error = ApiError::forbidden(
            "this cross-origin request is not allowed: its origin, method or headers \
             are not among those CONFAB_CORS_ORIGINS allows",
        );
    }
    if let (true, Some(e)) = (status.is_server_error(), old.error()) {
        error = error.with_cause(e);
    }
    let mut body = HttpResponse::from_error(error);
    for (name, value) in old.headers() {
        if !matches!(
            *name,
            header::CONTENT_TYPE | header::CONTENT_LENGTH | header::CONTENT_ENCODING
        ) {
            body.headers_mut().append(name.clone(), value.clone());
        }
    }
    let res: ServiceResponse<EitherBody<B, BoxBody>> =
        ServiceResponse::new(req, body).map_into_right_body();
    Ok(ErrorHandlerResponse::Response(res))
}
