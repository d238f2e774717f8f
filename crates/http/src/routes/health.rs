//! Probes outside `/v1`, no token needed.

use crate::service::Service;
use actix_web::{web, HttpRequest, HttpResponse};
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
async fn readyz(service: Service) -> Result<HttpResponse, ApiError> {
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
    ), (
        status = 404,
        description = "`/metrics` is served on its own listener (`CONFAB_METRICS_LISTEN`)",
        body = ErrorBody,
    ), (
        status = 429,
        description = "the client address's allowance for requests without a token is spent",
        body = ErrorBody,
    )),
)]
async fn metrics(
    req: HttpRequest,
    metrics: web::Data<confab_metrics::Metrics>,
    service: Service,
    elsewhere: Option<web::Data<super::MetricsElsewhere>>,
) -> HttpResponse {
    if elsewhere.is_some_and(|e| e.0) {
        return HttpResponse::from_error(ApiError::route_not_found());
    }
    // Public and without a token: each scrape costs its address one unit
    // of the anonymous allowance, as a request without a token does.
    if let Some(refusal) = crate::auth::anonymous_refusal(&req) {
        return refusal;
    }
    confab_metrics::scrape(metrics, &service).await
}
