//! Logs: `tracing` to stderr, filtered by `RUST_LOG`, with one line per HTTP
//! request (the close of its root span, carrying method, route, status,
//! latency and the authenticated caller).

use std::io::IsTerminal;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use tracing::Span;
use tracing_actix_web::{DefaultRootSpanBuilder, RootSpanBuilder};
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. `default_filter` applies when `RUST_LOG`
/// is unset or invalid. Calling it twice is harmless (tests).
pub fn init(default_filter: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    // tracing-actix-web records spans, not events: without CLOSE span events
    // a plain fmt subscriber would print nothing per request.
    let _already_set = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_span_events(FmtSpan::CLOSE)
        .try_init();
}

/// The request's root span: tracing-actix-web's default fields plus
/// `caller`, which authentication fills in.
pub struct RequestSpan;

impl RootSpanBuilder for RequestSpan {
    fn on_request_start(request: &ServiceRequest) -> Span {
        tracing_actix_web::root_span!(request, caller = tracing::field::Empty)
    }

    fn on_request_end<B: MessageBody>(
        span: Span,
        outcome: &Result<ServiceResponse<B>, actix_web::Error>,
    ) {
        DefaultRootSpanBuilder::on_request_end(span, outcome);
    }
}
