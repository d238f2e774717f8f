//! What a confab server process counts, for `GET /metrics`. It sits below
//! the HTTP API, delivery and the server, each of which counts something;
//! it depends on none of them (nor on a store adapter).
//!
//! `GET /metrics`: Prometheus text of the requests (by route template,
//! method and status), their latency, the requests in flight, the errors by
//! the contract's `code`, the store's connection pool, the event hub, and
//! webhook deliveries (attempts, give-ups, retries pending and the age of
//! the oldest event not yet delivered), the connections open and waiting
//! for a request head, and the uploaded files stored (bytes and files, all
//! contacts together) with the free space of a local storage's disk.
//!
//! Each server has its own recorder (not the process-wide one of the
//! `metrics` macros), so that servers in one process (the tests) count
//! apart.

use std::sync::{Arc, Weak};
use std::time::Duration;

use actix_web::http::header::CONTENT_TYPE;
use actix_web::http::Method;
use actix_web::{web, HttpResponse};
use confab_service::Confab;
use metrics::{
    Counter, Gauge, Histogram, Key, KeyName, Label, Level, Metadata, Recorder, SharedString, Unit,
};
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};

const REQUESTS: &str = "confab_http_requests_total";
const DURATION: &str = "confab_http_request_duration_seconds";
const IN_FLIGHT: &str = "confab_http_requests_in_flight";
const ERRORS: &str = "confab_http_errors_total";
const POOL_MAX: &str = "confab_db_pool_max_connections";
const POOL_CONNECTIONS: &str = "confab_db_pool_connections";
const POOL_IDLE: &str = "confab_db_pool_idle_connections";
const POOL_WAITING: &str = "confab_db_pool_waiting";
const STREAMS: &str = "confab_event_streams";
const EVENTS_READ: &str = "confab_events_read_total";
const EVENTS_QUEUED: &str = "confab_events_queued_total";
const EVENTS_SENT: &str = "confab_events_sent_total";
const STREAM_RESYNCS: &str = "confab_event_stream_resyncs_total";
const EVENT_LAG: &str = "confab_event_lag_seconds";
const TYPING: &str = "confab_typing_frames_total";
const WEBHOOK_ATTEMPTS: &str = "confab_webhook_attempts_total";
const WEBHOOK_GIVEN_UP: &str = "confab_webhook_deliveries_given_up_total";
const WEBHOOK_RETRYING: &str = "confab_webhook_retries_pending";
const WEBHOOK_OLDEST: &str = "confab_webhook_oldest_pending_seconds";
const CONNECTIONS: &str = "confab_connections_open";
const CONNECTIONS_WAITING: &str = "confab_connections_waiting";
const STORED_BYTES: &str = "confab_stored_file_bytes";
const STORED_FILES: &str = "confab_stored_files";
const STORAGE_FREE: &str = "confab_storage_free_bytes";

/// Latency buckets, in seconds: from a cached read to the 2 s store timeout
/// and beyond.
const BUCKETS: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

const META: Metadata<'static> = Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// Label for a request no route matched: never the raw path, which would
/// make one series per path a client invents.
pub const UNMATCHED: &str = "unmatched";

/// One server's metrics (app data).
pub struct Metrics {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    in_flight: Gauge,
    pool: [Gauge; 4],
    events: EventMetrics,
    /// `confab_webhook_retries_pending`, `confab_webhook_oldest_pending_seconds`.
    webhooks: [Gauge; 2],
    /// When the webhook backlog and the stored files were last read from
    /// the store: at most every [`BACKLOG_EVERY`], however often
    /// `/metrics` is asked.
    backlog_read: std::sync::Mutex<Option<std::time::Instant>>,
    /// `confab_connections_open`, `confab_connections_waiting`, and where
    /// they are read.
    connections: [Gauge; 2],
    connection_counts: std::sync::OnceLock<ConnectionCounts>,
    /// `confab_stored_file_bytes`, `confab_stored_files`,
    /// `confab_storage_free_bytes`.
    storage: [Gauge; 3],
}

