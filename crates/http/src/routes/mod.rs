//! The routes: thin handlers that read the request, parse it into domain
//! values, call the service and answer with wire objects.
//!
//! Every route is one [`Endpoint`] of [`endpoints`]: a handler and its
//! `#[utoipa::path]` description. The path and method the server routes are
//! read from that description, and the OpenAPI document is built from the
//! same list, so the two cannot drift apart.

pub mod admin;
mod attachments;
mod contacts;
mod conversations;
pub mod docs;
mod events;
mod groups;
mod health;
mod messages;
mod reports;
pub mod webapp;

use std::str::FromStr;
use std::sync::OnceLock;

use actix_web::http::{Method, StatusCode};
use actix_web::middleware::from_fn;
use actix_web::{web, HttpResponse, Resource, Route};
use confab_domain::Paged;
use confab_service::StoredResponse;
use serde::Serialize;
use utoipa::openapi::path::{HttpMethod, Operation};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;

use crate::auth::require_token;
use crate::error::ApiError;

/// The prefix of the authenticated API.
pub const V1: &str = "/v1";

/// One method of one path: how actix answers it and how the OpenAPI
/// document describes it. Build it with [`endpoint!`].
pub struct Endpoint {
    /// The handler, not yet bound to a method.
    pub route: fn() -> Route,
    /// The full path, in OpenAPI syntax (`/v1/messages/{id}`).
    pub path: fn() -> String,
    pub methods: fn() -> Vec<HttpMethod>,
    pub operation: fn() -> Operation,
    /// The schemas the operation refers to.
    pub schemas: fn(&mut Vec<(String, RefOr<Schema>)>),
    pub tags: fn() -> Vec<&'static str>,
}

/// `endpoint!(handler, __path_handler)`: the handler and the description
/// `#[utoipa::path]` generated for it.
macro_rules! endpoint {
    ($handler:path, $doc:ty) => {
        $crate::routes::Endpoint {
            route: || ::actix_web::web::route().to($handler),
            path: <$doc as ::utoipa::Path>::path,
            methods: <$doc as ::utoipa::Path>::methods,
            operation: <$doc as ::utoipa::Path>::operation,
            schemas: <$doc as ::utoipa::__dev::SchemaReferences>::schemas,
            tags: <$doc as ::utoipa::__dev::Tags<'static>>::tags,
        }
    };
}
pub(crate) use endpoint;

