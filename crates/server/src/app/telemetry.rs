//! Logs and request telemetry: `tracing` to stderr, filtered by `RUST_LOG`,
//! as text or JSON lines (`CONFAB_LOG_FORMAT`), and [`observe`], the
//! middleware that gives each request its id, counts it in the metrics and
//! writes its one log line: method, route template, status, latency,
//! request id, caller, and the target with its query values redacted; 4xx
//! at INFO, 5xx at ERROR with the cause and its chain of sources (a 503
//! that only refuses, past the connection budget, at WARN).

use std::io::IsTerminal;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::HeaderValue;
use actix_web::http::{StatusCode, Uri};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage, ResponseError};
use confab_domain::ContactId;
use tracing::Instrument;
use tracing_subscriber::EnvFilter;

use confab_http::auth::{Actor, Caller};
use confab_http::error::ApiError;
use confab_http::request_id::{self, RequestId};
use confab_metrics::{Metrics, UNMATCHED};

/// How log lines are written (`CONFAB_LOG_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object a line, the fields at its top level.
    Json,
}

/// Installs the global subscriber. Calling it twice is harmless (tests).
pub fn init(filter: EnvFilter, format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _already_set = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_span_list(false)
            .try_init(),
    };
}

/// The middleware around everything else (see `startup` for the order).
/// Whatever happens inside, the client gets a response carrying its
/// `X-Request-Id`: an error a middleware returns as `Err` is turned into
/// its JSON answer here.
pub async fn observe(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let id = RequestId::of(req.headers());
    req.extensions_mut().insert(id.clone());
    let metrics = req.app_data::<web::Data<Metrics>>().cloned();
    let _in_flight = metrics.as_ref().map(|m| m.in_flight());
    let method = req.method().clone();
    // The route template (`/v1/messages/{id}`), never the raw path.
    let route = req.match_pattern().unwrap_or_else(|| UNMATCHED.to_owned());
    // Kept as is (a cheap clone of shared bytes) and redacted only when the
    // log line is written: most deployments log at WARN.
    let uri = req.uri().clone();
    // Events logged while the request runs (the store's, the handlers')
    // carry its id; `auth` records the caller.
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        method = %method,
        route = %route,
        caller = tracing::field::Empty,
        actor = tracing::field::Empty,
    );
    let outcome = next.call(req).instrument(span).await;
    let elapsed = started.elapsed();
    let (status, api_error, caller, actor) = match &outcome {
        Ok(res) => (
            res.status(),
            res.response()
                .error()
                .and_then(|e| e.as_error::<ApiError>())
                .cloned(),
            res.request().extensions().get::<Caller>().map(|c| c.0.id()),
            res.request().extensions().get::<Actor>().map(|a| a.0),
        ),
        Err(e) => {
            let status = e.as_response_error().status_code();
            let api = e.as_error::<ApiError>().cloned().unwrap_or_else(|| {
                let api = ApiError::for_status(status);
                if status.is_server_error() {
                    api.with_cause(e)
                } else {
                    api
                }
            });
            (status, Some(api), None, None)
        }
    };
    let code = api_error.as_ref().map(ApiError::code);
    if let Some(m) = &metrics {
        m.record(&method, &route, status.as_u16(), elapsed, code);
    }
    log_line(&Line {
        method: method.as_str(),
        route: &route,
        status,
        latency_ms: elapsed.as_micros() as f64 / 1000.0,
        request_id: id.as_str(),
        caller,
        actor,
        uri: &uri,
        code,
        cause: api_error.as_ref().and_then(ApiError::cause),
    });
    let id_value = HeaderValue::from_str(id.as_str()).ok();
    match outcome {
        Ok(mut res) => {
            if let Some(value) = id_value {
                res.headers_mut().insert(request_id::HEADER, value);
            }
            Ok(res)
        }
        // Rare (every layer inside answers with responses): the error
        // leaves as `Err` and actix makes the response past every
        // middleware, so it is given its JSON body, the request id and the
        // security headers here.
        Err(mut e) => {
            let body = api_error.unwrap_or_else(|| ApiError::for_status(status));
            e.add_response_mapper(move |_| {
                let mut res = body.error_response();
                let headers = res.headers_mut();
                if let Some(value) = id_value.clone() {
                    headers.insert(request_id::HEADER, value);
                }
                confab_http::headers::add_security_headers(headers);
                res
            });
            Err(e)
        }
    }
}