/// Reads the connections open and those waiting for a head.
pub type ConnectionCounts = Box<dyn Fn() -> (usize, usize) + Send + Sync>;

/// How often a scrape reads the webhook backlog and the stored files'
/// figures from the store.
const BACKLOG_EVERY: Duration = Duration::from_secs(5);

/// The event hub's and streams' figures.
struct EventMetrics {
    streams: Gauge,
    read: Counter,
    queued: Counter,
    sent: Counter,
    resyncs: Counter,
    lag: Histogram,
}

impl Metrics {
    pub fn new() -> Arc<Metrics> {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(DURATION.to_owned()), &BUCKETS)
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full(EVENT_LAG.to_owned()), &BUCKETS))
            // The only way this fails is an empty bucket list.
            .unwrap_or_else(|_| PrometheusBuilder::new())
            .build_recorder();
        let describe = |name: &'static str, unit: Option<Unit>, help: &'static str| {
            let key = KeyName::from_const_str(name);
            let help = SharedString::const_str(help);
            match name {
                REQUESTS | ERRORS | EVENTS_READ | EVENTS_QUEUED | EVENTS_SENT | STREAM_RESYNCS
                | WEBHOOK_ATTEMPTS | WEBHOOK_GIVEN_UP | TYPING => {
                    recorder.describe_counter(key, unit, help)
                }
                DURATION | EVENT_LAG => recorder.describe_histogram(key, unit, help),
                _ => recorder.describe_gauge(key, unit, help),
            }
        };
        describe(
            REQUESTS,
            None,
            "HTTP requests answered, by route template, method and status.",
        );
        describe(
            DURATION,
            Some(Unit::Seconds),
            "Time to answer an HTTP request (to the response head), by route template and method.",
        );
        describe(IN_FLIGHT, None, "HTTP requests being answered now.");
        describe(ERRORS, None, "Error responses, by the error body's code.");
        describe(POOL_MAX, None, "Most connections the store's pool opens.");
        describe(
            POOL_CONNECTIONS,
            None,
            "Connections the store's pool holds open (idle and in use).",
        );
        describe(POOL_IDLE, None, "Open connections of the pool not in use.");
        describe(
            POOL_WAITING,
            None,
            "Requests waiting for (or taking) a pooled connection.",
        );
        describe(STREAMS, None, "Open GET /v1/events streams.");
        describe(
            TYPING,
            None,
            "Typing frames the hub handed its streams (queued), or dropped on a full queue.",
        );
        describe(
            EVENTS_READ,
            None,
            "Events the hub read from the events table for its streams.",
        );
        describe(
            EVENTS_QUEUED,
            None,
            "Events the hub handed to open streams (one per stream).",
        );
        describe(
            EVENTS_SENT,
            None,
            "Events written to streams, live or replayed.",
        );
        describe(
            STREAM_RESYNCS,
            None,
            "Times a slow stream fell behind the hub and caught up from the table.",
        );
        describe(
            EVENT_LAG,
            Some(Unit::Seconds),
            "Time from an event's creation to the hub reading it.",
        );
        describe(
            WEBHOOK_ATTEMPTS,
            None,
            "Webhook delivery attempts this process made, by result (succeeded: a 2xx in time; \
             failed: anything else, retried with backoff).",
        );
        describe(
            WEBHOOK_GIVEN_UP,
            None,
            "Webhook deliveries given up: no success within 24 h of the first attempt.",
        );
        describe(
            WEBHOOK_RETRYING,
            None,
            "Webhook deliveries whose last attempt failed, waiting for a retry (all processes).",
        );
        describe(
            CONNECTIONS,
            None,
            "Connections open now (past the budget included).",
        );
        describe(
            CONNECTIONS_WAITING,
            None,
            "Open connections waiting for a request head (idle kept-alive ones included).",
        );
        describe(
            STORED_BYTES,
            None,
            "Bytes of uploaded files stored, attached or not, all contacts together.",
        );
        describe(
            STORED_FILES,
            None,
            "Uploaded files stored, attached or not.",
        );
        describe(
            STORAGE_FREE,
            None,
            "Free bytes on the disk of a local files' folder (absent for S3 storage).",
        );
        describe(
            WEBHOOK_OLDEST,
            Some(Unit::Seconds),
            "Age of the oldest event not yet delivered to some webhook (first attempt or retry \
             pending); 0 when none waits.",
        );
        let gauge =
            |name: &'static str| recorder.register_gauge(&Key::from_static_name(name), &META);
        let counter =
            |name: &'static str| recorder.register_counter(&Key::from_static_name(name), &META);
        let events = EventMetrics {
            streams: gauge(STREAMS),
            read: counter(EVENTS_READ),
            queued: counter(EVENTS_QUEUED),
            sent: counter(EVENTS_SENT),
            resyncs: counter(STREAM_RESYNCS),
            lag: recorder.register_histogram(&Key::from_static_name(EVENT_LAG), &META),
        };
        let in_flight = gauge(IN_FLIGHT);
        let pool = [
            gauge(POOL_MAX),
            gauge(POOL_CONNECTIONS),
            gauge(POOL_IDLE),
            gauge(POOL_WAITING),
        ];
        let webhooks = [gauge(WEBHOOK_RETRYING), gauge(WEBHOOK_OLDEST)];
        let connections = [gauge(CONNECTIONS), gauge(CONNECTIONS_WAITING)];
        let storage = [
            gauge(STORED_BYTES),
            gauge(STORED_FILES),
            gauge(STORAGE_FREE),
        ];
        let handle = recorder.handle();
        Arc::new(Metrics {
            recorder,
            handle,
            in_flight,
            pool,
            events,
            webhooks,
            backlog_read: std::sync::Mutex::new(None),
            connections,
            connection_counts: std::sync::OnceLock::new(),
            storage,
        })
    }

    /// Where scrapes read the connection figures (the server's gate).
    pub fn watch_connections(&self, counts: ConnectionCounts) {
        let _ = self.connection_counts.set(counts);
    }

    /// Counts an open stream until the guard drops.
    /// One webhook attempt made by this process.
    pub fn webhook_attempt(&self, succeeded: bool) {
        let result = if succeeded { "succeeded" } else { "failed" };
        self.counter(WEBHOOK_ATTEMPTS, vec![Label::new("result", result)])
            .increment(1);
    }

    /// A webhook delivery given up after 24 h.
    pub fn webhook_given_up(&self) {
        self.counter(WEBHOOK_GIVEN_UP, Vec::new()).increment(1);
    }

    pub fn stream_opened(&self) -> InFlight {
        self.events.streams.increment(1.0);
        InFlight(self.events.streams.clone())
    }

    /// The hub read one event, `lag_micros` after it was created.
    pub fn event_read(&self, lag_micros: i64) {
        self.events.read.increment(1);
        #[allow(clippy::cast_precision_loss)]
        self.events.lag.record(lag_micros.max(0) as f64 / 1e6);
    }

    pub fn events_queued(&self, n: u64) {
        self.events.queued.increment(n);
    }

    pub fn events_sent(&self, n: usize) {
        self.events
            .sent
            .increment(u64::try_from(n).unwrap_or(u64::MAX));
    }

    /// Typing frames queued for streams, and dropped on full queues.
    pub fn typing_frames(&self, queued: u64, dropped: u64) {
        if queued > 0 {
            self.counter(TYPING, vec![Label::new("result", "queued")])
                .increment(queued);
        }
        if dropped > 0 {
            self.counter(TYPING, vec![Label::new("result", "dropped")])
                .increment(dropped);
        }
    }

    pub fn stream_resynced(&self) {
        self.events.resyncs.increment(1);
    }

    /// Counts a request in flight until the guard drops (also when the
    /// client goes away mid-request).
    pub fn in_flight(&self) -> InFlight {
        self.in_flight.increment(1.0);
        InFlight(self.in_flight.clone())
    }

    /// One answered request. `route` is the matched route template.
    pub fn record(
        &self,
        method: &Method,
        route: &str,
        status: u16,
        elapsed: Duration,
        code: Option<&'static str>,
    ) {
        let method = method_label(method);
        let route = SharedString::from_owned(route.to_owned());
        self.counter(
            REQUESTS,
            vec![
                Label::new("route", route.clone()),
                Label::new("method", method),
                Label::new("status", status.to_string()),
            ],
        )
        .increment(1);
        self.recorder
            .register_histogram(
                &Key::from_parts(
                    DURATION,
                    vec![Label::new("route", route), Label::new("method", method)],
                ),
                &META,
            )
            .record(elapsed.as_secs_f64());
        if let Some(code) = code {
            self.counter(ERRORS, vec![Label::new("code", code)])
                .increment(1);
        }
    }

    fn counter(&self, name: &'static str, labels: Vec<Label>) -> Counter {
        self.recorder
            .register_counter(&Key::from_parts(name, labels), &META)
    }

    /// Reads what webhook deliveries owe into their gauges, unless that
    /// was done less than [`BACKLOG_EVERY`] ago. A store that cannot say
    /// leaves the last figures.
    async fn read_backlog(&self, service: &Confab) {
        {
            let mut last = self
                .backlog_read
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.is_some_and(|at| at.elapsed() < BACKLOG_EVERY) {
                return;
            }
            *last = Some(std::time::Instant::now());
        }
        match service.webhook_backlog().await {
            Ok(backlog) => {
                let [retrying, oldest] = &self.webhooks;
                #[allow(clippy::cast_precision_loss)]
                retrying.set(backlog.retrying as f64);
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
                #[allow(clippy::cast_precision_loss)]
                oldest.set(
                    backlog
                        .oldest_pending_at
                        .map_or(0.0, |at| (now - at.micros()).max(0) as f64 / 1e6),
                );
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the webhook backlog for /metrics"),
        }
        let [bytes, files, free] = &self.storage;
        match service.stored_files().await {
            Ok(stored) => {
                #[allow(clippy::cast_precision_loss)]
                bytes.set(stored.bytes as f64);
                #[allow(clippy::cast_precision_loss)]
                files.set(stored.files as f64);
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the stored files for /metrics"),
        }
        match service.storage_free_space().await {
            #[allow(clippy::cast_precision_loss)]
            Ok(Some(n)) => free.set(n as f64),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the storage's free space for /metrics")
            }
        }
    }

    /// The text exposition, with the pool's and connections' figures as
    /// of now.
    fn render(&self, service: &Confab) -> String {
        if let Some(counts) = self.connection_counts.get() {
            let (open, waiting) = counts();
            let [o, w] = &self.connections;
            #[allow(clippy::cast_precision_loss)]
            o.set(open as f64);
            #[allow(clippy::cast_precision_loss)]
            w.set(waiting as f64);
        }
        if let Some(state) = service.pool_state() {
            let [max, connections, idle, waiting] = &self.pool;
            max.set(state.max_size);
            connections.set(state.connections);
            idle.set(state.idle);
            waiting.set(state.waiting);
        }
        self.handle.render()
    }

    /// Now and then folds the recorded latencies into the histograms, so
    /// that memory stays bounded between scrapes; stops with the server.
    pub fn spawn_upkeep(metrics: &Arc<Metrics>) {
        let metrics: Weak<Metrics> = Arc::downgrade(metrics);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(5));
            loop {
                every.tick().await;
                match metrics.upgrade() {
                    Some(m) => m.handle.run_upkeep(),
                    None => break,
                }
            }
        });
    }
}

/// Decrements the in-flight gauge when dropped.
pub struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// The standard methods by name; anything else a client sends is `other`
/// (bounded label values).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// `GET /metrics` on the metrics listener (`CONFAB_METRICS_LISTEN`).
pub async fn scrape_route(metrics: web::Data<Metrics>, service: web::Data<Confab>) -> HttpResponse {
    scrape(metrics, &service).await
}

/// `GET /metrics` (no token).
pub async fn scrape(metrics: web::Data<Metrics>, service: &Confab) -> HttpResponse {
    metrics.read_backlog(service).await;
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8"))
        .body(metrics.render(service))
}