/// Every route the server serves, in registration order (within a path, the
/// order of its `Allow` header).
pub fn endpoints() -> Vec<Endpoint> {
    [
        health::endpoints(),
        docs::endpoints(),
        messages::endpoints(),
        attachments::endpoints(),
        conversations::endpoints(),
        groups::endpoints(),
        contacts::endpoints(),
        events::endpoints(),
        reports::endpoints(),
        admin::endpoints(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// `(method, path)` of every route, in registration order.
pub fn served() -> Vec<(Method, &'static str)> {
    paths()
        .iter()
        .flat_map(|p| p.routes.iter().map(|(m, _)| (m.clone(), p.path.as_str())))
        .collect()
}

/// The endpoints of one path, with the methods they take.
struct PathRoutes {
    path: String,
    allow: String,
    routes: Vec<(Method, fn() -> Route)>,
}

/// [`endpoints`] grouped by path, in first-seen order; built once, so that
/// every worker shares the `Allow` strings.
fn paths() -> &'static [PathRoutes] {
    static PATHS: OnceLock<Vec<PathRoutes>> = OnceLock::new();
    PATHS.get_or_init(|| {
        let mut paths: Vec<PathRoutes> = Vec::new();
        for endpoint in endpoints() {
            let path = (endpoint.path)();
            let index = match paths.iter().position(|p| p.path == path) {
                Some(i) => i,
                None => {
                    paths.push(PathRoutes {
                        path,
                        allow: String::new(),
                        routes: Vec::new(),
                    });
                    paths.len() - 1
                }
            };
            let entry = &mut paths[index];
            for method in (endpoint.methods)() {
                let method = http_method(&method);
                if !entry.allow.is_empty() {
                    entry.allow.push_str(", ");
                }
                entry.allow.push_str(method.as_str());
                entry.routes.push((method, endpoint.route));
            }
        }
        paths
    })
}

/// The actix method of an OpenAPI one.
pub fn http_method(method: &HttpMethod) -> Method {
    match method {
        HttpMethod::Get => Method::GET,
        HttpMethod::Post => Method::POST,
        HttpMethod::Put => Method::PUT,
        HttpMethod::Delete => Method::DELETE,
        HttpMethod::Options => Method::OPTIONS,
        HttpMethod::Head => Method::HEAD,
        HttpMethod::Patch => Method::PATCH,
        HttpMethod::Trace => Method::TRACE,
    }
}

/// The actix resource of one path (relative to its scope): its methods, and
/// 405 with `Allow` for the others.
fn resource_of(relative: &str, path: &'static PathRoutes) -> Resource {
    let allow = path.allow.as_str();
    let resource = web::resource(relative).default_service(web::to(move || async move {
        Err::<HttpResponse, _>(ApiError::method_not_allowed(allow))
    }));
    path.routes
        .iter()
        .fold(resource, |resource, (method, route)| {
            resource.route(route().method(method.clone()))
        })
}

/// Whether `/metrics` is served on a listener of its own
/// (`CONFAB_METRICS_LISTEN`), so that the main one answers 404 there.
#[derive(Debug, Clone, Copy)]
pub struct MetricsElsewhere(pub bool);

/// Registers every route of [`endpoints`]. Everything under `/v1` is
/// authenticated before routing, so `/v1/<anything>` without a valid token
/// is 401.
pub fn configure(cfg: &mut web::ServiceConfig) {
    let mut v1 = web::scope(V1).wrap(from_fn(require_token));
    for path in paths() {
        match path.path.strip_prefix(V1) {
            Some(relative) => v1 = v1.service(resource_of(relative, path)),
            None => {
                cfg.service(resource_of(&path.path, path));
            }
        }
    }
    cfg.service(v1.default_service(web::to(route_not_found)));
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
    // `HttpResponse::json` serializes into a buffer of 128 bytes that
    // doubles as it fills, copying what it holds each time. One buffer of
    // [`crate::wire::BUFFER`] up front holds most answers whole.
    let mut buf = Vec::with_capacity(crate::wire::BUFFER);
    ok_json(serde_json::to_writer(&mut buf, body).map(|()| buf))
}

/// A 200 with this JSON (from [`ok`], or written by [`crate::wire`]).
fn ok_json(body: serde_json::Result<Vec<u8>>) -> HttpResponse {
    match body {
        Ok(buf) => HttpResponse::Ok()
            .content_type(actix_web::http::header::ContentType::json())
            .body(buf),
        // As `HttpResponse::json` does; a wire object is plain data, so
        // this is not expected.
        Err(e) => HttpResponse::from_error(actix_web::error::JsonPayloadError::Serialize(e)),
    }
}

/// A 200 with one page of a list, each item written by `write`: the one
/// shape of every list answer (`{"has_more": ..., "data": [...]}`).
fn page_json<T>(
    page: &Paged<T>,
    write: impl FnMut(&mut Vec<u8>, &T) -> serde_json::Result<()>,
) -> HttpResponse {
    ok_json(crate::wire::list(page.has_more, &page.items, write))
}

/// A 200 with this JSON, already written.
fn ok_text(json: String) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(actix_web::http::header::ContentType::json())
        .body(json)
}

/// A 201 with `Location`, as an answer an idempotency key can keep (see
/// [`crate::idempotency::post`], which sends it).
fn created<T: Serialize>(location: String, body: &T) -> StoredResponse {
    created_json(location, serde_json::to_vec(body))
}

/// [`created`] with this JSON (written by [`crate::wire`]).
fn created_json(location: String, body: serde_json::Result<Vec<u8>>) -> StoredResponse {
    // A wire object is plain data: writing it cannot fail.
    created_text(location, crate::wire::text(body).unwrap_or_default())
}

/// [`created`] with this JSON, already written.
fn created_text(location: String, json: String) -> StoredResponse {
    StoredResponse {
        code: StatusCode::CREATED.as_u16(),
        location: Some(location),
        body: json,
    }
}

/// The answer of a POST that may find its work done: 201 with `Location`
/// when it made the object, else 200 with the object there already (a
/// second block, an open report of the same target).
fn made_json(location: String, body: serde_json::Result<Vec<u8>>, created: bool) -> StoredResponse {
    let mut answer = created_json(location, body);
    if !created {
        answer.code = StatusCode::OK.as_u16();
    }
    answer
}

fn no_content() -> HttpResponse {
    HttpResponse::NoContent().finish()
}
