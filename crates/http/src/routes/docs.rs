//! The API's own description, outside `/v1` and without a token: the
//! OpenAPI document, and a page rendering it (Swagger UI, its assets built
//! into the binary, so it works without internet access).

use std::sync::{Arc, OnceLock};

use actix_web::http::header::{self, ContentEncoding};
use actix_web::{web, HttpResponse};
use utoipa_swagger_ui::Config;

use super::{endpoint, Endpoint};
use crate::error::ApiError;

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
async fn openapi_json(document: web::Data<Document>) -> HttpResponse {
    HttpResponse::Ok().json(document.get())
}

/// The OpenAPI document this route serves, built the first time it is
/// asked for and kept: the routes cannot change while the process runs.
/// The document is built from the list of routes (this one among them), so
/// its builder is handed in by whoever assembles the application.
pub struct Document {
    build: fn() -> utoipa::openapi::OpenApi,
    built: OnceLock<utoipa::openapi::OpenApi>,
}

impl Document {
    pub fn new(build: fn() -> utoipa::openapi::OpenApi) -> Self {
        Self {
            build,
            built: OnceLock::new(),
        }
    }

    fn get(&self) -> &utoipa::openapi::OpenApi {
        self.built.get_or_init(self.build)
    }
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
        (status = 404, description = "no such file", body = crate::error::ErrorBody),
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
