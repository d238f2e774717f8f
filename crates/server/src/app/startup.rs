//! Wiring: the store behind the service, and the HTTP server around it. The
//! only module that names a store.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use crate::app::config::Synchronous;
use actix_cors::Cors;
use actix_web::body::{BoxBody, EitherBody, MessageBody};
use actix_web::dev::{Server, ServerHandle, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::{from_fn, Compress, Condition, ErrorHandlerResponse, ErrorHandlers};
use actix_web::{web, App, HttpResponse, HttpServer};
use anyhow::Context;
use confab_service::{Confab, Ports};
use confab_store_postgres::{PgStore, PgWakeups};
use confab_store_sqlite::{LocalTyping, LocalWakeups, SqliteStore};

pub use crate::app::config::{CorsOrigins, Database, DatabaseConfig, Pooler};
use crate::app::connections::Gate;
pub use crate::app::connections::{ConnectionLimits, HEAD_DEADLINE, PRESSURE_GRACE};
use crate::app::opening;
pub use crate::app::opening::{Opening, Schema};
use crate::app::telemetry;
pub use confab_delivery::events::HubOptions;
use confab_delivery::events::{Hub, StreamSlots};
pub use confab_http::client_addr::TrustedProxies;
use confab_http::error::ApiError;
use confab_http::links::LinkConfig;
use confab_http::payloads::WirePayloads;
use confab_http::ratelimit::Limiter;
pub use confab_http::ratelimit::{Quota, RateLimits};
use confab_http::routes;
use confab_metrics::Metrics;

mod middleware;
use middleware::{cors_middleware, json_error_body};

/// Connects to the store, applies pending migrations, returns the service.
/// Blocking: call it outside async code (or in `spawn_blocking`).
pub fn open_service(db: &Database) -> anyhow::Result<Confab> {
    open_service_waiting(
        &DatabaseConfig::direct(db.clone()),
        Duration::ZERO,
        None,
        Synchronous::default(),
    )
}

/// As [`open_service`], but while PostgreSQL cannot be reached, tries again
/// every [`RETRY_EVERY`] for up to `wait` (logging each failed try), so that
/// a server started before its database comes up once it does; with
/// `pool_size` connections to the database (`CONFAB_DB_POOL_SIZE`), or the
/// store's default, and on SQLite commits that wait for the disk or not
/// (`synchronous`, `CONFAB_SQLITE_SYNCHRONOUS`). Blocking.
pub fn open_service_waiting(
    db: &DatabaseConfig,
    wait: Duration,
    pool_size: Option<u32>,
    synchronous: Synchronous,
) -> anyhow::Result<Confab> {
    Ok(open_service_migrated(db, wait, pool_size, synchronous)?.0)
}

/// [`open_service_waiting`], with the versions of the migrations it
/// applied (what `confab migrate` prints).
pub fn open_service_migrated(
    db: &DatabaseConfig,
    wait: Duration,
    pool_size: Option<u32>,
    synchronous: Synchronous,
) -> anyhow::Result<(Confab, Vec<String>)> {
    let opening = Opening {
        pool_size,
        synchronous,
        ..Opening::migrating(wait)
    };
    open_service_as(db, &opening)
}

/// Opens the store as `opening` says: connected (waiting for PostgreSQL
/// for `opening.wait`), then migrated, or refused while a migration is
/// pending ([`Schema::Current`], `opening`); returns the service and the
/// versions of the migrations applied. Blocking.
pub fn open_service_as(
    db: &DatabaseConfig,
    opening: &Opening,
) -> anyhow::Result<(Confab, Vec<String>)> {
    let named = |url: &str| match &opening.application_name {
        Some(name) => opening::with_application_name(url, name),
        None => url.to_owned(),
    };
    let migrating = opening.schema == Schema::Migrate;
    let (wait, pool_size) = (opening.wait, opening.pool_size);
    let applied;
    let service = match &db.database {
        Database::Postgres(url) => {
            let url = named(url);
            let listen_url = db.listen_url.as_deref().map(named);
            let pool_size = pool_size.unwrap_or_else(PgStore::default_pool_size);
            let pooled = db.pooler == Pooler::Transaction;
            let mut store = connect_postgres(&url, wait, pool_size, pooled)?;
            if let Some(n) = db.search_connections {
                store = store.with_search_connections(n);
            }
            applied = if migrating {
                match (&listen_url, pooled) {
                    // Behind a pooler, over the direct connection when
                    // there is one (as without a pooler).
                    (Some(direct), true) => connect_postgres(direct, wait, 1, false)
                        .context(
                            "cannot connect to PostgreSQL directly (CONFAB_LISTEN_DATABASE_URL)",
                        )?
                        .migrate(),
                    _ => store.migrate(),
                }
                .context("cannot apply the PostgreSQL migrations")?
            } else {
                let pending = store
                    .pending_migrations()
                    .context("cannot tell whether PostgreSQL's migrations are applied")?;
                if !pending.is_empty() {
                    return Err(opening::pending_refusal(&pending));
                }
                Vec::new()
            };
            // LISTEN on its own connection; it opens when the hub first
            // waits. The same object is told of this process's commits.
            let wakeups = Arc::new(match (&listen_url, pooled) {
                (Some(direct), _) => PgWakeups::new(direct)?,
                (None, false) => PgWakeups::new(&url)?,
                // `serve` says so (`cli`).
                (None, true) => PgWakeups::polling(),
            });
            let mut ports = Ports::from_store(
                store.clone(),
                Arc::new(WirePayloads::default()),
                wakeups.clone(),
            );
            // Typing news crosses processes on the same connection.
            ports.typing = wakeups.clone();
            ports.wakeups = wakeups;
            Confab::new(ports).with_request_budgets(store)
        }
        Database::Sqlite(path) => {
            if !migrating {
                opening::refuse_missing_sqlite_file(path)?;
            }
            let synchronous = match opening.synchronous {
                Synchronous::Full => confab_store_sqlite::Synchronous::Full,
                Synchronous::Normal => confab_store_sqlite::Synchronous::Normal,
            };
            let mut store =
                SqliteStore::open_with(path, pool_size, synchronous).with_context(|| {
                    format!("cannot open the SQLite database {path:?} (DATABASE_URL)")
                })?;
            if let Some(n) = db.search_connections {
                store = store.with_search_connections(n);
            }
            applied = if migrating {
                store
                    .migrate()
                    .with_context(|| format!("cannot apply the SQLite migrations to {path:?}"))?
            } else {
                let pending = store.pending_migrations().with_context(|| {
                    format!("cannot tell whether the SQLite migrations of {path:?} are applied")
                })?;
                if !pending.is_empty() {
                    return Err(opening::pending_refusal(&pending));
                }
                Vec::new()
            };
            let wakeups = Arc::new(LocalWakeups::sqlite());
            let mut ports = Ports::from_store(
                store.clone(),
                Arc::new(WirePayloads::default()),
                wakeups.clone(),
            );
            ports.wakeups = wakeups;
            // One process serves a SQLite file's streams.
            ports.typing = Arc::new(LocalTyping::new());
            Confab::new(ports).with_request_budgets(store)
        }
    };
    Ok((service, applied))
}

/// The pause between two tries of [`open_service_waiting`].
pub const RETRY_EVERY: Duration = Duration::from_secs(1);

fn connect_postgres(
    url: &str,
    wait: Duration,
    pool_size: u32,
    pooled: bool,
) -> anyhow::Result<PgStore> {
    let started = Instant::now();
    let mut attempt = 1u32;
    loop {
        let connected = if pooled {
            PgStore::connect_pooled(url, pool_size)
        } else {
            PgStore::connect_with(url, pool_size)
        };
        let error = match connected {
            Ok(store) => {
                if attempt > 1 {
                    tracing::info!(attempt, "PostgreSQL answers");
                }
                return Ok(store);
            }
            Err(e) => e,
        };
        let waited = started.elapsed();
        if waited + RETRY_EVERY >= wait {
            let error = error.context("cannot connect to PostgreSQL (DATABASE_URL)");
            return Err(if wait.is_zero() {
                error
            } else {
                error.context(format!(
                    "gave up after {} tries in {:.0?} (CONFAB_DB_WAIT_SECS={})",
                    attempt,
                    waited,
                    wait.as_secs()
                ))
            });
        }
        tracing::warn!(
            attempt,
            waited_secs = waited.as_secs(),
            wait_secs = wait.as_secs(),
            error = format!("{error:#}"),
            "PostgreSQL cannot be reached; trying again in {RETRY_EVERY:?}"
        );
        std::thread::sleep(RETRY_EVERY);
        attempt += 1;
    }
}

/// How the HTTP server behaves beyond its routes.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    pub rate_limits: RateLimits,
    pub cors: CorsOrigins,
    /// Webhooks may go to non-public addresses (`CONFAB_WEBHOOK_ALLOW_PRIVATE`).
    pub webhook_allow_private: bool,
    pub events: HubOptions,
    /// Open event streams per contact (`CONFAB_MAX_STREAMS_PER_CONTACT`);
    /// `None`: [`StreamSlots::DEFAULT_MAX`].
    pub max_streams_per_contact: Option<usize>,
    /// Proxies trusted to name the client (`CONFAB_TRUSTED_PROXIES`).
    pub trusted_proxies: TrustedProxies,
    /// Serve `/metrics` only here (`CONFAB_METRICS_LISTEN`; port 0 picks
    /// one, see [`Application::metrics_port`]).
    pub metrics_listen: Option<Vec<SocketAddr>>,
    /// Connections served at once (`CONFAB_MAX_CONNECTIONS`); `None`: from
    /// the open-file limit (see [`ConnectionLimits`]).
    pub max_connections: Option<usize>,
    /// Connections one address may hold open
    /// (`CONFAB_MAX_CONNECTIONS_PER_ADDRESS`); `None`: the default share.
    pub max_connections_per_address: Option<usize>,
    /// Of those, still sending a request head or body
    /// (`CONFAB_MAX_PENDING_PER_ADDRESS`); `None`: the default share.
    pub max_pending_per_address: Option<usize>,
    /// The base of the links to uploaded files (`CONFAB_PUBLIC_URL`);
    /// `None`: each request's own scheme and host.
    pub public_url: Option<String>,
    /// Serve the web client at `/app/` (`CONFAB_WEB_APP`).
    pub web_app: bool,
}