/// What the request's log line says.
struct Line<'a> {
    method: &'a str,
    route: &'a str,
    status: StatusCode,
    latency_ms: f64,
    request_id: &'a str,
    caller: Option<ContactId>,
    /// The server key the request was made with, if any.
    actor: Option<uuid::Uuid>,
    uri: &'a Uri,
    code: Option<&'static str>,
    cause: Option<&'a str>,
}

fn log_line(l: &Line<'_>) {
    macro_rules! line {
        ($level:expr, $message:literal) => {
            tracing::event!(
                $level,
                method = %l.method,
                route = %l.route,
                status = l.status.as_u16(),
                latency_ms = l.latency_ms,
                request_id = %l.request_id,
                caller = l.caller.map(tracing::field::display),
                actor = l.actor.map(tracing::field::display),
                uri = %redacted_target(l.uri),
                code = l.code.map(tracing::field::display),
                error = l.cause,
                $message
            )
        };
    }
    if l.status.is_server_error() && l.cause.is_some() {
        line!(tracing::Level::ERROR, "request failed");
    } else if l.status.is_server_error() {
        // A refusal by design with nothing broken (a connection past the
        // budget): a flood of them must not read as a flood of failures.
        line!(tracing::Level::WARN, "request refused");
    } else {
        line!(tracing::Level::INFO, "request");
    }
}

const REDACTED: &str = "[redacted]";

/// The request target fit for a log: every query value replaced by
/// `[redacted]` (`/v1/messages?access_token=[redacted]&limit=[redacted]`),
/// and any query name or path segment that does not look like one of ours
/// (a parameter name, an id) replaced whole, so that a secret pasted where a
/// name belongs is not logged either.
pub fn redacted_target(uri: &Uri) -> String {
    let mut out = String::with_capacity(uri.path().len() + 16);
    for (i, segment) in uri.path().split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(if looks_plain(segment, 64) {
            segment
        } else {
            REDACTED
        });
    }
    if let Some(query) = uri.query() {
        out.push('?');
        for (i, pair) in query.split('&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            let name = pair.split_once('=').map_or(pair, |(name, _)| name);
            out.push_str(if looks_plain(name, 40) {
                name
            } else {
                REDACTED
            });
            out.push('=');
            out.push_str(REDACTED);
        }
    }
    out
}

/// Short, of the characters our names and ids use (brackets may be
/// percent-encoded), and not a token.
fn looks_plain(s: &str, max_len: usize) -> bool {
    let decoded = percent_decoded(s);
    s.len() <= max_len
        && !decoded
            .to_ascii_lowercase()
            .windows(4)
            .any(|w| w == b"cfb_")
        && decoded
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'[' | b']'))
}

/// `%XX` as the byte it stands for (a stray `%` stays, and is refused).
fn percent_decoded(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(s: &str) -> String {
        redacted_target(&s.parse().expect("uri"))
    }

    #[test]
    fn query_values_and_odd_names_are_redacted() {
        assert_eq!(
            target("/v1/messages?access_token=cfb_0123abcd&limit=5"),
            "/v1/messages?access_token=[redacted]&limit=[redacted]"
        );
        assert_eq!(target("/v1/messages"), "/v1/messages");
        assert_eq!(
            target("/v1/messages/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"),
            "/v1/messages/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
        );
        assert_eq!(
            target("/v1/x?reactions%5Blike%5D%5B%5D=bob&bare"),
            "/v1/x?reactions%5Blike%5D%5B%5D=[redacted]&bare=[redacted]"
        );
        assert_eq!(
            target("/v1/x?cfb_0123abcd&hello%20world=1"),
            "/v1/x?[redacted]=[redacted]&[redacted]=[redacted]"
        );
        assert_eq!(target("/v1/cfb_0123abcd/x"), "/v1/[redacted]/x");
        assert_eq!(
            target("/v1/x?cfb%5f0123=1&%=1"),
            "/v1/x?[redacted]=[redacted]&[redacted]=[redacted]"
        );
        assert_eq!(target("/v1/x?"), "/v1/x?=[redacted]");
    }
}
