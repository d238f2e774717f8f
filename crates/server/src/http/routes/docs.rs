//! The API's own description, outside `/v1` and without a token: the
//! OpenAPI document, and a page rendering it (Swagger UI, its assets built
//! into the binary, so it works without internet access).

use std::sync::{Arc, OnceLock};

use actix_web::http::header::{self, ContentEncoding};
use actix_web::{web, HttpResponse};
use utoipa_swagger_ui::Config;

use super::{endpoint, Endpoint};
use crate::http::error::ApiError;
use crate::http::openapi;

/// Where the document is served; the page loads it from there.
pub const OPENAPI_PATH: &str = "/openapi.json";
const PAGE: &str = "/docs/index.html";

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        endpoint!(openapi_json, __path_openapi_json),
        endpoint!(docs, __path_docs),
        endpoint!(docs_file, __path_docs_file),
    ]
}

/// The OpenAPI 3.1 document of this API.
#[utoipa::path(
    get, path = "/openapi.json", tag = "docs", operation_id = "openapi",
    responses((status = 200, description = "the OpenAPI document", content_type = "application/json",
        body = Object)),
)]
async fn openapi_json() -> HttpResponse {
    // Built once: the routes cannot change while the process runs.
    static DOCUMENT: OnceLock<utoipa::openapi::OpenApi> = OnceLock::new();
    HttpResponse::Ok().json(DOCUMENT.get_or_init(openapi::document))
}

/// The documentation page (a redirect to it).
#[utoipa::path(
    get, path = "/docs", tag = "docs", operation_id = "docs",
    responses((status = 307, description = "the page",
        headers(("Location" = String, description = "/docs/index.html")))),
)]
async fn docs() -> HttpResponse {
    HttpResponse::TemporaryRedirect()
        .insert_header((header::LOCATION, PAGE))
        .finish()
}

/// The files of the documentation page.
#[utoipa::path(
    get, path = "/docs/{file}", tag = "docs", operation_id = "docs_file",
    params(("file" = String, Path, description = "a file of the page, e.g. index.html")),
    responses(
        (status = 200, description = "the file", content_type = "*/*"),
        (status = 404, description = "no such file", body = crate::http::error::ErrorBody),
    ),
)]
async fn docs_file(file: web::Path<String>) -> Result<HttpResponse, ApiError> {
    static CONFIG: OnceLock<Arc<Config<'static>>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| Arc::new(Config::new([OPENAPI_PATH])));
    let found = utoipa_swagger_ui::serve(&file, config.clone())
        .map_err(|e| ApiError::internal(&e))?
        .ok_or_else(ApiError::route_not_found)?;
    let mut response = HttpResponse::Ok();
    if found.gzpipped {
        response.insert_header((header::CONTENT_ENCODING, ContentEncoding::Gzip));
    }
    Ok(response
        .content_type(found.content_type)
        .body(found.bytes.into_owned()))
}
