//! Probes outside `/v1`, no token needed.

use actix_web::{web, HttpResponse};
use confab_service::Confab;
use serde::Serialize;
use utoipa::ToSchema;

use super::{endpoint, Endpoint};
use crate::error::{ApiError, ErrorBody};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        endpoint!(healthz, __path_healthz),
        endpoint!(readyz, __path_readyz),
        endpoint!(metrics, __path_metrics),
    ]
}

/// `{"status": "ok"}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Status {
    #[schema(example = "ok")]
    status: &'static str,
}

impl Status {
    const OK: Status = Status { status: "ok" };
}

/// The process is alive.
#[utoipa::path(
    get, path = "/healthz", tag = "health", operation_id = "healthz",
    responses((status = 200, description = "alive", body = Status)),
)]
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(Status::OK)
}

/// The database answers: 200, else 503 `unavailable`.
#[utoipa::path(
    get, path = "/readyz", tag = "health", operation_id = "readyz",
    responses(
        (status = 200, description = "the database answers", body = Status),
        (status = 503, description = "the database does not answer", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn readyz(service: web::Data<Confab>) -> Result<HttpResponse, ApiError> {
    // Whatever the cause, a store that does not answer means "not ready".
    service
        .ready()
        .await
        .map_err(|e| ApiError::unavailable(&e))?;
    Ok(HttpResponse::Ok().json(Status::OK))
}

/// Prometheus text: requests by route template, method and status, latency
/// histograms by route, requests in flight, errors by code, and the database
/// pool (size, idle, waiting).
#[utoipa::path(
    get, path = "/metrics", tag = "health", operation_id = "metrics",
    responses((
        status = 200,
        description = "Prometheus text exposition format 0.0.4",
        content_type = "text/plain",
        body = String,
    )),
)]
async fn metrics(
    metrics: web::Data<crate::metrics::Metrics>,
    service: web::Data<Confab>,
) -> HttpResponse {
    crate::metrics::scrape(metrics, service).await
}
