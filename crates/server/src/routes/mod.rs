//! The routes: thin handlers that read the request, parse it into domain
//! values, call the service and answer with wire objects.

mod contacts;
mod conversations;
mod groups;
mod health;
mod messages;

use std::str::FromStr;

use actix_web::http::header::LOCATION;
use actix_web::middleware::from_fn;
use actix_web::{web, HttpResponse, Resource};
use serde::Serialize;

use crate::auth::require_token;
use crate::error::ApiError;

/// Registers every route. Everything under `/v1` is authenticated before
/// routing, so `/v1/<anything>` without a valid token is 401.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.configure(health::routes).service(
        web::scope("/v1")
            .wrap(from_fn(require_token))
            .configure(messages::routes)
            .configure(conversations::routes)
            .configure(groups::routes)
            .configure(contacts::routes)
            .default_service(web::to(route_not_found)),
    );
}

/// A path that answers 405 with `Allow: <allow>` to the methods it lacks.
fn resource(path: &str, allow: &'static str) -> Resource {
    web::resource(path).default_service(web::to(move || async move {
        Err::<HttpResponse, _>(ApiError::method_not_allowed(allow))
    }))
}

/// The answer to any path no route matches.
pub async fn route_not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::route_not_found())
}

/// An id in the path: malformed is the same 404 as unknown.
fn path_id<T: FromStr>(raw: &str) -> Result<T, ApiError> {
    raw.parse().map_err(|_| ApiError::not_found(None))
}

fn ok<T: Serialize>(body: &T) -> HttpResponse {
    HttpResponse::Ok().json(body)
}

fn created<T: Serialize>(location: String, body: &T) -> HttpResponse {
    HttpResponse::Created()
        .insert_header((LOCATION, location))
        .json(body)
}

fn no_content() -> HttpResponse {
    HttpResponse::NoContent().finish()
}
