//! Probes outside `/v1`, no token needed.

use actix_web::{web, HttpResponse};
use confab_service::Confab;
use serde_json::json;

use super::resource;
use crate::error::ApiError;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/healthz", "GET").route(web::get().to(healthz)))
        .service(resource("/readyz", "GET").route(web::get().to(readyz)));
}

/// The process is alive.
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// The database answers: 200, else 503 `unavailable`.
#[tracing::instrument(level = "debug", skip_all)]
async fn readyz(service: web::Data<Confab>) -> Result<HttpResponse, ApiError> {
    // Whatever the cause, a store that does not answer means "not ready".
    service
        .ready()
        .await
        .map_err(|e| ApiError::unavailable(&e))?;
    Ok(HttpResponse::Ok().json(json!({"status": "ok"})))
}
