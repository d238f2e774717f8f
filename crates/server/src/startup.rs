//! Wiring: the store behind the service, and the HTTP server around it. The
//! only module that names a store.

use std::net::TcpListener;

use actix_web::body::{BoxBody, EitherBody, MessageBody};
use actix_web::dev::{Server, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::{DefaultHeaders, ErrorHandlerResponse, ErrorHandlers};
use actix_web::{web, App, HttpServer, ResponseError};
use anyhow::Context;
use confab_service::{Confab, Ports};
use confab_store_postgres::PgStore;
use confab_store_sqlite::SqliteStore;
use tracing_actix_web::TracingLogger;

pub use crate::config::Database;
use crate::error::ApiError;
use crate::ratelimit::Limiter;
pub use crate::ratelimit::{Quota, RateLimits};
use crate::routes;
use crate::telemetry::RequestSpan;

/// Connects to the store, applies pending migrations, returns the service.
/// Blocking: call it outside async code (or in `spawn_blocking`).
pub fn open_service(db: &Database) -> anyhow::Result<Confab> {
    let ports = match db {
        Database::Postgres(url) => {
            let store =
                PgStore::connect(url).context("cannot connect to PostgreSQL (DATABASE_URL)")?;
            store
                .migrate()
                .context("cannot apply the PostgreSQL migrations")?;
            Ports::from_store(store)
        }
        Database::Sqlite(path) => {
            let store = SqliteStore::open(path).with_context(|| {
                format!("cannot open the SQLite database {path:?} (DATABASE_URL)")
            })?;
            store
                .migrate()
                .with_context(|| format!("cannot apply the SQLite migrations to {path:?}"))?;
            Ports::from_store(store)
        }
    };
    Ok(Confab::new(ports))
}

/// The HTTP server, bound and ready to run.
pub struct Application {
    port: u16,
    server: Server,
}

impl Application {
    /// Builds the server on `listener` (bind port 0 for a random port),
    /// with the default rate limits.
    pub async fn build(service: Confab, listener: TcpListener) -> anyhow::Result<Application> {
        Self::build_with(service, listener, RateLimits::default()).await
    }

    /// Builds the server with these rate limits.
    pub async fn build_with(
        service: Confab,
        listener: TcpListener,
        limits: RateLimits,
    ) -> anyhow::Result<Application> {
        let port = listener
            .local_addr()
            .context("the listener has no local address")?
            .port();
        let service = web::Data::new(service);
        // One limiter for all workers: a budget is per server, not per thread.
        let limiter = web::Data::new(Limiter::new(limits));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(service.clone())
                .app_data(limiter.clone())
                .configure(routes::configure)
                .default_service(web::to(routes::route_not_found))
                .wrap(ErrorHandlers::new().default_handler(json_error_body))
                .wrap(security_headers())
                .wrap(TracingLogger::<RequestSpan>::new())
        })
        .listen(listener)
        .context("cannot listen")?
        .run();
        Ok(Application { port, server })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Serves until SIGINT / SIGTERM, then shuts down gracefully (in-flight
    /// requests finish).
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}

/// Headers on every response confab's code produces (outside the error
/// rewriting, so errors carry them too): answers hold private data that no
/// shared cache may keep, and a browser must not guess a type other than
/// the one declared. A middleware's error travels past this as `Err`, so
/// authentication answers its refusals as responses (see `auth`).
fn security_headers() -> DefaultHeaders {
    DefaultHeaders::new()
        .add((header::CACHE_CONTROL, "no-store"))
        .add((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
}

/// Rewrites an error response that did not come from [`ApiError`] (actix's
/// own errors) into the contract's JSON shape, so no response ever carries
/// a plain-text error body.
fn json_error_body<B: MessageBody + 'static>(
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
    let (req, _) = res.into_parts();
    let body = ApiError::for_status(status).error_response();
    let res: ServiceResponse<EitherBody<B, BoxBody>> =
        ServiceResponse::new(req, body).map_into_right_body();
    Ok(ErrorHandlerResponse::Response(res))
}