/// The HTTP server, bound and ready to run.
pub struct Application {
    port: u16,
    server: Server,
    hub: Hub,
    /// The private `/metrics` listener, already running.
    metrics: Option<(u16, ServerHandle)>,
    connections: ConnectionLimits,
}

impl Application {
    /// Builds the server on `listener` (bind port 0 for a random port),
    /// with the default options.
    pub async fn build(service: Confab, listener: TcpListener) -> anyhow::Result<Application> {
        Self::build_with_options(service, listener, ServerOptions::default()).await
    }

    /// Builds the server with these rate limits.
    pub async fn build_with(
        service: Confab,
        listener: TcpListener,
        limits: RateLimits,
    ) -> anyhow::Result<Application> {
        let options = ServerOptions {
            rate_limits: limits,
            ..ServerOptions::default()
        };
        Self::build_with_options(service, listener, options).await
    }

    /// Builds the server with these options.
    pub async fn build_with_options(
        service: Confab,
        listener: TcpListener,
        options: ServerOptions,
    ) -> anyhow::Result<Application> {
        let port = listener
            .local_addr()
            .context("the listener has no local address")?
            .port();
        let connections = ConnectionLimits::for_this_process(options.max_connections)?
            .with_shares(
                options.max_connections_per_address,
                options.max_pending_per_address,
            )?;
        let gate = Gate::new(connections, options.trusted_proxies.clone());
        Gate::spawn_watch(&gate);
        // One limiter and one set of metrics for all workers: a budget and a
        // count are per server, not per thread.
        let limiter = web::Data::new(Limiter::new(options.rate_limits));
        let metrics = Metrics::new();
        Metrics::spawn_upkeep(&metrics);
        {
            let gate = Arc::downgrade(&gate);
            metrics.watch_connections(Box::new(move || {
                gate.upgrade().map_or((0, 0), |g| g.counts())
            }));
        }
        confab_delivery::webhooks::spawn_delivery(
            service.clone(),
            options.webhook_allow_private,
            metrics.clone(),
        );
        crate::app::retention::spawn_pruning(service.clone());
        crate::app::retention::spawn_file_sweeper(service.clone());
        crate::app::jobs::spawn_job_runner(service.clone());
        // The key that signs file links, shared by every instance on the
        // database (made by the first).
        let link_key = service
            .file_link_key()
            .await
            .context("cannot read the file link key from the database")?;
        let links = web::Data::new(LinkConfig::new(
            link_key.into_bytes(),
            options.public_url.as_deref(),
        ));
        let service = web::Data::new(service);
        // One hub per server: one reader of the events table for all its
        // streams.
        let hub = Hub::start((**service).clone(), options.events, metrics.clone());
        let hub_data = web::Data::new(hub.clone());
        let metrics = web::Data::from(metrics);
        let slots = web::Data::new(StreamSlots::new(
            options
                .max_streams_per_contact
                .unwrap_or(StreamSlots::DEFAULT_MAX),
        ));
        let proxies = web::Data::new(options.trusted_proxies.clone());
        let webhook_policy = web::Data::new(routes::admin::WebhookPolicy::new(
            options.webhook_allow_private,
        ));
        let document = web::Data::new(routes::docs::Document::new(confab_http::openapi::document));
        let metrics_server = match &options.metrics_listen {
            Some(addrs) => Some(metrics_server(addrs, &metrics, &service)?),
            None => None,
        };
        let metrics_private = metrics_server.is_some();
        let cors = options.cors;
        let web_app =
            (options.web_app).then(|| routes::webapp::WebApp::new(options.public_url.as_deref()));
        let server = HttpServer::new(move || {
            // Middleware order, outermost first (the last `wrap` is the
            // outermost):
            // 1. `observe`: the request id, metrics and the one log line. It
            //    sees every answer, including those of the layers below
            //    (CORS preflights, rewritten errors, 401 and 429 from
            //    authentication), times all of them, and stamps
            //    `X-Request-Id` on each.
            // 2. The connection gate (`connections`): outside everything
            //    but `observe` (which counts its refusals), so that a
            //    request on a connection past the budget or its address's
            //    share costs nothing else; it sees each answer's end.
            // 3. `Compress`: outside the error rewriting, so that a rewritten
            //    body is never mislabelled by an encoding set inside.
            // 4. Security headers: on every response of the layers below.
            // 5. Error rewriting to the JSON body: outside CORS, so that a
            //    refused preflight (plain text from actix-cors) is JSON too;
            //    it keeps the headers CORS set.
            // 6. CORS: at the application, outside the `/v1` scope where
            //    authentication and rate limits run, so a preflight is
            //    answered before any token is asked for, and CORS headers
            //    reach 401 and 429 answers (a browser can read them).
            // 7. The unread-body keeper: moves the reader of a body that a
            //    refusal left unread (authentication's 401, an extractor's
            //    408/413/415) into the answer, so that actix closes the
            //    connection instead of draining the body (`unread_body`).
            // 8. The database budget: innermost, around the routes and
            //    authentication, it gives the request a service whose store
            //    calls draw on one budget (`http::service`).
            App::new()
                .app_data(service.clone())
                .app_data(limiter.clone())
                .app_data(metrics.clone())
                .app_data(hub_data.clone())
                .app_data(slots.clone())
                .app_data(proxies.clone())
                .app_data(webhook_policy.clone())
                .app_data(links.clone())
                .app_data(document.clone())
                .app_data(web::Data::new(routes::MetricsElsewhere(metrics_private)))
                .configure(routes::configure)
                .configure(|cfg| routes::webapp::configure(cfg, web_app.as_ref()))
                .default_service(web::to(routes::route_not_found))
                .wrap(from_fn(confab_http::service::with_db_budget))
                .wrap(from_fn(confab_http::unread_body::keep_with_answer))
                .wrap(Condition::new(
                    cors != CorsOrigins::Off,
                    cors_middleware(&cors),
                ))
                .wrap(ErrorHandlers::new().default_handler(json_error_body))
                .wrap(confab_http::headers::security_headers())
                .wrap(Compress::default())
                .wrap(from_fn(crate::app::connections::keep_shares))
                .wrap(from_fn(telemetry::observe))
        })
        .on_connect(move |conn, ext| crate::app::connections::on_connect(&gate, conn, ext))
        .max_connections(connections.per_worker())
        .client_disconnect_timeout(confab_http::unread_body::LINGER)
        .listen(listener)
        .context("cannot listen")?
        .run();
        let metrics = metrics_server.map(|(port, server)| {
            let handle = server.handle();
            tokio::spawn(server);
            (port, handle)
        });
        Ok(Application {
            port,
            server,
            hub,
            metrics,
            connections,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port of the private `/metrics` listener, when there is one.
    pub fn metrics_port(&self) -> Option<u16> {
        self.metrics.as_ref().map(|(port, _)| *port)
    }

    /// The connection budget this server runs with.
    pub fn connection_limits(&self) -> ConnectionLimits {
        self.connections
    }

    /// The server's event hub.
    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    /// Serves until SIGINT / SIGTERM, then shuts down gracefully (in-flight
    /// requests finish). Event streams never finish by themselves, so the
    /// same signals end them (each with a comment saying why), and the
    /// shutdown does not wait for its timeout on them.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let hub = self.hub.clone();
        let on_signal = tokio::spawn(async move {
            shutdown_requested().await;
            tracing::info!("shutting down: ending the event streams");
            hub.close();
        });
        let result = self.server.await;
        on_signal.abort();
        self.hub.close();
        if let Some((_, metrics)) = self.metrics {
            metrics.stop(true).await;
        }
        result
    }
}

/// The private `/metrics` listener: that route alone, no limits (the
/// network keeps it private), everything else a JSON 404.
fn metrics_server(
    addrs: &[SocketAddr],
    metrics: &web::Data<Metrics>,
    service: &web::Data<Confab>,
) -> anyhow::Result<(u16, Server)> {
    let listener = TcpListener::bind(addrs)
        .with_context(|| format!("cannot listen on {addrs:?} (CONFAB_METRICS_LISTEN)"))?;
    let port = listener
        .local_addr()
        .context("the metrics listener has no local address")?
        .port();
    let (metrics, service) = (metrics.clone(), service.clone());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(metrics.clone())
            .app_data(service.clone())
            .route("/metrics", web::get().to(confab_metrics::scrape_route))
            .default_service(web::to(routes::route_not_found))
    })
    .workers(1)
    .listen(listener)
    .context("cannot listen (CONFAB_METRICS_LISTEN)")?
    .run();
    Ok((port, server))
}

/// Resolves at SIGINT or SIGTERM (the signals actix stops on).
async fn shutdown_requested() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
